//! Logging in to a server at a url: discovery, registration, PKCE and the code on loopback
//! against a scripted OAuth server (`oauth_server.py`); the token used and renewed before it
//! expires, kept for the user alone, and nowhere else.

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Stdio};

use crate::support::Project;

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every file under `dir` whose bytes hold `needle`.
fn holding(dir: &std::path::Path, needle: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
            {
                found.push(path);
            }
        }
    }
    found
}

/// The scripted OAuth server, and its MCP address.
fn oauth_server() -> (Killed, String) {
    oauth_server_renewing(1)
}

/// The scripted OAuth server whose refresh token works `times` times.
fn oauth_server_renewing(times: u32) -> (Killed, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/oauth_server.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg(times.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    (
        Killed(child),
        format!("http://127.0.0.1:{}/mcp", port.trim()),
    )
}

/// The user's settings: the server at `url`, its tools allowed.
fn with_web(p: &Project, url: &str) -> std::path::PathBuf {
    let settings = p.tmp().join("home/.config/warden/settings.toml");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        format!("[permissions]\nallow = [\"Mcp(web)\"]\n\n[mcp.servers.web]\nurl = {url:?}\n"),
    )
    .unwrap();
    settings
}

#[test]
fn where_no_browser_can_come_back_the_address_it_ended_on_is_pasted() {
    let (_server, url) = oauth_server_renewing(10);
    let p = Project::new();
    with_web(&p, &url);
    paste_login(&p);
    assert!(p.run(&["mcp", "list"]).stdout.contains("logged in"));
    let called = p.run(&["mcp", "call", "web", "whoami"]);
    assert_eq!(called.code, 0, "{}{}", called.stdout, called.stderr);
    // A call the login's scope does not cover: refused, naming how to ask for more.
    let more = p.run(&["mcp", "call", "web", "admin"]);
    assert_ne!(more.code, 0);
    assert!(
        more.stdout
            .contains("warden mcp login web --scope 'mcp:admin'"),
        "{}",
        more.stdout
    );
}

