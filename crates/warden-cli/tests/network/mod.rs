//! `warden exec --net allowlist`, on loopback only: test servers on 127.0.0.1 reached by the
//! names the test resolver gives them. What the allowlist lets through (HTTP, CONNECT, SOCKS5),
//! what it refuses and says why, what is recorded, and every way around the proxy — each first
//! shown to work without the sandbox, then shown to fail inside it.

mod requests;

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, UdpSocket};
use std::process::Command;

use serde_json::Value;

use crate::support::{Project, Run, finish, http_server, sandbox_available};

/// A UDP server on 127.0.0.1 that answers every datagram (a stand-in for a DNS resolver).
fn udp_server() -> u16 {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            let _ = socket.send_to(&buf[..n], from);
        }
    });
    port
}

const NAMES: &str = "allowed.test=127.0.0.1,other.test=127.0.0.1,metadata.test=169.254.169.254,\
                     git.test=127.0.0.1,pypi.test=127.0.0.1,registry.test=127.0.0.1";

/// `warden exec --net allowlist --json` of `sh -c script`, with `extra` flags; loopback
/// reachable unless `private` is blocked.
fn exec(p: &Project, extra: &[&str], block_private: bool, script: &str) -> (Run, Value) {
    let settings = p.tmp().join("network.toml");
    std::fs::write(
        &settings,
        format!("[sandbox.network]\nblock_private_ranges = {block_private}\n"),
    )
    .unwrap();
    let mut cmd = p.command();
    cmd.env("WARDEN_TEST_RESOLVE", NAMES)
        .args(["exec", "--json", "--net", "allowlist", "--settings"])
        .arg(&settings)
        .args(extra)
        .args(["--", "bash", "-c", script]);
    let run = finish(&cmd.output().unwrap());
    let json: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run, json)
}

