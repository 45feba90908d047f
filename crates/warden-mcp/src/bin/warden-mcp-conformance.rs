//! The client side of the MCP conformance suite (npm's `@modelcontextprotocol/conformance`):
//! `warden-mcp-conformance URL`, the scenario named by `MCP_CONFORMANCE_SCENARIO`. It is warden's
//! own client (the same transport, handler and limits `warden run` uses) doing what each
//! scenario asks of a client: start a session, list the tools, call the scenario's tool, answer
//! a form with its defaults. Exit 0 when every step worked.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;
use warden_mcp::{Answer, Asker, Launch, McpError, Server};

fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: warden-mcp-conformance URL (the scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&url, &scenario) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("warden-mcp-conformance: {scenario}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The address of this client's metadata document, the client id where a server takes one.
const CLIENT_METADATA: &str = "https://conformance-test.local/client-metadata.json";

fn run(url: &str, scenario: &str) -> Result<(), String> {
    if scenario.starts_with("auth/") {
        return authorized(url);
    }
    session(url, None, scenario).map_err(|e| e.to_string())
}

/// The most logins one run makes: a server that keeps asking for more is not followed further.
const MOST_LOGINS: usize = 3;

/// A session behind a login: logged in first when the server asks for it, and again (a
/// step-up) when it refuses with a challenge, at most [`MOST_LOGINS`] times.
fn authorized(url: &str) -> Result<(), String> {
    let mut bearer = match log_in(url, None) {
        Ok(token) => Some(token),
        Err(warden_mcp::oauth::OAuthError::NotRequired) => None,
        Err(error) => return Err(error.to_string()),
    };
    let mut logins = usize::from(bearer.is_some());
    loop {
        let Err(error) = session(url, bearer.clone(), "auth") else {
            return Ok(());
        };
        let (McpError::LoginNeeded { challenge, .. } | McpError::MoreScope { challenge, .. }) =
            &error
        else {
            return Err(error.to_string());
        };
        if logins >= MOST_LOGINS {
            return Err(format!("still refused after {logins} logins: {error}"));
        }
        bearer = Some(log_in(url, Some(challenge)).map_err(|e| e.to_string())?);
        logins += 1;
    }
}

fn session(url: &str, bearer: Option<String>, scenario: &str) -> Result<(), McpError> {
    let launch = Launch {
        bearer,
        // A person who leaves every field alone: the form's defaults are the answer.
        asker: Some(Asker::new(|_| Answer::Accept(serde_json::Map::new()))),
        startup_timeout: Duration::from_secs(20),
        tool_timeout: Duration::from_secs(20),
        ..Launch::http("conformance", url)
    };
    let server = Server::start(launch)?;
    let tools = server.tools()?;
    println!("{}: {} tools", server.info().name, tools.len());
    let call = match scenario {
        "tools_call" => Some(("add_numbers", json!({"a": 2, "b": 3}))),
        "elicitation-sep1034-client-defaults" => {
            Some(("test_client_elicitation_defaults", json!({})))
        }
        "sse-retry" => Some(("test_reconnection", json!({}))),
        "auth" if tools.iter().any(|t| t.name == "test-tool") => Some(("test-tool", json!({}))),
        _ => None,
    };
    if let Some((tool, arguments)) = call {
        let outcome = server.call(tool, arguments)?;
        println!("{tool}: {}", outcome.text);
        if outcome.is_error {
            return Err(McpError::Protocol {
                server: "conformance".to_owned(),
                what: tool.to_owned(),
                message: format!("it answered with an error: {}", outcome.text),
                stderr: String::new(),
            });
        }
    }
    Ok(())
}

/// A login as warden does it, with the client the scenario gives (`MCP_CONFORMANCE_CONTEXT`)
/// if it gives one; the test's authorization server answers at once. `challenge`: the refusal
/// of a step-up.
fn log_in(url: &str, challenge: Option<&str>) -> Result<String, warden_mcp::oauth::OAuthError> {
    let context: serde_json::Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let client = context["client_id"]
        .as_str()
        .map(|id| warden_mcp::oauth::Client {
            client_id: id.to_owned(),
            client_secret: context["client_secret"].as_str().map(str::to_owned),
        });
    let login = warden_mcp::oauth::Login {
        client,
        client_metadata_url: Some(CLIENT_METADATA.to_owned()),
        redirect: warden_mcp::oauth::Redirect::Immediate,
        signing_key: context["private_key_pem"].as_str().map(str::to_owned),
    };
    let tokens = warden_mcp::oauth::login(url, &login, challenge, None)?;
    Ok(tokens.access_token)
}
