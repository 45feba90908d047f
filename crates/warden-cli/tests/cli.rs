use std::fmt::Write as _;

use crate::support::Project;

#[test]
fn help_lists_every_subcommand_on_one_line_each() {
    let p = Project::new();
    let run = p.run(&["--help"]);
    assert_eq!(run.code, 0);
    for sub in ["tool ", "tools ", "trace ", "config "] {
        let line = run
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(sub))
            .unwrap_or_else(|| panic!("{sub}"));
        assert!(line.split_whitespace().count() > 2, "{line}");
    }
    let run = p.run(&["trace", "--help"]);
    for sub in ["list ", "show ", "export "] {
        assert!(
            run.stdout.lines().any(|l| l.trim_start().starts_with(sub)),
            "{sub}"
        );
    }
}

#[test]
fn a_tool_runs_and_prints_its_json_result() {
    let p = Project::new();
    p.write("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    let run = p.run(&["tool", "grep", "--args", r#"{"pattern": "println"}"#]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.json();
    assert_eq!(out["files"][0]["path"], "src/main.rs");
    assert_eq!(out["files"][0]["matches"][0]["line"], 2);
    assert!(run.stderr.is_empty());
}

#[test]
fn minus_c_picks_the_project() {
    let p = Project::new();
    p.write("a.txt", "hello\n");
    let mut cmd = p.command();
    cmd.current_dir(p.tmp()).args([
        "-C",
        "project",
        "tool",
        "readFile",
        "--args",
        r#"{"path": "a.txt"}"#,
    ]);
    let run = crate::support::finish(&cmd.output().unwrap());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["content"], "     1\thello\n");
}

#[test]
fn a_tool_error_exits_1_with_structured_json_and_one_stderr_line() {
    let p = Project::new();
    p.write(
        ".env",
        "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789\n",
    );
    let run = p.run(&["tool", "readFile", "--args", r#"{"path": ".env"}"#]);
    assert_eq!(run.code, 1);
    let out = run.json();
    assert_eq!(out["error"]["kind"], "policy_denied");
    assert!(!run.stdout.contains("sk-proj"));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    insta::assert_snapshot!("denied_read_stderr", run.stderr);
}

#[test]
fn invalid_arguments_name_the_field() {
    let p = Project::new();
    let run = p.run(&[
        "tool",
        "readFile",
        "--args",
        r#"{"path": "a", "startLine": "x"}"#,
    ]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["error"]["field"], "/startLine");
}

#[test]
fn usage_errors_exit_2_with_one_line_each() {
    let p = Project::new();
    let cases: &[(&str, &[&str])] = &[
        ("bad_json", &["tool", "grep", "--args", "{oops"]),
        ("args_not_object", &["tool", "grep", "--args", "[1]"]),
        ("unknown_tool", &["tool", "rmrf"]),
        ("unknown_subcommand", &["frobnicate"]),
        ("unknown_flag", &["tool", "grep", "--frob"]),
        (
            "bad_session_id",
            &[
                "tool",
                "glob",
                "--session",
                "../x",
                "--args",
                r#"{"pattern":"*"}"#,
            ],
        ),
    ];
    let mut all = String::new();
    for (name, args) in cases {
        let run = p.run(args);
        assert_eq!(run.code, 2, "{name}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{name}");
        assert_eq!(run.stderr.lines().count(), 1, "{name}: {}", run.stderr);
        let _ = write!(all, "{name}: {}", run.stderr);
    }
    insta::assert_snapshot!("usage_errors", all);
}

#[test]
fn malformed_settings_exit_2_naming_file_and_line() {
    let p = Project::new();
    p.write(
        ".warden/settings.toml",
        "[tools.grep]\nmax_hits = \"lots\"\n",
    );
    let run = p.run(&["tool", "grep", "--args", r#"{"pattern": "x"}"#]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(".warden/settings.toml"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(":2"), "{}", run.stderr);
    assert!(run.stderr.contains("tools.grep.max_hits"), "{}", run.stderr);
    insta::assert_snapshot!("malformed_settings", p.scrub(&run.stderr));
}

#[test]
fn settings_change_tool_caps() {
    let p = Project::new();
    p.write(".warden/settings.toml", "[tools.glob]\nmax_results = 2\n");
    for i in 0..5 {
        p.write(&format!("f{i}.txt"), "x");
    }
    let run = p.run(&["tool", "glob", "--args", r#"{"pattern": "*.txt"}"#]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["matches"].as_array().unwrap().len(), 2);
    assert_eq!(run.json()["truncated"], true);
}

#[test]
fn tools_json_prints_every_schema() {
    let p = Project::new();
    let run = p.run(&["tools", "--json"]);
    assert_eq!(run.code, 0);
    let tools = run.json();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "apply_patch",
            "bash",
            "editFile",
            "glob",
            "grep",
            "readFile",
            "webFetch",
            "writeFile"
        ]
    );
    for tool in tools.as_array().unwrap() {
        assert!(!tool["description"].as_str().unwrap().is_empty());
        assert_eq!(tool["parameters"]["type"], "object");
    }
}

#[test]
fn approval_requests_are_refused_unless_on_ask_allow() {
    let p = Project::new();
    // The probe works: the file exists and is readable outside the tool.
    assert!(
        std::fs::read_to_string("/etc/hostname").is_ok()
            || std::fs::read_to_string("/etc/passwd").is_ok()
    );
    let run = p.run(&["tool", "readFile", "--args", r#"{"path": "/etc/passwd"}"#]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["error"]["kind"], "needs_approval");
    // Approved, the call reaches the tool, whose own roots still refuse it.
    let run = p.run(&[
        "tool",
        "readFile",
        "--on-ask",
        "allow",
        "--args",
        r#"{"path": "/etc/passwd"}"#,
    ]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["error"]["kind"], "outside_roots");
    // A deny is never turned into an allow by the flag.
    p.write(".env", "X=1\n");
    let run = p.run(&[
        "tool",
        "readFile",
        "--on-ask",
        "allow",
        "--args",
        r#"{"path": ".env"}"#,
    ]);
    assert_eq!(run.json()["error"]["kind"], "policy_denied");
}
