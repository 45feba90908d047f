//! Running the real binary in a temporary project with its own trace home.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub(crate) struct Project {
    dir: tempfile::TempDir,
    pub(crate) home: PathBuf,
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
        Self { dir, home }
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
    let mut args = vec![
        "run",
        "--json",
        "--model",
        "openai/test-model",
        "--base-url",
        &base,
    ];
    args.extend_from_slice(extra);
    args.push(prompt);
    p.run(&args)
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

/// Whether the kernel gives us the sandbox; in CI (`WARDEN_REQUIRE_KERNEL`) it must.
pub(crate) fn sandbox_available(p: &Project) -> bool {
    let run = p.run(&["sandbox", "doctor"]);
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

/// The sandbox backends to test here: native, and bwrap where it is installed (in CI it must
/// be).
pub(crate) fn backends() -> Vec<&'static str> {
    if Command::new("bwrap").arg("--version").output().is_ok() {
        return vec!["native", "bwrap"];
    }
    assert!(
        std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
        "bwrap is required here (.ci/run installs it)"
    );
    vec!["native"]
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
    const HARNESS: &str = r"import os, pty, sys, json
answers = json.loads(sys.argv[1])
lines = json.loads(sys.argv[2])
prompt = 'warden\u203a '.encode()
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[3], sys.argv[3:])
out = b''
asked = 0
typed = 0
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
    while out.count(b'allow? ') > asked:
        answer = answers[asked] if asked < len(answers) else 'd'
        asked += 1
        os.write(fd, (answer + '\n').encode())
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
            .args(argv)
            .current_dir(p.root())
            .env_clear()
            .envs(envs)
            .output()
            .unwrap(),
    )
}
