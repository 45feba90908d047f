//! Against a real server no one here wrote: npm's `@modelcontextprotocol/server-everything`,
//! which `.ci/run` installs under `target/mcp-peers` (`WARDEN_MCP_PEERS` names another place).
//! Without it the tests say so and pass only where `WARDEN_REQUIRE_PEERS` is unset.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod peers;

use peers::everything;

use std::time::Duration;

use serde_json::json;
use warden_mcp::{Launch, McpError, Server};

fn launch(script: &std::path::Path, env: Vec<(String, String)>) -> Launch {
    let mut env = env;
    env.push(("PATH".to_owned(), std::env::var("PATH").unwrap()));
    Launch {
        env,
        ..Launch::program(
            "everything",
            "node",
            vec![script.display().to_string(), "stdio".to_owned()],
        )
    }
}

#[test]
fn tools_are_listed_and_called() {
    let Some(script) = everything() else { return };
    let server = Server::start(launch(&script, Vec::new())).unwrap();
    let info = server.info();
    assert_eq!(
        info.initialize["serverInfo"]["name"], "mcp-servers/everything",
        "{info:?}"
    );
    let tools = server.tools().unwrap();
    let echo = tools.iter().find(|t| t.name == "echo").expect("echo");
    assert_eq!(echo.input_schema["required"], json!(["message"]));
    // The server's hints are kept as they are: what the policy makes of them is its own.
    assert_eq!(echo.annotations.as_ref().unwrap()["readOnlyHint"], true);
    let outcome = server
        .call("echo", json!({"message": "over the wire"}))
        .unwrap();
    assert!(outcome.text.contains("over the wire"), "{outcome:?}");
    assert!(!outcome.is_error);
    let sum = server.call("get-sum", json!({"a": 2, "b": 40})).unwrap();
    assert!(sum.text.contains("42"), "{sum:?}");
    let structured = server
        .call("get-structured-content", json!({"location": "New York"}))
        .unwrap();
    assert!(structured.structured.is_some(), "{structured:?}");
    // Arguments that are not an object are refused before anything is sent.
    assert!(matches!(
        server.call("echo", json!(["x"])),
        Err(McpError::Arguments(_))
    ));
}

#[test]
fn a_server_sees_only_the_variables_named_for_it() {
    let Some(script) = everything() else { return };
    // The probe: the server prints its environment. A variable set only in the test's own
    // environment is not there; one passed by name is.
    // CARGO_MANIFEST_DIR is in this test's environment (cargo sets it), so its absence below
    // is the minimal environment's doing, not the variable's.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let secret = ("WARDEN_MCP_TEST_NAMED".to_owned(), "named-value".to_owned());
    let server = Server::start(launch(&script, vec![secret])).unwrap();
    let env = server.call("get-env", json!({})).unwrap().text;
    assert!(env.contains("named-value"), "{env}");
    assert!(!env.contains("CARGO_MANIFEST_DIR"), "{env}");
    assert!(
        !env.contains("RUST_TEST_THREADS") && !env.contains("CARGO_PKG_NAME"),
        "{env}"
    );
}

#[test]
fn a_call_past_its_timeout_is_cancelled_and_the_session_goes_on() {
    let Some(script) = everything() else { return };
    let mut launch = launch(&script, Vec::new());
    launch.tool_timeout = Duration::from_secs(1);
    let server = Server::start(launch).unwrap();
    let slow = server.call(
        "trigger-long-running-operation",
        json!({"duration": 30, "steps": 3}),
    );
    match slow {
        Err(McpError::Timeout { what, seconds, .. }) => {
            assert_eq!((what.as_str(), seconds), ("tools/call", 1));
        }
        other => panic!("{other:?}"),
    }
    let echo = server
        .call("echo", json!({"message": "still here"}))
        .unwrap();
    assert!(echo.text.contains("still here"));
}

