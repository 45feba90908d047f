//! `warden mcp list|tools|call`: the MCP servers of the settings.

use std::path::PathBuf;

use anyhow::anyhow;
use serde_json::{Value, json};
use warden_config::NewMcpServer;
use warden_protocol::printable_text as printable;
use warden_tools::{McpServers, Registry, ToolContext};

use super::{load_settings, print_json};
use crate::args::{McpCallArgs, McpCommand, ToolArgs};
use crate::{CliError, Exit};

pub(super) fn run(dir: Option<PathBuf>, command: McpCommand) -> Result<Exit, CliError> {
    match command {
        McpCommand::List { json } => list(dir, json),
        McpCommand::Tools { server, json } => tools(dir, &server, json),
        McpCommand::Call(args) => call(dir, args),
        McpCommand::Resources { server, json } => resources(dir, &server, json),
        McpCommand::Add {
            name,
            env,
            env_vars,
            url,
            headers,
            command,
        } => add(&name, &env, env_vars, url, &headers, command),
        McpCommand::Remove { name } => remove(&name),
        McpCommand::Login {
            server,
            no_browser,
            paste,
            scope,
        } => super::mcp_login::login(dir, &server, no_browser || paste, paste, scope.as_deref()),
        McpCommand::Logout { server } => super::mcp_login::logout(dir, &server),
        McpCommand::Serve { on_ask, mode, http } => {
            super::mcp_serve::serve(&super::mcp_serve::Options {
                dir,
                on_ask: &on_ask,
                mode: mode.as_deref(),
                http,
            })
        }
        McpCommand::Import { file, yes } => import(dir, file, yes),
    }
}

/// The user's settings file, where `add`, `remove` and `import` write.
fn user_settings() -> Result<PathBuf, CliError> {
    warden_config::user_config_dir()
        .map(|dir| dir.join("settings.toml"))
        .ok_or_else(|| CliError::usage(anyhow!("no user settings directory (HOME is not set)")))
}

fn valid_name(name: &str) -> Result<(), CliError> {
    if warden_config::McpServer::name_fits(name) {
        Ok(())
    } else {
        Err(CliError::usage(anyhow!(
            "{name:?} is not a server name: letters, digits, '-' and '_', without '__' and not \
             starting or ending with '_'"
        )))
    }
}

fn add(
    name: &str,
    env: &[String],
    env_vars: Vec<String>,
    url: Option<String>,
    headers: &[String],
    command: Vec<String>,
) -> Result<Exit, CliError> {
    valid_name(name)?;
    let server = match url {
        Some(url) => remote(url, headers, &command, env, &env_vars)?,
        None => program(command, env, env_vars)?,
    };
    let path = user_settings()?;
    warden_config::add_mcp_server(&path, name, &server).map_err(|e| CliError::usage(anyhow!(e)))?;
    println!(
        "added {name}: {} to {}",
        super::mcp_import::line(&server),
        path.display()
    );
    Ok(Exit::Success)
}

/// `--url URL [--header 'Name: value']`: a streamable HTTP server.
fn remote(
    url: String,
    headers: &[String],
    command: &[String],
    env: &[String],
    env_vars: &[String],
) -> Result<NewMcpServer, CliError> {
    if !command.is_empty() || !env.is_empty() || !env_vars.is_empty() {
        return Err(CliError::usage(anyhow!(
            "a server at --url has no command, --env or --env-var (its headers take ${{NAME}})"
        )));
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(CliError::usage(anyhow!(
            "--url {url:?} is not http:// or https://"
        )));
    }
    let mut pairs = Vec::new();
    for header in headers {
        let (key, value) = header
            .split_once(':')
            .filter(|(k, _)| !k.trim().is_empty())
            .ok_or_else(|| CliError::usage(anyhow!("--header {header:?} is not 'Name: value'")))?;
        pairs.push((key.trim().to_owned(), value.trim().to_owned()));
    }
    Ok(NewMcpServer {
        url: Some(url),
        headers: pairs,
        ..NewMcpServer::default()
    })
}

/// `-- COMMAND [ARGS...]`: a program warden starts.
fn program(
    command: Vec<String>,
    env: &[String],
    env_vars: Vec<String>,
) -> Result<NewMcpServer, CliError> {
    if command.is_empty() {
        return Err(CliError::usage(anyhow!(
            "name the server's program after `--`, or its address with --url"
        )));
    }
    let mut words = command.into_iter();
    let program = words.next().unwrap_or_default();
    let mut pairs = Vec::new();
    for pair in env {
        let (key, value) = pair
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| CliError::usage(anyhow!("--env {pair:?} is not KEY=VALUE")))?;
        pairs.push((key.to_owned(), value.to_owned()));
    }
    Ok(NewMcpServer {
        command: program,
        args: words.collect(),
        env: pairs,
        env_vars,
        ..NewMcpServer::default()
    })
}

fn remove(name: &str) -> Result<Exit, CliError> {
    let path = user_settings()?;
    let removed =
        warden_config::remove_mcp_server(&path, name).map_err(|e| CliError::usage(anyhow!(e)))?;
    if removed {
        println!("removed {name} from {}", path.display());
        Ok(Exit::Success)
    } else {
        eprintln!("warden: no MCP server {name:?} in {}", path.display());
        Ok(Exit::Failure)
    }
}

