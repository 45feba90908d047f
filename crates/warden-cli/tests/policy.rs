//! `warden policy check|explain`: the CLI contract and the explanation's shape.

use crate::support::Project;

#[test]
fn check_json_prints_exactly_one_object_with_the_contract_fields() {
    let p = Project::new();
    let run = p.run(&[
        "policy",
        "check",
        "--json",
        "bash",
        "git push --force origin main",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 1);
    let d = run.json();
    for field in ["decision", "risk", "reason", "layer"] {
        assert!(d.get(field).is_some(), "{field} missing: {d}");
    }
    assert_eq!(d["decision"], "rewrite");
    assert_eq!(
        d["rewrite"]["target"],
        "git push --force-with-lease origin main"
    );
    assert_eq!(d["approval"]["tool"], "bash");
    assert!(
        d["approval"]["rollback"]
            .as_str()
            .is_some_and(|r| !r.is_empty())
    );
}

#[test]
fn every_decision_exits_zero() {
    let p = Project::new();
    p.write("src/main.rs", "fn main() {}\n");
    let cases: &[(&[&str], &str)] = &[
        (&["bash", "ls -la src"], "allow"),
        (&["bash", "cat ~/.ssh/id_rsa"], "deny"),
        (&["bash", "npm install left-pad"], "require_approval"),
        (
            &["bash", "curl -o x https://example.com"],
            "require_escalation",
        ),
        (&["read", "src/main.rs"], "allow"),
        (&["write", ".git/config"], "deny"),
        (&["fetch", "https://example.com"], "require_escalation"),
        (&["--mode", "plan", "edit", "src/main.rs"], "deny"),
        (&["--mode", "accept-edits", "edit", "src/main.rs"], "allow"),
    ];
    for (args, want) in cases {
        let mut all = vec!["policy", "check", "--json"];
        all.extend_from_slice(args);
        let run = p.run(&all);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert_eq!(run.json()["decision"], *want, "{args:?}");
    }
}

#[test]
fn settings_files_and_modes_are_applied_and_errors_exit_2() {
    let p = Project::new();
    p.write(
        "extra.toml",
        "[permissions]\nallow = [\"Bash(npm test *)\"]\n",
    );
    let run = p.run(&[
        "policy",
        "check",
        "--json",
        "--settings",
        "extra.toml",
        "bash",
        "npm test -- --watch",
    ]);
    assert_eq!(run.json()["decision"], "allow");
    assert_eq!(run.json()["rule"], "Bash(npm test *)");
    p.write("bad.toml", "[permissions]\n\ndeny = [\"Bash(rm -rf\"]\n");
    let run = p.run(&["policy", "check", "--settings", "bad.toml", "bash", "ls"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("bad.toml:3"), "{}", run.stderr);
    assert!(run.stderr.contains("Bash(rm -rf"), "{}", run.stderr);
    let run = p.run(&["policy", "check", "--mode", "yolo", "bash", "ls"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("yolo"));
    let run = p.run(&["policy", "check", "bash"]);
    assert_eq!(run.code, 2);
}

#[test]
fn explain_lists_every_layer_in_order() {
    let p = Project::new();
    let run = p.run(&[
        "policy",
        "explain",
        "bash",
        "ls src && FOO=$(cat .env) make test",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("explain_compound", p.scrub(&run.stdout));
    let run = p.run(&[
        "policy",
        "explain",
        "--mode",
        "auto",
        "bash",
        "timeout 60 cargo test",
    ]);
    insta::assert_snapshot!("explain_wrapper_auto", p.scrub(&run.stdout));
    let run = p.run(&["policy", "explain", "read", "../outside.txt"]);
    insta::assert_snapshot!("explain_read_outside", p.scrub(&run.stdout));
}

#[test]
fn an_unknown_tool_is_a_usage_error_naming_the_known_ones() {
    let p = Project::new();
    for (tool, target) in [
        ("bsh", "ls"),
        ("mcp__github__create_issue", "{}"),
        ("Read", "x"),
    ] {
        let run = p.run(&["policy", "check", tool, target]);
        assert_eq!(run.code, 2, "{tool}: {}", run.stdout);
        assert!(
            run.stderr.contains("unknown tool")
                && run.stderr.contains("bash")
                && run.stderr.contains("readFile")
                && run.stderr.contains("Skill"),
            "{}",
            run.stderr
        );
        let run = p.run(&["policy", "explain", tool, target]);
        assert_eq!(run.code, 2, "{tool}");
    }
    // The tools a model is offered are known by their own names too.
    for (tool, target) in [
        ("readFile", "README.md"),
        ("webFetch", "https://docs.rs"),
        ("Skill", "x"),
    ] {
        let run = p.run(&["policy", "check", "--json", tool, target]);
        assert_eq!(run.code, 0, "{tool}: {}", run.stderr);
    }
}

#[test]
fn a_reader_that_runs_code_is_named_in_the_reason() {
    let p = Project::new();
    for (command, reason) in [
        (
            "awk '{print | \"sh\"}' README.md",
            "awk program pipes to or from a command",
        ),
        (
            "sed -f script.sed README.md",
            "sed script comes from a file",
        ),
        ("less +!id README.md", "less runs a shell command"),
        (
            "git --exec-path=/tmp log",
            "git runs its commands from the directory",
        ),
    ] {
        let run = p.run(&["policy", "check", "--json", "bash", command]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let decision = run.json();
        assert_eq!(
            decision["decision"], "require_approval",
            "{command}: {decision}"
        );
        assert_eq!(decision["risk"], "L3", "{command}: {decision}");
        assert!(
            decision["reason"].as_str().unwrap().contains(reason),
            "{command}: {decision}"
        );
    }
}
