//! Running the real binary in a temporary project with its own trace home.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub(crate) struct Project {
    dir: tempfile::TempDir,
    pub(crate) home: PathBuf,
    bwrap_settings: String,
}

pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}), exit {}: {}\nstderr: {}",
                self.code, self.stdout, self.stderr
            )
        })
    }
}

impl Project {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("project/.git")).unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let bwrap_settings = dir.path().join("bwrap-as-root.toml");
        std::fs::write(&bwrap_settings, "[sandbox]\nroot_identity = \"host\"\n").unwrap();
        Self {
            bwrap_settings: bwrap_settings.display().to_string(),
            dir,
            home,
        }
    }

    /// The flags of `warden exec` that pick `backend`. bubblewrap has no idmapped mounts, so
    /// as root it runs commands as root, which the user must choose knowingly: here, by a
    /// settings file given on the command line.
    pub(crate) fn backend_args<'a>(&'a self, backend: &'a str) -> Vec<&'a str> {
        if backend == "warm" {
            return vec!["--backend", "native", "--warm"];
        }
        let mut args = vec!["--backend", backend];
        if backend == "bwrap" && is_root() {
            args.extend(["--settings", self.bwrap_settings.as_str()]);
        }
        args
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.dir.path().join("project").canonicalize().unwrap()
    }

    pub(crate) fn tmp(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn write(&self, rel: &str, content: &str) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Trusts the project the way a user does without asking, with `trusted_projects` in the
    /// user's settings: for tests of what a project's own settings do once trusted (the trust
    /// itself is tested in `trust.rs`).
    pub(crate) fn trust(&self) {
        self.user_settings(&format!(
            "trusted_projects = [{:?}]\n",
            self.root().display().to_string()
        ));
    }

    /// Writes the user's settings file (`~/.config/warden/settings.toml`).
    pub(crate) fn user_settings(&self, toml: &str) {
        let dir = self.home.join(".config/warden");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("settings.toml"), toml).unwrap();
    }

    /// The rules warden remembered for this project, as its file holds them.
    pub(crate) fn remembered(&self) -> String {
        std::fs::read_to_string(self.home.join("warden/remembered.toml")).unwrap_or_default()
    }

    pub(crate) fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_warden"));
        cmd.current_dir(self.root())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("WARDEN_HOME", self.home.join("warden"));
        cmd
    }

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        let mut cmd = self.command();
        cmd.args(args);
        finish(&cmd.output().unwrap())
    }

    /// Replaces the temporary directory in text so snapshots are stable.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let tmp = self.tmp().canonicalize().unwrap();
        text.replace(&tmp.display().to_string(), "[TMP]")
            .replace(&self.tmp().display().to_string(), "[TMP]")
    }
}

/// `warden run --json` against a scripted provider (OpenAI-compatible), with `extra` flags.
pub(crate) fn warden_run(
    p: &Project,
    server: &warden_fake_provider::FakeProvider,
    extra: &[&str],
    prompt: &str,
) -> Run {
    let base = format!("{}/v1", server.url());
    let mut cmd = agent_command(p, &base);
    cmd.args(extra).arg(prompt);
    finish(&cmd.output().unwrap())
}

