//! The loop's side of hooks (`[[hooks.EVENT]]`): each point of a session where they run, what
//! they are told (Claude Code's names and shapes), and what their answers may do — narrow what
//! the policy allows, never widen it. A hook's allow answers only a question the policy would
//! have put to a person; a deny rule, a protected path, a masked secret, the organisation's
//! locks and an escalation stand whatever a hook says. What hooks add to the context is labelled
//! as data from outside, naming the hook.

use std::path::PathBuf;

use serde_json::{Map, Value, json};
use warden_config::HookEvent;
use warden_hooks::{Outcome, Verdict, claude_input, claude_name, warden_input};
use warden_model::{Item, ToolCall};
use warden_protocol::{DecisionKind, Event, PolicyLayer, ToolResult, ToolStatus};
use warden_tools::{Checked, OnAsk, ToolRunner};

use crate::agent::{Agent, Flow, Status};
use crate::state::State;

/// How many times in a row `Stop` hooks may send the model back to work.
const MOST_STOP_BLOCKS: u32 = 5;

impl Agent<'_> {
    /// Runs `event`'s hooks that match `subjects`, each run in the trace and the stream, what
    /// they say to the person shown.
    pub(crate) fn hook(
        &mut self,
        event: HookEvent,
        subjects: &[&str],
        fields: &Map<String, Value>,
    ) -> Outcome {
        if !self.hooks.listens(event) {
            return Outcome::default();
        }
        let session = warden_hooks::Session {
            session_id: self.session.as_str().to_owned(),
            transcript_path: self.transcript(),
            cwd: self.settings.cwd.clone(),
            permission_mode: permission_mode(self.settings.permissions.mode).to_owned(),
        };
        let outcome = self.hooks.run(event, &session, subjects, fields);
        for ran in &outcome.runs {
            self.publish(&Event::Hook {
                hook_event: ran.event.as_str().to_owned(),
                matcher: ran.matcher.clone(),
                command_sha256: ran.command_sha256.clone(),
                source: ran.source.clone(),
                duration_ms: ran.duration_ms,
                exit: ran.exit,
                timed_out: ran.timed_out,
                decision: ran.decision.clone(),
                // What a failing hook said on standard error: its first words, redacted.
                error: ran
                    .error
                    .as_deref()
                    .map(|e| self.shield.redact(&warden_protocol::short(e, 400))),
            });
        }
        for message in &outcome.notices {
            self.publish(&Event::HookNotice {
                message: self.shield.redact(message),
            });
        }
        outcome
    }

    /// The session's trace as JSON lines (`warden trace export`'s), written for hooks to read:
    /// in warden's data directory, readable by the user only.
    fn transcript(&self) -> Option<PathBuf> {
        let dir = self.settings.dirs.data_dir.as_ref()?.join("transcripts");
        std::fs::create_dir_all(&dir).ok()?;
        let path = dir.join(format!("{}.jsonl", self.session.as_str()));
        // Only what is new since the last hook: the file grows with the session, it is not
        // written again whole for every hook.
        let after = self.transcript_seq.get();
        let mut text = String::new();
        let mut last = after;
        for event in self.store.events_after(&self.session, after).ok()? {
            text.push_str(&serde_json::to_string(&event).ok()?);
            text.push('\n');
            last = last.max(event.seq);
        }
        write_private(&path, &text, after > 0).ok()?;
        self.transcript_seq.set(last);
        Some(path)
    }

    /// What hooks added for the model, each labelled with the hook it came from.
    fn labelled(&self, outcome: &Outcome) -> Vec<String> {
        outcome
            .context
            .iter()
            .map(|(hook, text)| self.shield.wrap(&format!("hook {hook}"), text))
            .collect()
    }

    /// The session's first hooks: `SessionStart`, then `UserPromptSubmit` for the prompt the run
    /// starts with. `Err` when a hook stops the run or blocks the prompt.
    pub(crate) fn opening_hooks(&mut self, state: &mut State) -> Result<(), Status> {
        let source = if state.turns > 0 { "resume" } else { "startup" };
        let started = if std::mem::replace(&mut self.opened, true) {
            Outcome::default()
        } else {
            self.hook(
                HookEvent::SessionStart,
                &[source],
                &fields(json!({"source": source})),
            )
        };
        if let Some(why) = &started.stop {
            return Err(Status::Error(format!(
                "a SessionStart hook stopped the run: {why}"
            )));
        }
        let context = self.labelled(&started);
        let prompt = match state.items.last() {
            Some(Item::User { text }) => Some(text.clone()),
            _ => None,
        };
        // Context from the start goes before the prompt.
        let at = state.items.len() - usize::from(prompt.is_some());
        for (offset, text) in context.into_iter().enumerate() {
            state.items.insert(at + offset, Item::User { text });
        }
        let Some(prompt) = prompt else {
            return Ok(());
        };
        let submitted = self.hook(
            HookEvent::UserPromptSubmit,
            &[],
            &fields(json!({"prompt": prompt})),
        );
        if submitted.blocked || submitted.stop.is_some() {
            // The prompt never reaches the model.
            state.items.pop();
            let why = submitted.stop.clone().unwrap_or_else(|| submitted.reason());
            return Err(Status::Error(format!(
                "a UserPromptSubmit hook blocked the prompt: {why}"
            )));
        }
        for text in self.labelled(&submitted) {
            state.items.push(Item::User { text });
        }
        Ok(())
    }

    /// The hooks of a tool event for `call` with `args`: once, or once per file a patch
    /// touches (each shown as its own file), what they said together.
    fn tool_hooks(
        &mut self,
        event: HookEvent,
        call: &ToolCall,
        args: &Value,
        extra: &Map<String, Value>,
    ) -> Outcome {
        let cwd = self.settings.cwd.clone();
        let input = claude_input(&call.name, args, &cwd);
        let mut outcome = Outcome::default();
        for input in warden_hooks::per_file(&input) {
            let mut fields = fields(json!({
                "tool_name": claude_name(&call.name),
                "tool_input": input,
                "tool_use_id": call.id,
            }));
            fields.extend(extra.clone());
            let one = self.hook(event, &warden_hooks::matched_as(&call.name), &fields);
            outcome.merge(one);
        }
        outcome
    }

    /// `PreToolUse`: the call's arguments as its hooks leave them, and what they said. Changed
    /// arguments go through the hooks once more, as the call that will be decided.
    pub(crate) fn pre_tool_use(&mut self, call: &ToolCall, args: Value) -> (Value, Outcome) {
        if !self.hooks.listens(HookEvent::PreToolUse) {
            return (args, Outcome::default());
        }
        let cwd = self.settings.cwd.clone();
        let mut outcome = self.tool_hooks(HookEvent::PreToolUse, call, &args, &Map::new());
        let mut args = args;
        if let Some(updated) = outcome.updated_input.clone()
            && !outcome.denied()
        {
            args = warden_input(&call.name, &updated, &cwd);
            self.publish(&Event::HookNotice {
                message: self.shield.redact(&format!(
                    "a hook changed the arguments of {} to {}",
                    call.name,
                    warden_protocol::short(&args.to_string(), 300)
                )),
            });
            // The changed call, as it will be decided, before every hook: a hook changing it
            // again refuses it.
            let mut again = self.tool_hooks(HookEvent::PreToolUse, call, &args, &Map::new());
            if again
                .updated_input
                .as_ref()
                .is_some_and(|u| warden_input(&call.name, u, &cwd) != args)
            {
                again.verdict = Some(Verdict::Deny);
                again
                    .reasons
                    .push("the hooks kept changing the call's input".to_owned());
            }
            again.updated_input = None;
            outcome.updated_input = None;
            outcome.merge(again);
        }
        if org_decided(&outcome, "ask", &self.settings.sources) {
            self.asked_by_org.insert(call.id.clone());
        }
        let notes = self.labelled(&outcome);
        if !notes.is_empty() {
            self.hook_notes
                .entry(call.id.clone())
                .or_default()
                .extend(notes);
        }
        (args, outcome)
    }

    /// Applies `PreToolUse`'s verdict to a decided call: a deny refuses it, an ask makes an
    /// allowed call ask, an allow answers only the question the policy would put to a person.
    /// What the organisation's hook asks, `--on-ask allow` does not answer: only a person or
    /// the organisation's own `PermissionRequest` hooks do.
    pub(crate) fn narrow(&self, checked: &mut Checked, outcome: &Outcome) {
        let flag = self.approver.is_none() && self.on_ask == OnAsk::Allow;
        let held = self.registry.held(&checked.name).is_some();
        crate::served::narrow(checked, outcome, flag, held, &self.settings.sources);
    }

    /// `PermissionRequest` (and `Notification` when a person is about to be asked): whether
    /// hooks answered the question, so that nobody is asked.
    pub(crate) fn permission_hooks(
        &mut self,
        runner: &ToolRunner<'_>,
        call: &ToolCall,
        checked: &mut Checked,
    ) -> Result<bool, Flow> {
        let cwd = self.settings.cwd.clone();
        let reason = fields(json!({"reason": checked.decision.reason}));
        let outcome = self.tool_hooks(HookEvent::PermissionRequest, call, &checked.args, &reason);
        if let Some(why) = &outcome.stop {
            return Err(Flow::End(Status::Error(format!(
                "a PermissionRequest hook stopped the run: {why}"
            ))));
        }
        // What the organisation's hook asked, only its own hooks answer.
        let org_asked = self.asked_by_org.remove(&call.id);
        let answerable = !org_asked || org_decided(&outcome, "allow", &self.settings.sources);
        if org_asked && !answerable && outcome.verdict == Some(Verdict::Allow) {
            self.publish(&Event::HookNotice {
                message: format!(
                    "a hook's allow does not answer what the organisation's hook asked about {}: \
                     a person decides",
                    call.name
                ),
            });
        }
        let plain = checked.decision.decision == DecisionKind::RequireApproval
            && self.registry.held(&checked.name).is_none()
            && answerable;
        match outcome.verdict {
            Some(Verdict::Deny) => {
                let d = &mut checked.decision;
                d.decision = DecisionKind::Deny;
                d.reason = format!("refused by a hook: {}", or_none(&outcome.reason()));
                d.layer = PolicyLayer::Hook;
                return Ok(true);
            }
            // A hook answers a plain question; a rewrite or a wider sandbox is a person's.
            Some(Verdict::Allow) if plain => {
                if let Some(updated) = &outcome.updated_input {
                    let mut again =
                        runner.check(&call.name, warden_input(&call.name, updated, &cwd));
                    if again.decision.decision == DecisionKind::RequireApproval {
                        approve_by_hook(&mut again, &outcome);
                    }
                    let answered = !again.needs_approval();
                    *checked = again;
                    return Ok(answered);
                }
                approve_by_hook(checked, &outcome);
                return Ok(true);
            }
            _ => {}
        }
        if self.approver.is_some() {
            let message = format!("warden needs your approval to use {}", call.name);
            self.hook(
                HookEvent::Notification,
                &["permission_prompt"],
                &fields(json!({"message": message, "notification_type": "permission_prompt"})),
            );
        }
        Ok(false)
    }

    /// `PostToolUse` or `PostToolUseFailure`: what the model is told besides the result (the
    /// hooks' feedback and context, and what `PreToolUse` hooks added), and whether a hook
    /// stopped the run.
    pub(crate) fn post_tool_use(
        &mut self,
        call: &ToolCall,
        checked: &Checked,
        result: &ToolResult,
    ) -> (Vec<String>, Option<String>) {
        let mut notes = self.hook_notes.remove(&call.id).unwrap_or_default();
        let mut extra = Map::new();
        let event = if result.status == ToolStatus::Ok {
            extra.insert(
                "tool_response".to_owned(),
                result.output.clone().unwrap_or(Value::Null),
            );
            HookEvent::PostToolUse
        } else {
            let error = result.error.as_ref().map(|e| e.message.clone());
            extra.insert("error".to_owned(), json!(error));
            HookEvent::PostToolUseFailure
        };
        let outcome = if self.hooks.listens(event) {
            self.tool_hooks(event, call, &checked.args, &extra)
        } else {
            Outcome::default()
        };
        if outcome.blocked {
            let feedback = outcome.reason();
            notes.push(self.shield.wrap("hook feedback", or_none(&feedback)));
        }
        notes.extend(self.labelled(&outcome));
        (notes, outcome.stop)
    }

    /// After a final answer: `Finished`, unless `Stop` hooks send the model back to work
    /// (`None`: the loop goes on).
    pub(crate) fn after_answer(&mut self, state: &mut State, answer: &str) -> Option<Status> {
        if !self.stop_hooks(state, answer) {
            return Some(Status::Finished);
        }
        self.save(state, "running")
            .err()
            .map(|why| Status::Error(why.to_string()))
    }

    /// `Stop`: whether hooks send the model back to work (their reason becomes its next
    /// message), at most [`MOST_STOP_BLOCKS`] times in a row.
    pub(crate) fn stop_hooks(&mut self, state: &mut State, answer: &str) -> bool {
        if !self.hooks.listens(HookEvent::Stop) {
            return false;
        }
        let outcome = self.hook(
            HookEvent::Stop,
            &[],
            &fields(json!({
                "stop_hook_active": self.stop_blocks > 0,
                "last_assistant_message": answer,
            })),
        );
        if outcome.stop.is_some() || !outcome.blocked || self.stop_blocks >= MOST_STOP_BLOCKS {
            self.stop_blocks = 0;
            return false;
        }
        self.stop_blocks += 1;
        let reason = outcome.reason();
        let text = self.shield.wrap(
            "a Stop hook, which sends you back to work",
            or_none(&reason),
        );
        state.items.push(Item::User { text });
        true
    }

    /// `PreCompact`, before the conversation is summarised.
    pub(crate) fn pre_compact(&mut self, trigger: warden_protocol::Trigger) {
        let trigger = if trigger == warden_protocol::Trigger::Manual {
            "manual"
        } else {
            "auto"
        };
        self.hook(
            HookEvent::PreCompact,
            &[trigger],
            &fields(json!({"trigger": trigger, "custom_instructions": ""})),
        );
    }

    /// `SessionEnd` hooks: the session is over for this agent (`reason`: how its last run ended, or
    /// `prompt_input_exit` when an interactive session is left).
    pub fn close(&mut self, reason: &str) {
        self.hook(
            HookEvent::SessionEnd,
            &[reason],
            &fields(json!({"reason": reason})),
        );
    }
}

