//! The sandbox, end to end through `warden exec`. Every escape test first shows the probe works
//! without the sandbox, then that it fails inside.

mod escapes;
mod spare;
mod warm;

use std::process::Command;

use crate::support::{
    Project, backends, exec_both as exec, finish, on_a_terminal, sandbox_available, sh,
};

#[test]
fn a_command_runs_in_the_workspace_with_its_output_and_exit_code() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    p.write("name.txt", "warden\n");
    let run = exec(&p, &[], "cat name.txt; echo oops >&2; exit 3");
    assert_eq!(run.code, 3, "{}", run.stderr);
    let out = run.json();
    assert_eq!(out["exitCode"], 3);
    assert_eq!(out["stdout"], "warden\n");
    assert_eq!(out["stderr"], "oops\n");
    assert_eq!(out["timedOut"], false);
    let layers: Vec<&str> = out["sandbox"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    for layer in [
        "user-namespace",
        "mount-namespace",
        "pid-namespace",
        "network-namespace",
        "seccomp",
        "no-new-privs",
    ] {
        assert!(layers.contains(&layer), "{layer} missing from {layers:?}");
    }
    // Without --json the streams pass through and the exit code is the command's.
    let run = p.run(&["exec", "--", "sh", "-c", "echo plain; exit 7"]);
    assert_eq!((run.code, run.stdout.as_str()), (7, "plain\n"));
}

#[test]
fn the_home_directory_is_hidden_and_its_secrets_never_reach_the_output() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let probe = p.home.join("Private/sandbox-probe.txt");
    std::fs::create_dir_all(probe.parent().unwrap()).unwrap();
    std::fs::write(&probe, "PROBE-CONTENT-4711\n").unwrap();
    let script = format!("cat {}", probe.display());
    assert!(
        sh(&p, &script).stdout.contains("PROBE-CONTENT-4711"),
        "the probe must work unsandboxed"
    );
    let run = exec(&p, &[], &script);
    assert_ne!(run.code, 0);
    assert!(
        run.json()["stderr"]
            .as_str()
            .unwrap()
            .contains("No such file"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("PROBE-CONTENT") && !run.stderr.contains("PROBE-CONTENT"));
}

#[test]
fn writes_outside_the_workspace_do_not_reach_the_host() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let outside = p.tmp().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let target = outside.join("written.txt");
    let script = format!("echo x > {}", target.display());
    assert_eq!(sh(&p, &script).code, 0);
    assert!(target.exists(), "the probe must work unsandboxed");
    std::fs::remove_file(&target).unwrap();
    exec(&p, &[], &script);
    assert!(!target.exists());
    // Nor through a symlink planted in the workspace.
    std::os::unix::fs::symlink(&outside, p.root().join("link")).unwrap();
    exec(&p, &[], "echo x > link/through-link.txt");
    assert!(!outside.join("through-link.txt").exists());
    // Nor to system directories.
    let run = exec(&p, &[], "touch /usr/warden-probe");
    assert_ne!(run.code, 0);
    assert!(!std::path::Path::new("/usr/warden-probe").exists());
}

#[test]
fn protected_paths_in_the_workspace_stay_read_only_and_in_place() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    std::fs::create_dir_all(p.root().join(".git/hooks")).unwrap();
    p.write(".git/config", "[core]\n");
    assert_eq!(
        sh(&p, "touch .git/hooks/probe && rm .git/hooks/probe").code,
        0,
        "the probe must work unsandboxed"
    );
    let run = exec(&p, &[], "echo evil > .git/hooks/pre-commit");
    assert_ne!(run.code, 0);
    assert!(!p.root().join(".git/hooks/pre-commit").exists());
    let run = exec(&p, &[], "echo '[alias]' >> .git/config");
    assert_ne!(run.code, 0);
    assert_eq!(
        std::fs::read_to_string(p.root().join(".git/config")).unwrap(),
        "[core]\n"
    );
    exec(&p, &[], "mv .git moved; rm -rf .git");
    assert!(p.root().join(".git/hooks").is_dir() && p.root().join(".git/config").is_file());
    // The rest of the workspace is writable.
    let run = exec(&p, &[], "echo ok > out.txt");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        std::fs::read_to_string(p.root().join("out.txt")).unwrap(),
        "ok\n"
    );
}

