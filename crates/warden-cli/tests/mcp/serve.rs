//! `warden mcp serve` spoken to by the MCP Python SDK's own client (`serve_client.py`, run with
//! the peers' virtual environment): warden's tools listed with their schemas as written, a call
//! the policy allows run in the sandbox with its progress, one it asks about put to the client's
//! user as a form (during the call before 2026-07-28, by a second request since) and answered
//! each way, one it denies refused with what to do instead, a write outside the workspace kept
//! inside the sandbox; every call in the trace, in a session per connection.

use serde_json::{Value, json};

use crate::support::{Project, sandbox_available};

/// How the client connects: the SDK's protocol mode, and the URL of a server over HTTP.
#[derive(Clone, Copy)]
pub(super) struct Via<'a> {
    pub(super) mode: &'a str,
    pub(super) url: Option<&'a str>,
}

pub(super) const LEGACY: Via<'static> = Via {
    mode: "legacy",
    url: None,
};

/// What the client printed: the tools and their schemas, each call's result, each question.
pub(super) struct Seen {
    pub(super) out: String,
    pub(super) tools: Value,
    pub(super) calls: Vec<Value>,
    pub(super) asked: Vec<Value>,
}

impl Seen {
    /// Whether call `n` failed, and its text.
    pub(super) fn call(&self, n: usize) -> (bool, &str) {
        let call = &self.calls[n];
        (
            call["isError"].as_bool().unwrap(),
            call["text"].as_str().unwrap(),
        )
    }
}

/// The SDK's Python and a new project, where both the peers and the sandbox are to be had.
pub(super) fn client_and_project() -> Option<(std::path::PathBuf, Project)> {
    let python = super::peer("venv/bin/python")?;
    let p = Project::new();
    sandbox_available(&p).then_some((python, p))
}

#[test]
fn another_agent_uses_warden_s_tools_through_its_policy_sandbox_and_trace() {
    let Some((python, p)) = client_and_project() else {
        return;
    };
    p.write("notes.txt", "from the project\n");
    let outside = std::env::temp_dir().join(format!("warden-serve-probe-{}", std::process::id()));
    let _ = std::fs::remove_file(&outside);
    let calls = json!([
        ["readFile", {"path": "notes.txt"}],
        ["bash", {"command": "echo allowed and run"}],
        ["bash", {"command": "git push origin main"}],
        ["bash", {"command": "cat ~/.ssh/id_rsa"}],
    ]);
    let client = |calls: &Value, flags: &[&str], approve: Option<&str>| {
        run_client(&p, &python, calls, flags, approve, LEGACY)
    };
    let seen = client(&calls, &[], None);
    let names: Vec<&str> = seen.tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"bash") && names.contains(&"readFile"),
        "{names:?}"
    );
    // Each schema as written, in the dialect it is written in (the keywords the conformance
    // suite's json-schema-2020-12 scenario looks for).
    for (name, schema) in seen.tools["schemas"].as_object().unwrap() {
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        assert_eq!(schema["additionalProperties"], false, "{name}: {schema}");
    }
    assert!(
        seen.tools["schemas"]["glob"]["$defs"]["GlobSort"].is_object(),
        "{}",
        seen.tools
    );
    assert!(!seen.call(0).0, "{}", seen.out);
    assert!(seen.call(0).1.contains("from the project"), "{}", seen.out);
    assert!(!seen.call(1).0, "{}", seen.out);
    assert!(seen.call(1).1.contains("allowed and run"), "{}", seen.out);
    // Its steps, in order, before its result: checked, running, done.
    let steps: Vec<(f64, &str)> = seen.calls[1]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s[0].as_f64().unwrap(), s[1].as_str().unwrap()))
        .collect();
    assert!(steps.len() >= 3, "{steps:?}");
    assert!(steps.windows(2).all(|w| w[0].0 < w[1].0), "{steps:?}");
    assert_eq!(steps.last().unwrap().1, "done", "{steps:?}");
    // Asked about, and no one to ask: refused, saying what would let it run.
    assert!(seen.call(2).0, "{}", seen.out);
    let asked = &seen.calls[2]["structured"];
    assert_eq!(asked["error"]["kind"], "needs_approval", "{}", seen.out);
    assert!(
        asked["instead"]
            .as_str()
            .unwrap()
            .contains("Bash(git push *)"),
        "{asked}"
    );
    assert!(seen.call(3).0, "{}", seen.out);
    assert_eq!(
        seen.calls[3]["structured"]["error"]["kind"],
        "policy_denied"
    );
    assert!(seen.call(3).1.contains("instead:"), "{}", seen.out);
    // Approved (--on-ask allow), a write outside the workspace runs, inside the sandbox: its
    // /tmp is its own, and nothing reaches the host's.
    let write = json!([
        ["bash", {"command": format!("echo planted > {0} && cat {0}", outside.display())}],
    ]);
    let seen = client(&write, &["--on-ask", "allow"], None);
    assert!(!seen.call(0).0, "{}", seen.out);
    assert!(seen.call(0).1.contains("planted"), "{}", seen.out);
    assert!(!outside.exists(), "{}", seen.out);
    assert_eq!(sessions(&p).len(), 2);
}