fn approve_by_hook(checked: &mut Checked, outcome: &Outcome) {
    let d = &mut checked.decision;
    d.reason = format!(
        "approved by a hook ({}); the policy asked: {}",
        or_none(&outcome.reason()),
        d.reason
    );
    d.decision = DecisionKind::Allow;
    d.layer = PolicyLayer::Hook;
}

fn or_none(reason: &str) -> &str {
    if reason.trim().is_empty() {
        "no reason given"
    } else {
        reason
    }
}

/// An event's own fields.
fn fields(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Claude Code's name for a permission mode.
pub(crate) fn permission_mode(mode: warden_config::PermissionMode) -> &'static str {
    use warden_config::PermissionMode as M;
    match mode {
        M::Plan => "plan",
        M::Default => "default",
        M::AcceptEdits => "acceptEdits",
        M::Auto => "auto",
        M::Bypass => "bypassPermissions",
    }
}

/// Writes `text` to `path`, readable by its owner only; after what is there when `append`.
fn write_private(path: &std::path::Path, text: &str, append: bool) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .append(append)
        .truncate(!append)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())
}

/// Whether a hook from the managed settings (`/etc/warden/managed.toml`) decided `decision` in
/// `outcome`.
pub(crate) fn org_decided(
    outcome: &Outcome,
    decision: &str,
    sources: &[warden_config::SettingsSource],
) -> bool {
    outcome.runs.iter().any(|ran| {
        ran.decision.as_deref() == Some(decision)
            && ran.source.as_ref().is_some_and(|path| {
                sources
                    .iter()
                    .any(|s| s.layer == warden_config::Layer::Managed && &s.path == path)
            })
    })
}

