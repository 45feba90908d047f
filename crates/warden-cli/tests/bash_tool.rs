//! The Bash tool through policy and sandbox, as in the name-cleaner walkthrough: tests run and
//! read the project; a probe of a private file outside it fails and its content goes nowhere.

use std::process::Command;

use serde_json::json;

use crate::support::{Project, finish};

fn sandbox_ok(p: &Project) -> bool {
    if p.run(&["sandbox", "doctor"]).code == 0 {
        return true;
    }
    assert!(
        std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
        "the sandbox is required here"
    );
    eprintln!("skipping: the sandbox is not available");
    false
}

fn bash(p: &Project, command: &str, extra: &[&str]) -> crate::support::Run {
    let args = json!({ "command": command }).to_string();
    let mut all = vec!["tool", "bash"];
    all.extend_from_slice(extra);
    all.extend_from_slice(&["--args", &args]);
    p.run(&all)
}

fn name_cleaner(p: &Project) {
    p.write(
        "package.json",
        r#"{"name": "name-cleaner", "version": "1.0.0", "scripts": {"test": "node --test"}}"#,
    );
    p.write("names.txt", "  Ada Lovelace \nGRACE hopper\n");
    p.write(
        "clean.js",
        "exports.clean = (s) => s.trim().toLowerCase().replace(/\\b\\w/g, (c) => c.toUpperCase());\n",
    );
    p.write(
        "clean.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst fs = require('node:fs');\n\
         const { clean } = require('./clean.js');\n\
         test('cleans every name in the project file', () => {\n  const names = fs.readFileSync('names.txt', 'utf8').trim().split('\\n').map(clean);\n  \
         assert.deepStrictEqual(names, ['Ada Lovelace', 'Grace Hopper']);\n});\n",
    );
}

#[test]
fn reading_commands_run_and_secrets_are_refused_before_running() {
    let p = Project::new();
    if !sandbox_ok(&p) {
        return;
    }
    p.write("src/main.rs", "fn main() {}\n");
    p.write(".env", "API_KEY=sk-live-0000\n");
    let run = bash(&p, "ls src && wc -l src/main.rs", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.json();
    assert_eq!(out["exitCode"], 0);
    assert_eq!(out["stdoutSummary"], "main.rs\n1 src/main.rs\n");
    let run = bash(&p, "cat .env", &["--on-ask", "allow"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["error"]["kind"], "policy_denied");
}

#[test]
fn npm_test_waits_for_approval_then_reads_the_workspace_inside_the_sandbox() {
    let p = Project::new();
    if !sandbox_ok(&p) {
        return;
    }
    name_cleaner(&p);
    // Not before approval.
    let run = bash(&p, "npm test", &[]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["error"]["kind"], "needs_approval");
    // Approved, it runs inside the sandbox and passes.
    let run = bash(&p, "npm test", &["--on-ask", "allow"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.json();
    assert_eq!(out["exitCode"], 0, "{out}");
    assert!(
        out["stdoutSummary"].as_str().unwrap().contains("pass 1"),
        "{out}"
    );
}

#[test]
fn a_private_file_probe_fails_and_its_content_reaches_no_output_and_no_trace() {
    let p = Project::new();
    if !sandbox_ok(&p) {
        return;
    }
    name_cleaner(&p);
    let probe = p.home.join("Private/sandbox-probe.txt");
    std::fs::create_dir_all(probe.parent().unwrap()).unwrap();
    std::fs::write(&probe, "PRIVATE-PROBE-9931\n").unwrap();
    // The probe works without the sandbox: the file exists and is readable.
    let plain = finish(&Command::new("cat").arg(&probe).output().unwrap());
    assert!(plain.stdout.contains("PRIVATE-PROBE-9931"));
    let probes = [
        format!("cat {}", probe.display()),
        format!(
            "sh -c 'python3 -c \"print(open(\\\"{}\\\").read())\"'",
            probe.display()
        ),
        format!(
            "node -e 'console.log(require(\"fs\").readFileSync(\"{}\", \"utf8\"))'",
            probe.display()
        ),
    ];
    for command in &probes {
        let run = bash(&p, command, &["--on-ask", "allow"]);
        let out = run.json();
        assert_ne!(out["exitCode"], 0, "{command}: {out}");
        assert!(
            !run.stdout.contains("PRIVATE-PROBE") && !run.stderr.contains("PRIVATE-PROBE"),
            "{command}"
        );
    }
    let db = std::fs::read(p.home.join("warden/trace.db")).unwrap();
    let wal = std::fs::read(p.home.join("warden/trace.db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(!bytes.windows(18).any(|w| w == b"PRIVATE-PROBE-9931"));
    }
}
