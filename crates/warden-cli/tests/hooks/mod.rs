//! Hooks end to end: `warden run` against a scripted provider, with hook scripts written as
//! Claude Code's users write them (`guard.sh` in bash, `team.py` in Python) wired to each event.
//! What each hook was given, each decision path, what the model is told, a hook's allow against
//! a deny rule and a protected path, hooks that hang, crash or print broken JSON, a project's
//! hooks before and after it is trusted, and Claude Code's settings imported and run unchanged.

use std::path::PathBuf;

use serde_json::{Value, json};
use warden_fake_provider::{Call, FakeProvider, openai};

use crate::support::{Project, Run, events, finish, model_calling, of_kind, warden_run};

fn script(name: &str) -> String {
    format!("{}/tests/hooks/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The user's settings: `text`, and where each hook logs what it was given.
fn user_settings(p: &Project, text: &str) -> PathBuf {
    let dir = p.home.join(".config/warden");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.toml"), text).unwrap();
    p.home.join("hooks.log")
}

/// The lines each hook logged, as JSON.
fn logged(log: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `warden run --json` with `HOOK_LOG` set for the hooks that name it.
fn run(p: &Project, server: &FakeProvider, extra: &[&str], prompt: &str, log: &PathBuf) -> Run {
    let base = format!("{}/v1", server.url());
    let mut cmd = crate::support::agent_command(p, &base);
    cmd.env("HOOK_LOG", log).args(extra).arg(prompt);
    finish(&cmd.output().unwrap())
}

/// What the model was sent for each call, by call id: the last request holds them all.
fn results(server: &FakeProvider) -> Vec<(String, String)> {
    crate::agent::results_sent(server, server.received().len() - 1)
}

fn result<'r>(results: &'r [(String, String)], id: &str) -> &'r str {
    &results.iter().find(|(i, _)| i == id).unwrap().1
}

fn write(id: &'static str, path: &str) -> Call<'static> {
    Call::new(id, "writeFile", &json!({"path": path, "content": "x"}))
}

fn bash(id: &'static str, command: &str) -> Call<'static> {
    Call::new(id, "bash", &json!({ "command": command }))
}

/// The transcript a hook was given grows with the session: every event once, in order, none
/// written twice.
fn every_event_once_in_order(input: &Value) {
    let transcript = PathBuf::from(input["transcript_path"].as_str().unwrap());
    assert!(transcript.exists(), "{input}");
    let seqs: Vec<u64> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(seqs.len() > 3, "{seqs:?}");
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1) && seqs[0] == 1,
        "{seqs:?}"
    );
}

#[test]
fn pre_tool_use_hooks_refuse_ask_and_change_calls_and_see_claude_code_s_shapes() {
    let p = Project::new();
    let log = user_settings(
        &p,
        &format!(
            "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"bash {guard}\"\nenv = \
             [\"HOOK_LOG\"]\n\n[[hooks.PreToolUse]]\nmatcher = \"Edit|Write\"\ncommand = \
             \"python3 {team}\"\nenv = [\"HOOK_LOG\"]\n\n[[hooks.PostToolUse]]\nmatcher = \
             \"writeFile\"\ncommand = \"python3 {team}\"\nenv = [\"HOOK_LOG\"]\n",
            guard = script("guard.sh"),
            team = script("team.py"),
        ),
    );
    let server = model_calling(&[
        bash("b1", "echo allowed-word"),
        bash("b2", "echo forbidden-word"),
        write("w1", "plain.txt"),
        write("w2", "ask.txt"),
        write("w3", "deny.txt"),
        write("w4", "moved.txt"),
        // A patch whose second file the hook refuses: it sees every file.
        Call::new(
            "p1",
            "apply_patch",
            &json!({"patch": "*** Begin Patch\n*** Add File: first.txt\n+a\n*** Add File: deny.txt\n+b\n*** End Patch\n"}),
        ),
        // The hooks' scripts are not the model's to change.
        write("w5", ".claude/hooks/check.sh"),
    ]);
    let out = run(&p, &server, &["--mode", "accept-edits"], "fix it", &log);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let sent = results(&server);
    // The guard lets other commands through, and refuses with its own words.
    assert!(result(&sent, "b1").contains("allowed-word"), "{sent:?}");
    let refused = result(&sent, "b2");
    assert!(
        refused.contains("commands holding 'forbidden' are not run here"),
        "{refused}"
    );
    assert!(!refused.contains("\"exitCode\""), "{refused}");
    // Writes run in this mode; a hook's ask makes one wait for a person (none here), its deny
    // refuses one, its new input writes another file.
    assert!(p.root().join("plain.txt").exists());
    assert!(!p.root().join("ask.txt").exists());
    assert!(
        result(&sent, "w2").contains("a hook asks: a person should look"),
        "{sent:?}"
    );
    assert!(!p.root().join("deny.txt").exists());
    assert!(
        result(&sent, "w3").contains("refused by a hook: not this file"),
        "{sent:?}"
    );
    assert!(!p.root().join("moved.txt").exists());
    assert!(p.root().join("redirected.txt").exists(), "{sent:?}");
    assert!(
        out.stdout
            .contains("a hook changed the arguments of writeFile"),
        "{}",
        out.stdout
    );
    assert!(
        result(&sent, "p1").contains("refused by a hook: not this file"),
        "{sent:?}"
    );
    assert!(!p.root().join("first.txt").exists());
    assert!(!p.root().join(".claude/hooks/check.sh").exists());
    assert!(result(&sent, "w5").contains("policy_denied"), "{sent:?}");
    // After a write, the hook's context reaches the model, labelled with the hook.
    let plain = result(&sent, "w1");
    assert!(plain.contains("the formatter ran on plain.txt"), "{plain}");
    assert!(plain.contains("hook `python3"), "{plain}");
    // What a hook is given: Claude Code's fields and names, absolute paths.
    let seen = logged(&log);
    let command = seen
        .iter()
        .find(|l| l["tool_name"] == "Bash" && l["tool_input"]["command"] == "echo forbidden-word")
        .unwrap_or_else(|| panic!("{seen:?}"));
    assert_eq!(command["hook_event_name"], "PreToolUse");
    assert_eq!(command["permission_mode"], "acceptEdits");
    assert_eq!(command["tool_use_id"], "b2");
    assert_eq!(command["cwd"], p.root().display().to_string());
    every_event_once_in_order(command);
    let edit = seen
        .iter()
        .find(|l| l["tool_name"] == "Write" && l["hook_event_name"] == "PostToolUse")
        .unwrap_or_else(|| panic!("{seen:?}"));
    assert_eq!(
        edit["tool_input"]["file_path"],
        p.root().join("plain.txt").display().to_string()
    );
    assert!(edit["tool_response"].is_object(), "{edit}");
    // Every run of a hook is in the stream and the trace, with what it decided.
    let hooks = of_kind(&events(&out.stdout), "hook")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert!(
        hooks
            .iter()
            .any(|h| h["hookEvent"] == "PreToolUse" && h["decision"] == "deny" && h["exit"] == 2),
        "{hooks:?}"
    );
    assert!(
        hooks
            .iter()
            .all(|h| h["commandSha256"].as_str().unwrap().len() == 64)
    );
}

#[test]
fn a_hook_answers_what_a_person_would_be_asked_and_never_lifts_a_deny() {
    let p = Project::new();
    std::fs::create_dir_all(p.home.join(".ssh")).unwrap();
    std::fs::write(p.home.join(".ssh/id_rsa"), "PRIVATE KEY").unwrap();
    let team = format!("python3 {}", script("team.py"));
    let log = user_settings(
        &p,
        &format!(
            "[permissions]\ndeny = [\"Bash(echo let me in)\"]\n\n[[hooks.PreToolUse]]\ncommand \
             = \"{team}\"\nenv = [\"HOOK_LOG\"]\n\n[[hooks.PermissionRequest]]\ncommand = \
             \"{team}\"\nenv = [\"HOOK_LOG\"]\n"
        ),
    );
    let server = model_calling(&[
        write("w1", "plain.txt"),
        write("w2", "allow.txt"),
        write("w3", "granted.txt"),
        write("w4", "refused.txt"),
        bash("b1", "echo let me in"),
        Call::new("r1", "readFile", &json!({"path": "~/.ssh/id_rsa"})),
    ]);
    let out = run(&p, &server, &[], "fix it", &log);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let sent = results(&server);
    // The probe: in the default mode a write waits for a person, and there is none.
    assert!(!p.root().join("plain.txt").exists(), "{sent:?}");
    // A hook's allow (PreToolUse) and a PermissionRequest hook answer that question.
    assert!(p.root().join("allow.txt").exists(), "{sent:?}");
    assert!(p.root().join("granted.txt").exists(), "{sent:?}");
    assert!(!p.root().join("refused.txt").exists());
    assert!(
        result(&sent, "w4").contains("the team refuses refused.txt"),
        "{sent:?}"
    );
    // A deny rule and a protected path stand against a hook's allow.
    let denied = result(&sent, "b1");
    assert!(denied.contains("policy_denied"), "{denied}");
    assert!(!denied.contains("let me in\\n"), "{denied}");
    let key = result(&sent, "r1");
    assert!(!key.contains("PRIVATE KEY"), "{key}");
    assert!(key.contains("policy_denied"), "{key}");
    let asked: Vec<Value> = logged(&log)
        .into_iter()
        .filter(|l| l["hook_event_name"] == "PermissionRequest")
        .collect();
    assert!(asked.iter().any(|l| l["tool_name"] == "Write"), "{asked:?}");
}

#[test]
fn prompt_stop_start_and_end_hooks() {
    let p = Project::new();
    let team = format!("python3 {}", script("team.py"));
    let log = user_settings(
        &p,
        &format!(
            "[[hooks.UserPromptSubmit]]\ncommand = \"{team}\"\nenv = [\"HOOK_LOG\"]\n\n\
             [[hooks.Stop]]\ncommand = \"{team}\"\nenv = [\"HOOK_LOG\"]\n\n\
             [[hooks.SessionStart]]\nmatcher = \"startup\"\ncommand = \"echo session context \
             from a hook\"\n\n[[hooks.SessionEnd]]\ncommand = \"cat >> \\\"$HOOK_LOG\\\"\"\nenv \
             = [\"HOOK_LOG\"]\n"
        ),
    );
    let server = FakeProvider::start(vec![
        openai::text("Done.").fast(),
        openai::text("Tests run; done.").fast(),
    ]);
    let out = run(&p, &server, &[], "fix it", &log);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let received = server.received();
    // Sent back once by the Stop hook, with its reason; not twice (`stop_hook_active`).
    assert_eq!(received.len(), 2, "{}", out.stdout);
    let first = received[0].json().to_string();
    assert!(
        first.contains("the team's conventions: tabs, not spaces"),
        "{first}"
    );
    assert!(first.contains("session context from a hook"), "{first}");
    let second = received[1].json().to_string();
    assert!(second.contains("run the tests before you stop"), "{second}");
    let seen = logged(&log);
    let stops: Vec<&Value> = seen
        .iter()
        .filter(|l| l["hook_event_name"] == "Stop")
        .collect();
    assert_eq!(stops.len(), 2, "{seen:?}");
    assert_eq!(stops[1]["stop_hook_active"], true);
    let end = seen
        .iter()
        .find(|l| l["hook_event_name"] == "SessionEnd")
        .unwrap();
    assert_eq!(end["reason"], "finished");
    // A prompt the hook blocks never reaches the model.
    let server = FakeProvider::start(vec![openai::text("Done.").fast()]);
    let out = run(&p, &server, &[], "here is a secret", &log);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(server.received().is_empty());
    assert!(
        out.stdout.contains("prompts may not hold secrets"),
        "{}{}",
        out.stdout,
        out.stderr
    );
}

#[test]
fn a_hook_that_hangs_crashes_or_prints_broken_json_refuses_the_call_unless_told_to_ignore() {
    let p = Project::new();
    p.write("notes.txt", "hello\n");
    let log = user_settings(
        &p,
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"sleep 30\"\ntimeout_seconds = 1\n\n\
         [[hooks.PreToolUse]]\nmatcher = \"Glob\"\ncommand = \"echo oops >&2; exit 1\"\n\n\
         [[hooks.PreToolUse]]\nmatcher = \"Grep\"\ncommand = \"echo '{not json'\"\n\n\
         [[hooks.PreToolUse]]\nmatcher = \"Read\"\ncommand = \"exit 1\"\non_error = \"ignore\"\n",
    );
    let server = model_calling(&[
        bash("b1", "echo hi"),
        Call::new("g1", "glob", &json!({"pattern": "*.txt"})),
        Call::new("g2", "grep", &json!({"pattern": "hello"})),
        Call::new("r1", "readFile", &json!({"path": "notes.txt"})),
    ]);
    let out = run(&p, &server, &[], "look", &log);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let sent = results(&server);
    assert!(
        result(&sent, "b1").contains("timed out after 1 s"),
        "{sent:?}"
    );
    assert!(
        result(&sent, "g1").contains("exited with 1: oops"),
        "{sent:?}"
    );
    assert!(result(&sent, "g2").contains("not valid JSON"), "{sent:?}");
    // Told to ignore its failure, the call runs (and the failure is said).
    assert!(result(&sent, "r1").contains("hello"), "{sent:?}");
    assert!(out.stdout.contains("hook_notice"), "{}", out.stdout);
}

#[test]
fn a_project_s_hooks_run_only_once_it_is_trusted() {
    let p = Project::new();
    p.write(
        ".warden/settings.toml",
        "[[hooks.SessionStart]]\ncommand = \"touch ran-by-the-project\"\n",
    );
    let marker = p.root().join("ran-by-the-project");
    let server = FakeProvider::start(vec![openai::text("Done.").fast()]);
    let out = warden_run(&p, &server, &[], "hello");
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!marker.exists());
    p.trust();
    let server = FakeProvider::start(vec![openai::text("Done.").fast()]);
    let out = warden_run(&p, &server, &[], "hello");
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(marker.exists());
}