#[cfg(test)]
mod org_tests {
    use std::path::PathBuf;

    use warden_config::{HookEvent, Layer, SettingsSource};
    use warden_hooks::{Outcome, Ran};

    use super::org_decided;

    fn ran(source: &str, decision: &str) -> Ran {
        Ran {
            event: HookEvent::PreToolUse,
            matcher: None,
            command_sha256: String::new(),
            source: Some(PathBuf::from(source)),
            duration_ms: 0,
            exit: Some(0),
            timed_out: false,
            decision: Some(decision.to_owned()),
            error: None,
        }
    }

    #[test]
    fn only_the_managed_file_s_hooks_speak_for_the_organisation() {
        let sources = [
            SettingsSource {
                layer: Layer::Managed,
                path: PathBuf::from("/etc/warden/managed.toml"),
            },
            SettingsSource {
                layer: Layer::User,
                path: PathBuf::from("/home/u/.config/warden/settings.toml"),
            },
        ];
        let org_ask = Outcome {
            runs: vec![ran("/etc/warden/managed.toml", "ask")],
            ..Outcome::default()
        };
        assert!(org_decided(&org_ask, "ask", &sources));
        assert!(!org_decided(&org_ask, "allow", &sources));
        let user_allow = Outcome {
            runs: vec![ran("/home/u/.config/warden/settings.toml", "allow")],
            ..Outcome::default()
        };
        assert!(!org_decided(&user_allow, "allow", &sources));
        // A file of the same name elsewhere is not the managed one.
        let lookalike = Outcome {
            runs: vec![ran("/tmp/etc/warden/managed.toml", "ask")],
            ..Outcome::default()
        };
        assert!(!org_decided(&lookalike, "ask", &sources));
    }
}
