//! `warden tool` and `warden tools`.

use std::io::Read as _;
use std::path::PathBuf;

use anyhow::{Context as _, anyhow};
use serde_json::{Value, json};
use warden_policy::Engine;
use warden_protocol::{SessionId, ToolStatus};
use warden_tools::{OnAsk, Registry, ToolRunner};

use super::{load_settings, open_trace, print_json};
use crate::args::{ToolArgs, ToolsArgs};
use crate::{CliError, Exit};

pub(super) fn run(dir: Option<PathBuf>, args: &ToolArgs) -> Result<Exit, CliError> {
    let arguments = parse_arguments(&args.call.args)?;
    let settings = load_settings(dir)?;
    let mut ctx = super::mcp::tool_context(&settings)?;
    let mut registry = Registry::builtin().map_err(CliError::failure)?;
    // An MCP tool: its server alone is started, and ends with this command.
    let server = match warden_mcp::split_name(&args.name) {
        Some((server, _)) => Some(server.to_owned()),
        // A resource: of the server its arguments name.
        None if args.name == "readMcpResource" => arguments
            .get("server")
            .and_then(serde_json::Value::as_str)
            .filter(|s| ctx.settings.mcp.servers.contains_key(*s))
            .map(str::to_owned),
        None => None,
    };
    let servers = match server {
        Some(server) => Some(super::mcp::start_one(&ctx, &mut registry, &server)?),
        None => None,
    };
    if registry.spec(&args.name).is_none() {
        let known: Vec<String> = registry.specs().map(|s| s.name.to_string()).collect();
        return Err(CliError::usage(anyhow!(
            "unknown tool {:?}; known tools: {}",
            args.name,
            known.join(", ")
        )));
    }
    let session = match &args.call.session {
        Some(id) => id.parse::<SessionId>().map_err(CliError::usage)?,
        None => SessionId::new(),
    };
    ctx = ctx.with_egress_sink(warden_tools::egress::trace_sink(session.clone()));
    if settings.sandbox.network.mode == warden_config::NetworkMode::Allowlist {
        let sink = warden_tools::egress::trace_sink(session.clone());
        let proxy = warden_tools::egress::start(&settings, &[], &[], sink, None)
            .map_err(|e| CliError::usage(anyhow!(e)))?;
        ctx = ctx.with_egress(proxy);
    }
    let store = if args.call.no_trace {
        None
    } else {
        Some(open_trace()?)
    };
    if let Some(store) = &store
        && !settings.trust.ignored.is_empty()
    {
        let _ = store.record_agent_event(
            &session,
            "settings_ignored",
            &super::trust::ignored_event(&settings),
        );
    }
    let mut policy = Engine::from_settings(&settings).map_err(CliError::usage)?;
    for tool in servers.iter().flat_map(|s| &s.read_only) {
        policy.trust_read_only_hint(tool);
    }
    let on_ask = if args.call.on_ask == "allow" {
        OnAsk::Allow
    } else {
        OnAsk::Deny
    };
    let mut runner = ToolRunner::new(&registry, &ctx, &policy, store.as_ref(), session)
        .map_err(CliError::failure)?
        .with_on_ask(on_ask);
    let result = runner
        .run(&args.name, arguments)
        .map_err(CliError::failure)?;
    match (result.status, result.output, result.error) {
        (ToolStatus::Ok, Some(output), _) => {
            print_json(&output)?;
            Ok(Exit::Success)
        }
        (_, _, error) => {
            let error = error.map_or_else(
                || json!({"message": "the tool returned nothing"}),
                |e| json!(e),
            );
            print_json(&json!({ "error": error }))?;
            let message = error["message"].as_str().unwrap_or("tool failed");
            // A tool's message may carry an MCP server's words: shown, never obeyed.
            eprintln!(
                "warden: {}: {}",
                args.name,
                warden_protocol::printable_text(message)
            );
            Ok(Exit::Failure)
        }
    }
}

pub(super) fn list(dir: Option<PathBuf>, args: &ToolsArgs) -> Result<Exit, CliError> {
    let mut registry = Registry::builtin().map_err(CliError::failure)?;
    // The MCP servers of the settings are started to ask for their tools, and stopped.
    let settings = load_settings(dir)?;
    let ctx = super::mcp::tool_context(&settings)?;
    let servers = warden_tools::McpServers::start(&ctx, &mut registry);
    for problem in &servers.problems {
        eprintln!("warden: {}", warden_protocol::printable_text(problem));
    }
    if args.json {
        let specs: Vec<_> = registry.specs().collect();
        print_json(&specs)?;
    } else {
        for spec in registry.specs() {
            // An MCP server's words, escaped for the terminal.
            let first = spec.description.split(". ").next().unwrap_or_default();
            println!(
                "{:<10} {}",
                spec.name,
                warden_protocol::printable_text(first)
            );
        }
    }
    Ok(Exit::Success)
}

fn parse_arguments(text: &str) -> Result<Value, CliError> {
    let text = if text == "-" {
        let mut buf = String::new();
        std::io::stdin()
            .read_to_string(&mut buf)
            .context("cannot read --args from stdin")
            .map_err(CliError::usage)?;
        buf
    } else {
        text.to_owned()
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|err| CliError::usage(anyhow!("--args is not valid JSON: {err}")))?;
    if !value.is_object() {
        return Err(CliError::usage(anyhow!(
            "--args must be a JSON object, got {}",
            kind(&value)
        )));
    }
    Ok(value)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
