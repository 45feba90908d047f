use serde_json::Value;

use crate::support::Project;

fn sessions(p: &Project) -> Vec<Value> {
    let run = p.run(&["trace", "list", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.json().as_array().unwrap().clone()
}

#[test]
fn every_call_is_recorded_with_its_decision_and_outcome() {
    let p = Project::new();
    p.write("src/lib.rs", "pub fn f() {}\n");
    p.write(".env", "X=1\n");
    let first = p.run(&["tool", "glob", "--args", r#"{"pattern": "*.rs"}"#]);
    assert_eq!(first.code, 0);
    let list = sessions(&p);
    assert_eq!(list.len(), 1);
    let id = list[0]["sessionId"].as_str().unwrap().to_owned();
    // More calls in the same session continue its sequence.
    assert_eq!(
        p.run(&[
            "tool",
            "readFile",
            "--session",
            &id,
            "--args",
            r#"{"path": ".env"}"#
        ])
        .code,
        1
    );
    assert_eq!(
        p.run(&[
            "tool",
            "grep",
            "--session",
            &id,
            "--args",
            r#"{"pattern": "(("}"#
        ])
        .code,
        1
    );

    let run = p.run(&["trace", "show", &id, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events = run.json();
    let events = events.as_array().unwrap();
    assert_eq!(events.len(), 3);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(events[0]["tool"], "glob");
    assert_eq!(events[0]["status"], "ok");
    assert_eq!(events[0]["decision"]["decision"], "allow");
    // Decided by the policy engine: a read inside the workspace is allowed by the mode.
    assert_eq!(events[0]["decision"]["layer"], "mode");
    assert_eq!(events[0]["decision"]["risk"], "L1");
    assert_eq!(events[0]["arguments"]["pattern"], "*.rs");
    assert!(events[0]["bytesOut"].as_u64().unwrap() > 0);
    assert!(events[0]["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(events[1]["status"], "denied");
    assert_eq!(events[1]["decision"]["decision"], "deny");
    assert_eq!(events[1]["decision"]["layer"], "path_sandbox");
    assert_eq!(events[2]["status"], "error");
    assert!(events[2]["error"].as_str().unwrap().contains("regex"));

    let list = sessions(&p);
    assert_eq!(list[0]["events"], 3);
    assert_eq!(list[0]["denied"], 1);
    assert_eq!(list[0]["errors"], 1);

    let export = p.run(&["trace", "export", &id]);
    assert_eq!(export.code, 0);
    let lines: Vec<Value> = export
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["seq"], 2);

    let table = p.run(&["trace", "show", &id]);
    assert_eq!(table.code, 0);
    assert!(
        table.stdout.contains("deny/path_sandbox"),
        "{}",
        table.stdout
    );
}

#[test]
fn secrets_in_arguments_never_reach_the_trace() {
    let p = Project::new();
    p.write("a.txt", "x\n");
    let secret = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-AbCdEfGhIjKlMnOp";
    let args = format!(r#"{{"pattern": "{secret}", "fixedStrings": true}}"#);
    assert_eq!(p.run(&["tool", "grep", "--args", &args]).code, 0);
    let id = sessions(&p)[0]["sessionId"].as_str().unwrap().to_owned();
    let export = p.run(&["trace", "export", &id]);
    assert!(!export.stdout.contains(secret), "{}", export.stdout);
    assert!(export.stdout.contains("REDACTED"), "{}", export.stdout);
    // Nor the database file itself.
    let db = std::fs::read(p.home.join("warden/trace.db")).unwrap();
    let wal = std::fs::read(p.home.join("warden/trace.db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()));
    }
}

#[test]
fn an_unwritable_trace_is_a_clear_failure_and_the_tool_does_not_run_unrecorded() {
    let p = Project::new();
    std::fs::write(
        p.home.join("warden"),
        "a file where the trace directory should be",
    )
    .unwrap();
    let run = p.run(&["tool", "glob", "--args", r#"{"pattern": "*"}"#]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.is_empty());
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("trace"), "{}", run.stderr);
    // --no-trace runs without it.
    let run = p.run(&[
        "tool",
        "glob",
        "--no-trace",
        "--args",
        r#"{"pattern": "*"}"#,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn a_corrupt_trace_is_a_clear_failure() {
    let p = Project::new();
    std::fs::create_dir_all(p.home.join("warden")).unwrap();
    std::fs::write(p.home.join("warden/trace.db"), vec![0x5a; 8192]).unwrap();
    let run = p.run(&["trace", "list"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("trace.db"), "{}", run.stderr);
}

#[test]
fn showing_an_unknown_session_is_a_usage_error() {
    let p = Project::new();
    let run = p.run(&["trace", "show", "01a22a89-0000-7000-8000-000000000000"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("no session"), "{}", run.stderr);
}

#[test]
fn file_changes_run_through_the_policy_and_the_trace_keeps_sizes_not_content() {
    let p = Project::new();
    p.write("notes.md", "draft\n");
    // Default mode asks before a workspace edit; the flag answers.
    let args = r#"{"path": "notes.md", "oldString": "draft", "newString": "SECRET-PLAN-42"}"#;
    let run = p.run(&["tool", "editFile", "--args", args]);
    assert_eq!(run.json()["error"]["kind"], "needs_approval");
    assert_eq!(
        std::fs::read_to_string(p.root().join("notes.md")).unwrap(),
        "draft\n"
    );
    let run = p.run(&["tool", "editFile", "--on-ask", "allow", "--args", args]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(p.root().join("notes.md")).unwrap(),
        "SECRET-PLAN-42\n"
    );
    // Protected paths are refused whatever the flag says.
    let run = p.run(&[
        "tool",
        "writeFile",
        "--on-ask",
        "allow",
        "--args",
        r#"{"path": ".envrc", "content": "x"}"#,
    ]);
    assert_eq!(run.json()["error"]["kind"], "policy_denied");
    let id = sessions(&p)
        .iter()
        .find_map(|s| {
            (s["events"] == 1 && s["errors"] == 0 && s["denied"] == 0)
                .then(|| s["sessionId"].as_str().unwrap().to_owned())
        })
        .unwrap();
    let export = p.run(&["trace", "export", &id]);
    assert!(
        !export.stdout.contains("SECRET-PLAN-42"),
        "{}",
        export.stdout
    );
    assert!(export.stdout.contains("<14 bytes>"), "{}", export.stdout);
    // The event says where and how much changed.
    let event: Value = serde_json::from_str(export.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(event["summary"]["path"], "notes.md");
    assert_eq!(event["summary"]["changedRanges"], serde_json::json!(["1"]));
    assert_eq!(event["summary"]["diffSummary"], "+1 -1 lines");
}