fn import(dir: Option<PathBuf>, file: Option<PathBuf>, yes: bool) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let files = match file {
        Some(file) => vec![file],
        None => super::mcp_import::default_files(&settings.project_root, home.as_deref())
            .into_iter()
            .filter(|f| f.exists())
            .collect(),
    };
    let path = user_settings()?;
    let mut taken: Vec<String> =
        warden_config::mcp_server_names(&path).map_err(|e| CliError::usage(anyhow!(e)))?;
    let mut adding = Vec::new();
    for file in &files {
        let found = super::mcp_import::read(file, &settings.project_root)
            .map_err(|e| CliError::usage(anyhow!(e)))?;
        for found in found {
            let from = found.from.display();
            let name = warden_protocol::printable(&found.name);
            match found.server {
                Err(why) => println!("skip {name} ({from}): {why}"),
                Ok(_) if valid_name(&name).is_err() => {
                    println!("skip {name} ({from}): not a name warden takes");
                }
                Ok(_) if taken.contains(&name) => {
                    println!("skip {name} ({from}): your settings have a server of that name");
                }
                Ok(server) => {
                    println!(
                        "add  {name}: {}  ({from})",
                        super::mcp_import::line(&server)
                    );
                    taken.push(name.clone());
                    adding.push((name, server));
                }
            }
        }
    }
    if adding.is_empty() {
        println!("nothing to import");
        return Ok(Exit::Success);
    }
    let confirmed = yes || confirm(&format!("Add {} to {}?", adding.len(), path.display()));
    if !confirmed {
        eprintln!("warden: nothing was added (confirm on a terminal, or pass --yes)");
        return Ok(Exit::Failure);
    }
    for (name, server) in &adding {
        warden_config::add_mcp_server(&path, name, server)
            .map_err(|e| CliError::failure(anyhow!(e)))?;
    }
    println!(
        "added {} to {}; each runs inside the sandbox, its tools asked about until a rule allows them",
        adding.len(),
        path.display()
    );
    Ok(Exit::Success)
}

/// Asks on the terminal; anything but `y` (or no terminal) is no.
pub(super) fn confirm(question: &str) -> bool {
    use std::io::{BufRead as _, IsTerminal as _, Write as _};
    if !std::io::stdin().is_terminal() {
        return false;
    }
    let mut out = std::io::stderr();
    let _ = write!(out, "{question} [y/N] ");
    let _ = out.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim(), "y" | "Y" | "yes")
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
        let state = match (state, super::mcp_login::state(&settings, name, server)) {
            ("", Some(login)) => format!("  ({login})"),
            (state, _) => state.to_owned(),
        };
        let mut line = server.url.clone().unwrap_or_else(|| server.command.clone());
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
    if !servers.problems.is_empty() {
        if servers.is_empty() {
            return Err(CliError::failure(anyhow!(
                "{}",
                warden_protocol::printable_text(&servers.problems.join("\nwarden: "))
            )));
        }
        for problem in &servers.problems {
            eprintln!("warden: {}", warden_protocol::printable_text(problem));
        }
    }
    Ok(servers)
}

fn tools(dir: Option<PathBuf>, name: &str, json: bool) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
    let ctx = tool_context(&settings)?;
    let mut registry = Registry::new();
    let _servers = start_one(&ctx, &mut registry, name)?;
    let specs: Vec<_> = registry.specs().collect();
    if json {
        print_json(&specs)?;
    } else {
        // A server's words, escaped for the terminal.
        for spec in specs {
            let first = spec.description.lines().next().unwrap_or_default();
            println!("{:<32} {}", spec.name, printable(first));
        }
    }
    Ok(Exit::Success)
}

fn resources(dir: Option<PathBuf>, name: &str, json: bool) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
    let ctx = tool_context(&settings)?;
    let mut registry = Registry::new();
    let servers = start_one(&ctx, &mut registry, name)?;
    let (resources, prompts) = servers
        .listings(name)
        .map_err(|e| CliError::failure(anyhow!(e)))?;
    if json {
        print_json(&json!({ "resources": resources, "prompts": prompts }))?;
        return Ok(Exit::Success);
    }
    let field = |v: &Value, key: &str| printable(v[key].as_str().unwrap_or_default());
    for resource in &resources {
        println!(
            "resource {}  {}",
            field(resource, "uri"),
            field(resource, "name")
        );
    }
    for prompt in &prompts {
        println!(
            "prompt   {}  {}",
            field(prompt, "name"),
            field(prompt, "description")
        );
    }
    Ok(Exit::Success)
}

fn call(dir: Option<PathBuf>, args: McpCallArgs) -> Result<Exit, CliError> {
    let McpCallArgs {
        server, tool, call, ..
    } = args;
    let tool_args = ToolArgs {
        name: warden_mcp::tool_name(&server, &tool),
        call,
    };
    super::tool::run(dir, &tool_args)
}

/// What the tools of `settings` run with, the sandbox helper included.
pub(super) fn tool_context(settings: &warden_config::Settings) -> Result<ToolContext, CliError> {
    let mut ctx = ToolContext::from_settings(settings).map_err(CliError::usage)?;
    if let Ok(warden) = super::sandbox_helper() {
        ctx = ctx.with_sandbox_helper(warden);
    }
    super::mcp_form::on_terminal(&mut ctx);
    Ok(ctx)
}