/// The connections of `json`'s session, as the trace holds them.
fn connections(p: &Project, json: &Value) -> Vec<Value> {
    let session = json["network"]["session"].as_str().unwrap();
    let out = p.run(&["trace", "network", session, "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    crate::support::events(&out.stdout)
}

fn stdout(json: &Value) -> String {
    json["stdout"].as_str().unwrap().to_owned()
}

/// Runs `script` with bash outside any sandbox.
fn unsandboxed(script: &str) -> String {
    let out = Command::new("bash").args(["-c", script]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_allowed_host_is_reached_over_http_connect_and_socks5() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let port = http_server();
    let allow = format!("allowed.test:{port}");
    let script = format!(
        "curl -s -m 10 http://allowed.test:{port}/plain; echo; \
         curl -s -m 10 --proxytunnel -x http://127.0.0.1:3128 http://allowed.test:{port}/tunnel; echo; \
         curl -s -m 10 -x socks5h://127.0.0.1:3128 http://allowed.test:{port}/socks; echo"
    );
    let (_, json) = exec(&p, &["--allow-host", &allow], false, &script);
    let out = stdout(&json);
    for path in ["/plain", "/tunnel", "/socks"] {
        assert!(
            out.contains(&format!("hello from the test server: GET {path}")),
            "{path}: {out}\n{json}"
        );
    }
    assert_eq!(json["network"]["allowed"], 3, "{json}");
    assert_eq!(json["network"]["denied"], 0);
    let kinds = crate::support::fields(&connections(&p, &json), &["kind", "decision", "host"]);
    assert_eq!(
        kinds,
        [
            "http allow allowed.test",
            "connect allow allowed.test",
            "socks allow allowed.test"
        ]
    );
}

#[test]
fn what_the_allowlist_does_not_name_is_refused_and_counted() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let port = http_server();
    let allow = format!("allowed.test:{port}");
    // Each line prints the status the proxy gave.
    let script = format!(
        "s() {{ curl -s -m 10 -o /dev/null -w '%{{http_code}}\\n' \"$@\"; }}; \
         s http://other.test:{port}/; \
         s -x http://127.0.0.1:3128 --noproxy '' http://127.0.0.1:{port}/; \
         s http://allowed.test:1/; \
         s -H 'Host: other.test:{port}' http://allowed.test:{port}/"
    );
    let (_, json) = exec(&p, &["--allow-host", &allow], false, &script);
    assert_eq!(
        stdout(&json),
        "403\n403\n403\n400\n",
        "unlisted, address, port, Host: {json}"
    );
    assert_eq!(json["network"]["denied"], 4);
    let reasons: Vec<String> = connections(&p, &json)
        .iter()
        .map(|c| c["reason"].as_str().unwrap().to_owned())
        .collect();
    assert!(reasons[0].contains("not in the allowlist"), "{reasons:?}");
    assert!(reasons[1].contains("an address"), "{reasons:?}");
    assert!(reasons[2].contains("port 1"), "{reasons:?}");
    assert!(reasons[3].contains("Host header"), "{reasons:?}");
    // Private ranges blocked (the default): a listed name resolving to loopback or to the
    // cloud metadata address goes nowhere.
    let script = format!(
        "curl -s -m 10 -o /dev/null -w '%{{http_code}}\\n' http://allowed.test:{port}/; \
         curl -s -m 10 -o /dev/null -w '%{{http_code}}\\n' http://metadata.test/latest/meta-data/"
    );
    let (_, json) = exec(
        &p,
        &["--allow-host", &allow, "--allow-host", "metadata.test"],
        true,
        &script,
    );
    assert_eq!(stdout(&json), "403\n403\n", "{json}");
    let reasons: Vec<String> = connections(&p, &json)
        .iter()
        .map(|c| c["reason"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        reasons[0].contains("loopback") && reasons[1].contains("link-local"),
        "{reasons:?}"
    );
    // An empty allowlist is no network at all.
    let (_, json) = exec(
        &p,
        &[],
        false,
        &format!("curl -s -m 10 http://allowed.test:{port}/"),
    );
    assert!(stdout(&json).contains("no network"), "{json}");
}

#[test]
fn a_tunnel_whose_tls_server_name_is_another_host_is_cut() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let port = http_server();
    let allow = format!("allowed.test:{port}");
    // CONNECT allowed.test, then a TLS hello asking for other.test.
    let script = format!(
        "python3 -c \"
import socket, ssl
s = socket.create_connection(('127.0.0.1', 3128))
s.sendall(b'CONNECT allowed.test:{port} HTTP/1.1\\r\\nHost: allowed.test:{port}\\r\\n\\r\\n')
print(s.recv(100).split(b'\\r\\n')[0].decode())
ctx = ssl.create_default_context()
try:
    ctx.wrap_socket(s, server_hostname='other.test')
except Exception as e:
    print('tls failed')
\""
    );
    let (_, json) = exec(&p, &["--allow-host", &allow], false, &script);
    assert_eq!(stdout(&json), "HTTP/1.1 200 OK\ntls failed\n", "{json}");
    let cut = connections(&p, &json);
    assert_eq!(cut[0]["decision"], "deny");
    assert_eq!(cut[0]["sni"], "other.test");
    assert!(
        cut[0]["reason"]
            .as_str()
            .unwrap()
            .contains("may not front for another host")
    );
}

#[test]
fn every_way_around_the_proxy_fails_inside() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let port = http_server();
    let udp = udp_server();
    let probes = [
        (
            "curl --noproxy",
            format!("curl -s -m 5 --noproxy '*' http://127.0.0.1:{port}/ && echo REACHED"),
        ),
        (
            "a raw socket",
            format!(
                "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('REACHED')\""
            ),
        ),
        (
            "bash /dev/tcp",
            format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo REACHED"),
        ),
        (
            "UDP to a resolver",
            format!(
                "python3 -c \"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); s.sendto(b'q', ('127.0.0.1', {udp})); s.recv(10); print('REACHED')\""
            ),
        ),
    ];
    for (what, probe) in &probes {
        assert!(
            unsandboxed(probe).contains("REACHED"),
            "{what} must work without the sandbox"
        );
        let (_, json) = exec(
            &p,
            &["--allow-host", &format!("allowed.test:{port}")],
            false,
            probe,
        );
        assert!(!stdout(&json).contains("REACHED"), "{what} got out: {json}");
    }
    // There is no resolver inside: names resolve only in the proxy.
    let (_, json) = exec(
        &p,
        &["--allow-host", "allowed.test"],
        false,
        "getent hosts allowed.test || echo NO-NAME; \
         python3 -c \"import socket\ntry:\n  socket.getaddrinfo('allowed.test', 80); print('RESOLVED')\nexcept OSError: print('NO-NAME')\"",
    );
    assert_eq!(stdout(&json), "NO-NAME\nNO-NAME\n", "{json}");
}

#[test]
fn package_managers_and_git_go_through_the_proxy() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let port = http_server();
    let mut tools = vec![
        (
            "git",
            format!("git ls-remote http://git.test:{port}/repo.git"),
            "git.test",
        ),
        (
            "pip",
            format!(
                "python3 -m pip download --no-deps -d /tmp/x --trusted-host pypi.test --index-url http://pypi.test:{port}/simple/ left-pad"
            ),
            "pypi.test",
        ),
    ];
    if crate::support::npm() {
        tools.push((
            "npm",
            format!(
                "npm view left-pad --registry http://registry.test:{port}/ --cache /tmp/npm-cache"
            ),
            "registry.test",
        ));
    }
    for (tool, command, host) in tools {
        let allow = format!("{host}:{port}");
        let (_, json) = exec(
            &p,
            &["--allow-host", &allow],
            false,
            &format!("{command} >/dev/null 2>&1; true"),
        );
        let seen = connections(&p, &json);
        assert!(
            seen.iter()
                .any(|c| c["host"] == host && c["decision"] == "allow"),
            "{tool} did not go through the proxy: {seen:?}\n{json}"
        );
    }
}