/// A scripted model that makes each of `calls` in a turn of its own, then says it is done.
pub(crate) fn model_calling(
    calls: &[warden_fake_provider::Call<'_>],
) -> warden_fake_provider::FakeProvider {
    use warden_fake_provider::openai;
    let mut replies: Vec<warden_fake_provider::Reply> = calls
        .iter()
        .map(|call| openai::calls("", std::slice::from_ref(call), 9).fast())
        .collect();
    replies.push(openai::text("Done.").fast());
    warden_fake_provider::FakeProvider::start(replies)
}

/// `warden run --json` against the OpenAI-compatible endpoint at `base`, arguments to follow.
pub(crate) fn agent_command(p: &Project, base: &str) -> Command {
    let mut cmd = p.command();
    cmd.args([
        "run",
        "--json",
        "--model",
        "openai/test-model",
        "--base-url",
        base,
    ]);
    cmd
}

/// The JSON events a `--json` run printed.
pub(crate) fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The events of one kind.
pub(crate) fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

pub(crate) fn finish(output: &Output) -> Run {
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `sh -c script` in the project, unsandboxed, with the project's home: the control run of a
/// probe the sandbox must stop.
pub(crate) fn sh(p: &Project, script: &str) -> Run {
    finish(
        &Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(p.root())
            .env("HOME", &p.home)
            .output()
            .unwrap(),
    )
}

/// `warden exec --json FLAGS -- sh -c script` in the project.
pub(crate) fn exec(p: &Project, flags: &[&str], script: &str) -> Run {
    let mut args = vec!["exec", "--json"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    p.run(&args)
}

/// [`exec`] twice, in a sandbox of its own and then in a warm sandbox (`--warm`, as a session's
/// commands run), which must agree: the same exit code, and the same output and signal where
/// the command ran. Returns the first. A command run by another backend than the native one
/// (flags or settings that choose it) runs once, as given.
pub(crate) fn exec_both(p: &Project, flags: &[&str], script: &str) -> Run {
    let own = exec(p, flags, script);
    let native = serde_json::from_str::<Value>(&own.stdout).map_or(true, |v| {
        v["sandbox"]["backend"]
            .as_str()
            .is_none_or(|b| b == "native")
    });
    if flags.contains(&"--backend") || !native {
        return own;
    }
    let warm = exec(p, &[flags, &["--warm"]].concat(), script);
    let fields = |run: &Run| {
        serde_json::from_str::<Value>(&run.stdout)
            .ok()
            .map(|v| ["exitCode", "signal", "timedOut", "stdout", "stderr"].map(|k| v[k].clone()))
    };
    assert_eq!(
        (own.code, fields(&own)),
        (warm.code, fields(&warm)),
        "{script}: its own sandbox and a warm one disagree\nown: {} {}\nwarm: {} {}",
        own.stdout,
        own.stderr,
        warm.stdout,
        warm.stderr
    );
    if let Some(layers) = serde_json::from_str::<Value>(&warm.stdout)
        .ok()
        .and_then(|v| v["sandbox"]["layers"].as_array().cloned())
    {
        assert!(
            layers.iter().any(|l| l == "warm-sandbox"),
            "{script}: ran in its own sandbox, not a warm one: {layers:?}"
        );
    }
    own
}

/// Whether the kernel gives us the sandbox; in CI (`WARDEN_REQUIRE_KERNEL`) it must.
pub(crate) fn sandbox_available(p: &Project) -> bool {
    // The doctor tries every layer: once for the whole test binary.
    static DOCTOR: std::sync::OnceLock<(i32, String)> = std::sync::OnceLock::new();
    let (code, stdout) = DOCTOR.get_or_init(|| {
        let run = p.run(&["sandbox", "doctor"]);
        (run.code, run.stdout)
    });
    let run = Run {
        code: *code,
        stdout: stdout.clone(),
        stderr: String::new(),
    };
    if run.code == 0 {
        return true;
    }
    assert!(
        std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
        "the sandbox is required here: {}",
        run.stdout
    );
    eprintln!("skipping: the sandbox is not available: {}", run.stdout);
    false
}

/// `git args` in `dir` with no system or global configuration (a committer named), its output
/// trimmed; it must succeed.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=a", "-c", "user.email=a@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Whether npm can run here; in CI (`WARDEN_REQUIRE_KERNEL`) it must.
pub(crate) fn npm() -> bool {
    let npm = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        npm || std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
        "npm is required in CI"
    );
    npm
}

/// Whether the tests run as root (as in CI).
pub(crate) fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

/// The sandbox backends to test here: native, native in a warm sandbox (`warm`, as a session's
/// commands run), and bwrap where it is installed (in CI it must be).
pub(crate) fn backends() -> Vec<&'static str> {
    if Command::new("bwrap").arg("--version").output().is_ok() {
        return vec!["native", "warm", "bwrap"];
    }
    assert!(
        std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
        "bwrap is required here (.ci/run installs it)"
    );
    vec!["native", "warm"]
}

/// Runs `argv` on a new pseudo-terminal (its controlling terminal and standard streams),
/// typing the next of `answers` each time it asks "allow?" and an empty line when it asks for a
/// word for the model. Returns the terminal's text and the exit code.
pub(crate) fn on_a_terminal(p: &Project, argv: &[&str], answers: &[&str]) -> Run {
    in_a_session(p, argv, answers, &[])
}

/// Like [`on_a_terminal`], and types the next of `lines` at each prompt of an interactive
/// session (then Ctrl-D).
pub(crate) fn in_a_session(p: &Project, argv: &[&str], answers: &[&str], lines: &[&str]) -> Run {
    in_a_session_with(p, &[], argv, answers, lines)
}

/// Like [`in_a_session`], with `env` added to the program's environment.
pub(crate) fn in_a_session_with(
    p: &Project,
    env: &[(&str, &str)],
    argv: &[&str],
    answers: &[&str],
    lines: &[&str],
) -> Run {
    on_a_terminal_trusting(p, env, argv, answers, lines, &[])
}

/// Like [`in_a_session_with`], typing the next of `trust` each time warden asks whether to
/// trust the project, or another yes-or-no question ("no" when they run out).
pub(crate) fn on_a_terminal_trusting(
    p: &Project,
    env: &[(&str, &str)],
    argv: &[&str],
    answers: &[&str],
    lines: &[&str],
    trust: &[&str],
) -> Run {
    const HARNESS: &str = r"import os, pty, sys, json
answers = json.loads(sys.argv[1])
lines = json.loads(sys.argv[2])
trust = json.loads(sys.argv[3])
prompt = 'warden\u203a '.encode()
# An MCP server's form: a field whose prompt holds a key of TEST_FORM gets its value, any other
# field nothing (its default), and the form is sent.
form = json.loads(os.environ.pop('TEST_FORM', 'null'))
form_at = -1
# A browser for logins: every authorization address printed is fetched (following redirects).
follow = os.environ.pop('TEST_FOLLOW_LOGIN', None)
followed = set()
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[4], sys.argv[4:])
out = b''
asked = 0
typed = 0
trusted = 0
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
    while out.count(b'this [r]un only: ') + out.count(b'[y]es, [n]o: ') > trusted:
        # A change made while the person decides (TEST_PROMPT_WRITE_PATH, once).
        target = os.environ.pop('TEST_PROMPT_WRITE_PATH', None)
        if target:
            with open(target, 'w') as f:
                f.write(os.environ.get('TEST_PROMPT_WRITE_TEXT', ''))
        os.write(fd, ((trust[trusted] if trusted < len(trust) else 'n') + '\n').encode())
        trusted += 1
    while out.count(b'allow? ') + out.count(b'[b]ack: ') > asked:
        answer = answers[asked] if asked < len(answers) else 'd'
        asked += 1
        os.write(fd, (answer + '\n').encode())
    if follow:
        import re, subprocess
        for found in re.finditer(rb'http://127\.0\.0\.1:\d+/authorize\?[^\s]+', out):
            address = found.group(0).decode()
            if address not in followed:
                followed.add(address)
                subprocess.Popen(['curl', '-sL', '--max-time', '20', address],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    line = out[out.rfind(b'\n') + 1:]
    if form is not None and b'an MCP server asks' in out and out.endswith(b': ') \
            and b'allow? ' not in line and len(out) != form_at:
        form_at = len(out)
        text = line.decode(errors='replace')
        if line.startswith(b'send? '):
            os.write(fd, b'y\n')
        else:
            os.write(fd, (next((v for k, v in form.items() if k in text), '') + '\n').encode())
    if out.endswith(b'(enter for none): '):
        os.write(fd, b'\n')
    while out.count(prompt) > typed:
        os.write(fd, ((lines[typed] + '\n') if typed < len(lines) else '\x04').encode())
        typed += 1
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors='replace'))
sys.exit(os.waitstatus_to_exitcode(status))
";
    let mut cmd = p.command();
    cmd.envs(env.iter().copied());
    let envs: Vec<(std::ffi::OsString, std::ffi::OsString)> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
        .collect();
    finish(
        &Command::new("python3")
            .arg("-c")
            .arg(HARNESS)
            .arg(serde_json::to_string(answers).unwrap())
            .arg(serde_json::to_string(lines).unwrap())
            .arg(serde_json::to_string(trust).unwrap())
            .args(argv)
            .current_dir(p.root())
            .env_clear()
            .envs(envs)
            .output()
            .unwrap(),
    )
}

