//! The sandbox, end to end through `warden exec`. Every escape test first shows the probe works
//! without the sandbox, then that it fails inside.

use std::process::Command;

use crate::support::{Project, backends, exec, finish, on_a_terminal, sandbox_available, sh};

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
    let run = exec(&p, &[], "ls /proc | grep -c '^[0-9]'");
    let visible: u32 = run.json()["stdout"]
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(visible <= 4, "{visible} processes visible");
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

#[test]
fn proc_root_links_ptrace_and_abstract_sockets_lead_nowhere() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    // /proc/PID/root: outside, the host's root; inside, the sandbox's own (PID 1 is the command).
    let probe = p.home.join("Private/probe.txt");
    std::fs::create_dir_all(probe.parent().unwrap()).unwrap();
    std::fs::write(&probe, "PROC-ROOT-PROBE\n").unwrap();
    let via_self = format!("cat /proc/self/root{}", probe.display());
    assert!(
        sh(&p, &via_self).stdout.contains("PROC-ROOT-PROBE"),
        "the probe must work unsandboxed"
    );
    for via in [
        via_self.clone(),
        format!("cat /proc/1/root{}", probe.display()),
    ] {
        let run = exec(&p, &[], &via);
        assert_ne!(run.code, 0, "{via}");
        assert!(!run.stdout.contains("PROC-ROOT-PROBE"), "{via}");
    }

    // ptrace of a sibling process.
    let trace = "sleep 30 & python3 -c \"import ctypes, sys, time; libc = ctypes.CDLL(None, use_errno=True); \
                 pid = int(sys.argv[1]); r = libc.ptrace(16, pid, 0, 0); time.sleep(0.1); \
                 r == 0 and libc.ptrace(17, pid, 0, 0); print('attach', r); sys.exit(0 if r == 0 else 1)\" $!; \
                 s=$?; kill -9 $! 2>/dev/null; exit $s";
    let outside = sh(&p, trace);
    assert_eq!(
        outside.code, 0,
        "the probe must work unsandboxed: {}",
        outside.stderr
    );
    let run = exec(&p, &[], trace);
    assert_ne!(run.code, 0, "{}", run.stdout);

    // A host abstract unix socket.
    let name = format!("warden-test-{}", std::process::id());
    let mut server = std::process::Command::new("python3")
        .args(["-c", &format!(
            "import socket, time; s = socket.socket(socket.AF_UNIX); s.bind('\\0{name}'); s.listen(); \
             print('listening', flush=True); time.sleep(60)"
        )])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until it listens: a slow machine may take seconds to start python.
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert_eq!(ready.trim(), "listening");
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('\\0{name}')\""
    );
    let outside = sh(&p, &connect);
    let inside = exec(&p, &[], &connect);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        outside.code, 0,
        "the probe must work unsandboxed: {}",
        outside.stderr
    );
    assert_ne!(inside.code, 0, "{}", inside.stdout);
}

