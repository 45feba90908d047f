//! A session's warm sandbox: commands run in cells of a helper that built the sandbox once. Each
//! command still has its own processes, descriptors, environment and IPC objects; a helper
//! killed between commands is remade, never run around; a kept mount whose mount point the host
//! replaced is never used; the tree a command sees is the one its own sandbox would have made.

use std::collections::BTreeSet;

use super::*;

fn run(
    sandbox: &warden_sandbox::Sandbox,
    ws: &std::path::Path,
    script: &str,
) -> warden_sandbox::Outcome {
    let settings = warden_config::Settings::defaults(ws.to_path_buf());
    let args = ["-c".to_owned(), script.to_owned()];
    let request = warden_sandbox::request_from_settings(&settings, ws, "sh", &args, &[]).unwrap();
    let plan = warden_sandbox::Plan::new(&request).unwrap();
    sandbox.run(&plan, warden_sandbox::Output::Capture).unwrap()
}

fn stdout(outcome: &warden_sandbox::Outcome) -> String {
    String::from_utf8_lossy(&outcome.stdout).into_owned()
}

fn warm(outcome: &warden_sandbox::Outcome) -> bool {
    outcome.layers.iter().any(|l| l == "warm-sandbox")
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.split(") ").nth(1).unwrap_or("").starts_with('Z'))
}

#[test]
fn commands_of_a_warm_sandbox_share_nothing_but_the_workspace_and_tmp_and_a_killed_helper_is_remade()
 {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let ws = p.root().canonicalize().unwrap();
    let sandbox = warden_sandbox::Sandbox::new(env!("CARGO_BIN_EXE_warden")).keep_warm();
    let look = "grep -l sleep /proc/[0-9]*/comm; ls /proc/self/fd | tr '\\n' ' '; echo; \
                echo \"LEAK=${LEAK:-none}\"; ipcs -q | grep -c 0x; cat /tmp/kept; cat kept";
    // The probe: inside one command, what it starts, opens, exports and makes is seen.
    let first = run(
        &sandbox,
        &ws,
        &format!(
            "export LEAK=yes; exec 7</dev/null; sleep 300 & ipcmk -Q >/dev/null; \
             echo tmp > /tmp/kept; echo ws > kept; sleep 0.2; {look}"
        ),
    );
    assert!(warm(&first), "{:?}", first.layers);
    let helper = sandbox.warm_pid().expect("a warm helper is kept");
    let first = stdout(&first);
    assert!(first.contains("/comm") && first.contains(" 7 "), "{first}");
    assert!(first.contains("LEAK=yes\n1\ntmp\nws"), "{first}");

    let second = run(&sandbox, &ws, look);
    assert!(warm(&second), "{:?}", second.layers);
    assert_eq!(
        sandbox.warm_pid(),
        Some(helper),
        "the same helper served it"
    );
    let second = stdout(&second);
    assert!(
        !second.contains("/comm"),
        "a process of the first: {second}"
    );
    assert!(
        !second.contains(" 7 "),
        "a descriptor of the first: {second}"
    );
    // No environment, no message queue of the first; its /tmp and workspace files, by design.
    assert!(second.contains("LEAK=none\n0\ntmp\nws"), "{second}");

    // The helper killed between commands: the next one is sandboxed all the same, in a new one.
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    assert!(
        own.contains("NoNewPrivs:\t0"),
        "the probe: this process is not confined"
    );
    warden_sandbox_kill(helper);
    let third = run(
        &sandbox,
        &ws,
        "grep -E 'NoNewPrivs|Seccomp:' /proc/self/status; hostname",
    );
    assert_eq!(
        third.exit_code,
        0,
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    assert_eq!(stdout(&third), "NoNewPrivs:\t1\nSeccomp:\t2\nwarden\n");
    let fourth = run(&sandbox, &ws, "true");
    assert!(warm(&fourth), "{:?}", fourth.layers);
    let remade = sandbox.warm_pid().expect("a new warm helper");
    assert_ne!(remade, helper);
    sandbox.close();
    assert!(!alive(remade), "the helper ends with the sandbox");
}

fn warden_sandbox_kill(pid: u32) {
    assert!(
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    while alive(pid) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_kept_mount_whose_mount_point_the_host_replaced_is_never_used() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let ws = p.root().canonicalize().unwrap();
    let envrc = ws.join(".envrc");
    std::fs::write(&envrc, "original\n").unwrap();
    let script = "echo evil > .envrc; cat .envrc";
    let outside = sh(&p, script);
    assert_eq!(outside.code, 0, "the probe must work unsandboxed");
    std::fs::write(&envrc, "original\n").unwrap();

    let sandbox = warden_sandbox::Sandbox::new(env!("CARGO_BIN_EXE_warden")).keep_warm();
    let first = run(&sandbox, &ws, script);
    assert!(warm(&first));
    assert_eq!(stdout(&first), "original\n");
    let helper = sandbox.warm_pid().unwrap();
    let kept = |helper: u32| {
        std::fs::read_to_string(format!("/proc/{helper}/mountinfo"))
            .unwrap()
            .lines()
            .any(|l| l.split(' ').nth(4) == Some(envrc.to_str().unwrap()))
    };
    assert!(kept(helper), "the helper's tree keeps .envrc read-only");

    // Replaced on the host: the kernel detaches the helper's mount of the old file.
    std::fs::remove_file(&envrc).unwrap();
    std::fs::write(&envrc, "replaced\n").unwrap();
    assert!(
        !kept(helper),
        "the probe: the kept mount is gone from the helper's tree"
    );
    let second = run(&sandbox, &ws, script);
    assert_eq!(
        stdout(&second),
        "replaced\n",
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert_eq!(std::fs::read_to_string(&envrc).unwrap(), "replaced\n");
    assert!(
        !warm(&second),
        "run in a sandbox of its own: {:?}",
        second.layers
    );
    // The next command gets a new warm helper, with the file kept read-only again.
    let third = run(&sandbox, &ws, script);
    assert!(warm(&third));
    assert_ne!(sandbox.warm_pid(), Some(helper));
    assert_eq!(std::fs::read_to_string(&envrc).unwrap(), "replaced\n");
}

#[test]
fn a_warm_sandbox_shows_the_mounts_its_own_sandbox_would() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    p.write(".env", "SECRET=1\n");
    std::fs::create_dir_all(p.root().join(".git/hooks")).unwrap();
    let mounts = |flags: &[&str]| -> BTreeSet<String> {
        let run = exec(&p, flags, "cat /proc/self/mountinfo");
        let out = run.json();
        assert_eq!(out["exitCode"], 0, "{}", run.stdout);
        // Mount point, options, file system type, source: never ids, which differ.
        out["stdout"]
            .as_str()
            .unwrap()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                let dash = f.iter().position(|x| *x == "-").unwrap();
                format!("{} {} {} {}", f[4], f[5], f[dash + 1], f[dash + 2])
            })
            .collect()
    };
    let own = mounts(&["--backend", "native"]);
    let warm = mounts(&["--backend", "native", "--warm"]);
    assert!(own.iter().any(|m| m.contains("/.git ")), "{own:?}");
    assert_eq!(own, warm);
}

