//! warden's lifecycle hooks (`[[hooks.EVENT]]`): commands run at points of a session, spoken to
//! in Claude Code's shapes — its event names, tool names, input fields and output JSON — so a
//! team's hook scripts run unchanged. What they answer can narrow what the policy allows (deny a
//! call, ask about one it would run, block a prompt, send the model back to work) and never
//! widen it: the caller applies an allow only where a person would otherwise be asked.

mod names;
mod outcome;
mod process;

use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};
use warden_config::{Hook, HookEvent, HookOnError, Hooks};

pub use names::{
    claude_input, claude_name, matched_as, per_file, resolved, warden_input, warden_name,
};
pub use outcome::{Outcome, Ran, Verdict};

/// The session a hook hears about.
#[derive(Debug, Clone)]
pub struct Session {
    pub session_id: String,
    /// A JSON-lines export of the session's trace (`warden trace export`'s lines).
    pub transcript_path: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Claude Code's name for the permission mode (`default`, `plan`, `acceptEdits`, `auto`,
    /// `bypassPermissions`).
    pub permission_mode: String,
}

/// The hooks of a session, their matchers compiled.
#[derive(Debug, Default)]
pub struct HookRunner {
    hooks: Vec<(Hook, Option<Regex>)>,
    project_dir: PathBuf,
}

impl HookRunner {
    /// The hooks of `hooks`, for the project at `project_dir`.
    pub fn new(hooks: &Hooks, project_dir: &Path) -> Self {
        let hooks = hooks
            .hooks
            .iter()
            .map(|hook| {
                let matcher = hook
                    .matcher
                    .as_deref()
                    .and_then(|m| Regex::new(&format!("^(?:{m})$")).ok());
                (hook.clone(), matcher)
            })
            .collect();
        Self {
            hooks,
            project_dir: project_dir.to_path_buf(),
        }
    }

    /// Whether any hook listens to `event`.
    pub fn listens(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|(h, _)| h.event == event)
    }

    /// The hooks of `event` whose matcher takes one of `subjects` (a tool's names, an event's
    /// source); every one of them when the event has no subject.
    fn matching(&self, event: HookEvent, subjects: &[&str]) -> Vec<&(Hook, Option<Regex>)> {
        self.hooks
            .iter()
            .filter(|(hook, matcher)| {
                hook.event == event
                    && match (matcher, hook.matcher.as_deref()) {
                        (None, None) => true,
                        // A matcher that did not compile matches nothing (loading refuses it).
                        (None, Some(_)) => false,
                        (Some(re), _) => {
                            subjects.is_empty() || subjects.iter().any(|s| re.is_match(s))
                        }
                    }
            })
            .collect()
    }

    /// Runs the hooks of `event` that match `subjects`, one after the other, each with the
    /// session's fields and `fields` (the event's own, in Claude Code's shape) on its standard
    /// input; what they say together.
    pub fn run(
        &self,
        event: HookEvent,
        session: &Session,
        subjects: &[&str],
        fields: &Map<String, Value>,
    ) -> Outcome {
        let mut outcome = Outcome::default();
        let matching = self.matching(event, subjects);
        if matching.is_empty() {
            return outcome;
        }
        let mut input = Map::new();
        input.insert("session_id".to_owned(), json!(session.session_id));
        input.insert(
            "transcript_path".to_owned(),
            json!(
                session
                    .transcript_path
                    .as_ref()
                    .map(|p| p.display().to_string())
            ),
        );
        input.insert("cwd".to_owned(), json!(session.cwd.display().to_string()));
        input.insert("hook_event_name".to_owned(), json!(event.as_str()));
        input.insert("permission_mode".to_owned(), json!(session.permission_mode));
        input.extend(fields.clone());
        let input = Value::Object(input).to_string();
        for (hook, _) in matching {
            let mut env = vec![
                (
                    "CLAUDE_PROJECT_DIR".to_owned(),
                    self.project_dir.display().to_string(),
                ),
                (
                    "WARDEN_PROJECT_DIR".to_owned(),
                    self.project_dir.display().to_string(),
                ),
                ("WARDEN_SESSION_ID".to_owned(), session.session_id.clone()),
            ];
            for name in &hook.env {
                if let Ok(value) = std::env::var(name) {
                    env.push((name.clone(), value));
                }
            }
            let finished = process::run(
                &hook.command,
                input.as_bytes(),
                &session.cwd,
                &env,
                Duration::from_secs(hook.timeout_seconds),
            );
            let ran = Ran {
                event,
                matcher: hook.matcher.clone(),
                command_sha256: hex(&Sha256::digest(hook.command.as_bytes())),
                source: hook.source.clone(),
                duration_ms: u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX),
                exit: finished.code,
                timed_out: finished.timed_out,
                decision: None,
                error: None,
            };
            outcome.take(event, hook, ran, &finished);
        }
        outcome
    }
}

/// What a hook's failure is called in reports.
pub(crate) fn on_error_name(on_error: HookOnError) -> &'static str {
    match on_error {
        HookOnError::Deny => "deny",
        HookOnError::Ignore => "ignore",
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