#[test]
fn denied_paths_that_do_not_exist_stay_uncreatable() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let settings = p.root().join("extra.toml");
    std::fs::write(
        &settings,
        "[sandbox.filesystem]\ndeny_read = [\"private/notes\"]\ndeny_write = [\"build/release\"]\n",
    )
    .unwrap();
    let flags = ["--settings", settings.to_str().unwrap()];
    let script = "echo x > .envrc; mkdir -p .vscode && echo y > .vscode/tasks.json; \
                  mkdir -p .git/hooks && echo z > .git/hooks/pre-commit; \
                  mkdir -p private/notes && echo n > private/notes/n; \
                  mkdir -p build/release && echo r > build/release/r";
    let made = [
        ".envrc",
        ".vscode/tasks.json",
        ".git/hooks/pre-commit",
        "private/notes/n",
        "build/release/r",
    ];
    let probe = sh(&p, script);
    assert_eq!(probe.code, 0, "{}", probe.stderr);
    for path in made {
        assert!(
            p.root().join(path).exists(),
            "the probe must work unsandboxed: {path}"
        );
    }
    let clean = "rm -rf .envrc .vscode .git private build";
    assert_eq!(sh(&p, clean).code, 0);
    for backend in backends() {
        let mut with = flags.to_vec();
        with.extend(p.backend_args(backend));
        // Nor by moving something into place, or removing the placeholder first.
        let script = format!(
            "{script}; echo w > w; mv w .envrc; rmdir .envrc; echo q > .envrc; \
             rm -rf .git; \
             echo ok > ordinary.txt; mkdir -p build/debug && echo d > build/debug/d"
        );
        let run = exec(&p, &with, &script);
        assert_eq!(run.json()["exitCode"], 0, "{backend}: {}", run.stdout);
        for path in made {
            assert!(
                !p.root().join(path).exists(),
                "{backend}: {path} was created"
            );
        }
        // The rest of the workspace, and the parents of what is denied, stay writable.
        assert!(p.root().join("ordinary.txt").exists(), "{backend}");
        assert!(p.root().join("build/debug/d").exists(), "{backend}");
        // The placeholders are gone afterwards: nothing of them is left in the workspace.
        for path in [
            ".envrc",
            ".vscode",
            ".git",
            "private/notes",
            "build/release",
        ] {
            assert!(
                !p.root().join(path).exists(),
                "{backend}: {path} left behind"
            );
        }
        assert_eq!(sh(&p, "rm -rf ordinary.txt build private w").code, 0);
    }
}

#[test]
fn hard_links_to_files_outside_the_workspace_lead_nowhere() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let outside = p.tmp().join("outside-secret.txt");
    std::fs::write(&outside, "LINKED-SECRET\n").unwrap();
    std::fs::hard_link(&outside, p.root().join("linked.txt")).unwrap();
    p.write("own.txt", "own\n");
    std::fs::hard_link(p.root().join("own.txt"), p.root().join("own-again.txt")).unwrap();
    let probe = sh(&p, "cat linked.txt && echo changed >> linked.txt");
    assert!(
        probe.stdout.contains("LINKED-SECRET"),
        "the probe must work unsandboxed"
    );
    std::fs::write(&outside, "LINKED-SECRET\n").unwrap();
    for backend in backends() {
        let run = exec(
            &p,
            &p.backend_args(backend),
            "cat linked.txt; echo changed >> linked.txt; cat own-again.txt",
        );
        assert!(
            !run.stdout.contains("LINKED-SECRET"),
            "{backend}: {}",
            run.stdout
        );
        // Links whose every name is in the workspace work as before.
        assert!(
            run.json()["stdout"].as_str().unwrap().contains("own"),
            "{backend}"
        );
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            "LINKED-SECRET\n",
            "{backend}: the outside file was written"
        );
    }
}

#[test]
fn a_protected_path_that_is_a_symlink_is_refused() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    p.write("env.sh", "export A=1\n");
    std::os::unix::fs::symlink("env.sh", p.root().join(".envrc")).unwrap();
    // The probe: a write through the link reaches the file it points to.
    assert_eq!(sh(&p, "echo probe > .envrc").code, 0);
    assert_eq!(
        std::fs::read_to_string(p.root().join("env.sh")).unwrap(),
        "probe\n",
        "the probe must work unsandboxed"
    );
    p.write("env.sh", "export A=1\n");
    let run = exec(&p, &[], "echo evil > .envrc");
    assert_eq!(run.code, 126, "{}", run.stdout);
    assert!(run.stderr.contains(".envrc"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(p.root().join("env.sh")).unwrap(),
        "export A=1\n"
    );
}