/// Fails without the fix only where warden is not root (the guest's `--user` run): as root the
/// command's id does not own `/dev`'s tmpfs.
#[test]
fn a_command_cannot_change_dev_for_the_next() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let ws = p.root().canonicalize().unwrap();
    let sandbox = warden_sandbox::Sandbox::new(env!("CARGO_BIN_EXE_warden")).keep_warm();
    // The probe: the same replacement in the command's own tmpfs `/tmp` works.
    let swap = |dir: &str| {
        format!(
            "mkdir -p {dir}; rm -f {dir}/stdout; ln -s \"$PWD/sink\" {dir}/stdout && echo swapped-{dir}"
        )
    };
    let probe = run(&sandbox, &ws, &swap("/tmp/dev"));
    assert!(warm(&probe), "{:?}", probe.layers);
    assert!(
        stdout(&probe).contains("swapped-/tmp/dev"),
        "{}",
        stdout(&probe)
    );
    let first = run(
        &sandbox,
        &ws,
        &format!(
            "{}; rm -f /dev/fd; mkdir /dev/fd; echo x > /dev/ptmx; echo done",
            swap("/dev")
        ),
    );
    let first = stdout(&first);
    assert!(
        first.contains("done") && !first.contains("swapped-/dev"),
        "{first}"
    );
    // The next command's `/dev` is as it was made: its output reaches its own stdout.
    let next = run(
        &sandbox,
        &ws,
        "readlink /dev/stdout /dev/fd; test -e /dev/ptmx || echo no-ptmx",
    );
    assert!(warm(&next), "{:?}", next.layers);
    let next = stdout(&next);
    assert_eq!(next, "/proc/self/fd/1\n/proc/self/fd\nno-ptmx\n");
}

/// Fails without the command's own session only where warden is not root (the guest's `--user`
/// run): as root the command's id may not signal warden's.
#[test]
fn kill_zero_in_a_command_reaches_only_the_command() {
    use std::os::unix::process::CommandExt as _;
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    // The probe: without a sandbox, `kill 0` in a child reaches its parent's process group.
    let outside = std::process::Command::new("sh")
        .args(["-c", "sh -c 'kill -TERM 0'; echo parent-survived"])
        .process_group(0)
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&outside.stdout).contains("parent-survived"),
        "the probe must reach the parent unsandboxed"
    );
    // In a sandbox of its own, and in a warm one, warden outlives it and reports the signal.
    for warm in [false, true] {
        let mut args = vec!["exec", "--json"];
        if warm {
            args.push("--warm");
        }
        // Not as PID 1, which ignores the signals it has no handler for.
        args.extend([
            "--",
            "sh",
            "-c",
            "sh -c 'kill -TERM 0; sleep 5; echo not-killed'; echo outer-$?",
        ]);
        let out = p.command().args(&args).process_group(0).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        // warden itself was not signalled: it exits with the command's status, after its JSON.
        assert!(out.status.code().is_some(), "warm {warm}: {:?}", out.status);
        let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(result["stdout"], "outer-143\n", "warm {warm}: {result}");
    }
}
