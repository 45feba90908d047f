use std::fmt::Write as _;

use serde_json::json;
use warden_protocol::ToolErrorKind;

use crate::support::{Workspace, call_in, symlink};

fn numbered(n: usize) -> String {
    let mut s = String::new();
    for i in 1..=n {
        let _ = writeln!(s, "line {i}");
    }
    s
}

#[test]
fn reads_numbered_lines_with_range_and_total() {
    let ws = Workspace::new();
    ws.write("src/a.txt", "alpha\nbeta\r\ngamma");
    let out = ws.call("readFile", json!({"path": "src/a.txt"})).unwrap();
    assert_eq!(out["path"], "src/a.txt");
    assert_eq!(out["range"], "1-3");
    assert_eq!(out["totalLines"], 3);
    assert_eq!(out["truncated"], false);
    assert_eq!(
        out["content"],
        "     1\talpha\n     2\tbeta\n     3\tgamma\n"
    );
}

#[test]
fn a_line_range_returns_just_those_lines() {
    let ws = Workspace::new();
    ws.write("f.txt", numbered(50));
    let out = ws
        .call(
            "readFile",
            json!({"path": "f.txt", "startLine": 10, "endLine": 12}),
        )
        .unwrap();
    assert_eq!(out["range"], "10-12");
    assert_eq!(
        out["content"],
        "    10\tline 10\n    11\tline 11\n    12\tline 12\n"
    );
    assert_eq!(out["truncated"], false);
}

#[test]
fn large_files_come_in_pages_that_say_where_to_continue() {
    let ws = Workspace::new();
    ws.write("big.txt", numbered(5000));
    let out = ws.call("readFile", json!({"path": "big.txt"})).unwrap();
    assert_eq!(out["range"], "1-2000");
    assert_eq!(out["totalLines"], 5000);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["truncationReason"], "page_limit");
    assert_eq!(out["nextStartLine"], 2001);
    let last = ws
        .call("readFile", json!({"path": "big.txt", "startLine": 4001}))
        .unwrap();
    assert_eq!(last["range"], "4001-5000");
    assert_eq!(last["truncated"], false);
    // Asking for more than a page is clamped to a page, and says so.
    let wide = ws
        .call(
            "readFile",
            json!({"path": "big.txt", "startLine": 1, "endLine": 4000}),
        )
        .unwrap();
    assert_eq!(wide["range"], "1-2000");
    assert_eq!(wide["truncationReason"], "page_limit");
}

#[test]
fn the_byte_cap_stops_a_page_early() {
    let mut ws = Workspace::new();
    ws.settings.tools.read.max_bytes = 100;
    ws.write("f.txt", numbered(100));
    let out = ws.call("readFile", json!({"path": "f.txt"})).unwrap();
    assert!(out["content"].as_str().unwrap().len() <= 100);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["truncationReason"], "max_bytes");
    let next = out["nextStartLine"].as_u64().unwrap();
    assert!(next > 1 && next < 100);
}

#[test]
fn long_lines_are_cut_and_counted() {
    let ws = Workspace::new();
    ws.write("min.js", format!("{}\nshort\n", "x".repeat(10_000)));
    let out = ws.call("readFile", json!({"path": "min.js"})).unwrap();
    let content = out["content"].as_str().unwrap();
    assert!(content.len() < 3000, "{}", content.len());
    assert!(content.contains("line cut at 2000 of 10000 chars"));
    assert_eq!(out["linesCut"], 1);
}

#[test]
fn paths_are_normalised() {
    let ws = Workspace::new();
    ws.write("src/a.txt", "a\n");
    for spelling in ["src//a.txt", "./src/../src/a.txt", "src/./a.txt"] {
        let out = ws.call("readFile", json!({"path": spelling})).unwrap();
        assert_eq!(out["path"], "src/a.txt", "{spelling}");
    }
    let abs = ws.root().join("src/a.txt");
    let out = ws.call("readFile", json!({"path": abs})).unwrap();
    assert_eq!(out["path"], "src/a.txt");
}

#[test]
fn paths_outside_the_roots_are_refused() {
    let ws = Workspace::new();
    // The probe works: the file is readable without the tool.
    assert!(std::fs::read_to_string("/etc/passwd").is_ok());
    assert_eq!(
        ws.err_kind("readFile", json!({"path": "/etc/passwd"})),
        ToolErrorKind::OutsideRoots
    );
    assert_eq!(
        ws.err_kind("readFile", json!({"path": "../../../../etc/passwd"})),
        ToolErrorKind::OutsideRoots
    );
    assert_eq!(
        ws.err_kind("readFile", json!({"path": "~/.bashrc"})),
        ToolErrorKind::OutsideRoots
    );
}

