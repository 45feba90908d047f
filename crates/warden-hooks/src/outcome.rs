//! What hooks answered, read as Claude Code defines it, and gathered over the hooks of one
//! event: the strictest decision stands.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;
use warden_config::{Hook, HookEvent, HookOnError};

use crate::process::Finished;

/// A hook's say on a call: the strictest of all the event's hooks stands (deny, then ask, then
/// allow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Allow,
    Ask,
    Deny,
}

/// One run of one hook, as the trace keeps it: never its output.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ran {
    pub event: HookEvent,
    pub matcher: Option<String>,
    /// The command's SHA-256: which hook ran, without what it holds.
    pub command_sha256: String,
    pub source: Option<PathBuf>,
    pub duration_ms: u64,
    pub exit: Option<i32>,
    pub timed_out: bool,
    /// What it decided (`allow`, `ask`, `deny`, `block`, `stop`), if anything.
    pub decision: Option<String>,
    /// How it failed, if it did, and what that meant (`on_error`).
    pub error: Option<String>,
}

/// What the hooks of one event said together.
#[derive(Debug, Default)]
pub struct Outcome {
    pub runs: Vec<Ran>,
    /// `PreToolUse`'s permission decision, `PermissionRequest`'s behaviour.
    pub verdict: Option<Verdict>,
    /// Why: the words of each hook that denied, asked, blocked or stopped.
    pub reasons: Vec<String>,
    /// The prompt (`UserPromptSubmit`), the result (`PostToolUse`) or the stop (`Stop`) is
    /// blocked: the reasons go to the model, or to the person for a prompt.
    pub blocked: bool,
    /// New arguments for the call (in either name set).
    pub updated_input: Option<Value>,
    /// Context for the model, each with the hook it came from.
    pub context: Vec<(String, String)>,
    /// `continue: false`: the session stops, for this reason.
    pub stop: Option<String>,
    /// For the person: `systemMessage`s, what hooks said on standard error where it goes to
    /// the person, and hooks that failed.
    pub notices: Vec<String>,
}

