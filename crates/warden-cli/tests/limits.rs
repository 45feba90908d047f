//! Resource limits bind the whole sandbox, through the cgroup hierarchy the host has: v2 on
//! current distributions (tested in a guest on Debian's own kernel, as root and as a user, by
//! `.ci/run`), v1 here. Each test first shows the probe works outside the sandbox.

use std::process::Command;

use crate::support::{Project, Run, exec, finish, sandbox_available, sh};

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
    // A slow machine may take a while to start it.
    let mut outlived = false;
    for _ in 0..200 {
        if !pgrep(&format!("sleep {marker}")).is_empty() {
            outlived = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(outlived, "the daemon must outlive its shell");
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
    for _ in 0..1200 {
        left = groups_of(pid);
        if !left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!left.is_empty(), "warden {pid} made no group");
    child.kill().unwrap();
    child.wait().unwrap();
    // Whichever comes first removes them: the next command in the same base (another test's,
    // running beside this one), systemd with its scope, or the reaper.
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
            let name = entry.file_name().to_string_lossy().into_owned();
            // A transient scope of systemd's is named after warden too: its groups are inside.
            if name.starts_with(&prefix) && !is_scope(&name) {
                found.push(entry.path());
            } else {
                stack.push(entry.path());
            }
        }
    }
    found
}

/// Whether a cgroup's name is a systemd scope's.
fn is_scope(name: &str) -> bool {
    std::path::Path::new(name)
        .extension()
        .is_some_and(|e| e == "scope")
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

/// Whether the unified hierarchy is at /sys/fs/cgroup, as root: where the next tests make
/// cgroups of their own. They run in the guest (`guest/test`, which sets `WARDEN_GUEST`) on
/// every CI run; on a v1 host there is nothing to test.
fn v2_as_root(p: &Project) -> bool {
    let v2 = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    if v2 && crate::support::is_root() {
        return groups_available(p);
    }
    assert!(
        std::env::var_os("WARDEN_GUEST").is_none() || !crate::support::is_root(),
        "the guest is cgroup v2: this test must run there"
    );
    eprintln!("skipping: not root on a cgroup v2 host (guest/test runs this)");
    false
}

/// `warden exec … -- cat /proc/self/cgroup`, started from a shell that first moves itself into
/// `group`; with `alone`, the shell becomes warden (so warden is alone in the group).
fn from_group(p: &Project, group: &std::path::Path, alone: bool) -> Run {
    let warden = env!("CARGO_BIN_EXE_warden");
    let start = if alone { "exec " } else { "" };
    let script = format!(
        "echo $$ > {}/cgroup.procs && {start}{warden} exec --json --memory 128 -- cat /proc/self/cgroup; exit $?",
        group.display()
    );
    finish(
        &Command::new("sh")
            .args(["-c", &script])
            .current_dir(p.root())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &p.home)
            .env("XDG_CONFIG_HOME", p.home.join(".config"))
            .env("WARDEN_HOME", p.home.join("warden"))
            .output()
            .unwrap(),
    )
}

#[test]
fn a_warden_alone_in_its_cgroup_moves_into_a_leaf_and_groups_commands_beside_it() {
    let p = Project::new();
    if !v2_as_root(&p) {
        return;
    }
    let root = std::path::Path::new("/sys/fs/cgroup");
    std::fs::write(root.join("cgroup.subtree_control"), "+memory +pids +cpu").unwrap();
    let name = format!("test-alone-{}", std::process::id());
    let group = root.join(&name);
    let crowded = root.join(format!("{name}-crowded"));
    std::fs::create_dir_all(&group).unwrap();
    std::fs::create_dir_all(&crowded).unwrap();
    // Under systemd, a group is warden's only once handed over, as systemd marks the groups it
    // delegates.
    if std::path::Path::new("/run/systemd/system").is_dir() {
        let mark = format!(
            "import os; os.setxattr({:?}, 'trusted.delegate', b'1')",
            group.display().to_string()
        );
        assert!(
            Command::new("python3")
                .args(["-c", &mark])
                .status()
                .unwrap()
                .success()
        );
    }
    // With the shell that started it beside it, its own group cannot have children with
    // controllers: the command's group goes elsewhere (under the hierarchy's root, or in a
    // scope systemd delegates).
    let run = from_group(&p, &crowded, false);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let inside = run.json()["stdout"].as_str().unwrap().trim().to_owned();
    assert!(
        !inside.starts_with(&format!("0::/{name}-crowded/")),
        "{inside}"
    );
    assert!(
        inside.rsplit('/').next().unwrap().starts_with("warden-"),
        "{inside}"
    );
    // Alone, it moves into a leaf of its own group and puts the command's group beside it.
    let run = from_group(&p, &group, true);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let inside = run.json()["stdout"].as_str().unwrap().trim().to_owned();
    assert!(
        inside.starts_with(&format!("0::/{name}/warden-")),
        "{inside}"
    );
    let leaves: Vec<String> = std::fs::read_dir(&group)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("warden-"))
        .collect();
    assert!(leaves.iter().any(|n| n.ends_with("-self")), "{leaves:?}");
    // Only the leaf warden left itself in is left: the command's group is gone.
    assert_eq!(leaves.len(), 1, "{leaves:?}");
    for leaf in leaves {
        std::fs::remove_dir(group.join(leaf)).unwrap();
    }
    std::fs::remove_dir(&group).unwrap();
    std::fs::remove_dir(&crowded).unwrap();
}

#[test]
fn without_a_cgroup_nothing_runs_unless_the_user_chose_per_process_limits() {
    let p = Project::new();
    if !groups_available(&p) || !crate::support::is_root() {
        return;
    }
    let warden = env!("CARGO_BIN_EXE_warden");
    let fallback = p.tmp().join("fallback.toml");
    std::fs::write(&fallback, "[sandbox.limits]\nfallback = \"rlimits\"\n").unwrap();
    // In a mount namespace whose /sys/fs/cgroup is an empty tmpfs: no hierarchy at all.
    let hidden = |settings: &str| {
        let script = format!(
            "mount -t tmpfs none /sys/fs/cgroup && {warden} exec --json {settings} --memory 128 \
             -- touch ran"
        );
        let run = finish(
            &Command::new("unshare")
                .args(["-m", "--propagation", "private", "sh", "-c", &script])
                .current_dir(p.root())
                .env("HOME", &p.home)
                .env("XDG_CONFIG_HOME", p.home.join(".config"))
                .env("WARDEN_HOME", p.home.join("warden"))
                .output()
                .unwrap(),
        );
        let ran = p.root().join("ran").exists();
        let _ = std::fs::remove_file(p.root().join("ran"));
        (run, ran)
    };
    let (run, ran) = hidden("");
    assert_eq!(run.code, 126, "{}", run.stderr);
    assert!(!ran);
    assert!(
        run.stderr.contains("memory") && run.stderr.contains("fallback"),
        "{}",
        run.stderr
    );
    let (run, ran) = hidden(&format!("--settings {}", fallback.display()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(ran);
    assert!(run.stderr.contains("warning: limits:"), "{}", run.stderr);
    assert_eq!(bound_by(&run, "memory"), "rlimit", "{}", run.stdout);
    assert_eq!(bound_by(&run, "processes"), "rlimit", "{}", run.stdout);
    let warnings = &run.json()["sandbox"]["warnings"];
    assert!(
        warnings[0].as_str().unwrap().contains("each process"),
        "{warnings}"
    );
}