#[test]
fn a_symlink_leaving_the_roots_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET").unwrap();
    let ws = Workspace::new();
    symlink(&secret, &ws.root().join("innocent.txt"));
    symlink(outside.path(), &ws.root().join("linkdir"));
    // The link itself resolves: reading it directly works.
    assert_eq!(
        std::fs::read_to_string(ws.root().join("innocent.txt")).unwrap(),
        "TOP SECRET"
    );
    let err = ws.err("readFile", json!({"path": "innocent.txt"}));
    assert_eq!(err.kind, ToolErrorKind::SymlinkEscape);
    assert!(!err.message.contains("TOP SECRET"));
    assert_eq!(
        ws.err_kind("readFile", json!({"path": "linkdir/secret.txt"})),
        ToolErrorKind::SymlinkEscape
    );
}

#[test]
fn protected_files_are_denied_by_default() {
    let ws = Workspace::new();
    let key = "-----BEGIN RSA PRIVATE KEY-----\nSECRET\n-----END RSA PRIVATE KEY-----\n";
    for (path, content) in [
        (".env", "SECRET=1\n"),
        (".env.production", "SECRET=1\n"),
        ("config/.env.local", "SECRET=1\n"),
        ("certs/server.pem", key),
        ("certs/server.key", key),
        ("certs/server", key),
        ("id_rsa", "SECRET=1\n"),
        ("home/.ssh/config", "SECRET=1\n"),
        ("deploy/.aws/credentials", "SECRET=1\n"),
        ("store.p12", "SECRET=1\n"),
        (".git/config", "SECRET=1\n"),
    ] {
        ws.write(path, content);
        let err = ws.err("readFile", json!({"path": path}));
        assert_eq!(err.kind, ToolErrorKind::DeniedPath, "{path}");
        assert!(err.message.contains("denied"), "{path}: {}", err.message);
    }
    // Near misses are ordinary files: templates, public keys, certificates.
    let cert = "-----BEGIN CERTIFICATE-----\nok\n-----END CERTIFICATE-----\n";
    for (path, content) in [
        ("src/environment.rs", "ok\n"),
        ("docs/keys.md", "ok\n"),
        ("git/config", "ok\n"),
        (".env.example", "KEY=\n"),
        ("keys/id_ed25519.pub", "ssh-ed25519 AAAA\n"),
        ("certs/ca.pem", cert),
        ("certs/README", "ok\n"),
    ] {
        ws.write(path, content);
        assert!(ws.call("readFile", json!({"path": path})).is_ok(), "{path}");
    }
}

#[test]
fn a_symlink_to_a_denied_file_is_denied() {
    let ws = Workspace::new();
    ws.write(".env", "API_KEY=abc\n");
    symlink(&ws.root().join(".env"), &ws.root().join("notes.txt"));
    assert_eq!(
        ws.err_kind("readFile", json!({"path": "notes.txt"})),
        ToolErrorKind::DeniedPath
    );
}

#[test]
fn configured_denies_add_to_the_defaults() {
    let mut ws = Workspace::new();
    ws.settings
        .sandbox
        .filesystem
        .deny_read
        .push("private/**".to_owned());
    ws.write("private/plan.md", "x\n");
    ws.write(".env", "x\n");
    assert_eq!(
        ws.err_kind("readFile", json!({"path": "private/plan.md"})),
        ToolErrorKind::DeniedPath
    );
    assert_eq!(
        ws.err_kind("readFile", json!({"path": ".env"})),
        ToolErrorKind::DeniedPath
    );
}

#[test]
fn extra_read_roots_come_from_allow_read() {
    let extra = tempfile::tempdir().unwrap();
    std::fs::write(extra.path().join("ref.txt"), "reference\n").unwrap();
    let mut ws = Workspace::new();
    let path = extra.path().join("ref.txt");
    assert_eq!(
        ws.err_kind("readFile", json!({"path": path})),
        ToolErrorKind::OutsideRoots
    );
    ws.settings
        .sandbox
        .filesystem
        .allow_read
        .push(extra.path().to_string_lossy().into_owned());
    assert!(ws.call("readFile", json!({"path": path})).is_ok());
}

#[test]
fn directories_missing_files_and_bad_ranges_are_clear_errors() {
    let ws = Workspace::new();
    ws.write("src/a.txt", "a\nb\n");
    let err = ws.err("readFile", json!({"path": "src"}));
    assert_eq!(err.kind, ToolErrorKind::IsDirectory);
    assert!(err.message.contains("glob"));
    assert_eq!(
        ws.err_kind("readFile", json!({"path": "nope.txt"})),
        ToolErrorKind::NotFound
    );
    let err = ws.err("readFile", json!({"path": "src/a.txt", "startLine": 10}));
    assert_eq!(err.field.as_deref(), Some("/startLine"));
    assert!(err.message.contains("2 lines"), "{}", err.message);
    let err = ws.err(
        "readFile",
        json!({"path": "src/a.txt", "startLine": 2, "endLine": 1}),
    );
    assert_eq!(err.field.as_deref(), Some("/endLine"));
}