#[test]
fn settings_add_home_toolchains_and_can_require_landlock() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let tool = p.home.join(".sdkman/bin/tool");
    std::fs::create_dir_all(tool.parent().unwrap()).unwrap();
    std::fs::write(&tool, "SDK-TOOL\n").unwrap();
    let script = format!("cat {}", tool.display());
    assert!(
        sh(&p, &script).stdout.contains("SDK-TOOL"),
        "the probe must work unsandboxed"
    );
    // Hidden by default, like the rest of the home directory.
    let run = exec(&p, &[], &script);
    assert_ne!(run.code, 0);
    let settings = p.root().join("extra.toml");
    let with = ["--settings", settings.to_str().unwrap()];
    std::fs::write(
        &settings,
        "[sandbox.filesystem]\nhome_toolchains = [\"~/.sdkman\"]\n",
    )
    .unwrap();
    let run = exec(&p, &with, &format!("{script}; touch {}", tool.display()));
    assert!(
        run.json()["stdout"].as_str().unwrap().contains("SDK-TOOL"),
        "{}",
        run.stdout
    );
    assert_ne!(run.code, 0, "toolchain directories are read-only");
    std::fs::write(
        &settings,
        "[sandbox.filesystem]\nhome_toolchains = [\"../outside\"]\n",
    )
    .unwrap();
    let run = exec(&p, &with, "true");
    assert_eq!(run.code, 125, "{}", run.stderr);
    assert!(run.stderr.contains("home_toolchains"), "{}", run.stderr);

    std::fs::write(&settings, "[sandbox]\nrequire_landlock = true\n").unwrap();
    if p.run(&["sandbox", "doctor"])
        .stdout
        .contains("ok       landlock-abi-")
    {
        let run = exec(&p, &with, "echo in");
        assert_eq!(run.code, 0, "{}", run.stderr);
        let layers = run.json()["sandbox"]["layers"].to_string();
        assert!(layers.contains("landlock-abi-"), "{layers}");
    }
    // bubblewrap has no Landlock: with it required, nothing runs.
    if Command::new("bwrap").arg("--version").output().is_ok() {
        let mut flags = with.to_vec();
        flags.extend(p.backend_args("bwrap"));
        let run = exec(&p, &flags, "touch ran-anyway");
        assert_eq!(run.code, 126, "{}", run.stderr);
        assert!(run.stderr.contains("landlock"), "{}", run.stderr);
        assert!(!p.root().join("ran-anyway").exists());
    }
}

#[test]
fn tiocsti_cannot_push_input_into_the_terminal() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let probe = "import fcntl, termios\n\
                 try:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x')\n    print('INJECTED')\n\
                 except OSError as e:\n    print('REFUSED', e.errno)\n";
    let outside = on_a_terminal(&p, &["python3", "-c", probe], &[]);
    assert!(
        outside.stdout.contains("INJECTED"),
        "the probe must work unsandboxed: {}",
        outside.stdout
    );
    let warden = env!("CARGO_BIN_EXE_warden");
    for backend in backends() {
        let mut argv = vec![warden, "exec"];
        argv.extend(p.backend_args(backend));
        argv.extend(["--", "/usr/bin/python3", "-c", probe]);
        let inside = on_a_terminal(&p, &argv, &[]);
        assert!(
            inside.stdout.contains("REFUSED") && !inside.stdout.contains("INJECTED"),
            "{backend}: {}",
            inside.stdout
        );
    }
}

#[test]
fn set_id_bits_cannot_be_made() {
    use std::os::unix::fs::PermissionsExt as _;
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let set_id = |name: &str| {
        std::fs::metadata(p.root().join(name)).is_ok_and(|m| m.permissions().mode() & 0o6000 != 0)
    };
    let script = "cp /bin/true suid; chmod u+s suid; cp /bin/true sgid; chmod g+s sgid; \
                  install -m 4755 /bin/true installed; \
                  python3 -c \"import os; os.close(os.open('opened', os.O_CREAT | os.O_WRONLY, 0o4755))\"";
    assert_eq!(sh(&p, script).code, 0);
    for name in ["suid", "sgid", "installed", "opened"] {
        assert!(set_id(name), "the probe must work unsandboxed: {name}");
    }
    assert_eq!(sh(&p, "rm suid sgid installed opened").code, 0);
    for backend in backends() {
        let run = exec(
            &p,
            &p.backend_args(backend),
            &format!("{script}; chmod 755 suid && echo plain-ok"),
        );
        assert!(
            run.json()["stdout"].as_str().unwrap().contains("plain-ok"),
            "{backend}: {}",
            run.stdout
        );
        for name in ["suid", "sgid", "installed", "opened"] {
            assert!(!set_id(name), "{backend}: {name} has a set-id bit");
        }
        assert_eq!(sh(&p, "rm -f suid sgid installed opened").code, 0);
    }
}
