//! `warden hooks`: the hooks of the settings listed, tried on a sample, imported from Claude
//! Code's settings files.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde_json::{Value, json};
use warden_config::HookEvent;

use super::{load_settings, print_json};
use crate::args::HooksCommand;
use crate::{CliError, Exit};

pub(super) fn run(dir: Option<PathBuf>, command: HooksCommand) -> Result<Exit, CliError> {
    match command {
        HooksCommand::List { json } => list(dir, json),
        HooksCommand::Test { event, input } => test(dir, &event, &input),
        HooksCommand::Import { file, yes } => import(dir, file, yes),
    }
}

fn list(dir: Option<PathBuf>, json: bool) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
    let hooks: Vec<Value> = settings
        .hooks
        .hooks
        .iter()
        .map(|h| {
            json!({
                "event": h.event.as_str(),
                "matcher": h.matcher,
                "command": h.command,
                "timeoutSeconds": h.timeout_seconds,
                "onError": h.on_error,
                "env": h.env,
                "source": h.source,
            })
        })
        .collect();
    if json {
        print_json(&hooks)?;
        return Ok(Exit::Success);
    }
    if hooks.is_empty() {
        println!("no hooks");
    }
    let p = warden_protocol::printable;
    for hook in &settings.hooks.hooks {
        println!(
            "{:<18} {:<16} {}  (timeout {} s, on error {}; {})",
            hook.event.as_str(),
            p(hook.matcher.as_deref().unwrap_or("*")),
            p(&hook.command),
            hook.timeout_seconds,
            serde_json::to_value(hook.on_error)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            hook.source.as_ref().map_or_else(
                || "command line".to_owned(),
                |s| p(&s.display().to_string())
            ),
        );
    }
    Ok(Exit::Success)
}

fn test(dir: Option<PathBuf>, event: &str, input: &str) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
    let event = HookEvent::named(event).ok_or_else(|| {
        let names: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
        CliError::usage(anyhow!("{event:?} is not an event: {}", names.join(", ")))
    })?;
    let fields = match serde_json::from_str::<Value>(input) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(CliError::usage(anyhow!("--input: a JSON object"))),
        Err(e) => return Err(CliError::usage(anyhow!("--input is not JSON: {e}"))),
    };
    // What the matchers see: the tool's names, else the event's source, trigger or reason.
    let mut subjects: Vec<String> = Vec::new();
    if let Some(tool) = fields.get("tool_name").and_then(Value::as_str) {
        subjects.push(tool.to_owned());
        let warden = warden_hooks::warden_name(tool);
        subjects.extend(
            warden_hooks::matched_as(warden)
                .into_iter()
                .map(str::to_owned),
        );
    }
    for key in ["source", "trigger", "reason", "notification_type"] {
        if let Some(value) = fields.get(key).and_then(Value::as_str) {
            subjects.push(value.to_owned());
        }
    }
    let subjects: Vec<&str> = subjects.iter().map(String::as_str).collect();
    let runner = warden_hooks::HookRunner::new(&settings.hooks, &settings.project_root);
    let session = warden_hooks::Session {
        session_id: "hooks-test".to_owned(),
        transcript_path: None,
        cwd: settings.cwd.clone(),
        permission_mode: "default".to_owned(),
    };
    let outcome = runner.run(event, &session, &subjects, &fields);
    print_json(&json!({
        "event": event.as_str(),
        "runs": outcome.runs,
        "verdict": outcome.verdict,
        "reasons": outcome.reasons,
        "blocked": outcome.blocked,
        "updatedInput": outcome.updated_input,
        "context": outcome.context.iter().map(|(hook, text)| json!({"hook": hook, "text": text})).collect::<Vec<_>>(),
        "stop": outcome.stop,
        "notices": outcome.notices,
    }))?;
    Ok(Exit::Success)
}

/// Claude Code's settings files with hooks: the user's, the project's, the project's local.
fn default_files(project: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(home) = home {
        files.push(home.join(".claude/settings.json"));
    }
    files.push(project.join(".claude/settings.json"));
    files.push(project.join(".claude/settings.local.json"));
    files
}

/// Where the hooks of Claude Code's `file` go: the user's own (`~/.claude/settings.json`) to
/// the user's settings; any other — the project's, or a file anywhere else, which the user did
/// not necessarily write — to the project's files, which run only once the project is trusted.
fn target(file: &Path, project: &Path, home: Option<&Path>) -> Result<PathBuf, CliError> {
    let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let users = home.is_some_and(|home| file.starts_with(home.join(".claude")))
        && !file.starts_with(project);
    if users {
        return warden_config::user_config_dir()
            .map(|dir| dir.join("settings.toml"))
            .ok_or_else(|| {
                CliError::usage(anyhow!("no user settings directory (HOME is not set)"))
            });
    }
    let name = if file.file_name().is_some_and(|n| n == "settings.local.json") {
        "settings.local.toml"
    } else {
        "settings.toml"
    };
    Ok(project.join(".warden").join(name))
}

fn import(dir: Option<PathBuf>, file: Option<PathBuf>, yes: bool) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let files = match file {
        Some(file) => vec![file],
        None => default_files(&settings.project_root, home.as_deref())
            .into_iter()
            .filter(|f| f.exists())
            .collect(),
    };
    let p = warden_protocol::printable;
    let mut plan: Vec<(PathBuf, Vec<(HookEvent, warden_config::raw::RawHook)>)> = Vec::new();
    let mut skipped = 0;
    for file in &files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| CliError::usage(anyhow!("{}: {e}", file.display())))?;
        let found = warden_config::claude_hooks(&text)
            .map_err(|e| CliError::usage(anyhow!("{}: {e}", file.display())))?;
        let to = target(file, &settings.project_root, home.as_deref())?;
        for why in &found.not_imported {
            println!("not imported ({}): {}", file.display(), p(why));
            skipped += 1;
        }
        for (event, hook) in &found.hooks {
            println!(
                "add  {} {}: {}  ({} → {})",
                event.as_str(),
                p(hook.matcher.as_deref().unwrap_or("*")),
                p(&hook.command),
                file.display(),
                to.display()
            );
        }
        if !found.hooks.is_empty() {
            plan.push((to, found.hooks));
        }
    }
    let count: usize = plan.iter().map(|(_, hooks)| hooks.len()).sum();
    if count == 0 {
        println!("nothing to import");
        return Ok(if skipped > 0 {
            Exit::Failure
        } else {
            Exit::Success
        });
    }
    let confirmed = yes || super::mcp::confirm(&format!("Add {count} hooks?"));
    if !confirmed {
        eprintln!("warden: nothing was added (confirm on a terminal, or pass --yes)");
        return Ok(Exit::Failure);
    }
    for (to, hooks) in &plan {
        warden_config::add_hooks(to, hooks).map_err(|e| CliError::failure(anyhow!(e)))?;
    }
    println!("added {count} hooks; a project's run once the project is trusted (`warden trust`)");
    Ok(Exit::Success)
}
