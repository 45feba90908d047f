use std::os::unix::fs::PermissionsExt as _;

use serde_json::json;
use warden_protocol::ToolErrorKind;

use crate::support::{Workspace, call_in, symlink};

#[test]
fn write_file_creates_files_and_directories() {
    let ws = Workspace::new();
    let out = ws
        .call(
            "writeFile",
            json!({"path": "src/new/mod.rs", "content": "pub fn f() {}\n"}),
        )
        .unwrap();
    assert_eq!(out["created"], true);
    assert_eq!(out["bytesWritten"], 14);
    assert_eq!(
        std::fs::read_to_string(ws.root().join("src/new/mod.rs")).unwrap(),
        "pub fn f() {}\n"
    );
}

#[test]
fn overwriting_needs_a_read_and_no_change_since() {
    let ws = Workspace::new();
    let path = ws.write("a.txt", "one\ntwo\n");
    let ctx = ws.ctx();
    let err = call_in(
        &ctx,
        "writeFile",
        json!({"path": "a.txt", "content": "x\n"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::NotReadFirst);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
    call_in(&ctx, "readFile", json!({"path": "a.txt"})).unwrap();
    let out = call_in(
        &ctx,
        "writeFile",
        json!({"path": "a.txt", "content": "one\nTWO\n"}),
    )
    .unwrap();
    assert_eq!(out["created"], false);
    assert!(
        out["diff"].as_str().unwrap().contains("-two\n+TWO\n"),
        "{out}"
    );
    assert_eq!(out["diffSummary"], "+1 -1 lines");
    // The tool's own write is known; a change by someone else is not.
    call_in(
        &ctx,
        "writeFile",
        json!({"path": "a.txt", "content": "three\n"}),
    )
    .unwrap();
    std::fs::write(&path, "the user's edit\n").unwrap();
    let err = call_in(
        &ctx,
        "writeFile",
        json!({"path": "a.txt", "content": "mine\n"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::ChangedSinceRead);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "the user's edit\n");
}

#[test]
fn writes_stay_in_the_workspace_and_out_of_git() {
    let outside = tempfile::tempdir().unwrap();
    let ws = Workspace::new();
    symlink(outside.path(), &ws.root().join("escape"));
    for (path, kind) in [
        ("../x.txt", ToolErrorKind::OutsideRoots),
        ("escape/x.txt", ToolErrorKind::OutsideRoots),
        (".git/config", ToolErrorKind::DeniedPath),
        ("sub/.git/hooks/pre-commit", ToolErrorKind::DeniedPath),
        (".", ToolErrorKind::IsDirectory),
    ] {
        let err = ws.err("writeFile", json!({"path": path, "content": "x"}));
        assert_eq!(err.kind, kind, "{path}: {}", err.message);
    }
    assert!(!outside.path().join("x.txt").exists());
}

#[test]
fn the_size_cap_holds_and_the_mode_is_kept() {
    let mut ws = Workspace::new();
    ws.settings.tools.write.max_bytes = 10;
    assert_eq!(
        ws.err_kind(
            "writeFile",
            json!({"path": "big", "content": "x".repeat(11)})
        ),
        ToolErrorKind::TooLarge
    );
    ws.settings.tools.write.max_bytes = 1024;
    let path = ws.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ctx = ws.ctx();
    call_in(&ctx, "readFile", json!({"path": "run.sh"})).unwrap();
    call_in(
        &ctx,
        "writeFile",
        json!({"path": "run.sh", "content": "#!/bin/sh\nls\n"}),
    )
    .unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

#[test]
fn edit_replaces_exactly_once_and_explains_misses() {
    let ws = Workspace::new();
    let path = ws.write(
        "lib.rs",
        "fn a() {\n    let x = 1;\n}\nfn b() {\n    let x = 1;\n}\n",
    );
    let err = ws.err(
        "editFile",
        json!({"path": "lib.rs", "oldString": "let x = 1;", "newString": "let x = 2;"}),
    );
    assert_eq!(err.kind, ToolErrorKind::MultipleMatches);
    assert!(err.message.contains("lines 2, 5"), "{}", err.message);
    let err = ws.err(
        "editFile",
        json!({"path": "lib.rs", "oldString": "let y = 1;", "newString": "z"}),
    );
    assert_eq!(err.kind, ToolErrorKind::NoMatch);
    assert!(err.message.contains("line 2:"), "{}", err.message);
    let out = ws.call("editFile", json!({"path": "lib.rs", "oldString": "fn b() {\n    let x = 1;", "newString": "fn b() {\n    let x = 2;"})).unwrap();
    assert_eq!(out["applied"], true);
    assert_eq!(out["changedRanges"], json!(["5"]));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "fn a() {\n    let x = 1;\n}\nfn b() {\n    let x = 2;\n}\n"
    );
    ws.call(
        "editFile",
        json!({"path": "lib.rs", "oldString": "let x", "newString": "let y", "replaceAll": true}),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&path)
            .unwrap()
            .matches("let y")
            .count(),
        2
    );
}

#[test]
fn dry_run_previews_and_line_ranges_replace() {
    let ws = Workspace::new();
    let path = ws.write("a.txt", "1\n2\n3\n4\n");
    let out = ws.call("editFile", json!({"path": "a.txt", "startLine": 2, "endLine": 3, "newText": "two\nthree\n", "dryRun": true})).unwrap();
    assert_eq!(out["applied"], false);
    assert!(out["diff"].as_str().unwrap().contains("+two\n+three\n"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\n2\n3\n4\n");
    ws.call(
        "editFile",
        json!({"path": "a.txt", "startLine": 2, "endLine": 3, "newText": "two-three"}),
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\ntwo-three\n4\n");
    let err = ws.err(
        "editFile",
        json!({"path": "a.txt", "startLine": 3, "endLine": 9, "newText": "x"}),
    );
    assert_eq!(err.field.as_deref(), Some("/endLine"));
    let err = ws.err("editFile", json!({"path": "a.txt", "newString": "x"}));
    assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
}

#[test]
fn edits_keep_crlf_bom_and_refuse_stale_reads() {
    let ws = Workspace::new();
    let path = ws.write("win.txt", "\u{feff}alpha\r\nbeta\r\n");
    let ctx = ws.ctx();
    call_in(
        &ctx,
        "editFile",
        json!({"path": "win.txt", "oldString": "beta\n", "newString": "BETA\ngamma\n"}),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "\u{feff}alpha\r\nBETA\r\ngamma\r\n"
    );
    // A change on disk after the session's last read or write is never overwritten.
    std::fs::write(&path, "user\r\n").unwrap();
    let err = call_in(
        &ctx,
        "editFile",
        json!({"path": "win.txt", "oldString": "user", "newString": "agent"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::ChangedSinceRead);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "user\r\n");
    ws.write("blob.bin", [0xff, 0xfe, 0x00, 0x41]);
    assert_eq!(
        ws.err_kind(
            "editFile",
            json!({"path": "blob.bin", "oldString": "A", "newString": "B"})
        ),
        ToolErrorKind::BinaryFile
    );
    assert_eq!(
        ws.err_kind(
            "editFile",
            json!({"path": "nope.txt", "oldString": "A", "newString": "B"})
        ),
        ToolErrorKind::NotFound
    );
}

#[test]
fn edit_applies_a_unified_diff() {
    let ws = Workspace::new();
    let path = ws.write("app.py", "def main():\n    print('hi')\n    return 0\n");
    let diff = "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n def main():\n-    print('hi')\n+    print('hello')\n     return 0\n";
    let out = ws
        .call("editFile", json!({"path": "app.py", "diff": diff}))
        .unwrap();
    assert_eq!(out["changedRanges"], json!(["2"]));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "def main():\n    print('hello')\n    return 0\n"
    );
    // A diff whose context is gone is refused, and the file stays.
    let err = ws.err("editFile", json!({"path": "app.py", "diff": diff}));
    assert_eq!(err.kind, ToolErrorKind::NoMatch);
    let err = ws.err(
        "editFile",
        json!({"path": "app.py", "diff": "no hunks here"}),
    );
    assert_eq!(err.field.as_deref(), Some("/diff"));
    let err = ws.err(
        "editFile",
        json!({"path": "app.py", "diff": diff, "oldString": "x", "newString": "y"}),
    );
    assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
}

#[test]
fn the_working_set_follows_what_the_tools_did() {
    let mut ws = Workspace::new();
    ws.settings.permissions.mode = warden_config::PermissionMode::AcceptEdits;
    ws.write("a.txt", "a\n");
    ws.write("b.txt", "b\n");
    let ctx = ws.ctx();
    let registry = warden_tools::Registry::builtin().unwrap();
    let policy = warden_policy::Engine::with_home(&ws.settings, &ws.root()).unwrap();
    let session = warden_protocol::SessionId::new();
    let mut runner =
        warden_tools::ToolRunner::new(&registry, &ctx, &policy, None, session).unwrap();
    runner.run("readFile", json!({"path": "a.txt"})).unwrap();
    runner
        .run(
            "editFile",
            json!({"path": "b.txt", "oldString": "b", "newString": "B"}),
        )
        .unwrap();
    runner
        .run(
            "editFile",
            json!({"path": "a.txt", "oldString": "a", "newString": "A", "dryRun": true}),
        )
        .unwrap();
    let set = runner.working_set();
    assert_eq!(set.files_read.iter().collect::<Vec<_>>(), ["a.txt"]);
    assert_eq!(set.files_edited.iter().collect::<Vec<_>>(), ["b.txt"]);
}
