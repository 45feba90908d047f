//! `warden mcp serve` spoken to by the MCP Python SDK's own client (`serve_client.py`, run with
//! the peers' virtual environment): warden's tools listed, a call the policy allows run in the
//! sandbox, one it asks about refused with the reason (`--on-ask deny`), one it denies refused,
//! a write outside the workspace kept inside the sandbox; every call in the trace.

use crate::support::{Project, sandbox_available};

#[test]
fn another_agent_uses_warden_s_tools_through_its_policy_sandbox_and_trace() {
    let Some(python) = super::peer("venv/bin/python") else {
        return;
    };
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    p.write("notes.txt", "from the project\n");
    let outside = std::env::temp_dir().join(format!("warden-serve-probe-{}", std::process::id()));
    let _ = std::fs::remove_file(&outside);
    let calls = serde_json::json!([
        ["readFile", {"path": "notes.txt"}],
        ["bash", {"command": "echo allowed and run"}],
        ["bash", {"command": "git push origin main"}],
        ["bash", {"command": "cat ~/.ssh/id_rsa"}],
    ]);
    let client = |calls: &serde_json::Value, flags: &[&str], approve: Option<&str>| {
        run_client(&p, &python, calls, flags, approve)
    };
    let (stdout, lines) = client(&calls, &[], None);
    let tools: Vec<&str> = lines[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"bash") && tools.contains(&"readFile"),
        "{tools:?}"
    );
    let result = |n: usize| (&lines[n]["isError"], lines[n]["text"].as_str().unwrap());
    assert_eq!(result(1).0, false, "{stdout}");
    assert!(result(1).1.contains("from the project"), "{stdout}");
    assert_eq!(result(2).0, false, "{stdout}");
    assert!(result(2).1.contains("allowed and run"), "{stdout}");
    assert_eq!(result(3).0, true, "{stdout}");
    assert!(result(3).1.contains("needs_approval"), "{stdout}");
    assert_eq!(result(4).0, true, "{stdout}");
    assert!(result(4).1.contains("policy_denied"), "{stdout}");
    // Approved (--on-ask allow), a write outside the workspace runs, inside the sandbox: its
    // /tmp is its own, and nothing reaches the host's.
    let write = serde_json::json!([
        ["bash", {"command": format!("echo planted > {0} && cat {0}", outside.display())}],
    ]);
    let (stdout, approved) = client(&write, &["--on-ask", "allow"], None);
    assert_eq!(approved[1]["isError"], false, "{stdout}");
    assert!(
        approved[1]["text"].as_str().unwrap().contains("planted"),
        "{stdout}"
    );
    assert!(!outside.exists(), "{stdout}");
    // A client that takes forms is asked instead, its user's answer deciding.
    let edit = serde_json::json!([["bash", {"command": "echo yes > answered.txt"}]]);
    for (answer, made) in [("no", false), ("yes", true)] {
        let (stdout, asked) = client(&edit, &[], Some(answer));
        assert!(
            asked[1]["asked"]
                .as_str()
                .unwrap()
                .contains("warden asks before running bash"),
            "{stdout}"
        );
        assert_eq!(
            p.root().join("answered.txt").exists(),
            made,
            "{answer}: {stdout}"
        );
    }
    // The mode is the command line's: in accept-edits, an edit runs without asking.
    let quiet = serde_json::json!([
        ["bash", {"command": "echo mode > by-mode.txt"}],
        ["writeFile", {"path": "undo-me.txt", "content": "made by a client"}],
    ]);
    let (stdout, _) = client(&quiet, &["--mode", "accept-edits"], None);
    assert!(p.root().join("by-mode.txt").exists(), "{stdout}");
    assert!(p.root().join("undo-me.txt").exists(), "{stdout}");
    // The connection's session is a session like any: `warden undo` puts its edits back.
    let undone = p.run(&["undo"]);
    assert_eq!(undone.code, 0, "{}{}", undone.stdout, undone.stderr);
    assert!(!p.root().join("undo-me.txt").exists(), "{}", undone.stdout);
    // Every call is in the trace, in the session of the connection, which names its client.
    let seen = tools_in_trace(&p);
    assert_eq!(seen.iter().filter(|t| *t == "bash").count(), 7, "{seen:?}");
    assert!(seen.iter().any(|t| t == "readFile"), "{seen:?}");
}

/// The Python SDK's client speaking to `warden mcp serve` (with `flags`) in `p`'s environment,
/// making `calls`, answering warden's questions with `approve` when given: its output, and its
/// lines as JSON.
fn run_client(
    p: &Project,
    python: &std::path::Path,
    calls: &serde_json::Value,
    flags: &[&str],
    approve: Option<&str>,
) -> (String, Vec<serde_json::Value>) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/serve_client.py");
    let mut command = std::process::Command::new(python);
    command
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_warden"))
        .arg(calls.to_string())
        .arg(serde_json::json!(flags).to_string())
        .current_dir(p.root());
    // The project's environment (its home and settings), as `warden` would have it.
    for (key, value) in p.command().get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    if let Some(answer) = approve {
        command.env("WARDEN_TEST_APPROVE", answer);
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (stdout, lines)
}

/// The tools of every call in every session of `p`'s trace.
fn tools_in_trace(p: &Project) -> Vec<String> {
    let sessions = p.run(&["trace", "list", "--json"]);
    let sessions: Vec<serde_json::Value> = serde_json::from_str(&sessions.stdout).unwrap();
    let mut seen = Vec::new();
    for session in &sessions {
        let id = session["sessionId"]
            .as_str()
            .or(session["id"].as_str())
            .unwrap();
        let shown = p.run(&["trace", "show", id, "--json"]);
        let events: Vec<serde_json::Value> = serde_json::from_str(&shown.stdout).unwrap();
        seen.extend(
            events
                .iter()
                .filter_map(|e| e["tool"].as_str().map(str::to_owned)),
        );
    }
    seen
}
