use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use warden_protocol::ToolErrorKind;

use crate::support::Workspace;

fn hits(out: &Value) -> Vec<(String, u64, String)> {
    let mut all = Vec::new();
    for file in out["files"].as_array().unwrap() {
        for m in file["matches"].as_array().unwrap() {
            all.push((
                file["path"].as_str().unwrap().to_owned(),
                m["line"].as_u64().unwrap(),
                m["text"].as_str().unwrap().to_owned(),
            ));
        }
    }
    // Lines matched again and again are listed by place.
    for repeated in out["repeated"].as_array().into_iter().flatten() {
        assert_eq!(
            repeated["count"].as_u64().unwrap(),
            repeated["places"].as_array().unwrap().len() as u64,
            "every place listed in these tests"
        );
        for place in repeated["places"].as_array().unwrap() {
            let (path, line) = place.as_str().unwrap().rsplit_once(':').unwrap();
            all.push((
                path.to_owned(),
                line.parse().unwrap(),
                repeated["text"].as_str().unwrap().to_owned(),
            ));
        }
    }
    all
}

#[test]
fn finds_matches_grouped_by_file_with_line_numbers() {
    let ws = Workspace::new();
    ws.write(
        "src/auth.ts",
        "import x\nexport class AuthService {}\nclass Other {}\n",
    );
    ws.write("src/login.ts", "new AuthService()\n");
    ws.write("README.md", "nothing here\n");
    let out = ws.call("grep", json!({"pattern": "AuthService"})).unwrap();
    assert_eq!(
        hits(&out),
        [
            (
                "src/auth.ts".to_owned(),
                2,
                "export class AuthService {}".to_owned()
            ),
            ("src/login.ts".to_owned(), 1, "new AuthService()".to_owned()),
        ]
    );
    assert_eq!(out["totalMatches"], 2);
    assert_eq!(out["truncated"], false);
    assert!(out.get("truncationReason").is_none());
}

#[test]
fn regex_fixed_strings_and_case_options() {
    let ws = Workspace::new();
    ws.write("a.txt", "foo(1)\nFOO(2)\nfoo.bar\nfooxbar\n");
    assert_eq!(
        hits(&ws.call("grep", json!({"pattern": "foo.bar"})).unwrap()).len(),
        2
    );
    assert_eq!(
        hits(
            &ws.call("grep", json!({"pattern": "foo.bar", "fixedStrings": true}))
                .unwrap()
        )
        .len(),
        1
    );
    assert_eq!(
        hits(
            &ws.call(
                "grep",
                json!({"pattern": "foo\\(", "caseInsensitive": true})
            )
            .unwrap()
        )
        .len(),
        2
    );
    assert_eq!(
        hits(
            &ws.call("grep", json!({"pattern": "foo(", "fixedStrings": true}))
                .unwrap()
        )
        .len(),
        1
    );
}

#[test]
fn invalid_regex_is_a_clear_error() {
    let ws = Workspace::new();
    let err = ws.err("grep", json!({"pattern": "foo(("}));
    assert_eq!(err.kind, ToolErrorKind::InvalidPattern);
    assert_eq!(err.field.as_deref(), Some("/pattern"));
    assert!(err.message.contains("foo(("));
}

#[test]
fn path_glob_filters_files() {
    let ws = Workspace::new();
    ws.write("src/a.rs", "needle\n");
    ws.write("src/b.ts", "needle\n");
    ws.write("tests/c.rs", "needle\n");
    let out = ws
        .call("grep", json!({"pattern": "needle", "glob": "*.rs"}))
        .unwrap();
    let files: Vec<_> = hits(&out).into_iter().map(|h| h.0).collect();
    assert_eq!(files, ["src/a.rs", "tests/c.rs"]);
    let out = ws
        .call("grep", json!({"pattern": "needle", "glob": "src/*"}))
        .unwrap();
    assert_eq!(hits(&out).len(), 2);
    let out = ws
        .call("grep", json!({"pattern": "needle", "path": "src/a.rs"}))
        .unwrap();
    assert_eq!(hits(&out).len(), 1);
}

