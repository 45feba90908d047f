//! `warden policy check|explain` — a CLI contract: flags, JSON fields and exit codes are stable.

use std::path::PathBuf;

use anyhow::{Context as _, anyhow};
use serde_json::json;
use warden_config::raw::RawPermissions;
use warden_config::{Layer, RawSettings, SettingsSource};
use warden_policy::{Action, Engine};

use super::{load_settings_with, print_json};
use crate::args::{PolicyArgs, PolicyCommand};
use crate::{CliError, Exit};

/// The names `policy check` and `explain` take: their own short ones, and every tool a model
/// is offered (built-in, and `Skill`). A name of none of them is a usage error naming them all:
/// a decision about a tool that does not exist would only mislead.
fn known_tool(name: &str, settings: &warden_config::Settings) -> Result<(), CliError> {
    const SHORT: &[&str] = &["bash", "read", "write", "edit", "glob", "grep", "fetch"];
    // A tool of a configured MCP server: which tools a server has is its own to say, and
    // starting it to ask would run it; its name is enough to decide on.
    if let Some((server, _)) = warden_mcp::split_name(name)
        && settings.mcp.servers.contains_key(server)
    {
        return Ok(());
    }
    if name == "readMcpResource" && !settings.mcp.servers.is_empty() {
        return Ok(());
    }
    let registry = warden_tools::Registry::builtin().map_err(CliError::failure)?;
    let mut known: Vec<String> = SHORT.iter().map(|s| (*s).to_owned()).collect();
    for other in registry
        .specs()
        .map(|s| s.name.to_string())
        .chain(["Skill".to_owned()])
    {
        if !known.contains(&other) {
            known.push(other);
        }
    }
    if known.iter().any(|k| k == name) {
        return Ok(());
    }
    known.extend(
        settings
            .mcp
            .servers
            .keys()
            .map(|server| warden_mcp::tool_name(server, "TOOL")),
    );
    Err(CliError::usage(anyhow!(
        "unknown tool {name:?}; known tools: {}",
        known.join(", ")
    )))
}

pub(super) fn run(dir: Option<PathBuf>, command: PolicyCommand) -> Result<Exit, CliError> {
    let (args, explain) = match command {
        PolicyCommand::Check(args) => (args, false),
        PolicyCommand::Explain(args) => (args, true),
    };
    let engine = engine(dir, &args)?;
    let action = Action::from_cli(&args.tool, &args.target);
    let verdict = if explain {
        engine.explain(&action)
    } else {
        engine.check(&action)
    };
    let decision = &verdict.decision;
    match (explain, args.json) {
        (false, true) => print_json(decision)?,
        (false, false) => {
            let risk = decision
                .risk
                .map_or_else(String::new, |r| format!(" {r:?}"));
            println!(
                "{}{risk}: {} [{}]",
                decision.decision.as_str(),
                decision.reason,
                decision.layer.as_str()
            );
            if let Some(rewrite) = &decision.rewrite {
                println!("instead: {} {}", rewrite.tool, rewrite.target);
            }
        }
        (true, true) => {
            let steps: Vec<_> = verdict
                .trail
                .iter()
                .map(|s| json!({"layer": s.layer.as_str(), "said": s.said}))
                .collect();
            print_json(
                &json!({"decision": decision, "layers": steps, "analysis": verdict.analysis}),
            )?;
        }
        (true, false) => {
            println!("{} {}", args.tool, args.target);
            println!("mode: {}", engine.mode().as_str());
            for (i, step) in verdict.trail.iter().enumerate() {
                println!("{:>2}. {:<12} {}", i + 1, step.layer.as_str(), step.said);
            }
            let risk = decision
                .risk
                .map_or_else(String::new, |r| format!(" (risk {r:?})"));
            println!(
                "=> {}{risk}: {}",
                decision.decision.as_str(),
                decision.reason
            );
            if let Some(rewrite) = &decision.rewrite {
                println!(
                    "   instead: {} {} ({})",
                    rewrite.tool, rewrite.target, rewrite.reason
                );
            }
        }
    }
    Ok(Exit::Success)
}

fn engine(dir: Option<PathBuf>, args: &PolicyArgs) -> Result<Engine, CliError> {
    let mut cli = RawSettings::default();
    if let Some(mode) = &args.mode {
        let mode = mode.parse().map_err(CliError::usage)?;
        cli.permissions = Some(RawPermissions {
            mode: Some(mode),
            ..RawPermissions::default()
        });
    }
    for file in &args.settings {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read --settings {}", file.display()))
            .map_err(CliError::usage)?;
        let layer = warden_config::parse_str(&text, file).map_err(CliError::usage)?;
        cli = cli.over(layer);
    }
    if args.tool.is_empty() {
        return Err(CliError::usage(anyhow!("TOOL is empty")));
    }
    let mut settings = load_settings_with(dir, cli)?;
    known_tool(&args.tool, &settings)?;
    // Errors in a rule name the file that holds it, --settings files included.
    for file in &args.settings {
        let path = file.canonicalize().unwrap_or_else(|_| file.clone());
        settings.sources.insert(
            0,
            SettingsSource {
                layer: Layer::CommandLine,
                path,
            },
        );
    }
    Engine::from_settings(&settings).map_err(CliError::usage)
}
