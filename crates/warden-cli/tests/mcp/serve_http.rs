//! `warden mcp serve --http` on loopback: the official conformance suite's server scenarios that
//! apply to a server of tools (npm's `@modelcontextprotocol/conformance`, which `.ci/run`
//! installs under `target/mcp-conformance`), the token every request needs, hosts and origins
//! of a rebinding page refused, and the Python SDK's client calling through it — asked, answered
//! and recorded like over standard input and output.

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use super::serve::{Via, run_client, sessions};
use crate::support::Project;

/// The conformance suite's program, if installed.
fn suite() -> Option<PathBuf> {
    let folder = std::env::var_os("WARDEN_MCP_CONFORMANCE").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-conformance"),
        PathBuf::from,
    );
    let program = folder.join("node_modules/.bin/conformance");
    if program.exists() {
        return Some(program);
    }
    assert!(
        std::env::var_os("WARDEN_REQUIRE_PEERS").is_none(),
        "{} is not installed (see .ci/run)",
        program.display()
    );
    eprintln!("skipped: {} is not installed", program.display());
    None
}

/// A `warden mcp serve --http` running in a project, stopped when dropped.
struct Serving {
    child: Child,
    /// The URL it printed, with its token.
    url: String,
    token: String,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serving {
    fn start(p: &Project, flags: &[&str]) -> Self {
        let mut child = p
            .command()
            .args(["mcp", "serve", "--http", "127.0.0.1:0"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut said = BufReader::new(child.stderr.take().unwrap());
        let (mut url, mut token) = (None, None);
        let mut line = String::new();
        while url.is_none() && said.read_line(&mut line).unwrap() > 0 {
            if let Some(rest) = line.trim().strip_prefix("token (shown once): ") {
                token = Some(rest.to_owned());
            }
            if let Some(rest) = line.trim().strip_prefix("url: ") {
                url = Some(rest.to_owned());
            }
            line.clear();
        }
        // The rest of what it says is read and dropped, so that it never blocks writing.
        std::thread::spawn(move || std::io::copy(&mut said, &mut std::io::sink()));
        Self {
            child,
            url: url.expect("warden mcp serve --http printed no url"),
            token: token.expect("warden mcp serve --http printed no token"),
        }
    }

    /// The URL without its token.
    fn bare(&self) -> &str {
        self.url.split('?').next().unwrap()
    }

    /// The status of a raw `initialize` POST to `path` with `headers`.
    fn status(&self, path: &str, headers: &[(&str, &str)]) -> u16 {
        let port = self
            .bare()
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches("/mcp");
        let mut stream = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"}}})
        .to_string();
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n",
            body.len()
        );
        for (name, value) in headers {
            let _ = write!(request, "{name}: {value}\r\n");
        }
        request.push_str("\r\n");
        request.push_str(&body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }
}

/// Runs the suite's server `scenario` against `url`: whether it passed, and each check as
/// (id, status).
fn scenario(suite: &PathBuf, url: &str, scenario: &str) -> (bool, Vec<(String, String)>, String) {
    let results = tempfile::tempdir().unwrap();
    let output = Command::new(suite)
        .args(["server", "--url", url, "--scenario", scenario, "-o"])
        .arg(results.path())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut checks = Vec::new();
    let mut folders = vec![results.path().to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.file_name().is_some_and(|n| n == "checks.json") {
                let recorded: Vec<Value> =
                    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                checks.extend(recorded.iter().map(|c| {
                    (
                        c["id"].as_str().unwrap_or_default().to_owned(),
                        c["status"].as_str().unwrap_or_default().to_owned(),
                    )
                }));
            }
        }
    }
    let passed = output.status.success()
        && !checks.is_empty()
        && checks.iter().all(|(_, s)| s == "SUCCESS" || s == "INFO");
    (passed, checks, said)
}

#[test]
fn the_conformance_suite_passes_warden_s_server_and_the_token_guards_it() {
    let Some(suite) = suite() else { return };
    let p = Project::new();
    let serving = Serving::start(&p, &[]);
    // The probe: without the token, the suite's own client gets nowhere.
    let (passed, _, said) = scenario(&suite, serving.bare(), "tools-list");
    assert!(!passed, "{said}");
    for (name, expected) in [
        ("server-initialize", &["server-initialize"][..]),
        ("ping", &["ping"]),
        ("tools-list", &["tools-list"]),
        (
            "dns-rebinding-protection",
            &[
                "localhost-host-rebinding-rejected",
                "localhost-host-valid-accepted",
            ],
        ),
    ] {
        let (passed, checks, said) = scenario(&suite, &serving.url, name);
        assert!(passed, "{name}: {checks:?}\n{said}");
        for id in expected {
            assert!(
                checks.iter().any(|(c, s)| c == id && s == "SUCCESS"),
                "{name}: no success for {id}: {checks:?}"
            );
        }
    }
    // The token, as a header or in the URL; nothing without it, or with another.
    let bearer = format!("Bearer {}", serving.token);
    let query = format!("/mcp?token={}", serving.token);
    assert_eq!(serving.status("/mcp", &[("Authorization", &bearer)]), 200);
    assert_eq!(serving.status(&query, &[]), 200);
    assert_eq!(serving.status("/mcp", &[]), 401);
    assert_eq!(
        serving.status("/mcp", &[("Authorization", "Bearer guessed-wrong")]),
        401
    );
    assert_eq!(serving.status("/mcp?token=", &[]), 401);
    // A page in a browser, even one holding the token, is refused by its origin.
    assert_eq!(
        serving.status(&query, &[("Origin", "http://evil.example.com")]),
        403
    );
    assert_eq!(
        serving.status("/elsewhere", &[("Authorization", &bearer)]),
        404
    );
}

#[test]
fn it_serves_loopback_only_with_a_token_long_enough() {
    let p = Project::new();
    let run = p.run(&["mcp", "serve", "--http", "0.0.0.0:0"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("loopback"), "{}", run.stderr);
    let mut short = p.command();
    short
        .args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .env("WARDEN_MCP_TOKEN", "1234");
    let out = short.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("too short"));
}

/// The Python SDK's client over HTTP, with each protocol era: asked by form and answered, a
/// session in the trace per connection, and one per stateless request.
#[test]
fn an_agent_over_http_is_asked_and_recorded() {
    let Some((python, p)) = super::serve::client_and_project() else {
        return;
    };
    let serving = Serving::start(&p, &[]);
    let edit = |file: &str| json!([["bash", {"command": format!("echo yes > {file}")}]]);
    for (mode, answer, file, made) in [
        ("legacy", "once", "legacy.txt", true),
        ("legacy", "deny", "refused.txt", false),
        ("2026-07-28", "once", "modern.txt", true),
        ("2026-07-28", "deny", "refused-too.txt", false),
    ] {
        let via = Via {
            mode,
            url: Some(&serving.url),
        };
        let seen = run_client(&p, &python, &edit(file), &[], Some(answer), via);
        assert_eq!(seen.asked.len(), 1, "{mode}: {}", seen.out);
        assert_eq!(p.root().join(file).exists(), made, "{mode}: {}", seen.out);
    }
    drop(serving);
    // Two connections of the initialize era, and each stateless request on its own: no client
    // shares another's session, rules or jobs.
    let sessions = sessions(&p);
    assert_eq!(sessions.len(), 4, "{sessions:?}");
    let calls = sessions.iter().map(Vec::len).sum::<usize>();
    assert_eq!(calls, 4, "{sessions:?}");
}
