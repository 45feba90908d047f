//! Files that run code on the host later — shell start-up files, `.envrc`, git's hooks and
//! configuration (a submodule's, the hooks path a repository names), editors' settings — can be
//! neither changed nor created from a sandboxed command, in the workspace or any writable root:
//! each way (write, create, rename into place, remove, replace the directory above) first works
//! without the sandbox, then fails inside. The file tools refuse them too.

use std::path::Path;

use crate::support::{Project, sandbox_available};

/// The directories among the protected names: what is written is a file inside them.
fn is_dir_name(rel: &str) -> bool {
    [
        ".git/hooks",
        ".vscode",
        ".idea",
        ".husky",
        ".warden",
        ".githooks",
    ]
    .iter()
    .any(|d| rel == *d || rel.ends_with("/hooks"))
}

/// The file a command would write for `rel`.
fn target(rel: &str) -> String {
    if is_dir_name(rel) {
        format!("{rel}/pwned")
    } else {
        rel.to_owned()
    }
}

/// Every way to put code at `rel`: write, create, rename into place, remove, replace the
/// directory above.
fn attempts(rel: &str) -> String {
    let target = target(rel);
    let parent = match Path::new(&target).parent().unwrap().display().to_string() {
        p if p.is_empty() => ".".to_owned(),
        p => p,
    };
    let top = rel.split('/').next().unwrap();
    let mut steps = vec![
        format!("mkdir -p '{parent}'"),
        format!("echo PWNED-31337 >> '{target}'"),
        format!("echo PWNED-31337 > staged && mv -f staged '{target}'"),
        format!("rm -rf '{rel}' && mkdir -p '{parent}' && echo PWNED-31337 > '{target}'"),
    ];
    if top != rel {
        steps.push(format!(
            "mv '{top}' '{top}.old' && mkdir -p '{parent}' && echo PWNED-31337 > '{target}'"
        ));
    }
    steps
        .iter()
        .map(|s| format!("( {s} ) 2>/dev/null"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A repository with a submodule's git directory and a hooks path, and one start-up file.
fn repository(p: &Project) {
    p.write(".bashrc", "# ORIGINAL\n");
    p.write(".git/HEAD", "ref: refs/heads/main\n");
    p.write(".git/config", "[core]\n\thooksPath = .githooks\n");
    p.write(".git/modules/sub/HEAD", "ref: refs/heads/main\n");
    p.write(
        ".git/modules/sub/config",
        "[core]\n\tworktree = ../../../sub\n",
    );
}

fn protected() -> Vec<String> {
    let mut all: Vec<String> = warden_config::AUTO_RUN
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    all.extend(
        [
            ".git/modules/sub/hooks",
            ".git/modules/sub/config",
            ".githooks",
        ]
        .iter()
        .map(|s| (*s).to_owned()),
    );
    all
}

/// Whether `rel` holds what the attempts write (or the original start-up file is gone).
fn tampered(p: &Project, rel: &str) -> bool {
    let target = p.root().join(target(rel));
    let written = std::fs::read_to_string(&target).is_ok_and(|t| t.contains("PWNED-31337"));
    let lost = rel == ".bashrc"
        && !std::fs::read_to_string(p.root().join(".bashrc")).is_ok_and(|t| t == "# ORIGINAL\n");
    written || lost
}

#[test]
fn files_that_run_code_later_cannot_be_changed_or_created_from_inside() {
    let probe = Project::new();
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    for rel in protected() {
        // The probe: without the sandbox, the attempts land.
        repository(&probe);
        let bare = probe.run(&["exec", "--no-sandbox", "--", "sh", "-c", &attempts(&rel)]);
        let listing: Vec<String> = std::fs::read_dir(probe.root())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            tampered(&probe, &rel),
            "{rel}: the probe: {} {listing:?} {}",
            bare.stderr,
            attempts(&rel)
        );
        let _ = std::fs::remove_dir_all(probe.root().join(".git"));
        let _ = std::fs::remove_dir_all(probe.root().join(rel.split('/').next().unwrap()));
        let _ = std::fs::remove_file(probe.root().join(rel.split('/').next().unwrap()));
        // Inside: none of them.
        repository(&p);
        let run = p.run(&["exec", "--", "sh", "-c", &attempts(&rel)]);
        assert!(
            !tampered(&p, &rel),
            "{rel}: changed from inside: {}",
            run.stderr
        );
        if rel != ".bashrc" && !rel.starts_with(".git/") {
            // Absent before, absent after (no placeholder is left behind).
            assert!(!p.root().join(&rel).exists(), "{rel} left behind");
        }
    }
    // The repository's history directory and its submodule stay as they were.
    assert!(p.root().join(".git/modules/sub/HEAD").is_file());
}

#[test]
fn the_file_tools_refuse_them_too() {
    let p = Project::new();
    repository(&p);
    for rel in protected() {
        let path = target(&rel);
        let args = serde_json::json!({"path": path, "content": "PWNED-31337\n"}).to_string();
        let run = p.run(&["tool", "writeFile", "--on-ask", "allow", "--args", &args]);
        assert_ne!(run.code, 0, "{rel}: {}", run.stdout);
        assert!(!tampered(&p, &rel), "{rel}: written by the tool");
    }
    // The probe: an ordinary file is written.
    let args = serde_json::json!({"path": "notes.txt", "content": "fine\n"}).to_string();
    assert_eq!(
        p.run(&["tool", "writeFile", "--on-ask", "allow", "--args", &args])
            .code,
        0
    );
}

#[test]
fn another_writable_root_keeps_them_too_and_git_still_commits() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let shared = p.home.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    p.user_settings("[sandbox.filesystem]\nallow_write = [\"~/shared\"]\n");
    let script = format!(
        "echo ok > {0}/notes; echo PWNED-31337 > {0}/.zshrc; mkdir -p {0}/.git && echo x > {0}/.git/config",
        shared.display()
    );
    let run = p.run(&["exec", "--", "sh", "-c", &script]);
    assert!(
        shared.join("notes").is_file(),
        "the root is writable: {}",
        run.stderr
    );
    assert!(!shared.join(".zshrc").exists(), "{}", run.stderr);
    assert!(!shared.join(".git/config").is_file(), "{}", run.stderr);
    // A real repository: the agent's commit lands; its hooks and config stay as they were.
    std::fs::remove_dir_all(p.root().join(".git")).unwrap();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(p.root())
            .output()
            .unwrap()
    };
    assert!(git(&["init", "-q", "-b", "main"]).status.success());
    let config = std::fs::read_to_string(p.root().join(".git/config")).unwrap();
    p.write("a.txt", "a\n");
    let run = p.run(&[
        "exec", "--", "sh", "-c",
        "git add a.txt && git -c user.email=a@b -c user.name=a commit -qm one && git status --short",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let log = git(&["log", "--oneline"]);
    assert!(String::from_utf8_lossy(&log.stdout).contains("one"));
    assert_eq!(
        std::fs::read_to_string(p.root().join(".git/config")).unwrap(),
        config
    );
}

#[test]
fn a_link_on_the_way_to_a_protected_path_stops_the_command_and_creates_nothing_elsewhere() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    // `.config` leads out of the workspace: fish's configuration below it is protected, and the
    // placeholder, the mount and its sealing would all land where the link points.
    let outside = p.tmp().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, p.root().join(".config")).unwrap();
    let probe = "mkdir -p .config/fish && echo evil > .config/fish/config.fish";
    let unsandboxed = std::process::Command::new("sh")
        .args(["-c", probe])
        .current_dir(p.root())
        .status()
        .unwrap();
    assert!(unsandboxed.success());
    assert!(
        outside.join("fish/config.fish").exists(),
        "the probe must write outside unsandboxed"
    );
    std::fs::remove_dir_all(outside.join("fish")).unwrap();
    // With the user's own identity too (as root, `root_identity = "host"`).
    let host = p.tmp().join("host.toml");
    std::fs::write(&host, "[sandbox]\nroot_identity = \"host\"\n").unwrap();
    let host = host.display().to_string();
    for as_host in [false, true] {
        let mut args = vec!["exec"];
        if as_host {
            args.extend(["--settings", host.as_str()]);
        }
        args.extend(["--", "sh", "-c", probe]);
        let run = p.run(&args);
        assert_eq!(run.code, 126, "{}", run.stderr);
        assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
        assert!(run.stderr.contains(".config"), "{}", run.stderr);
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            0,
            "something was made through the link"
        );
    }
}