/// Logs in to `web` by pasting the address the browser ended on.
fn paste_login(p: &Project) {
    let mut login = p.command();
    let mut login = login
        .args(["mcp", "login", "web", "--paste"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Read to the end: the prompt after the address is written to it too.
    let mut lines = BufReader::new(login.stderr.take().unwrap()).lines();
    let address = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("http://"))
        .unwrap();
    // The browser, elsewhere: it ends on the redirect's address, which does not load here.
    let ended = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{redirect_url}", &address])
        .output()
        .unwrap();
    let ended = String::from_utf8_lossy(&ended.stdout).into_owned();
    assert!(ended.contains("code="), "{ended}");
    {
        use std::io::Write as _;
        writeln!(login.stdin.take().unwrap(), "{ended}").unwrap();
    }
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(login.wait().unwrap().success(), "{rest:?}");
}

#[test]
fn a_login_gives_a_token_that_is_used_renewed_and_kept_for_the_user_alone() {
    let (_server, url) = oauth_server();
    let p = Project::new();
    with_web(&p, &url);
    // Before a login: refused by the server, and warden says what to do.
    let before = p.run(&["mcp", "tools", "web"]);
    assert_ne!(before.code, 0);
    assert!(
        before.stderr.contains("warden mcp login web"),
        "{}",
        before.stderr
    );
    assert!(p.run(&["mcp", "list"]).stdout.contains("not logged in"));
    // The login: the address is printed, "the browser" follows it, the code comes back.
    let mut login = p.command();
    let mut login = login
        .args(["mcp", "login", "web", "--no-browser"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(login.stderr.take().unwrap()).lines();
    let address = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("http://"))
        .expect("the address to open");
    let browser = Command::new("curl")
        .args(["-sSL", "--max-time", "20", &address])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&browser.stdout).contains("logged in"),
        "{browser:?}"
    );
    let done = login.wait_with_output().unwrap();
    assert!(done.status.success(), "{done:?}");
    let home = p.tmp().join("home");
    let store = holding(&home, "ref-secret");
    assert_eq!(store.len(), 1, "{store:?}");
    let mode = std::fs::metadata(&store[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{}", store[0].display());
    // Used: the token expires within the minute, so it is renewed first.
    let called = p.run(&["mcp", "call", "web", "whoami"]);
    assert_eq!(called.code, 0, "{}{}", called.stdout, called.stderr);
    assert_eq!(called.json()["content"], "a logged-in caller");
    assert_eq!(holding(&home, "tok-renewed"), store);
    assert!(
        p.run(&["mcp", "list"])
            .stdout
            .contains("logged in, expires in")
    );
    // No token anywhere but the store: not in the trace, the settings or any other file.
    for secret in ["tok-first", "tok-renewed", "ref-secret"] {
        let found = holding(&home, secret);
        assert!(found.iter().all(|f| *f == store[0]), "{secret}: {found:?}");
    }
    // The refresh token revoked: the next renewal fails, and warden says to log in again.
    let revoked = p.run(&["mcp", "call", "web", "whoami"]);
    assert_ne!(revoked.code, 0, "{}", revoked.stdout);
    assert!(
        revoked.stderr.contains("run `warden mcp login web`"),
        "{}",
        revoked.stderr
    );
    // Logged out: forgotten.
    assert_eq!(p.run(&["mcp", "logout", "web"]).code, 0);
    assert!(holding(&home, "ref-secret").is_empty());
    assert_eq!(p.run(&["mcp", "logout", "web"]).code, 1);
}

#[test]
fn a_server_echoing_its_token_does_not_show_it_to_the_model() {
    use warden_fake_provider::{Call, FakeProvider, openai};
    let (_server, url) = oauth_server_renewing(10);
    let p = Project::new();
    with_web(&p, &url);
    paste_login(&p);
    // The probe: called directly, the server does echo the token it was sent.
    let direct = p.run(&["mcp", "call", "web", "echo-token", "--json"]);
    assert!(direct.stdout.contains("tok-renewed"), "{}", direct.stdout);
    // Through a run, the model sees it redacted.
    let model = FakeProvider::start(vec![
        openai::calls(
            "",
            &[Call::new(
                "e",
                "mcp__web__echo-token",
                &serde_json::json!({}),
            )],
            8,
        ),
        openai::text("done"),
    ]);
    let run = crate::support::warden_run(&p, &model, &[], "what is my token");
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let seen = model.received()[1].json().to_string();
    assert!(seen.contains("your token is"), "{seen}");
    assert!(!seen.contains("tok-renewed"), "{seen}");
    assert!(!run.stdout.contains("tok-renewed"), "{}", run.stdout);
}

#[test]
fn a_server_wanting_more_scope_is_given_it_by_a_new_login_on_the_terminal() {
    let (_server, url) = oauth_server_renewing(10);
    let p = Project::new();
    with_web(&p, &url);
    paste_login(&p);
    // Headless: refused, saying how to ask for more.
    let headless = p.run(&["mcp", "call", "web", "admin"]);
    assert_ne!(headless.code, 0);
    assert!(
        headless.stdout.contains("--scope 'mcp:admin'"),
        "{}",
        headless.stdout
    );
    // On a terminal: the person is shown where to log in again; once they have, the call runs.
    let on_terminal = crate::support::in_a_session_with(
        &p,
        &[("TEST_FOLLOW_LOGIN", "1")],
        &[env!("CARGO_BIN_EXE_warden"), "mcp", "call", "web", "admin"],
        &[],
        &[],
    );
    assert_eq!(on_terminal.code, 0, "{}", on_terminal.stdout);
    assert!(
        on_terminal
            .stdout
            .contains("wants more than its login allows"),
        "{}",
        on_terminal.stdout
    );
    assert!(
        on_terminal.stdout.contains("admin done"),
        "{}",
        on_terminal.stdout
    );
}

/// A `warden run` logged in to the scripted server (whose refresh token works `refreshes`
/// times), whose model calls the server's `tools` one a turn: the model, with what it was sent.
fn logged_in_run(refreshes: u32, tools: &[&str]) -> warden_fake_provider::FakeProvider {
    use warden_fake_provider::Call;
    let (_server, url) = oauth_server_renewing(refreshes);
    let p = Project::new();
    with_web(&p, &url);
    paste_login(&p);
    let names: Vec<(String, String)> = (tools.iter().enumerate())
        .map(|(i, t)| (format!("c{i}"), format!("mcp__web__{t}")))
        .collect();
    let calls: Vec<Call<'_>> = names
        .iter()
        .map(|(id, name)| Call::new(id, name, &serde_json::json!({})))
        .collect();
    let model = crate::support::model_calling(&calls);
    let run = crate::support::warden_run(&p, &model, &[], "call the tools");
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    model
}

/// What the model was sent in its `n`th request.
fn sent(model: &warden_fake_provider::FakeProvider, n: usize) -> String {
    model.received()[n].json().to_string()
}

#[test]
fn a_token_that_expires_during_a_run_is_renewed_and_the_call_made_again() {
    let model = logged_in_run(10, &["expire", "whoami"]);
    let third = sent(&model, 2);
    assert!(third.contains("a logged-in caller"), "{third}");
}

#[test]
fn a_login_revoked_during_a_run_is_named_with_the_command_that_gives_a_new_one() {
    // The refresh token works once (at the start) and is refused after.
    let model = logged_in_run(1, &["whoami", "expire", "whoami"]);
    // The probe: the login worked in this run before it was revoked.
    let second = sent(&model, 1);
    assert!(second.contains("a logged-in caller"), "{second}");
    let last = sent(&model, 3);
    assert!(last.contains("its login expired or was revoked"), "{last}");
    assert!(last.contains("warden mcp login web"), "{last}");
    assert!(last.contains("invalid_grant"), "{last}");
}