#[test]
fn context_lines_come_before_and_after() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\ntwo\nthree\nfour\nfive\n");
    let out = ws
        .call("grep", json!({"pattern": "three", "context": 1}))
        .unwrap();
    let m = &out["files"][0]["matches"][0];
    assert_eq!(m["line"], 3);
    assert_eq!(m["before"], json!([{"line": 2, "text": "two"}]));
    assert_eq!(m["after"], json!([{"line": 4, "text": "four"}]));
}

#[test]
fn binaries_denied_files_and_excluded_dirs_are_skipped() {
    let ws = Workspace::new();
    ws.write("src/app.py", "token = 1\n");
    ws.write(".env", "token = SECRET\n");
    ws.write(
        "keys/deploy.pem",
        "-----BEGIN PRIVATE KEY-----\ntoken\n-----END PRIVATE KEY-----\n",
    );
    ws.write(
        "keys/ca.pem",
        "-----BEGIN CERTIFICATE-----\ntoken\n-----END CERTIFICATE-----\n",
    );
    ws.write("node_modules/x/index.js", "token\n");
    let mut bin = b"token\0\x01\x02".to_vec();
    bin.extend_from_slice(b"token\n");
    ws.write("data.bin", bin);
    // The probe works: the secret file holds the pattern.
    assert!(
        std::fs::read_to_string(ws.root().join(".env"))
            .unwrap()
            .contains("token")
    );
    let out = ws.call("grep", json!({"pattern": "token"})).unwrap();
    let files: Vec<_> = hits(&out).into_iter().map(|h| h.0).collect();
    // A certificate is searched like any file; a private key is not.
    assert_eq!(files, ["keys/ca.pem", "src/app.py"]);
    assert!(!out.to_string().contains("SECRET"));
    assert_eq!(
        ws.err_kind("grep", json!({"pattern": "token", "path": ".env"})),
        ToolErrorKind::DeniedPath
    );
}

#[test]
fn a_million_matching_lines_are_capped() {
    let ws = Workspace::new();
    let mut text = String::with_capacity(12_000_000);
    for i in 0..1_000_000 {
        let _ = writeln!(text, "hit {i}");
    }
    ws.write("huge.txt", text);
    ws.write("other.txt", "hit\n");
    let out = ws.call("grep", json!({"pattern": "hit"})).unwrap();
    assert_eq!(out["totalMatches"], 200);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["truncationReason"], "too_many_matches");
    assert!(out["hint"].as_str().unwrap().contains("narrow"));
    let out = ws
        .call("grep", json!({"pattern": "hit", "maxHits": 5}))
        .unwrap();
    assert_eq!(out["totalMatches"], 5);
}

#[test]
fn exactly_the_cap_is_not_truncated() {
    let mut ws = Workspace::new();
    ws.settings.tools.grep.max_hits = 3;
    ws.write("a.txt", "x\nx\nx\n");
    let out = ws.call("grep", json!({"pattern": "x"})).unwrap();
    assert_eq!(out["totalMatches"], 3);
    assert_eq!(out["truncated"], false);
}

#[test]
fn long_lines_are_cut_and_flagged() {
    let ws = Workspace::new();
    ws.write(
        "min.js",
        format!("{}needle{}\n", "a".repeat(500), "b".repeat(500)),
    );
    let out = ws.call("grep", json!({"pattern": "needle"})).unwrap();
    let m = &out["files"][0]["matches"][0];
    assert_eq!(m["cut"], true);
    assert_eq!(m["text"].as_str().unwrap().chars().count(), 301);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["truncationReason"], "long_lines");
}

