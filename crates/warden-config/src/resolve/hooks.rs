//! `[hooks]`: each hook checked and given its defaults.

use super::Blame;
use crate::error::ConfigError;
use crate::raw::RawHooks;
use crate::settings::{Hook, HookEvent, HookOnError, Hooks};

pub(super) fn build(raw: Option<RawHooks>, blame: &Blame<'_>) -> Result<Hooks, ConfigError> {
    let mut raw = raw.unwrap_or_default();
    let mut hooks = Vec::new();
    for (name, list) in raw.events_mut() {
        let event = HookEvent::named(name).unwrap_or(HookEvent::SessionStart);
        for (i, hook) in list.take().unwrap_or_default().into_iter().enumerate() {
            let at = i.to_string();
            let error =
                |field: &str, message: String| blame.error(&["hooks", name, &at, field], message);
            if hook.command.trim().is_empty() {
                return Err(error("command", "a hook needs a command".to_owned()));
            }
            let matcher = match hook.matcher.as_deref().map(str::trim) {
                None | Some("" | "*") => None,
                Some(pattern) => {
                    regex::Regex::new(&format!("^(?:{pattern})$"))
                        .map_err(|e| error("matcher", format!("not a regular expression: {e}")))?;
                    Some(pattern.to_owned())
                }
            };
            let timeout_seconds = match hook.timeout_seconds {
                Some(0) => {
                    return Err(error("timeout_seconds", "must be greater than zero".into()));
                }
                Some(seconds) => seconds,
                None => 60,
            };
            let on_error = match hook.on_error.as_deref() {
                Some("deny") => HookOnError::Deny,
                Some("ignore") => HookOnError::Ignore,
                Some(other) => {
                    return Err(error(
                        "on_error",
                        format!("{other:?}: \"deny\" or \"ignore\""),
                    ));
                }
                None if matches!(event, HookEvent::PreToolUse | HookEvent::PermissionRequest) => {
                    HookOnError::Deny
                }
                None => HookOnError::Ignore,
            };
            let env = hook.env.unwrap_or_default();
            if let Some(bad) = env.iter().find(|n| n.is_empty() || n.contains(['=', '\0'])) {
                return Err(error("env", format!("{bad:?} is not a variable's name")));
            }
            hooks.push(Hook {
                event,
                matcher,
                command: hook.command,
                timeout_seconds,
                on_error,
                env,
                source: hook.source,
            });
        }
    }
    Ok(Hooks { hooks })
}