#[test]
fn a_root_named_through_a_link_or_mounted_elsewhere_is_protected_the_same() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let repo = p.tmp().join("other");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=a", "-c", "user.email=a@example.com"])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(out.status.success());
    };
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "one"]);
    let link = p.tmp().join("link");
    std::os::unix::fs::symlink(&repo, &link).unwrap();
    let attack = "rm -rf .git/objects; echo x > .bashrc; touch .git/hooks/x; true";
    // Unsandboxed, in a copy, the attack lands.
    let copy = p.tmp().join("copy");
    assert!(
        std::process::Command::new("cp")
            .args(["-a"])
            .arg(&repo)
            .arg(&copy)
            .status()
            .unwrap()
            .success()
    );
    let ran = std::process::Command::new("sh")
        .args(["-c", attack])
        .current_dir(&copy)
        .status()
        .unwrap();
    assert!(ran.success() && copy.join(".bashrc").exists() && !copy.join(".git/objects").exists());
    let mount = format!("{}:/mnt/repo:rw", repo.display());
    let link_dir = link.display().to_string();
    for (flags, dir) in [
        (vec!["--allow-write", link_dir.as_str()], link_dir.clone()),
        (vec!["--mount", mount.as_str()], "/mnt/repo".to_owned()),
    ] {
        let mut args = vec!["exec"];
        args.extend(flags);
        let script = format!("cd {dir} && {attack}");
        args.extend(["--", "sh", "-c", &script]);
        let run = p.run(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(repo.join(".git/objects").is_dir(), "{dir}");
        assert!(!repo.join(".bashrc").exists(), "{dir}");
        assert!(!repo.join(".git/hooks/x").exists(), "{dir}");
    }
}

#[test]
fn a_hooks_directory_named_outside_the_root_is_kept_in_the_root_that_shows_it() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let hooks = p.tmp().join("elsewhere/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::remove_dir_all(p.root().join(".git")).unwrap();
    let git = |args: &[&str]| {
        assert!(
            std::process::Command::new("git")
                .args(args)
                .current_dir(p.root())
                .status()
                .unwrap()
                .success()
        );
    };
    git(&["init", "-q"]);
    git(&["config", "core.hooksPath", &hooks.display().to_string()]);
    let hook = hooks.join("post-commit");
    let write = format!("echo evil > {}", hook.display());
    let unsandboxed = std::process::Command::new("sh")
        .args(["-c", &write])
        .status()
        .unwrap();
    assert!(
        unsandboxed.success() && hook.exists(),
        "the probe must write unsandboxed"
    );
    std::fs::remove_file(&hook).unwrap();
    let elsewhere = p.tmp().join("elsewhere").display().to_string();
    let run = p.run(&[
        "exec",
        "--allow-write",
        &elsewhere,
        "--",
        "sh",
        "-c",
        &write,
    ]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(!hook.exists());
}