/// The in-process search finds exactly what ripgrep finds on a real tree (this repository).
#[test]
fn agrees_with_ripgrep_on_this_repository() {
    if Command::new("rg").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "ripgrep is required in CI (.ci/run installs it)"
        );
        eprintln!("skipping: rg is not installed");
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let crates = repo.join("crates");
    let mut ws = Workspace::new();
    ws.settings.project_root = repo.clone();
    ws.settings.cwd = repo.clone();
    ws.settings.tools.grep.max_hits = usize::MAX;
    ws.settings.tools.grep.max_line_chars = usize::MAX;
    let out = ws
        .call(
            "grep",
            json!({"pattern": "fn [a-z_]+\\(", "path": "crates"}),
        )
        .unwrap();
    let ours: BTreeSet<(String, u64)> = hits(&out).into_iter().map(|(p, l, _)| (p, l)).collect();
    // ripgrep with the same walk: hidden files included, gitignore without a git requirement,
    // the same default excludes and denied names.
    let output = Command::new("rg")
        .args([
            "-n",
            "--no-heading",
            "--hidden",
            "--no-require-git",
            "-g",
            "!target",
            "-g",
            "!.env*",
        ])
        .args(["-g", "!*.pem", "-g", "!*.key", "fn [a-z_]+\\("])
        .arg(&crates)
        .output()
        .unwrap();
    let theirs: BTreeSet<(String, u64)> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let mut parts = line.splitn(3, ':');
            let path = Path::new(parts.next().unwrap())
                .strip_prefix(&repo)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (path, parts.next().unwrap().parse().unwrap())
        })
        .collect();
    assert!(
        theirs.len() > 50,
        "too few hits to compare: {}",
        theirs.len()
    );
    assert_eq!(ours, theirs);
}

#[test]
fn read_deny_rules_stop_directory_walks_too() {
    let mut ws = Workspace::new();
    ws.write("secrets/plan.md", "launch code 1234\n");
    ws.write("src/app.rs", "launch()\n");
    // The probe works without the rule.
    let out = ws.call("grep", json!({"pattern": "launch"})).unwrap();
    assert_eq!(hits(&out).len(), 2);
    ws.settings
        .permissions
        .deny
        .push("Read(secrets/**)".to_owned());
    let out = ws.call("grep", json!({"pattern": "launch"})).unwrap();
    let files: Vec<_> = hits(&out).into_iter().map(|h| h.0).collect();
    assert_eq!(files, ["src/app.rs"]);
    let out = ws.call("glob", json!({"pattern": "**/*.md"})).unwrap();
    assert_eq!(out["matches"], json!([]));
    assert_eq!(
        ws.err_kind("readFile", json!({"path": "secrets/plan.md"})),
        ToolErrorKind::DeniedPath
    );
}

#[test]
fn a_line_matched_in_many_files_is_shown_twice_then_listed_by_place() {
    let ws = Workspace::new();
    for n in 0..12 {
        ws.write(
            &format!("vendor{n:02}/lib.js"),
            format!("// Copyright (c) Example Corp\nexport const version{n} = {n};\n"),
        );
    }
    let out = ws
        .call("grep", json!({"pattern": "Copyright|version3 "}))
        .unwrap();
    assert_eq!(out["totalMatches"], 13, "{out}");
    let shown: Vec<_> = hits(&out).into_iter().collect();
    assert_eq!(shown.len(), 13, "every match is still accounted for");
    let files = out["files"].as_array().unwrap();
    let full: usize = files
        .iter()
        .map(|f| f["matches"].as_array().unwrap().len())
        .sum();
    assert_eq!(
        full, 3,
        "two copies of the line, and the one distinct match: {out}"
    );
    assert_eq!(out["repeated"][0]["text"], "// Copyright (c) Example Corp");
    assert_eq!(out["repeated"][0]["count"], 10);
    assert_eq!(out["repeated"][0]["places"][0], "vendor02/lib.js:1");
    assert_eq!(out["truncated"], true);
    assert_eq!(out["truncationReason"], "duplicate_hits");
    assert!(
        out["summary"]
            .as_str()
            .unwrap()
            .starts_with("13 matches in 12 files; 10 matches of a line already shown"),
        "{out}"
    );
    // Distinct lines are never folded.
    let plain = ws.call("grep", json!({"pattern": "export const"})).unwrap();
    assert!(
        plain.get("repeated").is_none() && plain["truncated"] == false,
        "{plain}"
    );
}
