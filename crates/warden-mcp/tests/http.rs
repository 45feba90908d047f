//! Streamable HTTP over warden's own client: against npm's `server-everything` serving HTTP (a
//! real server no one here wrote), and against a scripted loopback server for what a real one
//! does not do on demand (echo its headers, send too much, move elsewhere, ask for input).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod peers;

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use warden_mcp::{Answer, Asker, Launch, McpError, Question, Server};

/// A child process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn remote(url: &str, headers: Vec<(&str, &str)>) -> Launch {
    Launch {
        headers: headers
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        ..Launch::http("remote", url)
    }
}

/// `server-everything` serving streamable HTTP on a free port of loopback.
fn everything_http() -> Option<(Killed, String)> {
    everything_serving("streamableHttp", "/mcp")
}

/// `server-everything` serving `mode` on a free port of loopback, and the address of `path`.
fn everything_serving(mode: &str, path: &str) -> Option<(Killed, String)> {
    let script = peers::everything()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("node")
        .arg(&script)
        .arg(mode)
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let child = Killed(child);
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some((child, format!("http://127.0.0.1:{port}{path}")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("server-everything did not listen on {port}");
}

/// The scripted server, and its base address.
fn scripted() -> (Killed, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripted_http.py");
    let mut child = Command::new("python3")
        .arg(script)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("the scripted server's port");
    (Killed(child), format!("http://127.0.0.1:{port}"))
}

#[test]
fn a_real_http_server_is_listed_and_called() {
    let Some((_server, url)) = everything_http() else {
        return;
    };
    let server = Server::start(remote(&url, Vec::new())).unwrap();
    assert_eq!(
        server.info().initialize["serverInfo"]["name"],
        "mcp-servers/everything"
    );
    let tools = server.tools().unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let echo = server
        .call("echo", json!({"message": "over http"}))
        .unwrap();
    assert!(echo.text.contains("over http"), "{echo:?}");
    let sum = server.call("get-sum", json!({"a": 2, "b": 40})).unwrap();
    assert!(sum.text.contains("42"), "{sum:?}");
    let structured = server
        .call("get-structured-content", json!({"location": "Chicago"}))
        .unwrap();
    assert!(structured.structured.is_some(), "{structured:?}");
    assert!(!server.resources().unwrap().is_empty());
}

#[test]
fn headers_take_their_variables_from_warden_and_a_missing_one_is_named() {
    let (_server, base) = scripted();
    // The probe: without the header, the server sees no authorisation at all.
    let plain = Server::start(remote(&format!("{base}/mcp"), Vec::new())).unwrap();
    let seen: Value =
        serde_json::from_str(&plain.call("headers", json!({})).unwrap().text).unwrap();
    assert!(seen.get("authorization").is_none(), "{seen}");
    // A variable no environment has: the server does not start, and the message names it.
    let variable = "WARDEN_TEST_HTTP_TOKEN_7F3A";
    let value = format!("Bearer ${{{variable}}}");
    let run = |headers: Vec<(&str, &str)>| Server::start(remote(&format!("{base}/mcp"), headers));
    let missing = run(vec![("Authorization", &value)]).err().expect("refused");
    assert!(
        matches!(&missing, McpError::Settings { message, .. } if message.contains(variable)),
        "{missing}"
    );
    // A variable the test process has (cargo sets it for every test): its value goes out.
    let given = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let server = run(vec![
        ("Authorization", "Bearer ${CARGO_MANIFEST_DIR}"),
        ("X-Team", "tools"),
    ])
    .unwrap();
    let seen: Value =
        serde_json::from_str(&server.call("headers", json!({})).unwrap().text).unwrap();
    assert_eq!(seen["x-team"], "tools");
    assert_eq!(seen["authorization"], format!("Bearer {given}"));
}

#[test]
fn answers_come_as_json_or_as_an_event_stream() {
    let (_server, base) = scripted();
    for path in ["/mcp", "/events"] {
        let server = Server::start(remote(&format!("{base}{path}"), Vec::new())).unwrap();
        let names: Vec<String> = server
            .tools()
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["headers", "huge", "ask"], "{path}");
        let seen = server.call("headers", json!({})).unwrap();
        // The transport's own headers went out: the session, what it accepts.
        assert!(seen.text.contains("scripted-session-1"), "{path}: {seen:?}");
        assert!(seen.text.contains("text/event-stream"), "{path}: {seen:?}");
    }
}

#[test]
fn too_large_an_answer_is_refused_and_a_redirect_not_followed() {
    let (_server, base) = scripted();
    let server = Server::start(remote(&format!("{base}/huge"), Vec::new())).unwrap();
    let huge = server.call("huge", json!({})).expect_err("refused");
    assert!(huge.to_string().contains("maximum size"), "{huge}");
    // A redirect to another host is not followed: the start fails, naming the status.
    let moved = Server::start(remote(&format!("{base}/redirect"), Vec::new()))
        .err()
        .expect("refused");
    assert!(moved.to_string().contains("307"), "{moved}");
    // An address that is not http(s) is refused before anything is sent.
    let odd = Server::start(remote("file:///etc/passwd", Vec::new()))
        .err()
        .expect("refused");
    assert!(matches!(odd, McpError::Settings { .. }), "{odd}");
}

#[test]
fn a_request_for_input_is_answered_by_the_asker_and_refused_headless() {
    let (_server, base) = scripted();
    // Headless: the server is told why, as an error.
    let server = Server::start(remote(&format!("{base}/elicit"), Vec::new())).unwrap();
    let refused = server.call("ask", json!({})).unwrap();
    assert!(refused.text.contains("headless"), "{refused:?}");
    // With a person: what they left alone is the form's default.
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let mut launch = remote(&format!("{base}/elicit"), Vec::new());
    launch.asker = Some(Asker::new(move |question: &Question| {
        seen.lock().unwrap().push(question.clone());
        Answer::Accept(serde_json::Map::new())
    }));
    let server = Server::start(launch).unwrap();
    let answered = server.call("ask", json!({})).unwrap();
    let answer: Value = serde_json::from_str(&answered.text).unwrap();
    assert_eq!(answer["result"]["action"], "accept", "{answer}");
    assert_eq!(answer["result"]["content"]["colour"], "green", "{answer}");
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].message, "Which colour?");
    assert_eq!(asked[0].server, "remote");
}

#[test]
fn a_server_of_the_older_http_and_sse_transport_is_listed_and_called() {
    let Some((_server, url)) = everything_serving("sse", "/sse") else {
        return;
    };
    // The probe: spoken to as streamable HTTP, the older server does not start.
    assert!(Server::start(remote(&url, Vec::new())).is_err());
    let launch = Launch {
        legacy_sse: true,
        ..remote(&url, Vec::new())
    };
    let server = Server::start(launch).unwrap();
    assert_eq!(
        server.info().initialize["serverInfo"]["name"],
        "mcp-servers/everything"
    );
    assert!(server.tools().unwrap().iter().any(|t| t.name == "echo"));
    let echo = server.call("echo", json!({"message": "over sse"})).unwrap();
    assert!(echo.text.contains("over sse"), "{echo:?}");
    let sum = server.call("get-sum", json!({"a": 1, "b": 2})).unwrap();
    assert!(sum.text.contains('3'), "{sum:?}");
}
