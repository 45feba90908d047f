use std::time::{Duration, SystemTime};

use serde_json::json;
use warden_protocol::ToolErrorKind;

use crate::support::{Workspace, symlink};

fn matches(out: &serde_json::Value) -> Vec<String> {
    out["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn finds_files_by_pattern_sorted_by_path() {
    let ws = Workspace::new();
    for f in [
        "src/b.rs",
        "src/a.rs",
        "src/deep/c.rs",
        "README.md",
        "src/x.ts",
    ] {
        ws.write(f, "x");
    }
    let out = ws.call("glob", json!({"pattern": "**/*.rs"})).unwrap();
    assert_eq!(matches(&out), ["src/a.rs", "src/b.rs", "src/deep/c.rs"]);
    assert_eq!(out["truncated"], false);
    // Without a slash the pattern matches names at any depth; with one it is anchored.
    let out = ws.call("glob", json!({"pattern": "*.rs"})).unwrap();
    assert_eq!(matches(&out).len(), 3);
    let out = ws.call("glob", json!({"pattern": "src/*.rs"})).unwrap();
    assert_eq!(matches(&out), ["src/a.rs", "src/b.rs"]);
}

#[test]
fn honours_gitignore_and_default_excludes() {
    let ws = Workspace::new();
    ws.write(".gitignore", "generated/\n*.log\n");
    for f in [
        "src/main.rs",
        "generated/out.rs",
        "debug.log",
        "node_modules/pkg/index.js",
        "target/debug/build.rs",
        "dist/app.js",
        "build/x.rs",
        "vendor/lib.rs",
        ".git/HEAD",
    ] {
        ws.write(f, "x");
    }
    let out = ws.call("glob", json!({"pattern": "**/*"})).unwrap();
    assert_eq!(matches(&out), [".gitignore", "src/main.rs"]);
}

#[test]
fn secrets_stay_listable_and_denied_paths_are_not_listed() {
    let ws = Workspace::new();
    ws.write(".env", "x");
    ws.write(
        "certs/a.pem",
        "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n",
    );
    ws.write("deploy/.aws/credentials", "x");
    ws.write("app.py", "x");
    // A secret's name stays listable (as in the sandbox); its content does not.
    let out = ws.call("glob", json!({"pattern": "**/*"})).unwrap();
    assert_eq!(matches(&out), [".env", "app.py", "certs/a.pem"]);
    assert!(ws.call("readFile", json!({"path": "certs/a.pem"})).is_err());
}

#[test]
fn sorts_by_modification_time_newest_first() {
    let ws = Workspace::new();
    let now = SystemTime::now();
    for (name, age) in [("old.rs", 300), ("new.rs", 0), ("mid.rs", 100)] {
        let path = ws.write(name, "x");
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(now - Duration::from_secs(age)).unwrap();
    }
    let out = ws
        .call("glob", json!({"pattern": "*.rs", "sort": "mtime"}))
        .unwrap();
    assert_eq!(matches(&out), ["new.rs", "mid.rs", "old.rs"]);
}

#[test]
fn too_many_results_are_capped_with_a_hint() {
    let ws = Workspace::new();
    for i in 0..250 {
        ws.write(&format!("f/{i:03}.txt"), "x");
    }
    let out = ws.call("glob", json!({"pattern": "*.txt"})).unwrap();
    assert_eq!(matches(&out).len(), 200);
    assert_eq!(out["totalMatches"], 250);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["truncationReason"], "too_many_results");
    assert!(out["hint"].as_str().unwrap().contains("Narrow"));
    let out = ws
        .call("glob", json!({"pattern": "*.txt", "limit": 10}))
        .unwrap();
    assert_eq!(matches(&out).len(), 10);
    // A limit above the configured cap is held to the cap.
    let out = ws
        .call("glob", json!({"pattern": "*.txt", "limit": 100_000}))
        .unwrap();
    assert_eq!(matches(&out).len(), 200);
}

#[test]
fn patterns_and_paths_stay_in_the_workspace() {
    let ws = Workspace::new();
    for pattern in ["/etc/*", "../*", "src/../../x", "~/.ssh/*"] {
        let err = ws.err("glob", json!({"pattern": pattern}));
        assert_eq!(err.kind, ToolErrorKind::InvalidPattern, "{pattern}");
        assert_eq!(err.field.as_deref(), Some("/pattern"));
    }
    assert_eq!(
        ws.err_kind("glob", json!({"pattern": "*", "path": "/etc"})),
        ToolErrorKind::OutsideRoots
    );
    assert_eq!(
        ws.err_kind("glob", json!({"pattern": "[z-a]"})),
        ToolErrorKind::InvalidPattern
    );
}

#[test]
fn symlinked_directories_are_not_followed_out() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.rs"), "x").unwrap();
    let ws = Workspace::new();
    ws.write("src/a.rs", "x");
    symlink(outside.path(), &ws.root().join("src/escape"));
    let out = ws.call("glob", json!({"pattern": "**/*.rs"})).unwrap();
    assert_eq!(matches(&out), ["src/a.rs"]);
}

#[test]
fn searches_from_a_subdirectory() {
    let ws = Workspace::new();
    ws.write("a/x.rs", "x");
    ws.write("b/y.rs", "x");
    let out = ws
        .call("glob", json!({"pattern": "*.rs", "path": "b"}))
        .unwrap();
    assert_eq!(matches(&out), ["b/y.rs"]);
    assert_eq!(out["path"], "b");
    assert_eq!(
        ws.err_kind("glob", json!({"pattern": "*", "path": "b/y.rs"})),
        ToolErrorKind::NotAFile
    );
}
