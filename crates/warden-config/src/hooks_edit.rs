//! Adding hooks to a settings file (`warden hooks import`) as `[[hooks.EVENT]]` tables, and
//! reading Claude Code's `hooks` object as it stands in its `settings.json` files.

use std::path::Path;

use serde_json::Value;
use toml_edit::{ArrayOfTables, Item, Table, value};

use crate::mcp_edit::{read, write};
use crate::raw::RawHook;
use crate::settings::HookEvent;

/// What a Claude Code `hooks` object holds, as warden reads it: the hooks it takes (each with
/// its event), and what it does not take, each with why — nothing is dropped silently.
#[derive(Debug, Default)]
pub struct ClaudeHooks {
    pub hooks: Vec<(HookEvent, RawHook)>,
    pub not_imported: Vec<String>,
}

/// Reads the `hooks` object of a Claude Code `settings.json` (`text`).
pub fn claude_hooks(text: &str) -> Result<ClaudeHooks, String> {
    let json: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let mut found = ClaudeHooks::default();
    let Some(events) = json.get("hooks") else {
        return Ok(found);
    };
    let events = events
        .as_object()
        .ok_or_else(|| "\"hooks\" is not an object".to_owned())?;
    for (name, groups) in events {
        let Some(event) = HookEvent::named(name) else {
            found
                .not_imported
                .push(format!("{name}: an event warden does not have"));
            continue;
        };
        let Some(groups) = groups.as_array() else {
            found.not_imported.push(format!("{name}: not a list"));
            continue;
        };
        for group in groups {
            let matcher = group["matcher"]
                .as_str()
                .filter(|m| !m.is_empty() && *m != "*")
                .map(str::to_owned);
            if let Some(bad) = matcher
                .as_deref()
                .filter(|m| regex::Regex::new(&format!("^(?:{m})$")).is_err())
            {
                found.not_imported.push(format!(
                    "{name} ({bad}): the matcher is not a regular expression"
                ));
                continue;
            }
            for hook in group["hooks"].as_array().into_iter().flatten() {
                let kind = hook["type"].as_str().unwrap_or("command");
                let Some(command) = hook["command"].as_str().filter(|_| kind == "command") else {
                    found.not_imported.push(format!(
                        "{name}{}: a {kind:?} hook (warden runs command hooks only)",
                        matcher
                            .as_deref()
                            .map(|m| format!(" ({m})"))
                            .unwrap_or_default()
                    ));
                    continue;
                };
                // Claude Code's `timeout` is in seconds.
                let timeout = hook["timeout"].as_u64().or_else(|| {
                    // A fraction of a second is rounded up to one.
                    hook["timeout"].as_f64().filter(|t| *t > 0.0).map(|_| 1)
                });
                found.hooks.push((
                    event,
                    RawHook {
                        matcher: matcher.clone(),
                        command: command.to_owned(),
                        timeout_seconds: timeout,
                        ..RawHook::default()
                    },
                ));
            }
        }
    }
    Ok(found)
}

/// Appends `hooks` to the settings file at `path` (made if missing), keeping the rest of it.
pub fn add_hooks(path: &Path, hooks: &[(HookEvent, RawHook)]) -> Result<(), String> {
    let mut document = read(path)?;
    let root = document.as_table_mut();
    if !root.contains_key("hooks") {
        let mut table = Table::new();
        table.set_implicit(true);
        root.insert("hooks", Item::Table(table));
    }
    let events = root["hooks"]
        .as_table_mut()
        .ok_or_else(|| format!("{}: hooks is not a table", path.display()))?;
    for (event, hook) in hooks {
        let list = events
            .entry(event.as_str())
            .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()));
        let list = list.as_array_of_tables_mut().ok_or_else(|| {
            format!(
                "{}: hooks.{} is not a list of tables",
                path.display(),
                event.as_str()
            )
        })?;
        let mut table = Table::new();
        if let Some(matcher) = &hook.matcher {
            table.insert("matcher", value(matcher.as_str()));
        }
        table.insert("command", value(hook.command.as_str()));
        if let Some(timeout) = hook.timeout_seconds {
            table.insert(
                "timeout_seconds",
                value(i64::try_from(timeout).unwrap_or(i64::MAX)),
            );
        }
        list.push(table);
    }
    write(path, &document)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_s_hooks_come_over_and_what_does_not_is_said() {
        let text = r#"{"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "python3 check.py", "timeout": 30},
                {"type": "http", "url": "https://example.com/hook"}]}],
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "done?"}]}],
            "SubagentStop": [{"hooks": [{"type": "command", "command": "true"}]}],
            "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "fmt"}]}]
        }}"#;
        let found = claude_hooks(text).unwrap();
        assert_eq!(found.hooks.len(), 2);
        assert_eq!(found.hooks[0].1.matcher, None);
        assert_eq!(found.hooks[1].1.matcher.as_deref(), Some("Bash"));
        assert_eq!(found.hooks[1].1.timeout_seconds, Some(30));
        assert_eq!(found.not_imported.len(), 3, "{:?}", found.not_imported);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.toml");
        std::fs::write(&path, "# mine\n[permissions]\nallow = [\"Read\"]\n").unwrap();
        add_hooks(&path, &found.hooks).unwrap();
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(written.starts_with("# mine"), "{written}");
        let raw = crate::parse_str(&written, &path).unwrap();
        let hooks = raw.hooks.unwrap();
        assert_eq!(hooks.pre_tool_use.unwrap()[0].command, "python3 check.py");
        assert_eq!(hooks.post_tool_use.unwrap()[0].command, "fmt");
    }
}
