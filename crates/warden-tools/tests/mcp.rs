//! MCP tools in the registry and the runner: a definition the server changes during a session
//! (announced by `list_changed`) holds the tool until a person approves it, whatever the rules.

use std::path::Path;

use serde_json::json;
use warden_config::{McpServer, PermissionMode, Settings};
use warden_policy::Engine;
use warden_protocol::{SessionId, ToolStatus};
use warden_tools::{McpServers, OnAsk, Registry, ToolContext, ToolRunner};

#[test]
fn a_tool_changed_during_the_session_is_held_despite_an_allow_rule() {
    let dir = tempfile::tempdir().unwrap();
    let description = dir.path().join("description.txt");
    std::fs::write(&description, "Looks a word up.").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../warden-cli/tests/mcp/hostile.py");
    let mut settings = Settings::defaults(dir.path().to_path_buf());
    settings.permissions.mode = PermissionMode::Default;
    settings.permissions.allow = vec!["Mcp(hostile)".to_owned()];
    settings.dirs.data_dir = Some(dir.path().join("data"));
    settings.mcp.servers.insert(
        "hostile".to_owned(),
        McpServer {
            startup_timeout_seconds: 10,
            tool_timeout_seconds: 10,
            sandbox: false,
            ..McpServer::stdio(
                "python3",
                vec![
                    script.display().to_string(),
                    description.display().to_string(),
                ],
            )
        },
    );
    let ctx = ToolContext::from_settings(&settings).unwrap();
    let mut registry = Registry::builtin().unwrap();
    let servers = McpServers::start(&ctx, &mut registry);
    // The one problem: it runs outside the sandbox, as this test asks (no helper here).
    assert_eq!(servers.problems.len(), 1, "{:?}", servers.problems);
    assert!(servers.problems[0].contains("outside the sandbox"));
    let engine = Engine::from_settings(&settings).unwrap();
    let mut runner = ToolRunner::new(&registry, &ctx, &engine, None, SessionId::new()).unwrap();
    let lookup = |runner: &mut ToolRunner<'_>| {
        runner
            .run("mcp__hostile__lookup", json!({"q": "w"}))
            .unwrap()
    };
    // Allowed by the rule while the definition is the one offered.
    let first = lookup(&mut runner);
    assert_eq!(first.status, ToolStatus::Ok, "{first:?}");
    // The server changes it mid-session and says so.
    let mutated = runner.run("mcp__hostile__mutate", json!({})).unwrap();
    assert_eq!(mutated.status, ToolStatus::Ok, "{mutated:?}");
    let held = lookup(&mut runner);
    assert_eq!(held.status, ToolStatus::Denied, "{held:?}");
    let message = held.error.unwrap().message;
    assert!(message.contains("during the session"), "{message}");
    // Even approved (here --on-ask allow), what the model was shown is not what would run: it
    // is not called until the next session shows the new definition for approval, and the
    // change is not pinned.
    let mut approving = ToolRunner::new(&registry, &ctx, &engine, None, SessionId::new())
        .unwrap()
        .with_on_ask(OnAsk::Allow);
    let refused = lookup(&mut approving);
    assert_eq!(refused.status, ToolStatus::Error, "{refused:?}");
    assert!(
        refused
            .error
            .unwrap()
            .message
            .contains("until the session starts again"),
        "refused"
    );
    let pins = std::fs::read_to_string(dir.path().join("data/mcp-pins.json")).unwrap();
    assert!(pins.contains("Looks a word up."), "{pins}");
    assert!(!pins.contains("uploads"), "{pins}");
    drop(servers);
}