#[test]
fn claude_code_s_hooks_are_imported_and_run_unchanged() {
    let p = Project::new();
    let claude = p.home.join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("settings.json"),
        json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": format!("bash {}", script("guard.sh")), "timeout": 10}
            ]}],
            "PostToolUse": [{"matcher": "*", "hooks": [
                {"type": "http", "url": "https://hooks.example.com/after"}
            ]}]
        }})
        .to_string(),
    )
    .unwrap();
    let imported = p.run(&["hooks", "import", "--yes"]);
    assert_eq!(imported.code, 0, "{}{}", imported.stdout, imported.stderr);
    assert!(
        imported.stdout.contains("not imported"),
        "{}",
        imported.stdout
    );
    assert!(
        imported.stdout.contains("\"http\" hook"),
        "{}",
        imported.stdout
    );
    let listed = p.run(&["hooks", "list", "--json"]);
    let listed: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["event"], "PreToolUse");
    assert_eq!(listed[0]["timeoutSeconds"], 10);
    assert!(
        listed[0]["source"]
            .as_str()
            .unwrap()
            .ends_with(".config/warden/settings.toml")
    );
    let tried = p.run(&[
        "hooks",
        "test",
        "PreToolUse",
        "--input",
        r#"{"tool_name": "Bash", "tool_input": {"command": "echo forbidden"}}"#,
    ]);
    let tried: Value = serde_json::from_str(&tried.stdout).unwrap();
    assert_eq!(tried["verdict"], "deny", "{tried}");
    let server = model_calling(&[bash("b1", "echo forbidden")]);
    let out = warden_run(&p, &server, &[], "go");
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        result(&results(&server), "b1").contains("not run here"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_wait_for_a_person_a_failed_call_and_a_compaction_are_heard() {
    let p = Project::new();
    let listen = "cat >> \\\"$HOOK_LOG\\\"; echo >> \\\"$HOOK_LOG\\\"";
    let log = user_settings(
        &p,
        &format!(
            "[[hooks.Notification]]\ncommand = \"{listen}\"\nenv = [\"HOOK_LOG\"]\n\n\
             [[hooks.PostToolUseFailure]]\ncommand = \"{listen}\"\nenv = [\"HOOK_LOG\"]\n"
        ),
    );
    let server = model_calling(&[write("w1", "asked.txt")]);
    let base = format!("{}/v1", server.url());
    let log_text = log.display().to_string();
    let argv = [
        env!("CARGO_BIN_EXE_warden"),
        "run",
        "--model",
        "openai/test-model",
        "--base-url",
        &base,
        "write it",
    ];
    let out = crate::support::in_a_session_with(&p, &[("HOOK_LOG", &log_text)], &argv, &["d"], &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!p.root().join("asked.txt").exists());
    let seen = logged(&log);
    let waited = seen
        .iter()
        .find(|l| l["hook_event_name"] == "Notification")
        .unwrap_or_else(|| panic!("{seen:?}"));
    assert_eq!(waited["notification_type"], "permission_prompt");
    let failed = seen
        .iter()
        .find(|l| l["hook_event_name"] == "PostToolUseFailure")
        .unwrap_or_else(|| panic!("{seen:?}"));
    assert_eq!(failed["tool_name"], "Write");
    assert!(
        failed["error"].as_str().unwrap().contains("denied"),
        "{failed}"
    );
    // A session that must compact, in a small window.
    let p = Project::new();
    let log = user_settings(
        &p,
        &format!(
            "[[hooks.PreCompact]]\nmatcher = \"auto\"\ncommand = \"{listen}\"\nenv = \
             [\"HOOK_LOG\"]\n"
        ),
    );
    let server = crate::agent::context::parts_to_compact(&p);
    let out = run(
        &p,
        &server,
        &["--context-window", "3500"],
        "read every part",
        &log,
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let seen = logged(&log);
    let compacting = seen
        .iter()
        .find(|l| l["hook_event_name"] == "PreCompact")
        .unwrap_or_else(|| panic!("{seen:?}"));
    assert_eq!(compacting["trigger"], "auto");
}

#[test]
fn what_the_organisation_s_hook_asks_on_ask_allow_does_not_answer() {
    let hooks = format!(
        "[[hooks.PreToolUse]]\ncommand = \"python3 {org}\"\n\n[[hooks.PermissionRequest]]\n\
         command = \"python3 {org}\"\n",
        org = script("org.py")
    );
    let calls = || {
        model_calling(&[
            write("w1", "review.txt"),
            write("w2", "review-signed.txt"),
            write("w3", "plain.txt"),
        ])
    };
    let flags = ["--mode", "accept-edits", "--on-ask", "allow", "fix it"];
    // The probe: the same hook in the user's own settings, whose ask the flag answers.
    let p = Project::new();
    let log = user_settings(&p, &hooks);
    let server = calls();
    let out = run(&p, &server, &flags[..4], flags[4], &log);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        p.root().join("review.txt").exists(),
        "{:?}",
        results(&server)
    );
    // The organisation's: only a person or its own PermissionRequest hook answers.
    let p = Project::new();
    let server = calls();
    let mut cmd = crate::support::agent_command(&p, &format!("{}/v1", server.url()));
    cmd.args(flags);
    let Some(mut cmd) = crate::support::under_managed(&p, &cmd, &hooks) else {
        return;
    };
    let out = finish(&cmd.output().unwrap());
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let sent = results(&server);
    assert!(!p.root().join("review.txt").exists(), "{sent:?}");
    let refused = result(&sent, "w1");
    assert!(
        refused.contains("the organisation reviews these")
            && refused.contains("--on-ask allow does not answer"),
        "{refused}"
    );
    assert!(p.root().join("review-signed.txt").exists(), "{sent:?}");
    assert!(p.root().join("plain.txt").exists(), "{sent:?}");
}
