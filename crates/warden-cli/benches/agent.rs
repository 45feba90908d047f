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
    let mut replies: Vec<Reply> = (1..turns)
        .map(|i| {
            let id = format!("g{i}");
            let call = Call {
                id: Box::leak(id.into_boxed_str()),
                name: "glob",
                arguments: json!({"pattern": "src/*.rs"}).to_string(),
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
    let time = |turns: usize| {
        let server = FakeProvider::start(script(turns));
        let started = Instant::now();
        let status = command(&server.url()).status().unwrap();
        assert!(status.success(), "warden run failed");
        assert_eq!(server.received().len(), turns);
        started.elapsed().as_secs_f64() * 1000.0
    };
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
