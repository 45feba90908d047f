//! A session's spare helper: started after each command for the next, it leaves nothing of one
//! command to the next (processes, descriptors, environment), serves only a command with the
//! limits it was made for, and one killed while it waits is replaced, never run around.

use std::time::{Duration, Instant};

use super::*;

/// Runs `script` in `sandbox` under `settings`' request, with `memory_mb` as the memory limit.
fn run(
    sandbox: &warden_sandbox::Sandbox,
    ws: &std::path::Path,
    script: &str,
    memory_mb: u64,
) -> warden_sandbox::Outcome {
    let settings = warden_config::Settings::defaults(ws.to_path_buf());
    let args = ["-c".to_owned(), script.to_owned()];
    let mut request =
        warden_sandbox::request_from_settings(&settings, ws, "sh", &args, &[]).unwrap();
    request.limits.memory_mb = Some(memory_mb);
    let plan = warden_sandbox::Plan::new(&request).unwrap();
    sandbox.run(&plan, warden_sandbox::Output::Capture).unwrap()
}

/// Waits (up to ten seconds) until `pid` has ended, not only been signalled: a plan handed to a
/// helper still dying is a command that fails closed ("ended without a status").
fn dead(pid: u32) {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until
        && std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.split(") ").nth(1).unwrap_or("").starts_with('Z'))
    {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The spare waiting now, after waiting up to ten seconds for one other than `not`.
fn spare_other_than(sandbox: &warden_sandbox::Sandbox, not: Option<u32>) -> u32 {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = sandbox.spare_pid().filter(|p| Some(*p) != not) {
            return pid;
        }
        assert!(Instant::now() < until, "no spare helper was started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.split(") ").nth(1).unwrap_or("").starts_with('Z'))
}

fn stdout(outcome: &warden_sandbox::Outcome) -> String {
    String::from_utf8_lossy(&outcome.stdout).into_owned()
}

#[test]
fn a_spare_helper_leaves_nothing_of_one_command_to_the_next_and_a_killed_one_is_replaced() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let ws = p.root().canonicalize().unwrap();
    let sandbox = warden_sandbox::Sandbox::new(env!("CARGO_BIN_EXE_warden")).keep_spare();
    assert_eq!(sandbox.spare_pid(), None, "none before the first command");
    let look = "grep -l sleep /proc/[0-9]*/comm; ls /proc/self/fd | tr '\\n' ' '; \
                echo; echo \"LEAK=${LEAK:-none}\"";
    // The probe: inside one command, what it starts and leaves open is seen.
    let first = run(
        &sandbox,
        &ws,
        &format!("export LEAK=yes; exec 7</dev/null; sleep 300 & sleep 0.2; {look}"),
        256,
    );
    let first = stdout(&first);
    assert!(first.contains("/comm"), "the probe sees its sleep: {first}");
    assert!(
        first.contains(" 7 ") && first.contains("LEAK=yes"),
        "{first}"
    );
    // The next command runs in the spare started after the first.
    let spare = spare_other_than(&sandbox, None);
    let second = stdout(&run(&sandbox, &ws, look, 256));
    assert!(
        !alive(spare),
        "the spare served the command and ended with it"
    );
    assert!(
        !second.contains("/comm"),
        "a process of the first: {second}"
    );
    assert!(
        !second.contains(" 7 "),
        "a descriptor of the first: {second}"
    );
    assert!(second.contains("LEAK=none"), "{second}");

    // A spare killed while it waits: the next command still runs, sandboxed, in a new helper.
    let spare = spare_other_than(&sandbox, Some(spare));
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    assert!(
        own.contains("NoNewPrivs:\t0"),
        "the probe: this process is not confined"
    );
    assert!(
        std::process::Command::new("kill")
            .args(["-9", &spare.to_string()])
            .status()
            .unwrap()
            .success()
    );
    dead(spare);
    let third = run(&sandbox, &ws, "cat /proc/self/status; hostname", 256);
    assert_eq!(
        third.exit_code,
        0,
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    let third = stdout(&third);
    assert!(
        third.contains("NoNewPrivs:\t1") && third.contains("Seccomp:\t2"),
        "{third}"
    );
    assert!(
        third.trim_end().ends_with("warden"),
        "its own host name: {third}"
    );

    // A command with other limits does not take the spare made for these: it gets its own.
    let spare = spare_other_than(&sandbox, Some(spare));
    let other = run(&sandbox, &ws, "true", 128);
    assert!(
        other
            .limits
            .iter()
            .any(|b| serde_json::to_string(b).unwrap().contains("128 MiB")),
        "{:?}",
        other.limits
    );
    assert!(
        !alive(spare),
        "the mismatched spare is ended, not left waiting"
    );

    // The last spare ends with the sandbox, its cgroups removed.
    let spare = spare_other_than(&sandbox, Some(spare));
    let groups: Vec<String> = std::fs::read_to_string(format!("/proc/{spare}/cgroup"))
        .unwrap()
        .lines()
        .filter_map(|l| {
            l.rsplit(':')
                .next()
                .filter(|g| g.contains("warden-"))
                .map(str::to_owned)
        })
        .collect();
    drop(sandbox);
    assert!(!alive(spare));
    for g in groups {
        let gone = ["pids", "memory", "unified", ""]
            .iter()
            .all(|c| !std::path::Path::new(&format!("/sys/fs/cgroup/{c}{g}")).exists());
        assert!(gone, "{g} left behind");
    }
}
