//! Ways out of the sandbox that must lead nowhere: /proc/PID/root, ptrace, abstract sockets, paths
//! created where denied, hard and symbolic links, toolchains, TIOCSTI, set-id bits.

use super::*;

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
