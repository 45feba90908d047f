//! Each way a hook's answer is read, with real commands run by `sh`: the shapes Claude Code
//! defines for each event, gathered over several hooks, and the ways a hook fails.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::{Value, json};
use warden_config::{Hook, HookEvent, HookOnError, Hooks};
use warden_hooks::{HookRunner, Session, Verdict};

fn hook(event: HookEvent, matcher: Option<&str>, command: &str) -> Hook {
    Hook {
        event,
        matcher: matcher.map(str::to_owned),
        command: command.to_owned(),
        timeout_seconds: 5,
        on_error: HookOnError::Deny,
        env: Vec::new(),
        source: None,
    }
}

fn run(
    hooks: Vec<Hook>,
    event: HookEvent,
    subjects: &[&str],
    fields: Value,
) -> warden_hooks::Outcome {
    let dir = tempfile::tempdir().unwrap();
    let runner = HookRunner::new(&Hooks { hooks }, dir.path());
    let session = Session {
        session_id: "s".to_owned(),
        transcript_path: None,
        cwd: dir.path().to_path_buf(),
        permission_mode: "default".to_owned(),
    };
    let Value::Object(fields) = fields else {
        panic!("fields are an object")
    };
    runner.run(event, &session, subjects, &fields)
}

/// A command that prints `json`.
fn says(json: &Value) -> String {
    format!("printf '%s' '{}'", json.to_string().replace('\'', "'\\''"))
}

#[test]
fn permission_request_answers_with_new_input_or_a_refusal_that_interrupts() {
    let allow = says(
        &json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow", "updatedInput": {"command": "npm test -- --ci"}}}}),
    );
    let out = run(
        vec![hook(HookEvent::PermissionRequest, Some("Bash"), &allow)],
        HookEvent::PermissionRequest,
        &["Bash", "bash"],
        json!({}),
    );
    assert_eq!(out.verdict, Some(Verdict::Allow));
    assert_eq!(
        out.updated_input,
        Some(json!({"command": "npm test -- --ci"}))
    );
    let deny = says(
        &json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "deny", "message": "not today", "interrupt": true}}}),
    );
    let out = run(
        vec![hook(HookEvent::PermissionRequest, None, &deny)],
        HookEvent::PermissionRequest,
        &["Bash"],
        json!({}),
    );
    assert!(out.denied());
    assert_eq!(out.reason(), "not today");
    assert!(out.stop.is_some());
}

#[test]
fn the_strictest_answer_stands_and_two_different_new_inputs_refuse() {
    let allow = says(&json!({"hookSpecificOutput": {"permissionDecision": "allow"}}));
    let ask = says(&json!({"hookSpecificOutput": {"permissionDecision": "ask",
        "permissionDecisionReason": "look first"}}));
    let out = run(
        vec![
            hook(HookEvent::PreToolUse, None, &allow),
            hook(HookEvent::PreToolUse, None, &ask),
        ],
        HookEvent::PreToolUse,
        &["Bash"],
        json!({}),
    );
    assert_eq!(out.verdict, Some(Verdict::Ask));
    assert_eq!(out.reason(), "look first");
    let one = says(&json!({"hookSpecificOutput": {"updatedInput": {"command": "a"}}}));
    let two = says(&json!({"hookSpecificOutput": {"updatedInput": {"command": "b"}}}));
    let out = run(
        vec![
            hook(HookEvent::PreToolUse, None, &one),
            hook(HookEvent::PreToolUse, None, &two),
        ],
        HookEvent::PreToolUse,
        &["Bash"],
        json!({}),
    );
    assert!(out.denied(), "{:?}", out.reasons);
    // Claude Code's older spelling.
    let block = says(&json!({"decision": "block", "reason": "old style"}));
    let out = run(
        vec![hook(HookEvent::PreToolUse, None, &block)],
        HookEvent::PreToolUse,
        &["Bash"],
        json!({}),
    );
    assert!(out.denied());
}

