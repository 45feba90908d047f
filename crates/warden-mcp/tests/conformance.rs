//! The official MCP conformance suite (npm's `@modelcontextprotocol/conformance`, which `.ci/run`
//! installs under `target/mcp-conformance`) against warden's client: its client scenarios start
//! their own servers and judge what the client sent. A run passes only when the suite says
//! OVERALL: PASSED and its results name every check the scenario makes as a success.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod peers;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The suite's program, if installed.
fn suite() -> Option<PathBuf> {
    let folder = std::env::var_os("WARDEN_MCP_CONFORMANCE").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-conformance"),
        PathBuf::from,
    );
    peers::found(folder.join("node_modules/.bin/conformance"))
}

/// Runs `scenario` with `client` (a shell command; the server's address is appended): whether
/// the suite passed it, and every check it recorded as (id, status).
fn run(suite: &Path, client: &str, scenario: &str) -> (bool, Vec<(String, String)>, String) {
    let results = tempfile::tempdir().unwrap();
    let output = Command::new(suite)
        .args(["client", "--command", client, "--scenario", scenario])
        .args(["--timeout", "60000", "-o"])
        .arg(results.path())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut checks = Vec::new();
    for entry in std::fs::read_dir(results.path()).unwrap() {
        let file = entry.unwrap().path().join("checks.json");
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let recorded: Vec<Value> = serde_json::from_str(&text).unwrap();
        for check in recorded {
            checks.push((
                check["id"].as_str().unwrap_or_default().to_owned(),
                check["status"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    let passed = output.status.success() && said.contains("OVERALL: PASSED");
    (passed, checks, said)
}

/// warden's conformance client, `exec`'d so that the suite's timeout reaches it.
fn warden() -> String {
    format!("exec {}", env!("CARGO_BIN_EXE_warden-mcp-conformance"))
}

/// One scenario at a time: `sse-retry` times the client's reconnection to a window of 250 ms,
/// which four Node.js servers starting at once on two cores could push it out of.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn assert_passes(scenario: &str, expected: &[&str]) {
    let Some(suite) = suite() else { return };
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (passed, checks, said) = run(&suite, &warden(), scenario);
    assert!(passed, "{scenario}:\n{said}");
    for id in expected {
        assert!(
            checks.iter().any(|(c, s)| c == id && s == "SUCCESS"),
            "{scenario}: no success for {id}: {checks:?}\n{said}"
        );
    }
    assert!(
        checks.iter().all(|(_, s)| s == "SUCCESS" || s == "INFO"),
        "{scenario}: {checks:?}"
    );
}

#[test]
fn the_suite_fails_a_client_that_does_nothing() {
    let Some(suite) = suite() else { return };
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // The probe that the suite judges at all: a "client" that exits at once fails the call.
    let (passed, checks, said) = run(&suite, "exec true", "tools_call");
    assert!(!passed, "{said}");
    assert!(
        checks
            .iter()
            .any(|(c, s)| c == "tool-add-numbers" && s == "FAILURE"),
        "{checks:?}"
    );
}

#[test]
fn initialize() {
    assert_passes("initialize", &["mcp-client-initialization"]);
}

#[test]
fn tools_call() {
    assert_passes("tools_call", &["tool-add-numbers"]);
}

#[test]
fn elicitation_defaults() {
    assert_passes(
        "elicitation-sep1034-client-defaults",
        &[
            "client-elicitation-sep1034-string-default",
            "client-elicitation-sep1034-integer-default",
            "client-elicitation-sep1034-number-default",
            "client-elicitation-sep1034-enum-default",
            "client-elicitation-sep1034-boolean-default",
        ],
    );
}

#[test]
fn sse_retry() {
    assert_passes(
        "sse-retry",
        &[
            "client-sse-graceful-reconnect",
            "client-sse-retry-timing",
            "client-sse-last-event-id",
        ],
    );
}