/// A hook's words, kept to a readable length.
fn words(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(2000) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

impl Outcome {
    /// Whether the hooks refused the call (`PreToolUse`, `PermissionRequest`).
    pub fn denied(&self) -> bool {
        self.verdict == Some(Verdict::Deny)
    }

    /// Takes in what the hooks of another run of the same event said (a patch's next file):
    /// the strictest answer stands, and two different new inputs refuse the call.
    pub fn merge(&mut self, other: Outcome) {
        self.runs.extend(other.runs);
        if let Some(verdict) = other.verdict {
            self.verdict = Some(self.verdict.map_or(verdict, |v| v.max(verdict)));
        }
        self.reasons.extend(other.reasons);
        self.blocked |= other.blocked;
        match (&self.updated_input, other.updated_input) {
            (Some(mine), Some(theirs)) if *mine != theirs => {
                self.verdict = Some(Verdict::Deny);
                self.reasons
                    .push("two hooks changed the call's input differently".to_owned());
            }
            (None, theirs @ Some(_)) => self.updated_input = theirs,
            _ => {}
        }
        self.context.extend(other.context);
        if self.stop.is_none() {
            self.stop = other.stop;
        }
        self.notices.extend(other.notices);
    }

    /// The reasons, as one line.
    pub fn reason(&self) -> String {
        self.reasons.join("; ")
    }

    fn decide(&mut self, verdict: Verdict, reason: Option<String>, ran: &mut Ran) {
        self.verdict = Some(self.verdict.map_or(verdict, |v| v.max(verdict)));
        ran.decision = Some(
            match verdict {
                Verdict::Allow => "allow",
                Verdict::Ask => "ask",
                Verdict::Deny => "deny",
            }
            .to_owned(),
        );
        if let Some(reason) = reason.filter(|r| !r.trim().is_empty()) {
            self.reasons.push(words(&reason));
        }
    }

    fn block(&mut self, reason: &str, ran: &mut Ran) {
        self.blocked = true;
        ran.decision = Some("block".to_owned());
        if !reason.trim().is_empty() {
            self.reasons.push(words(reason));
        }
    }

    /// A hook failed: its `on_error` says what that means.
    fn failed(&mut self, event: HookEvent, hook: &Hook, why: &str, ran: &mut Ran) {
        let label = label(hook);
        ran.error = Some(format!(
            "{why} (on_error {})",
            crate::on_error_name(hook.on_error)
        ));
        let stops = hook.on_error == HookOnError::Deny;
        match event {
            HookEvent::PreToolUse | HookEvent::PermissionRequest if stops => {
                self.decide(
                    Verdict::Deny,
                    Some(format!("hook {label} failed: {why}")),
                    ran,
                );
            }
            HookEvent::UserPromptSubmit if stops => {
                self.block(&format!("hook {label} failed: {why}"), ran);
            }
            _ => self.notices.push(format!("hook {label} failed: {why}")),
        }
    }

    /// Reads one hook's run into the outcome.
    pub(crate) fn take(&mut self, event: HookEvent, hook: &Hook, mut ran: Ran, done: &Finished) {
        let label = label(hook);
        if let Some(why) = &done.failed {
            self.failed(event, hook, why, &mut ran);
        } else if done.timed_out {
            let why = format!("timed out after {} s", hook.timeout_seconds);
            self.failed(event, hook, &why, &mut ran);
        } else {
            match done.code {
                Some(0) => self.answered(event, hook, &done.stdout, &mut ran),
                Some(2) => {
                    let said = words(&done.stderr);
                    match event {
                        HookEvent::PreToolUse | HookEvent::PermissionRequest => {
                            let said = if said.is_empty() {
                                format!("refused by hook {label}")
                            } else {
                                said
                            };
                            self.decide(Verdict::Deny, Some(said), &mut ran);
                        }
                        HookEvent::UserPromptSubmit
                        | HookEvent::PostToolUse
                        | HookEvent::PostToolUseFailure
                        | HookEvent::Stop => self.block(&said, &mut ran),
                        _ => {
                            if !said.is_empty() {
                                self.notices.push(format!("hook {label}: {said}"));
                            }
                        }
                    }
                }
                code => {
                    let mut why = code
                        .map_or_else(|| "was killed".to_owned(), |c| format!("exited with {c}"));
                    let said = words(&done.stderr);
                    if !said.is_empty() {
                        why = format!("{why}: {said}");
                    }
                    self.failed(event, hook, &why, &mut ran);
                }
            }
        }
        self.runs.push(ran);
    }

    /// A hook that exited 0: its standard output, JSON or text.
    fn answered(&mut self, event: HookEvent, hook: &Hook, stdout: &str, ran: &mut Ran) {
        let text = stdout.trim().trim_start_matches('\u{feff}').trim_start();
        // Lines a hook logged before its answer: the answer is its last line.
        let text = if text.starts_with('{') {
            text
        } else {
            text.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::trim)
                .filter(|l| l.starts_with('{'))
                .unwrap_or(text)
        };
        if !text.starts_with('{') {
            // Plain text is context where Claude Code takes it so, else only reported.
            if !text.is_empty()
                && matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit)
            {
                self.context.push((label(hook), words(text)));
            }
            return;
        }
        let json: Value = match serde_json::from_str(text) {
            Ok(json) => json,
            Err(e) => {
                let why = format!("printed output that is not valid JSON ({e})");
                return self.failed(event, hook, &why, ran);
            }
        };
        if let Err(why) = self.read_json(event, hook, &json, ran) {
            self.failed(event, hook, &why, ran);
        }
    }

    fn read_json(
        &mut self,
        event: HookEvent,
        hook: &Hook,
        json: &Value,
        ran: &mut Ran,
    ) -> Result<(), String> {
        let text = |key: &str| json[key].as_str().map(str::to_owned);
        if json["continue"] == Value::Bool(false) {
            let why =
                text("stopReason").unwrap_or_else(|| format!("hook {} stopped it", label(hook)));
            ran.decision = Some("stop".to_owned());
            self.stop = Some(words(&why));
        }
        if let Some(message) = text("systemMessage") {
            self.notices.push(words(&message));
        }
        let specific = &json["hookSpecificOutput"];
        if let Some(context) = specific["additionalContext"].as_str() {
            self.context.push((label(hook), words(context)));
        }
        let reason = text("reason");
        match (event, json["decision"].as_str()) {
            (_, None) => {}
            // Claude Code's older spellings for a call.
            (HookEvent::PreToolUse, Some("approve")) => {
                self.decide(Verdict::Allow, reason.clone(), ran);
            }
            (HookEvent::PreToolUse, Some("block")) => {
                self.decide(Verdict::Deny, reason.clone(), ran);
            }
            (
                HookEvent::UserPromptSubmit
                | HookEvent::PostToolUse
                | HookEvent::PostToolUseFailure
                | HookEvent::Stop,
                Some("block"),
            ) => self.block(reason.as_deref().unwrap_or_default(), ran),
            (_, Some(other)) => {
                return Err(format!(
                    "\"decision\": {other:?} is not one warden knows for {}",
                    event.as_str()
                ));
            }
        }
        match event {
            HookEvent::PreToolUse => {
                let why = specific["permissionDecisionReason"]
                    .as_str()
                    .map(str::to_owned);
                match specific["permissionDecision"].as_str() {
                    None => {}
                    Some("allow") => self.decide(Verdict::Allow, why, ran),
                    Some("ask" | "defer") => self.decide(Verdict::Ask, why, ran),
                    Some("deny") => self.decide(Verdict::Deny, why, ran),
                    Some(other) => return Err(format!("\"permissionDecision\": {other:?}")),
                }
                self.update(&specific["updatedInput"], ran);
            }
            HookEvent::PermissionRequest => {
                let decision = &specific["decision"];
                let message = decision["message"].as_str().map(str::to_owned);
                match decision["behavior"].as_str() {
                    None => {}
                    Some("allow") => {
                        self.decide(Verdict::Allow, message, ran);
                        self.update(&decision["updatedInput"], ran);
                    }
                    Some("deny") => {
                        self.decide(Verdict::Deny, message, ran);
                        if decision["interrupt"] == Value::Bool(true) {
                            self.stop =
                                Some(format!("hook {} interrupted the session", label(hook)));
                        }
                    }
                    Some(other) => return Err(format!("\"behavior\": {other:?}")),
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// New arguments: two hooks changing them differently refuse the call.
    fn update(&mut self, updated: &Value, ran: &mut Ran) {
        if !updated.is_object() {
            return;
        }
        match &self.updated_input {
            Some(before) if before != updated => self.decide(
                Verdict::Deny,
                Some("two hooks changed the call's input differently".to_owned()),
                ran,
            ),
            _ => self.updated_input = Some(updated.clone()),
        }
    }
}

/// How a hook is named to the person and the model: its command, shortened.
pub(crate) fn label(hook: &Hook) -> String {
    let command = hook.command.trim();
    let short: String = command.chars().take(60).collect();
    if short.len() < command.len() {
        format!("`{short}…`")
    } else {
        format!("`{short}`")
    }
}