#[test]
fn a_call_that_reports_progress_may_take_longer_than_its_timeout() {
    let Some(script) = everything() else { return };
    let mut launch = launch(&script, Vec::new());
    launch.tool_timeout = Duration::from_secs(1);
    let server = Server::start(launch).unwrap();
    // Three seconds in steps of half a second, each reported: past the one-second timeout,
    // and finished (the call above, with a step of ten seconds, is not).
    let steady = server
        .call(
            "trigger-long-running-operation",
            json!({"duration": 3, "steps": 6}),
        )
        .unwrap();
    assert!(steady.text.contains("completed"), "{steady:?}");
    // Progress buys ten timeouts at most.
    let endless = server.call(
        "trigger-long-running-operation",
        json!({"duration": 30, "steps": 60}),
    );
    assert!(
        matches!(endless, Err(McpError::Timeout { .. })),
        "{endless:?}"
    );
}

#[test]
fn a_program_that_is_not_there_is_a_clear_error() {
    let launch = Launch::program("ghost", "/nonexistent/mcp-server", Vec::new());
    let error = Server::start(launch).err().unwrap();
    assert!(
        error
            .to_string()
            .contains("cannot start \"/nonexistent/mcp-server\""),
        "{error}"
    );
}

#[test]
fn a_program_that_does_not_speak_mcp_fails_its_start_with_what_it_said() {
    let launch = Launch {
        env: vec![("PATH".to_owned(), "/usr/bin:/bin".to_owned())],
        startup_timeout: Duration::from_secs(2),
        tool_timeout: Duration::from_secs(2),
        ..Launch::program(
            "mute",
            "sh",
            vec![
                "-c".to_owned(),
                "echo 'not a server' >&2; echo garbage; sleep 30".to_owned(),
            ],
        )
    };
    let error = Server::start(launch).err().unwrap().to_string();
    assert!(error.contains("mute"), "{error}");
    assert!(error.contains("not a server"), "{error}");
}

#[test]
fn a_form_of_the_real_server_is_answered_only_when_someone_can_answer() {
    let Some(script) = everything() else { return };
    // Headless, warden does not say it answers forms, and the server offers no tool that asks.
    let headless = Server::start(launch(&script, Vec::new())).unwrap();
    let names: Vec<String> = headless
        .tools()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(
        !names.iter().any(|n| n == "trigger-elicitation-request"),
        "{names:?}"
    );
    // With a person, it does; what they filled in and the defaults of what they left go back.
    let mut with = launch(&script, Vec::new());
    with.asker = Some(warden_mcp::Asker::new(|question: &warden_mcp::Question| {
        assert_eq!(question.server, "everything");
        assert!(question.schema["properties"]["firstLine"]["default"].is_string());
        warden_mcp::Answer::Accept(serde_json::Map::from_iter([
            ("name".to_owned(), json!("Ada Lovelace")),
            ("check".to_owned(), json!(true)),
        ]))
    }));
    let server = Server::start(with).unwrap();
    let outcome = server
        .call("trigger-elicitation-request", json!({}))
        .unwrap();
    assert!(outcome.text.contains("Ada Lovelace"), "{outcome:?}");
    assert!(
        outcome.text.contains("It was a dark and stormy night."),
        "{outcome:?}"
    );
}

#[test]
fn an_older_server_is_spoken_to_in_its_version_and_every_page_of_its_tools_is_read() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/older.py");
    let launch = Launch {
        env: vec![("PATH".to_owned(), std::env::var("PATH").unwrap())],
        ..Launch::program("older", "python3", vec![script.to_owned()])
    };
    let server = Server::start(launch).unwrap();
    assert_eq!(server.info().initialize["protocolVersion"], "2024-11-05");
    let names: Vec<String> = server
        .tools()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["first", "second-page-2"]);
    let called = server.call("second-page-2", json!({})).unwrap();
    assert_eq!(called.text, "called second-page-2");
}