#[test]
fn the_network_is_off_and_host_processes_are_invisible() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
    let probe = finish(
        &Command::new("bash")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap(),
    );
    assert_eq!(
        probe.code, 0,
        "the probe must work unsandboxed: {}",
        probe.stderr
    );
    let mut args = vec!["exec", "--json", "--", "bash", "-c", script.as_str()];
    let run = p.run(&args);
    assert_ne!(run.code, 0, "{}", run.stdout);
    // Host processes: this test's own pid is not there to see or signal.
    let me = std::process::id().to_string();
    assert_eq!(sh(&p, &format!("kill -0 {me}")).code, 0);
    let run = exec(&p, &[], &format!("kill -0 {me}"));
    assert_ne!(run.code, 0);
    // How many of the sandbox's own processes `ls` catches alive depends on timing, so the
    // count is compared in the sandbox and the two runs agree on the verdict, not the number.
    let count =
        "n=$(ls /proc | grep -c '^[0-9]'); [ \"$n\" -le 4 ] && echo few || echo \"$n visible\"";
    assert_ne!(
        sh(&p, count).stdout,
        "few\n",
        "the host shows its processes"
    );
    let run = exec(&p, &[], count);
    assert_eq!(run.json()["stdout"], "few\n", "{}", run.stdout);
    args.clear();
}

#[test]
fn the_timeout_kills_the_whole_tree() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let marker = "31415";
    let script = format!(
        "setsid nohup sleep {marker} >/dev/null 2>&1 & (sleep {marker} &) ; sleep {marker}"
    );
    let run = exec(&p, &["--timeout", "1"], &script);
    assert_eq!(run.code, 124, "{}", run.stderr);
    assert_eq!(run.json()["timedOut"], true);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left = finish(
        &Command::new("pgrep")
            .args(["-f", &format!("sleep {marker}")])
            .output()
            .unwrap(),
    );
    assert!(
        left.stdout.trim().is_empty(),
        "left running: {}",
        left.stdout
    );
}

#[test]
fn limits_hold_memory_and_process_bombs() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let bomb = "python3 -c 'x = bytearray(400 * 1024 * 1024); print(len(x))'";
    assert_eq!(sh(&p, bomb).code, 0, "the probe must work unsandboxed");
    let run = exec(&p, &["--memory", "100"], bomb);
    assert_ne!(run.code, 0, "{}", run.stdout);
    // 40 background sleeps: they start under a limit of 200 processes, not under one of 20.
    let forks = "for i in $(seq 40); do sleep 1 & done; wait; echo started";
    let run = exec(&p, &["--pids", "200"], forks);
    assert_eq!(
        (run.code, run.json()["stdout"].as_str().unwrap()),
        (0, "started\n"),
        "{}",
        run.stdout
    );
    let run = exec(&p, &["--pids", "20"], forks);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.json()["stderr"].as_str().unwrap().contains("fork"),
        "{}",
        run.stdout
    );
}

#[test]
fn privileged_operations_fail_inside() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    // The probes work without the sandbox (in a throwaway user and mount namespace, so that
    // an ordinary user may mount too: the host is untouched).
    assert_eq!(sh(&p, "unshare -r true").code, 0);
    let mount = "unshare -r -m sh -c 'mount -t tmpfs none /mnt'";
    assert_eq!(sh(&p, mount).code, 0);
    for script in [
        "mount -t tmpfs none /tmp",
        "unshare -r true",
        "mount -o remount,rw /",
    ] {
        let run = exec(&p, &[], script);
        assert_ne!(run.code, 0, "{script}: {}", run.stdout);
    }
    let run = exec(&p, &[], "grep CapEff /proc/self/status");
    assert!(
        run.json()["stdout"]
            .as_str()
            .unwrap()
            .contains("0000000000000000"),
        "{}",
        run.stdout
    );
}

#[test]
fn secrets_in_the_environment_are_not_inherited() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let mut cmd = p.command();
    cmd.env("DEPLOY_TOKEN", "tok-9876").env("LANG", "C.UTF-8");
    cmd.args(["exec", "--json", "--", "env"]);
    let run = finish(&cmd.output().unwrap());
    let env = run.json()["stdout"].as_str().unwrap().to_owned();
    assert!(!env.contains("tok-9876"), "{env}");
    assert!(env.contains("LANG=C.UTF-8"), "{env}");
    // Named explicitly, it passes.
    let mut cmd = p.command();
    cmd.env("DEPLOY_TOKEN", "tok-9876").args([
        "exec",
        "--json",
        "--env",
        "DEPLOY_TOKEN",
        "--",
        "env",
    ]);
    assert!(finish(&cmd.output().unwrap()).stdout.contains("tok-9876"));
}