/// A client that takes forms is asked instead, its user's answer deciding: the form shows what
/// the command would write and the rule an answer would remember.
#[test]
fn a_client_that_takes_forms_asks_its_user_and_the_session_is_one_like_any() {
    let Some((python, p)) = client_and_project() else {
        return;
    };
    let client = |calls: &Value, flags: &[&str], approve: Option<&str>| {
        run_client(&p, &python, calls, flags, approve, LEGACY)
    };
    let edit = json!([["bash", {"command": "echo yes > answered.txt"}]]);
    for (answer, made) in [("deny", false), ("once", true)] {
        let seen = client(&edit, &[], Some(answer));
        let question = seen.asked[0]["asked"].as_str().unwrap();
        assert!(
            question.contains("warden asks before running bash"),
            "{}",
            seen.out
        );
        assert!(question.contains("writes: answered.txt"), "{question}");
        assert_eq!(
            seen.asked[0]["choices"],
            json!(["once", "session", "always", "deny"]),
            "{}",
            seen.out
        );
        assert_eq!(
            p.root().join("answered.txt").exists(),
            made,
            "{answer}: {}",
            seen.out
        );
        if answer == "deny" {
            // The user's own words reach the agent.
            assert!(seen.call(0).1.contains("not on a Friday"), "{}", seen.out);
        }
    }
    // The mode is the command line's: in accept-edits, an edit runs without asking.
    let quiet = json!([
        ["bash", {"command": "echo mode > by-mode.txt"}],
        ["writeFile", {"path": "undo-me.txt", "content": "made by a client"}],
    ]);
    let seen = client(&quiet, &["--mode", "accept-edits"], None);
    assert!(p.root().join("by-mode.txt").exists(), "{}", seen.out);
    assert!(p.root().join("undo-me.txt").exists(), "{}", seen.out);
    // The connection's session is a session like any: `warden undo` puts its edits back.
    let undone = p.run(&["undo"]);
    assert_eq!(undone.code, 0, "{}{}", undone.stdout, undone.stderr);
    assert!(!p.root().join("undo-me.txt").exists(), "{}", undone.stdout);
    // Every call is in the trace, in the session of its connection, which names its client.
    let sessions = sessions(&p);
    assert_eq!(sessions.len(), 3, "{sessions:?}");
    let tools: Vec<&str> = sessions
        .iter()
        .flat_map(|events| events.iter().filter_map(|e| e["tool"].as_str()))
        .collect();
    assert_eq!(
        tools.iter().filter(|t| **t == "bash").count(),
        3,
        "{tools:?}"
    );
    assert!(tools.contains(&"writeFile"), "{tools:?}");
    // Each listed with the client it served (the Python SDK's).
    let listed = p.run(&["trace", "list", "--json"]);
    let listed: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap();
    for session in &listed {
        assert_eq!(session["client"]["name"], "mcp", "{session}");
        assert!(session["client"]["version"].is_string(), "{session}");
    }
}

