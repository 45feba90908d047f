//! Resource limits bind the whole sandbox, through the cgroup hierarchy the host has: v2 on
//! current distributions (tested in a guest on Debian's own kernel, as root and as a user, by
//! `.ci/run`), v1 here. Each test first shows the probe works outside the sandbox.

use std::process::Command;

use crate::support::{Project, Run, finish, sandbox_available};

fn sh(p: &Project, script: &str) -> Run {
    finish(
        &Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(p.root())
            .output()
            .unwrap(),
    )
}

fn exec(p: &Project, flags: &[&str], script: &str) -> Run {
    let mut args = vec!["exec", "--json"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    p.run(&args)
}

/// How the run bound `limit`, as `sandbox.limits` says.
fn bound_by(run: &Run, limit: &str) -> String {
    let json = run.json();
    let limits = json["sandbox"]["limits"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    limits
        .iter()
        .find(|b| b["limit"] == limit)
        .and_then(|b| b["by"].as_str())
        .unwrap_or("none")
        .to_owned()
}

/// Whether whole-sandbox limits can be had here: in CI (`WARDEN_REQUIRE_KERNEL`) they must.
fn groups_available(p: &Project) -> bool {
    if !sandbox_available(p) {
        return false;
    }
    let run = exec(p, &["--memory", "512"], "true");
    if run.code == 0 {
        return true;
    }
    assert!(
        std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
        "whole-sandbox limits are required here: {}",
        run.stderr
    );
    eprintln!("skipping: no cgroup can hold a limit here: {}", run.stderr);
    false
}

#[test]
fn a_command_runs_and_its_limits_bind_the_whole_sandbox() {
    let p = Project::new();
    if !groups_available(&p) {
        return;
    }
    let run = exec(
        &p,
        &["--memory", "256", "--pids", "64", "--cpus", "1"],
        "echo ran",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["stdout"], "ran\n");
    for limit in ["memory", "processes", "cpu"] {
        let by = bound_by(&run, limit);
        assert!(
            by.starts_with("cgroup-v"),
            "{limit} bound by {by}: {}",
            run.stdout
        );
    }
    assert_eq!(bound_by(&run, "file-size"), "rlimit");
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

#[test]
fn a_memory_bomb_is_held() {
    let p = Project::new();
    if !groups_available(&p) {
        return;
    }
    // 2 GB, every page of it written.
    let bomb = "python3 -c \"b = b'x' * (2000 << 20); print(len(b))\"";
    assert_eq!(sh(&p, bomb).code, 0, "the bomb must work unsandboxed");
    let run = exec(&p, &["--memory", "128"], bomb);
    assert_ne!(run.code, 0, "{}", run.stdout);
    if let Some(peak) = run.json()["usage"]["memoryPeakKb"].as_u64() {
        assert!(peak <= 128 * 1024, "peak {peak} KiB");
    }
}

#[test]
fn processes_share_one_memory_limit() {
    let p = Project::new();
    if !groups_available(&p) {
        return;
    }
    // Four processes of 60 MB each at once: under a limit per process of 128 MB all finish.
    let four = "for i in 1 2 3 4; do python3 -c \"import time; b = b'x' * (60 << 20); \
                time.sleep(2); print('done')\" & done; wait";
    let control = sh(&p, four);
    assert_eq!(
        control.stdout.matches("done").count(),
        4,
        "{}",
        control.stderr
    );
    let run = exec(&p, &["--memory", "128"], four);
    let done = run.json()["stdout"]
        .as_str()
        .unwrap()
        .matches("done")
        .count();
    assert!(
        done < 4,
        "all four finished under one limit of 128 MB: {}",
        run.stdout
    );
    assert!(
        bound_by(&run, "memory").starts_with("cgroup-v"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_fork_bomb_is_held() {
    let p = Project::new();
    if !groups_available(&p) {
        return;
    }
    let marker = "14142";
    let forks = format!(
        "pids=''; for i in $(seq 400); do sleep {marker} >/dev/null 2>&1 & pids=\"$pids $!\"; \
         done; echo started; kill $pids"
    );
    let control = sh(&p, &forks);
    assert!(control.stdout.contains("started"), "{}", control.stderr);
    let run = exec(&p, &["--pids", "32"], &forks);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        !run.json()["stdout"].as_str().unwrap().contains("started"),
        "{}",
        run.stdout
    );
    assert!(
        bound_by(&run, "processes").starts_with("cgroup-v"),
        "{}",
        run.stdout
    );
    assert_eq!(pgrep(&format!("sleep {marker}")), "");
}

#[test]
fn a_cpu_quota_throttles_a_busy_loop() {
    let p = Project::new();
    if !groups_available(&p) {
        return;
    }
    let busy = "timeout 2 sh -c 'while :; do :; done'; true";
    // Without a quota nothing is throttled: the count is what the quota adds.
    let free = exec(&p, &[], busy);
    assert_eq!(free.code, 0, "{}", free.stderr);
    let throttled = |run: &Run| {
        run.json()["usage"]["throttledPeriods"]
            .as_u64()
            .unwrap_or(0)
    };
    assert_eq!(throttled(&free), 0, "{}", free.stdout);
    let run = exec(&p, &["--cpus", "0.5"], busy);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(throttled(&run) > 0, "{}", run.stdout);
    assert!(
        bound_by(&run, "cpu").starts_with("cgroup-v"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_daemon_dies_with_the_command() {
    let p = Project::new();
    if !groups_available(&p) {
        return;
    }
    let marker = "16180";
    let daemon = format!("setsid sh -c 'sleep {marker}' >/dev/null 2>&1 < /dev/null & echo left");
    // Unsandboxed it outlives the shell that started it.
    assert!(sh(&p, &daemon).stdout.contains("left"));
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_ne!(
        pgrep(&format!("sleep {marker}")),
        "",
        "the daemon must outlive its shell"
    );
    let _ = Command::new("pkill")
        .args(["-f", &format!("sleep {marker}")])
        .status();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let run = exec(&p, &["--memory", "256"], &daemon);
    assert_eq!(run.code, 0, "{}", run.stderr);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(
        pgrep(&format!("sleep {marker}")),
        "",
        "the daemon outlived the sandbox"
    );
}

#[test]
fn a_killed_warden_leaves_no_cgroup_behind() {
    let p = Project::new();
    if !groups_available(&p) {
        return;
    }
    // A warden killed with SIGKILL cannot remove its groups: the next command does.
    let mut warden = p.command();
    warden.args(["exec", "--memory", "256", "--", "sleep", "31"]);
    let mut child = warden.spawn().unwrap();
    let pid = child.id();
    let mut left = Vec::new();
    for _ in 0..100 {
        left = groups_of(pid);
        if !left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!left.is_empty(), "warden {pid} made no group");
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        !groups_of(pid).is_empty(),
        "the killed warden's groups must be left at first"
    );
    let run = p.run(&["manifest", "reap"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        groups_of(pid),
        Vec::<std::path::PathBuf>::new(),
        "{}",
        run.stdout
    );
}

/// The groups a warden of `pid` made, anywhere under /sys/fs/cgroup.
fn groups_of(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("warden-{pid}-");
    let mut found = Vec::new();
    let mut stack = vec![std::path::PathBuf::from("/sys/fs/cgroup")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(entry.path());
            } else {
                stack.push(entry.path());
            }
        }
    }
    found
}

fn pgrep(pattern: &str) -> String {
    finish(
        &Command::new("pgrep")
            .args(["-f", pattern])
            .output()
            .unwrap(),
    )
    .stdout
    .trim()
    .to_owned()
}
