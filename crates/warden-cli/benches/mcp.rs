//! MCP: the latency warden adds to a tool call (its schema check, the policy, the pin check,
//! the trace) over the same call made with the client alone, over stdio and over streamable
//! HTTP, and what starting a server inside the sandbox costs over starting it plainly, beside
//! what bubblewrap costs over a plain start.
//! Needs npm's server-everything in `target/mcp-peers` (see the README) and `bwrap`.
//!
//! `cargo bench -p warden-cli --bench mcp`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::json;
use warden_config::{McpServer, PermissionMode, Settings};
use warden_mcp::{Launch, Server};
use warden_policy::Engine;
use warden_protocol::{SessionId, ToolStatus};
use warden_tools::{McpServers, Registry, ToolContext, ToolRunner};

fn main() {
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-peers");
    let script = peers.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !script.exists() {
        println!("skipped: {} is not installed", script.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let stdio = settings(&root, &script, &peers.join("node_modules"), false);
    calls(&root, &stdio, "stdio");
    let (_server, url) = serve_http(&script);
    let mut http = stdio.clone();
    http.mcp
        .servers
        .insert("everything".to_owned(), McpServer::http(url));
    calls(&root, &http, "streamable HTTP");
    starts(&root);
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn settings(root: &Path, script: &Path, modules: &Path, sandbox: bool) -> Settings {
    let mut settings = Settings::defaults(root.to_path_buf());
    settings.permissions.mode = PermissionMode::Default;
    settings.permissions.allow = vec!["Mcp(everything)".to_owned()];
    settings.dirs.data_dir = Some(root.join("data"));
    settings.mcp.servers.insert(
        "everything".to_owned(),
        McpServer {
            tool_timeout_seconds: 30,
            sandbox,
            allow_read: vec![modules.to_path_buf()],
            ..McpServer::stdio(
                "node",
                vec![script.display().to_string(), "stdio".to_owned()],
            )
        },
    );
    settings
}

/// server-everything serving streamable HTTP on a free port of loopback (killed when dropped),
/// and its address.
fn serve_http(script: &Path) -> (Killed, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (Killed(child), format!("http://127.0.0.1:{port}/mcp"))
}

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `echo` called with the client alone and through warden's runner (rule, pin, trace), in
/// alternating rounds of 50 calls; medians per call.
fn calls(root: &Path, settings: &Settings, transport: &str) {
    let server = &settings.mcp.servers["everything"];
    let direct = Server::start(Launch::from_settings("everything", server, root)).unwrap();
    let ctx = ToolContext::from_settings(settings).unwrap();
    let mut registry = Registry::builtin().unwrap();
    let servers = McpServers::start(&ctx, &mut registry);
    let engine = Engine::from_settings(settings).unwrap();
    let store = warden_trace::TraceStore::open(&root.join("trace.db")).unwrap();
    let mut runner =
        ToolRunner::new(&registry, &ctx, &engine, Some(&store), SessionId::new()).unwrap();
    let args = json!({"message": "hello"});
    let (mut plain, mut through) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        for _ in 0..50 {
            let t = Instant::now();
            direct.call("echo", args.clone()).unwrap();
            plain.push(t.elapsed().as_secs_f64() * 1e3);
        }
        for _ in 0..50 {
            let t = Instant::now();
            let result = runner.run("mcp__everything__echo", args.clone()).unwrap();
            through.push(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(result.status, ToolStatus::Ok, "{result:?}");
        }
    }
    let (plain, through) = (median(plain), median(through));
    println!(
        "MCP call ({transport}, server-everything echo), median of 1,000 each:\n  \
         client alone {plain:.3} ms, through warden {through:.3} ms: warden adds {:.3} ms \
         (target 1 ms), ratio {:.2}",
        through - plain,
        through / plain
    );
    drop(servers);
}

/// A minimal server (a Python script answering `initialize`) started and initialised plainly
/// and inside the sandbox, and `true` plainly and under bubblewrap; medians of 15 each.
fn starts(root: &Path) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/hostile.py");
    let description = root.join("description.txt");
    std::fs::write(&description, "Looks a word up.").unwrap();
    let mut settings = Settings::defaults(root.to_path_buf());
    // A data directory, as every user has: the sandbox keeps its index of the home's
    // toolchains there (without one, each start walks them whole).
    settings.dirs.data_dir = Some(root.join("data"));
    // The interpreter itself: a version manager's shim on PATH would be timed, not it.
    let server = McpServer {
        tool_timeout_seconds: 30,
        sandbox: false,
        allow_read: vec![script.parent().unwrap().to_path_buf(), description.clone()],
        ..McpServer::stdio(
            "/usr/bin/python3",
            vec![
                script.display().to_string(),
                description.display().to_string(),
            ],
        )
    };
    let time_start = |sandbox: bool, settings: &mut Settings| {
        settings.mcp.servers.insert(
            "hostile".to_owned(),
            McpServer {
                sandbox,
                ..server.clone()
            },
        );
        let ctx = ToolContext::from_settings(settings)
            .unwrap()
            .with_sandbox_helper(PathBuf::from(env!("CARGO_BIN_EXE_warden")));
        let mut registry = Registry::new();
        let t = Instant::now();
        let started = McpServers::start(&ctx, &mut registry);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(started.len(), 1, "{:?}", started.problems);
        ms
    };
    let (mut plain, mut boxed, mut bare, mut bwrap) = (vec![], vec![], vec![], vec![]);
    for _ in 0..15 {
        plain.push(time_start(false, &mut settings));
        boxed.push(time_start(true, &mut settings));
        bare.push(run_ms(Command::new("true")));
        let mut command = Command::new("bwrap");
        command
            .args(["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/"])
            .args([
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "--cap-drop",
                "ALL",
                "--clearenv",
            ])
            .arg("true");
        bwrap.push(run_ms(command));
    }
    let (plain, boxed, bare, bwrap) = (median(plain), median(boxed), median(bare), median(bwrap));
    println!(
        "MCP server start (a Python server, to initialised), median of 15:\n  \
         plain {plain:.1} ms, in warden's sandbox {boxed:.1} ms: the sandbox adds {:.1} ms; \
         bubblewrap adds {:.1} ms to `true` ({bare:.1} → {bwrap:.1} ms); target: the sandbox's \
         cost at most bubblewrap's + 5 ms",
        boxed - plain,
        bwrap - bare
    );
}

fn run_ms(mut command: Command) -> f64 {
    let t = Instant::now();
    let status = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    t.elapsed().as_secs_f64() * 1e3
}
