//! Hooks for the calls another agent makes through `warden mcp serve`, outside any turn of
//! warden's own: `PreToolUse` narrows the policy's decision as it does in a run (a deny refuses,
//! an ask makes an allowed call wait for an answer, an allow answers only a plain question), and
//! `PostToolUse`/`PostToolUseFailure` run after. A hook that changes a call's input refuses the
//! call there: the changed call is not the one the client sent, and the client is not told.

use serde_json::{Map, Value, json};
use warden_config::{HookEvent, Settings, SettingsSource};
use warden_hooks::{HookRunner, Outcome, Session, Verdict, claude_input, claude_name};
use warden_protocol::{DecisionKind, PolicyLayer, ToolResult, ToolStatus};
use warden_tools::Checked;

/// The hooks of a served session.
pub struct ServedHooks {
    runner: HookRunner,
    session: Session,
    /// The settings' files, to tell the organisation's hooks.
    sources: Vec<SettingsSource>,
}

impl ServedHooks {
    pub fn new(settings: &Settings, session_id: &str) -> Self {
        Self {
            runner: HookRunner::new(&settings.hooks, &settings.project_root),
            session: Session {
                session_id: session_id.to_owned(),
                transcript_path: None,
                cwd: settings.cwd.clone(),
                permission_mode: crate::hooked::permission_mode(settings.permissions.mode)
                    .to_owned(),
            },
            sources: settings.sources.clone(),
        }
    }

    /// `PreToolUse` for a call, applied to its decision. `held`: the tool's MCP definition
    /// changed since it was pinned (a person's question only); `on_ask_allows`: `--on-ask allow`
    /// answers for a client that takes no forms. What ran, for the trace.
    pub fn before(
        &self,
        id: &str,
        args: &Value,
        checked: &mut Checked,
        held: bool,
        on_ask_allows: bool,
    ) -> Outcome {
        if !self.runner.listens(HookEvent::PreToolUse) {
            return Outcome::default();
        }
        let mut outcome =
            self.tool_hooks(HookEvent::PreToolUse, &checked.name, id, args, &Map::new());
        if outcome.updated_input.take().is_some() {
            outcome.verdict = Some(Verdict::Deny);
            outcome.reasons.push(
                "a hook changed the call's input, which calls through warden mcp serve do not allow"
                    .to_owned(),
            );
        }
        narrow(checked, &outcome, on_ask_allows, held, &self.sources);
        outcome
    }

    /// `PostToolUse` or `PostToolUseFailure` for a call that ran.
    pub fn after(&self, name: &str, id: &str, args: &Value, result: &ToolResult) -> Outcome {
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
        if !self.runner.listens(event) {
            return Outcome::default();
        }
        self.tool_hooks(event, name, id, args, &extra)
    }

    fn tool_hooks(
        &self,
        event: HookEvent,
        name: &str,
        id: &str,
        args: &Value,
        extra: &Map<String, Value>,
    ) -> Outcome {
        let input = claude_input(name, args, &self.session.cwd);
        let mut outcome = Outcome::default();
        for input in warden_hooks::per_file(&input) {
            let mut fields = Map::new();
            fields.insert("tool_name".to_owned(), json!(claude_name(name)));
            fields.insert("tool_input".to_owned(), input);
            fields.insert("tool_use_id".to_owned(), json!(id));
            fields.extend(extra.clone());
            let subjects = warden_hooks::matched_as(name);
            outcome.merge(self.runner.run(event, &self.session, &subjects, &fields));
        }
        outcome
    }
}

/// Applies a `PreToolUse` verdict to a decided call: a deny refuses it, an ask makes an allowed
/// call ask (unless `flag`: `--on-ask allow` with nobody to ask answers it, but never what a hook
/// of the managed settings among `sources` asks), an allow answers only a question the policy
/// would put to a person about a tool whose definition is not `held`.
pub(crate) fn narrow(
    checked: &mut Checked,
    outcome: &Outcome,
    flag: bool,
    held: bool,
    sources: &[SettingsSource],
) {
    if checked.invalid.is_some() {
        return;
    }
    // What the organisation's hook asks, only a person or the organisation's own
    // `PermissionRequest` hooks answer.
    let org_asks = crate::hooked::org_decided(outcome, "ask", sources);
    let flag_answers = flag && !org_asks;
    let reason = outcome.reason();
    let reason = if reason.trim().is_empty() {
        "no reason given".to_owned()
    } else {
        reason
    };
    let d = &mut checked.decision;
    match outcome.verdict {
        None => {}
        Some(Verdict::Deny) => {
            d.decision = DecisionKind::Deny;
            d.reason = format!("refused by a hook: {reason}");
            d.layer = PolicyLayer::Hook;
        }
        Some(Verdict::Ask) if d.decision == DecisionKind::Allow => {
            if flag_answers {
                d.reason = format!("{} (a hook asked; --on-ask allow answered)", d.reason);
            } else {
                d.decision = DecisionKind::RequireApproval;
                d.reason = format!("a hook asks: {reason}");
                d.layer = PolicyLayer::Hook;
            }
            if flag && org_asks {
                d.reason = format!(
                    "{}; the organisation's hook asks a person, and --on-ask allow does not \
                     answer for one",
                    d.reason
                );
            }
        }
        // A tool whose definition changed since it was pinned is a person's question.
        Some(Verdict::Allow) if d.decision == DecisionKind::RequireApproval && !held => {
            d.reason = format!(
                "allowed by a hook ({reason}); the policy asked: {}",
                d.reason
            );
            d.decision = DecisionKind::Allow;
            d.layer = PolicyLayer::Hook;
        }
        // An allow against a deny, a rewrite or an escalation, or an ask about what is refused
        // already: the policy's decision stands.
        Some(_) => {}
    }
}
