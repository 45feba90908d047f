//! `warden mcp list|tools|call`: the MCP servers of the settings.

use std::path::PathBuf;

use anyhow::anyhow;
use serde_json::json;
use warden_tools::{McpServers, Registry, ToolContext};

use super::{load_settings, print_json};
use crate::args::{McpCallArgs, McpCommand, ToolArgs};
use crate::{CliError, Exit};

pub(super) fn run(dir: Option<PathBuf>, command: McpCommand) -> Result<Exit, CliError> {
    match command {
        McpCommand::List { json } => list(dir, json),
        McpCommand::Tools { server, json } => tools(dir, &server, json),
        McpCommand::Call(args) => call(dir, args),
    }
}

fn list(dir: Option<PathBuf>, json: bool) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
    if json {
        print_json(&json!({ "servers": settings.mcp.servers }))?;
        return Ok(Exit::Success);
    }
    if settings.mcp.servers.is_empty() {
        println!("no MCP servers in the settings ([mcp.servers.NAME])");
    }
    for (name, server) in &settings.mcp.servers {
        let state = if server.enabled { "" } else { "  (disabled)" };
        let mut line = server.command.clone();
        for arg in &server.args {
            line.push(' ');
            line.push_str(arg);
        }
        println!("{name:<16} {line}{state}");
    }
    Ok(Exit::Success)
}

/// Starts the one server `name` of the settings into `registry`: a usage error when the settings
/// have no such server or disable it, a failure when it cannot start.
pub(super) fn start_one(
    ctx: &ToolContext,
    registry: &mut Registry,
    name: &str,
) -> Result<McpServers, CliError> {
    let settings = &ctx.settings;
    match settings.mcp.servers.get(name) {
        None => {
            let known: Vec<&str> = settings.mcp.servers.keys().map(String::as_str).collect();
            return Err(CliError::usage(anyhow!(
                "no MCP server {name:?} in the settings; servers: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        }
        Some(server) if !server.enabled => {
            return Err(CliError::usage(anyhow!(
                "the MCP server {name:?} is disabled in the settings (enabled = false)"
            )));
        }
        Some(_) => {}
    }
    let servers = McpServers::start_some(ctx, registry, Some(name));
    if let Some(problem) = servers.problems.first() {
        if servers.is_empty() {
            return Err(CliError::failure(anyhow!("{problem}")));
        }
        for problem in &servers.problems {
            eprintln!("warden: {problem}");
        }
    }
    Ok(servers)
}

fn tools(dir: Option<PathBuf>, name: &str, json: bool) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
    let mut ctx = ToolContext::from_settings(&settings).map_err(CliError::usage)?;
    if let Ok(warden) = super::sandbox_helper() {
        ctx = ctx.with_sandbox_helper(warden);
    }
    let mut registry = Registry::new();
    let _servers = start_one(&ctx, &mut registry, name)?;
    let specs: Vec<_> = registry.specs().collect();
    if json {
        print_json(&specs)?;
    } else {
        for spec in specs {
            let first = spec.description.lines().next().unwrap_or_default();
            println!("{:<32} {first}", spec.name);
        }
    }
    Ok(Exit::Success)
}

fn call(dir: Option<PathBuf>, args: McpCallArgs) -> Result<Exit, CliError> {
    let McpCallArgs {
        server,
        tool,
        args,
        session,
        no_trace,
        on_ask,
    } = args;
    let tool_args = ToolArgs {
        name: warden_mcp::tool_name(&server, &tool),
        args,
        session,
        no_trace,
        on_ask,
    };
    super::tool::run(dir, &tool_args)
}
