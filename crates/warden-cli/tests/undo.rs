//! Checkpoints and `warden undo`.

use crate::support::Project;

const SESSION: &str = "01a22a89-1111-7000-8000-000000000001";

fn tool(p: &Project, name: &str, args: &str) {
    let run = p.run(&[
        "tool",
        name,
        "--session",
        SESSION,
        "--on-ask",
        "allow",
        "--args",
        args,
    ]);
    assert_eq!(run.code, 0, "{name} {args}: {} {}", run.stdout, run.stderr);
}

#[test]
fn undo_puts_back_every_file_a_session_changed() {
    let p = Project::new();
    p.write("keep.txt", "original\n");
    tool(
        &p,
        "editFile",
        r#"{"path": "keep.txt", "oldString": "original", "newString": "edited"}"#,
    );
    tool(
        &p,
        "writeFile",
        r#"{"path": "new/made.txt", "content": "made\n"}"#,
    );
    tool(
        &p,
        "editFile",
        r#"{"path": "keep.txt", "oldString": "edited", "newString": "edited twice"}"#,
    );
    assert_eq!(
        std::fs::read_to_string(p.root().join("keep.txt")).unwrap(),
        "edited twice\n"
    );
    // Undo after turn 1: the second edit and the new file go, the first edit stays.
    let run = p.run(&["undo", SESSION, "--to", "1", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(p.root().join("keep.txt")).unwrap(),
        "edited\n"
    );
    assert!(!p.root().join("new/made.txt").exists());
    // The rest, then nothing is left to undo.
    assert_eq!(p.run(&["undo", SESSION]).code, 0);
    assert_eq!(
        std::fs::read_to_string(p.root().join("keep.txt")).unwrap(),
        "original\n"
    );
    assert_eq!(p.run(&["undo", SESSION]).code, 2);
    // Undo is in the trace.
    let show = p.run(&["trace", "show", SESSION, "--json"]);
    assert!(
        show.json()
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["tool"] == "undo")
    );
}

#[test]
fn undo_refuses_where_the_user_changed_a_file_after_the_agent() {
    let p = Project::new();
    p.write("a.txt", "a\n");
    p.write("b.txt", "b\n");
    tool(
        &p,
        "editFile",
        r#"{"path": "a.txt", "oldString": "a", "newString": "A"}"#,
    );
    tool(
        &p,
        "editFile",
        r#"{"path": "b.txt", "oldString": "b", "newString": "B"}"#,
    );
    std::fs::write(p.root().join("b.txt"), "the user's b\n").unwrap();
    let run = p.run(&["undo", SESSION]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("b.txt"), "{}", run.stderr);
    assert!(!run.stderr.contains("a.txt"), "{}", run.stderr);
    // Nothing was restored: all or nothing.
    assert_eq!(
        std::fs::read_to_string(p.root().join("a.txt")).unwrap(),
        "A\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.root().join("b.txt")).unwrap(),
        "the user's b\n"
    );
}

