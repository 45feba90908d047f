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
    // `auth/x`'s results are in `auth/x-…`: a level deeper.
    let mut folders: Vec<PathBuf> = vec![results.path().to_path_buf()];
    let mut files = Vec::new();
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.file_name().is_some_and(|n| n == "checks.json") {
                files.push(path);
            }
        }
    }
    for file in files {
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
    // And a login it did not make.
    let (passed, _, said) = run(&suite, "exec true", "auth/metadata-default");
    assert!(!passed, "{said}");
}

/// The authorization scenarios warden's login passes: discovery (RFC 9728, RFC 8414 and `OpenID`
/// Connect paths), a client metadata document, dynamic registration or a pre-registered
/// client, the scope and its step-up (at most three logins), the three ways a client
/// authenticates at the token endpoint, a resource that is not this server's, the 2025-03-26
/// fallbacks, and a machine's own credentials (a secret, or an assertion signed with ES256).
const AUTH: &[&str] = &[
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/resource-mismatch",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
];

#[test]
fn authorization() {
    let Some(suite) = suite() else { return };
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for scenario in AUTH {
        let (passed, checks, said) = run(&suite, &warden(), scenario);
        assert!(passed, "{scenario}:\n{said}");
        assert!(
            checks.iter().any(|(_, s)| s == "SUCCESS"),
            "{scenario}: nothing was checked: {checks:?}"
        );
        assert!(
            checks.iter().all(|(_, s)| s == "SUCCESS" || s == "INFO"),
            "{scenario}: {checks:?}"
        );
    }
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