#[test]
fn binary_files_are_refused_with_size_and_type() {
    let ws = Workspace::new();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&[0u8; 100]);
    ws.write("logo.png", &png);
    let err = ws.err("readFile", json!({"path": "logo.png"}));
    assert_eq!(err.kind, ToolErrorKind::BinaryFile);
    assert!(err.message.contains("108 bytes"), "{}", err.message);
    assert!(err.message.contains("PNG image"), "{}", err.message);
    // A NUL past the sniffed head is still caught before it reaches the model.
    let mut late = "text\n".repeat(5000).into_bytes();
    late.extend_from_slice(b"bad\0line\n");
    ws.write("late.dat", &late);
    assert_eq!(
        ws.err_kind("readFile", json!({"path": "late.dat", "startLine": 5001})),
        ToolErrorKind::BinaryFile
    );
}

#[test]
fn a_two_gigabyte_file_is_paged_without_reading_it_whole() {
    let ws = Workspace::new();
    let path = ws.write("huge.log", numbered(3000));
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    // Sparse: text at the start, then 2 GB of holes.
    file.set_len(2 * 1024 * 1024 * 1024).unwrap();
    let out = ws
        .call(
            "readFile",
            json!({"path": "huge.log", "startLine": 5, "endLine": 6}),
        )
        .unwrap();
    assert_eq!(out["content"], "     5\tline 5\n     6\tline 6\n");
    // Lines were not counted: the file was read only as far as the page.
    assert!(out["totalLines"].is_null());
    let out = ws.call("readFile", json!({"path": "huge.log"})).unwrap();
    assert_eq!(out["range"], "1-2000");
    assert_eq!(out["truncated"], true);
}

#[test]
fn each_read_records_the_content_hash() {
    let ws = Workspace::new();
    let path = ws.write("src/lib.rs", "fn main() {}\n");
    let ctx = ws.ctx();
    call_in(&ctx, "readFile", json!({"path": "src/lib.rs"})).unwrap();
    let record = ctx.reads.get(&path).unwrap();
    // sha256sum of the same bytes.
    assert_eq!(
        record.sha256,
        "536e506bb90914c243a12b397b9a998f85ae2cbd9ba02dfd03a9e155ca5ca0f4"
    );
    assert_eq!(record.len, 13);
}

#[test]
fn empty_files_read_as_empty() {
    let ws = Workspace::new();
    ws.write("empty.txt", "");
    let out = ws.call("readFile", json!({"path": "empty.txt"})).unwrap();
    assert_eq!(out["content"], "");
    assert_eq!(out["totalLines"], 0);
    assert_eq!(out["truncated"], false);
}

#[test]
fn a_page_of_source_comes_with_its_imports_enclosing_blocks_and_types() {
    let ws = Workspace::new();
    let mut src = String::from(
        "use std::fmt;\nuse crate::slug::Options;\n\npub struct Report {\n    pub lines: Vec<String>,\n}\n\nimpl Report {\n",
    );
    for i in 0..40 {
        let _ = writeln!(
            src,
            "    pub fn step_{i}(&self) -> usize {{\n        self.lines.len() + {i}\n    }}\n"
        );
    }
    src.push_str("    pub fn render(&self, opts: &Options) -> Report {\n        let out = Report { lines: Vec::new() };\n        out\n    }\n}\n");
    ws.write("src/report.rs", &src);
    let total = src.lines().count() as u64;
    let out = ws
        .call(
            "readFile",
            json!({"path": "src/report.rs", "startLine": total - 3, "endLine": total - 2}),
        )
        .unwrap();
    let outline = &out["outline"];
    assert_eq!(outline["imports"][0]["text"], "use std::fmt;", "{out}");
    assert_eq!(outline["imports"][1]["line"], 2);
    let enclosing: Vec<&str> = outline["enclosing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        enclosing,
        [
            "impl Report {",
            "    pub fn render(&self, opts: &Options) -> Report {"
        ]
    );
    assert_eq!(outline["types"][0]["name"], "Report");
    assert_eq!(outline["types"][0]["line"], 4);
    // A whole small file needs no outline; a page that stops early says where to go on.
    ws.write("src/small.rs", "use std::fmt;\nfn a() {}\n");
    let small = ws
        .call("readFile", json!({"path": "src/small.rs"}))
        .unwrap();
    assert!(small.get("outline").is_none(), "{small}");
    ws.write("big.txt", numbered(5000));
    let page = ws.call("readFile", json!({"path": "big.txt"})).unwrap();
    assert_eq!(
        page["summary"],
        "lines 1-2000 of 5000 shown; more from startLine 2001"
    );
}
