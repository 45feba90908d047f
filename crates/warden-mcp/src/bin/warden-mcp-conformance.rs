//! The client side of the MCP conformance suite (npm's `@modelcontextprotocol/conformance`):
//! `warden-mcp-conformance URL`, the scenario named by `MCP_CONFORMANCE_SCENARIO`. It is warden's
//! own client (the same transport, handler and limits `warden run` uses) doing what each
//! scenario asks of a client: start a session, list the tools, call the scenario's tool, answer
//! a form with its defaults. Exit 0 when every step worked.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;
use warden_mcp::{Answer, Asker, Launch, Server};

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

fn run(url: &str, scenario: &str) -> Result<(), String> {
    let launch = Launch {
        // A person who leaves every field alone: the form's defaults are the answer.
        asker: Some(Asker::new(|_| Answer::Accept(serde_json::Map::new()))),
        startup_timeout: Duration::from_secs(20),
        tool_timeout: Duration::from_secs(20),
        ..Launch::http("conformance", url)
    };
    let server = Server::start(launch).map_err(|e| e.to_string())?;
    let tools = server.tools().map_err(|e| e.to_string())?;
    println!("{}: {} tools", server.info().name, tools.len());
    let call = match scenario {
        "tools_call" => Some(("add_numbers", json!({"a": 2, "b": 3}))),
        "elicitation-sep1034-client-defaults" => {
            Some(("test_client_elicitation_defaults", json!({})))
        }
        "sse-retry" => Some(("test_reconnection", json!({}))),
        _ => None,
    };
    if let Some((tool, arguments)) = call {
        let outcome = server.call(tool, arguments).map_err(|e| e.to_string())?;
        println!("{tool}: {}", outcome.text);
        if outcome.is_error {
            return Err(format!("{tool} answered with an error: {}", outcome.text));
        }
    }
    Ok(())
}