/// Since 2026-07-28 a request stands alone: warden's question comes back as the call's result
/// (input required), and the client calls again with its user's answer, which applies to that
/// one call only; an answer for the connection holds for its next calls.
#[test]
fn a_stateless_client_answers_by_calling_again() {
    let Some((python, p)) = client_and_project() else {
        return;
    };
    let modern = Via {
        mode: "2026-07-28",
        url: None,
    };
    let edit = json!([["bash", {"command": "echo yes > answered.txt"}]]);
    for (answer, made) in [("deny", false), ("once", true)] {
        let seen = run_client(&p, &python, &edit, &[], Some(answer), modern);
        assert_eq!(seen.asked.len(), 1, "{}", seen.out);
        assert_eq!(
            p.root().join("answered.txt").exists(),
            made,
            "{answer}: {}",
            seen.out
        );
    }
    // "For this connection" is not offered to a client without one, and that answer, sent
    // anyway, is refused: each call is asked about, and neither runs.
    let twice = json!([
        ["bash", {"command": "git push origin main"}],
        ["bash", {"command": "git push origin other"}],
    ]);
    let seen = run_client(&p, &python, &twice, &[], Some("session"), modern);
    assert_eq!(seen.asked.len(), 2, "{}", seen.out);
    assert_eq!(
        seen.asked[0]["choices"],
        json!(["once", "always", "deny"]),
        "{}",
        seen.out
    );
    for n in 0..2 {
        assert!(seen.call(n).1.contains("did not offer"), "{}", seen.out);
    }
    // Over a connection it is offered (the rule `Bash(git push *)`), and holds for that
    // connection's next call — which runs, and fails: the project has no remote — not for the
    // next connection's.
    let seen = run_client(&p, &python, &twice, &[], Some("session"), LEGACY);
    assert_eq!(seen.asked.len(), 1, "{}", seen.out);
    for n in 0..2 {
        assert!(seen.call(n).1.contains("exitCode"), "{}", seen.out);
    }
    let seen = run_client(&p, &python, &twice, &[], Some("deny"), LEGACY);
    assert_eq!(seen.asked.len(), 2, "{}", seen.out);
    // A rewrite is run only as itself: an answer that would run the call as asked is not one
    // the form offers.
    p.write("build/out.txt", "built\n");
    let remove = json!([["bash", {"command": "rm -rf build"}]]);
    let seen = run_client(&p, &python, &remove, &[], Some("session"), LEGACY);
    assert!(p.root().join("build/out.txt").exists(), "{}", seen.out);
    let seen = run_client(&p, &python, &remove, &[], Some("once"), LEGACY);
    assert!(!p.root().join("build").exists(), "{}", seen.out);
    assert!(p.root().join(".warden-trash").exists(), "{}", seen.out);
    // Without forms, `--on-ask` answers.
    let seen = run_client(&p, &python, &edit, &[], None, modern);
    assert!(seen.asked.is_empty(), "{}", seen.out);
    assert_eq!(
        seen.calls[0]["structured"]["error"]["kind"],
        "needs_approval"
    );
}

/// The Python SDK's client speaking to `warden mcp serve` (with `flags`, unless `via` names a
/// server already serving over HTTP) in `p`'s environment, making `calls`, answering warden's
/// questions with `approve` when given.
pub(super) fn run_client(
    p: &Project,
    python: &std::path::Path,
    calls: &Value,
    flags: &[&str],
    approve: Option<&str>,
    via: Via<'_>,
) -> Seen {
    let mut command = client(p, python, calls, flags, approve, via);
    seen(&command.output().unwrap())
}

/// The client's command: it starts `warden mcp serve` with `flags` (or reaches it at `via`'s
/// URL) and makes `calls`, answering forms with `approve`.
fn client(
    p: &Project,
    python: &std::path::Path,
    calls: &Value,
    flags: &[&str],
    approve: Option<&str>,
    via: Via<'_>,
) -> std::process::Command {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/serve_client.py");
    let mut command = std::process::Command::new(python);
    command
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_warden"))
        .arg(calls.to_string())
        .arg(json!(flags).to_string())
        .arg(via.mode)
        .args(via.url)
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
    command
}

/// What the client printed, once it ended well.
fn seen(out: &std::process::Output) -> Seen {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tools = lines.remove(0);
    let (calls, asked) = lines.into_iter().partition(|l| l.get("tool").is_some());
    Seen {
        out: stdout,
        tools,
        calls,
        asked,
    }
}