/// The project's settings for an allowlist run, loopback reachable.
fn allowlist_settings(p: &Project, allowed: &[String]) {
    p.trust();
    let list: Vec<String> = allowed.iter().map(|h| format!("{h:?}")).collect();
    p.write(
        ".warden/settings.toml",
        &format!(
            "[sandbox.network]\nmode = \"allowlist\"\nallowed_domains = [{}]\nblock_private_ranges = false\n",
            list.join(", ")
        ),
    );
}

#[test]
fn an_agent_run_in_allowlist_mode_reaches_only_what_is_listed() {
    use warden_fake_provider::{Call, FakeProvider, openai};
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let port = http_server();
    allowlist_settings(&p, &[format!("allowed.test:{port}")]);
    let curl = |id: &str, host: &str| {
        openai::calls(
            "",
            &[Call::new(
                id,
                "bash",
                &serde_json::json!({"command": format!("curl -s -m 10 http://{host}:{port}/")}),
            )],
            40,
        )
        .fast()
    };
    let server = FakeProvider::start(vec![
        curl("a", "allowed.test"),
        curl("b", "other.test"),
        openai::text("Done.").fast(),
    ]);
    let base = format!("{}/v1", server.url());
    let mut cmd = crate::support::agent_command(&p, &base);
    cmd.env("WARDEN_TEST_RESOLVE", NAMES)
        .args(["--allow", "Bash(curl *)", "fetch both"]);
    let run = finish(&cmd.output().unwrap());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let received = server.received();
    let sent = |n: usize, id: &str| -> Value {
        let body = received[n].json();
        let content = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["tool_call_id"] == id)
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned();
        serde_json::from_str(content.split_once('\n').unwrap().1).unwrap()
    };
    let allowed = sent(1, "a");
    assert!(
        allowed["stdoutSummary"]
            .as_str()
            .unwrap()
            .contains("hello from the test server"),
        "{allowed}"
    );
    assert_eq!(
        allowed["network"],
        serde_json::json!({"allowed": 1, "denied": 0})
    );
    let refused = sent(2, "b");
    assert!(
        refused["stdoutSummary"]
            .as_str()
            .unwrap()
            .contains("not in the allowlist"),
        "{refused}"
    );
    assert_eq!(
        refused["network"],
        serde_json::json!({"allowed": 0, "denied": 1})
    );
    // The system prompt says what the network reaches.
    let system = received[0].json()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("limited to these hosts, through warden's proxy")
            && system.contains(&format!("allowed.test:{port}")),
        "{system}"
    );
    // The session's last event counts them.
    let last = crate::support::events(&run.stdout).pop().unwrap();
    assert_eq!(
        last["network"],
        serde_json::json!({"allowed": 1, "denied": 1}),
        "{last}"
    );
    // Both connections are in the trace, under the run's session.
    let session = crate::support::events(&run.stdout)[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let json = serde_json::json!({"network": {"session": session}});
    let traced = connections(&p, &json);
    assert_eq!(traced.len(), 2, "{traced:?}");
}

#[test]
fn an_unlisted_host_is_put_to_the_person_and_always_writes_the_rule() {
    use warden_fake_provider::{Call, FakeProvider, openai};
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    // A server on port 80 of another loopback address, so that the approval can be a rule.
    let Ok(listener) = TcpListener::bind("127.0.0.2:80") else {
        assert!(
            std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
            "CI runs as root: port 80 must bind"
        );
        return;
    };
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-length: 8\r\nconnection: close\r\n\r\napproved",
            );
        }
    });
    allowlist_settings(&p, &["allowed.test".to_owned()]);
    let curl = |id: &str| {
        openai::calls(
            "",
            &[Call::new(
                id,
                "bash",
                &serde_json::json!({"command": "curl -s -m 10 http://unlisted.test/"}),
            )],
            40,
        )
        .fast()
    };
    let server = FakeProvider::start(vec![curl("a"), curl("b"), openai::text("Done.").fast()]);
    let base = format!("{}/v1", server.url());
    let warden = env!("CARGO_BIN_EXE_warden");
    let run = crate::support::in_a_session_with(
        &p,
        &[("WARDEN_TEST_RESOLVE", "unlisted.test=127.0.0.2")],
        &[
            warden,
            "run",
            "--model",
            "openai/test-model",
            "--base-url",
            &base,
            "--allow",
            "Bash(curl *)",
            "fetch it",
        ],
        &["a"],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("unlisted.test:80"),
        "the person is told the host: {}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("allow? ").count(),
        1,
        "asked once: {}",
        run.stdout
    );
    // Remembered in warden's own file, not the project's.
    assert!(!p.root().join(".warden/settings.local.toml").exists());
    let local = p.remembered();
    assert!(local.contains("WebFetch(domain:unlisted.test)"), "{local}");
    // Both calls reached the server.
    let received = server.received();
    let last = received.last().unwrap().body.clone();
    assert_eq!(last.matches("approved").count(), 2, "{last}");
}