/// The request heads a test server received, in order.
pub(crate) type Seen = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A TLS server for `name` on 127.0.0.1, its certificate signed by a test CA (written to
/// `ca_file`); it answers with its request line, and keeps every request head it received.
pub(crate) fn tls_server(name: &str, ca_file: &Path) -> (u16, Seen) {
    use rustls::pki_types::PrivateKeyDer;
    use std::io::Write as _;
    let ca = rcgen::CertifiedIssuer::self_signed(
        {
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            params
        },
        rcgen::KeyPair::generate().unwrap(),
    )
    .unwrap();
    std::fs::write(ca_file, ca.pem()).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let config = std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        )
        .unwrap(),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Seen = Seen::default();
    let record = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let config = std::sync::Arc::clone(&config);
            let record = std::sync::Arc::clone(&record);
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let mut request = Vec::new();
                let mut byte = [0u8; 1];
                while !request.ends_with(b"\r\n\r\n") {
                    if std::io::Read::read(&mut tls, &mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    request.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&request).into_owned();
                // A body is read and dropped.
                let length: usize = text
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                let mut body = vec![0u8; length];
                let _ = std::io::Read::read_exact(&mut tls, &mut body);
                let line = text.lines().next().unwrap_or("").to_owned();
                record.lock().unwrap().push(text);
                let body = format!("tls server saw: {line}");
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.flush();
            });
        }
    });
    (port, seen)
}