#[test]
fn calls_of_one_session_share_the_read_before_write_guard() {
    let p = Project::new();
    p.write("cfg.toml", "a = 1\n");
    let overwrite = r#"{"path": "cfg.toml", "content": "a = 2\n"}"#;
    let run = p.run(&[
        "tool",
        "writeFile",
        "--session",
        SESSION,
        "--on-ask",
        "allow",
        "--args",
        overwrite,
    ]);
    assert_eq!(run.json()["error"]["kind"], "not_read_first");
    tool(&p, "readFile", r#"{"path": "cfg.toml"}"#);
    // The user edits the file between the read and the write, in another process.
    std::fs::write(p.root().join("cfg.toml"), "a = 9\n").unwrap();
    let run = p.run(&[
        "tool",
        "writeFile",
        "--session",
        SESSION,
        "--on-ask",
        "allow",
        "--args",
        overwrite,
    ]);
    assert_eq!(run.json()["error"]["kind"], "changed_since_read");
    assert_eq!(
        std::fs::read_to_string(p.root().join("cfg.toml")).unwrap(),
        "a = 9\n"
    );
    tool(&p, "readFile", r#"{"path": "cfg.toml"}"#);
    tool(&p, "writeFile", overwrite);
    assert_eq!(
        std::fs::read_to_string(p.root().join("cfg.toml")).unwrap(),
        "a = 2\n"
    );
}

/// Runs `warden tool NAME` inside a private mount namespace prepared by `setup` (a tiny tmpfs:
/// a full disk; a read-only bind), then prints `check`: the failure is real even for root.
fn in_namespace(
    p: &Project,
    setup: &str,
    name: &str,
    args: &str,
    check: &str,
) -> crate::support::Run {
    let warden = env!("CARGO_BIN_EXE_warden");
    let script = format!(
        "{setup} && {warden} tool {name} --on-ask allow --args '{args}'; echo; echo CHECK; cat {check}"
    );
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .current_dir(p.root())
        .env("HOME", &p.home)
        .env("WARDEN_HOME", p.home.join("warden"))
        .output()
        .unwrap();
    crate::support::finish(&out)
}

#[test]
fn a_full_disk_or_a_read_only_file_system_leaves_the_file_intact() {
    let p = Project::new();
    if std::process::Command::new("unshare")
        .args(["-m", "true"])
        .status()
        .map_or(true, |s| !s.success())
    {
        assert!(
            std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
            "mount namespaces are required here"
        );
        return;
    }
    std::fs::create_dir_all(p.root().join("full")).unwrap();
    let dir = p.root().join("full").display().to_string();
    // A 16 KiB tmpfs holding a file; the edit would make it far larger.
    let big = "x".repeat(64 * 1024);
    let setup = format!("mount -t tmpfs -o size=16k tmpfs {dir} && printf 'kept\\n' > {dir}/f.txt");
    let args = format!(r#"{{"path": "full/f.txt", "oldString": "kept", "newString": "{big}"}}"#);
    let run = in_namespace(&p, &setup, "editFile", &args, &format!("{dir}/f.txt"));
    let (result, check) = run.stdout.split_once("CHECK\n").unwrap();
    assert!(result.contains(r#""kind":"io""#), "{result}");
    assert!(result.contains("unchanged"), "{result}");
    assert_eq!(check, "kept\n");
    // A read-only bind: the write fails and the original stays.
    p.write("ro/f.txt", "original\n");
    let ro = p.root().join("ro").display().to_string();
    let setup = format!("mount --bind {ro} {ro} && mount -o remount,bind,ro {ro}");
    let run = in_namespace(
        &p,
        &setup,
        "editFile",
        r#"{"path": "ro/f.txt", "oldString": "original", "newString": "changed"}"#,
        &format!("{ro}/f.txt"),
    );
    assert!(
        run.stdout.contains("Read-only file system"),
        "{}",
        run.stdout
    );
    assert_eq!(
        std::fs::read_to_string(p.root().join("ro/f.txt")).unwrap(),
        "original\n"
    );
}

#[test]
fn undo_never_writes_through_a_directory_swapped_for_a_link() {
    let p = Project::new();
    let outside = p.tmp().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let edit = r#"{"path": "docs/notes.md", "oldString": "typo", "newString": "the typo"}"#;
    // Undone as it stands, the file comes back.
    p.write("docs/notes.md", "a typo\n");
    tool(&p, "editFile", edit);
    assert_eq!(p.run(&["undo", SESSION]).code, 0);
    assert_eq!(
        std::fs::read_to_string(p.root().join("docs/notes.md")).unwrap(),
        "a typo\n"
    );
    // With `docs` swapped for a link elsewhere after the edit, nothing is written there.
    let session = "01a22a89-1111-7000-8000-000000000002";
    let run = p.run(&[
        "tool",
        "editFile",
        "--session",
        session,
        "--on-ask",
        "allow",
        "--args",
        edit,
    ]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    std::fs::remove_dir_all(p.root().join("docs")).unwrap();
    std::os::unix::fs::symlink(&outside, p.root().join("docs")).unwrap();
    // Where it leads, a file as the edit left it: the content check alone would pass.
    std::fs::write(outside.join("notes.md"), "a the typo\n").unwrap();
    let run = p.run(&["undo", session]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(run.stderr.contains("now leads to"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(outside.join("notes.md")).unwrap(),
        "a the typo\n"
    );
}