#[test]
fn a_hook_is_not_waited_for_past_its_time_even_when_its_output_is_held_open() {
    let allow = says(&json!({"hookSpecificOutput": {"permissionDecision": "allow"}}));
    // It answers at once, but leaves behind, in a session of its own, something holding its
    // output open.
    let mut lingering = hook(
        HookEvent::PreToolUse,
        None,
        &format!("(setsid sleep 30 &); {allow}"),
    );
    lingering.timeout_seconds = 1;
    let out = run(vec![lingering], HookEvent::PreToolUse, &["Bash"], json!({}));
    assert!(out.runs[0].timed_out, "{:?}", out.runs);
    assert!(out.denied(), "{:?}", out.reasons);
}

#[test]
fn an_answer_after_a_byte_order_mark_or_logged_lines_is_read() {
    for printed in [
        "printf '\\357\\273\\277{\"decision\": \"block\", \"reason\": \"bom\"}'",
        "echo checking; echo '{\"decision\": \"block\", \"reason\": \"logged\"}'",
    ] {
        let out = run(
            vec![hook(HookEvent::PreToolUse, None, printed)],
            HookEvent::PreToolUse,
            &["Bash"],
            json!({}),
        );
        assert!(out.denied(), "{printed}: {:?} {:?}", out.reasons, out.runs);
    }
}

#[test]
fn a_matcher_takes_either_name_and_nothing_else() {
    let deny = "exit 2";
    let hooks = || vec![hook(HookEvent::PreToolUse, Some("Edit|Write"), deny)];
    assert!(
        run(
            hooks(),
            HookEvent::PreToolUse,
            &["Write", "writeFile"],
            json!({})
        )
        .denied()
    );
    assert!(
        run(
            hooks(),
            HookEvent::PreToolUse,
            &["Read", "readFile"],
            json!({})
        )
        .runs
        .is_empty()
    );
    // Anchored: `Write` is not `WriteFile`, nor a part of a longer name.
    assert!(
        run(
            hooks(),
            HookEvent::PreToolUse,
            &["mcp__x__Writer"],
            json!({})
        )
        .runs
        .is_empty()
    );
    let mcp = vec![hook(HookEvent::PreToolUse, Some("mcp__github__.*"), deny)];
    assert!(
        run(
            mcp,
            HookEvent::PreToolUse,
            &["mcp__github__create_issue"],
            json!({})
        )
        .denied()
    );
}

#[test]
fn events_without_a_tool_say_things_to_the_person_and_stop_the_session() {
    let out = run(
        vec![hook(
            HookEvent::PreCompact,
            Some("auto"),
            "echo compacting >&2; exit 2",
        )],
        HookEvent::PreCompact,
        &["auto"],
        json!({"trigger": "auto"}),
    );
    assert_eq!(out.notices.len(), 1, "{:?}", out.notices);
    assert!(!out.blocked);
    assert!(
        run(
            vec![hook(HookEvent::PreCompact, Some("manual"), "exit 2")],
            HookEvent::PreCompact,
            &["auto"],
            json!({})
        )
        .runs
        .is_empty()
    );
    let stop =
        says(&json!({"continue": false, "stopReason": "budget meeting", "systemMessage": "bye"}));
    let out = run(
        vec![hook(HookEvent::Notification, None, &stop)],
        HookEvent::Notification,
        &["permission_prompt"],
        json!({"message": "m"}),
    );
    assert_eq!(out.stop.as_deref(), Some("budget meeting"));
    assert_eq!(out.notices, ["bye"]);
}

#[test]
fn the_input_and_environment_are_claude_code_s_and_little_else() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let command = format!("cat > {0}.json; env > {0}.env", seen.display());
    let out = run(
        vec![hook(HookEvent::SessionStart, None, &command)],
        HookEvent::SessionStart,
        &["startup"],
        json!({"source": "startup"}),
    );
    assert!(out.runs[0].error.is_none(), "{:?}", out.runs);
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(seen.with_extension("json")).unwrap())
            .unwrap();
    for key in [
        "session_id",
        "transcript_path",
        "cwd",
        "hook_event_name",
        "permission_mode",
        "source",
    ] {
        assert!(input.get(key).is_some(), "{key}: {input}");
    }
    let env = std::fs::read_to_string(seen.with_extension("env")).unwrap();
    assert!(env.contains("CLAUDE_PROJECT_DIR="), "{env}");
    assert!(env.contains("WARDEN_PROJECT_DIR="), "{env}");
    // Nothing of warden's own environment but the basics.
    assert!(!env.contains("CARGO"), "{env}");
    assert!(Path::new(&seen.with_extension("json")).exists());
}