/// An HTTP server on 127.0.0.1 that answers every request with `hello from the test server`
/// and the request line.
pub(crate) fn http_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{BufRead as _, Write as _};
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                }
                let body = format!("hello from the test server: {}", line.trim());
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}

/// Every file below `dir` (directories walked, not listed).
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Each record's `keys`, as strings joined by spaces: `"connect allow allowed.test"`.
pub(crate) fn fields(records: &[Value], keys: &[&str]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            keys.iter()
                .map(|k| r[*k].as_str().unwrap_or_default())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// `cmd` in a mount namespace of its own whose `/etc` (an overlay of the machine's) holds
/// `managed` as `/etc/warden/managed.toml`: the machine-wide settings for that one process.
/// `None` where mount namespaces are not to be had (a failure when the kernel is required).
pub(crate) fn under_managed(p: &Project, cmd: &Command, managed: &str) -> Option<Command> {
    let unshare = Command::new("unshare").args(["-m", "true"]).status();
    if !unshare.is_ok_and(|s| s.success()) {
        assert!(
            std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
            "mount namespaces are required here"
        );
        return None;
    }
    let layer = p.tmp().join("etc-layer");
    std::fs::create_dir_all(&layer).unwrap();
    std::fs::write(p.tmp().join("managed.toml"), managed).unwrap();
    let script = "set -e; l=$1; shift; mount -t tmpfs none \"$l\"; mkdir \"$l/u\" \"$l/w\"; \
                  mount -t overlay overlay -o \"lowerdir=/etc,upperdir=$l/u,workdir=$l/w\" /etc; \
                  mkdir -p /etc/warden; cp \"$l/../managed.toml\" /etc/warden/managed.toml; \
                  exec \"$@\"";
    let mut wrapped = Command::new("unshare");
    wrapped
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(&layer)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .env_clear()
        .current_dir(cmd.get_current_dir().unwrap());
    for (key, value) in cmd.get_envs() {
        if let Some(value) = value {
            wrapped.env(key, value);
        }
    }
    Some(wrapped)
}