#[test]
fn a_missing_layer_means_nothing_runs() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    // In a user namespace of its own where no further user namespace may be created.
    let warden = env!("CARGO_BIN_EXE_warden");
    let script = format!(
        "echo 0 > /proc/sys/user/max_user_namespaces && exec {warden} exec -- touch ran-anyway"
    );
    let run = finish(
        &Command::new("unshare")
            .args(["--user", "--map-root-user", "sh", "-c", &script])
            .current_dir(p.root())
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 126, "{}", run.stderr);
    assert!(run.stderr.contains("namespaces"), "{}", run.stderr);
    assert!(!p.root().join("ran-anyway").exists());
}

#[test]
fn exec_usage_errors_exit_125() {
    let p = Project::new();
    assert_eq!(p.run(&["exec", "--frob", "--", "true"]).code, 125);
    assert_eq!(
        p.run(&["exec", "--profile", "wide-open", "--", "true"])
            .code,
        125
    );
    assert_eq!(
        p.run(&["exec", "--mount", "nocolon", "--", "true"]).code,
        125
    );
}

#[test]
fn the_bwrap_backend_holds_the_same_boundaries() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    if Command::new("bwrap").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
            "bwrap is required here (.ci/run installs it)"
        );
        eprintln!("skipping: bwrap is not installed");
        return;
    }
    let probe = p.home.join("Private/sandbox-probe.txt");
    std::fs::create_dir_all(probe.parent().unwrap()).unwrap();
    std::fs::write(&probe, "BWRAP-PROBE\n").unwrap();
    assert!(
        sh(&p, &format!("cat {}", probe.display()))
            .stdout
            .contains("BWRAP-PROBE")
    );
    std::fs::create_dir_all(p.root().join(".git/hooks")).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{}",
        listener.local_addr().unwrap().port()
    );
    assert_eq!(
        finish(&Command::new("bash").arg("-c").arg(&tcp).output().unwrap()).code,
        0
    );
    let bw = p.backend_args("bwrap");
    let run = exec(
        &p,
        &bw,
        "echo in > inside.txt; id -u; grep CapEff /proc/self/status",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.json();
    assert_eq!(out["sandbox"]["backend"], "bwrap");
    // Chosen by the settings alone, as by the flag; without either, the native sandbox.
    let chosen = p.tmp().join("backend.toml");
    std::fs::write(
        &chosen,
        "[sandbox]\nbackend = \"bwrap\"\nroot_identity = \"host\"\n",
    )
    .unwrap();
    let by_settings = exec(&p, &["--settings", chosen.to_str().unwrap()], "true");
    assert_eq!(
        by_settings.json()["sandbox"]["backend"],
        "bwrap",
        "{}",
        by_settings.stderr
    );
    assert_eq!(exec(&p, &[], "true").json()["sandbox"]["backend"], "native");
    assert!(
        out["stdout"]
            .as_str()
            .unwrap()
            .starts_with("1000\nCapEff:\t0000000000000000"),
        "{out}"
    );
    assert!(p.root().join("inside.txt").exists());
    for script in [
        format!("cat {}", probe.display()),
        "echo evil > .git/hooks/pre-commit".to_owned(),
        "touch /usr/bwrap-probe".to_owned(),
        tcp.clone(),
    ] {
        let run = exec(&p, &bw, &script);
        assert_ne!(run.code, 0, "{script}: {}", run.stdout);
        assert!(!run.stdout.contains("BWRAP-PROBE"));
    }
    assert!(!p.root().join(".git/hooks/pre-commit").exists());
    let mut timed = p.backend_args("bwrap");
    timed.extend(["--timeout", "1"]);
    let run = exec(&p, &timed, "sleep 27182");
    assert_eq!(run.code, 124);
    assert!(
        finish(
            &Command::new("pgrep")
                .args(["-f", "sleep 27182"])
                .output()
                .unwrap()
        )
        .stdout
        .trim()
        .is_empty()
    );
}