/// The events of every session of `p`'s trace.
pub(super) fn sessions(p: &Project) -> Vec<Vec<Value>> {
    let listed = p.run(&["trace", "list", "--json"]);
    let listed: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap();
    listed
        .iter()
        .map(|session| {
            let id = session["sessionId"]
                .as_str()
                .or(session["id"].as_str())
                .unwrap();
            let shown = p.run(&["trace", "show", id, "--json"]);
            serde_json::from_str(&shown.stdout).unwrap()
        })
        .collect()
}

/// The user's hooks hold for another agent's calls too: a `PreToolUse` guard that refuses a
/// word refuses it through the server (without the hook the same call runs), `PostToolUse` runs
/// after a call that ran, and both are in the connection's trace.
#[test]
fn the_user_s_hooks_guard_calls_through_the_server_too() {
    let Some((python, p)) = client_and_project() else {
        return;
    };
    let calls = json!([
        ["bash", {"command": "echo forbidden-word"}],
        ["bash", {"command": "echo harmless"}],
    ]);
    let seen = run_client(&p, &python, &calls, &[], None, LEGACY);
    assert!(!seen.call(0).0, "without the hook it runs: {}", seen.out);
    let after = p.home.join("post-tool-use.json");
    p.user_settings(&format!(
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"if grep -q forbidden-word; then \
         echo 'that word is not said here' >&2; exit 2; fi\"\n\n[[hooks.PostToolUse]]\n\
         matcher = \"Bash\"\ncommand = \"cat >> {}\"\n",
        after.display()
    ));
    let seen = run_client(&p, &python, &calls, &[], None, LEGACY);
    assert!(seen.call(0).0, "{}", seen.out);
    assert!(
        seen.call(0)
            .1
            .contains("refused by a hook: that word is not said here"),
        "{}",
        seen.out
    );
    assert!(!seen.call(1).0, "{}", seen.out);
    assert!(seen.call(1).1.contains("harmless"), "{}", seen.out);
    // PostToolUse ran for the call that ran, and only for it.
    let posted = std::fs::read_to_string(&after).unwrap();
    assert!(posted.contains("echo harmless"), "{posted}");
    assert!(!posted.contains("forbidden-word"), "{posted}");
    // Each hook that ran is in the connection's trace, with what it decided.
    let traced = sessions(&p);
    let hooks: Vec<&Value> = traced
        .iter()
        .flatten()
        .filter(|e| e.to_string().contains("\"hook\""))
        .collect();
    assert!(
        hooks.iter().any(|h| h.to_string().contains("\"deny\"")),
        "{traced:?}"
    );
}

/// A hook's ask with `--on-ask allow` and a client that takes no forms: the flag answers what
/// the user's hook asks (as in a run), never what the organisation's hook asks.
#[test]
fn on_ask_allow_answers_the_user_s_hook_and_not_the_organisation_s() {
    let Some((python, p)) = client_and_project() else {
        return;
    };
    let ask = p.tmp().join("ask.sh");
    std::fs::write(
        &ask,
        "grep -q ask-me || exit 0
printf '%s' '{\"hookSpecificOutput\": {\"hookEventName\": \
         \"PreToolUse\", \"permissionDecision\": \"ask\", \"permissionDecisionReason\": \
         \"a person reads these\"}}'\n",
    )
    .unwrap();
    let hooks = format!(
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"sh {}\"\n",
        ask.display()
    );
    let calls = json!([["bash", {"command": "echo ask-me"}]]);
    let flags = ["--on-ask", "allow"];
    // The user's hook: its ask is answered by the flag, and the command runs.
    p.user_settings(&hooks);
    let seen_user = run_client(&p, &python, &calls, &flags, None, LEGACY);
    assert!(!seen_user.call(0).0, "{}", seen_user.out);
    assert!(seen_user.call(0).1.contains("ask-me"), "{}", seen_user.out);
    // The organisation's: refused, saying why.
    p.user_settings("");
    let command = client(&p, &python, &calls, &flags, None, LEGACY);
    let Some(mut command) = crate::support::under_managed(&p, &command, &hooks) else {
        return;
    };
    let seen_org = seen(&command.output().unwrap());
    assert!(seen_org.call(0).0, "{}", seen_org.out);
    assert!(
        seen_org.call(0).1.contains("a person reads these")
            && seen_org
                .call(0)
                .1
                .contains("--on-ask allow does not answer"),
        "{}",
        seen_org.out
    );
}
