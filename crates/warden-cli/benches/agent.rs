//! The agent loop's own cost: `warden run` whole-process, against a scripted provider on
//! loopback that answers at once, with 1 turn (the baseline: start-up, settings, first request,
//! the end) and with 51 turns of one tool call each (a session of over 100 messages). The
//! difference per turn is warden's overhead per turn, model latency excluded. Then the resident
//! memory of `warden run` while it waits for the model.
//!
//! `cargo bench -p warden-cli --bench agent`
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::cast_precision_loss)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use warden_fake_provider::{Call, FakeProvider, Reply, openai};

fn script(turns: usize) -> Vec<Reply> {
    calls(turns, "glob", &json!({"pattern": "src/*.rs"}))
}

/// `turns` turns: each but the last a call of `tool` with `arguments`, the last an answer.
fn calls(turns: usize, tool: &'static str, arguments: &serde_json::Value) -> Vec<Reply> {
    let mut replies: Vec<Reply> = (1..turns)
        .map(|i| {
            let id = format!("g{i}");
            let call = Call {
                id: Box::leak(id.into_boxed_str()),
                name: tool,
                arguments: arguments.to_string(),
            };
            openai::calls("Looking.", &[call], 64).fast()
        })
        .collect();
    replies.push(openai::text("Done.").fast());
    replies
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    for i in 0..20 {
        std::fs::write(project.join(format!("src/m{i}.rs")), "fn f() {}\n").unwrap();
    }
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let warden = env!("CARGO_BIN_EXE_warden");
    let command = |url: &str| {
        let mut cmd = Command::new(warden);
        cmd.current_dir(&project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("WARDEN_HOME", home.join("warden"))
            .args(["run", "--json", "--model", "openai/bench", "--base-url"])
            .arg(format!("{url}/v1"))
            .arg("go")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    };
    let time_script = |replies: Vec<Reply>| {
        let turns = replies.len();
        let server = FakeProvider::start(replies);
        let started = Instant::now();
        let status = command(&server.url()).status().unwrap();
        assert!(status.success(), "warden run failed");
        assert_eq!(server.received().len(), turns);
        started.elapsed().as_secs_f64() * 1000.0
    };
    let time = |turns: usize| time_script(script(turns));
    let rounds = 7;
    let mut one = Vec::new();
    let mut many = Vec::new();
    for _ in 0..rounds {
        one.push(time(1));
        many.push(time(51));
    }
    let (one, many) = (median(one), median(many));
    let per_turn = (many - one) / 50.0;
    println!("warden run, whole process, median of {rounds}:");
    println!("  1 turn (baseline)              {one:8.1} ms");
    println!(
        "  51 turns, one tool call each   {many:8.1} ms   ratio {:.1}",
        many / one
    );
    println!(
        "  overhead per turn              {per_turn:8.2} ms   (target 5 ms, ratio {:.2})",
        per_turn / 5.0
    );

    // A sandboxed command inside a running session: 51 turns of `bash true` against 51 of
    // `readFile`, the difference per call, beside one-shot bubblewrap with the same isolation.
    let (mut bash, mut read, mut bwrap) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        // The model takes 20 ms a turn in both, as a model takes a while: the next command's
        // helper is started meanwhile.
        let slow = |replies: Vec<Reply>| -> Vec<Reply> {
            replies
                .into_iter()
                .map(|r| r.delayed(Duration::from_millis(20)))
                .collect()
        };
        let bash_call = json!({"command": "true"});
        let read_call = json!({"path": "src/m0.rs"});
        bash.push(time_script(slow(calls(51, "bash", &bash_call))));
        read.push(time_script(slow(calls(51, "readFile", &read_call))));
        bwrap.extend((0..5).filter_map(|_| one_shot_bwrap(&project)));
    }
    let per_call = (median(bash) - median(read)) / 50.0;
    if bwrap.is_empty() {
        println!(
            "  bash true in a session          {per_call:8.2} ms a call (no bwrap to compare)"
        );
    } else {
        let bwrap = median(bwrap);
        println!(
            "  bash true in a session          {per_call:8.2} ms a call beyond readFile's; \
             one-shot bwrap {bwrap:.2} ms, ratio {:.2} (target 0.5)",
            per_call / bwrap
        );
    }

    // Resident memory while the model thinks.
    let server = FakeProvider::start(vec![openai::text("Done.").delayed(Duration::from_secs(2))]);
    let mut child = command(&server.url()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let rss_kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    child.wait().unwrap();
    println!(
        "  idle resident memory           {:8.1} MB   (target 30 MB, ratio {:.2})",
        rss_kb / 1024.0,
        rss_kb / 1024.0 / 30.0
    );
}

/// One `bwrap` run of `true` with warden's isolation (every namespace, `/` read-only, the
/// workspace writable, no capabilities, a clean environment), in milliseconds; `None` without
/// bwrap.
fn one_shot_bwrap(workspace: &std::path::Path) -> Option<f64> {
    let started = Instant::now();
    let status = Command::new("bwrap")
        .args([
            "--unshare-all",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--bind",
        ])
        .arg(workspace)
        .arg(workspace)
        .args([
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--cap-drop",
            "ALL",
            "--clearenv",
            "true",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    status
        .success()
        .then(|| started.elapsed().as_secs_f64() * 1000.0)
}
