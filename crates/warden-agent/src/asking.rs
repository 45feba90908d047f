//! Asking a person, from the loop's side: which rule an answer would remember, what a rewrite
//! or an escalation runs, and the answers applied to the call (SPEC P8).

use serde_json::{Value, json};
use warden_config::RuleList;
use warden_policy::{Action, Engine, Remembered, Wider};
use warden_protocol::{Asked, Decision, DecisionKind, Event, Resolved};
use warden_tools::{Checked, OnAsk};

use crate::agent::Agent;
use crate::approve::{Answer, Approver, Question};
use crate::owned::REQUEST_PERMISSION;

impl Agent<'_> {
    /// A yes-or-no question with no rule to remember (`tool`, `arguments` and `decision` as the
    /// person sees them), put to the person, else answered by `--on-ask`: `allowed` when it
    /// allows.
    pub(crate) fn put(
        &self,
        tool: &str,
        arguments: &str,
        decision: &Decision,
        allowed: Answer,
    ) -> Answer {
        match (self.approver, self.on_ask) {
            (Some(approver), _) => approver.ask(&Question {
                tool,
                arguments,
                decision,
                rule: None,
                preview: None,
                wider: None,
            }),
            (None, OnAsk::Allow) => allowed,
            (None, OnAsk::Deny) => Answer::Deny(None),
        }
    }

    /// Puts a call to a person (or answers it with `--on-ask`).
    pub(crate) fn approve(&mut self, checked: &mut Checked, new_rules: &mut Vec<String>) {
        let asking = Asking {
            engine: &self.engine,
            registry: &self.registry,
            ctx: &self.ctx,
            settings: self.settings,
            shield: &self.shield,
            approver: self.approver,
        };
        let (store, session, sink) = (self.store, &self.session, &mut *self.sink);
        asking.approve(checked, new_rules, &mut |event: &Event| {
            // The run goes on if an event cannot be written (as `Agent::trace`).
            let _ = store.record_agent_event(session, event.kind(), &event.fields());
            sink.event(event);
        });
    }

    /// A `requestPermission` call: granted, the rule holds for the rest of the session.
    pub(crate) fn permission(
        &mut self,
        rule: &str,
        reason: &str,
        new_rules: &mut Vec<String>,
    ) -> Result<Value, String> {
        // The rule must parse before anyone is asked about it.
        let mut probe = (*self.engine).clone();
        probe
            .allow_for_session(rule)
            .map_err(|e| format!("requestPermission: {e}"))?;
        // Nobody is asked to grant what no approval may remember.
        if let Ok(Some(why)) = self.engine.too_broad(rule) {
            return Err(format!(
                "requestPermission: {rule} is broader than a permission may be: {why}; ask for \
                 the narrowest rule that covers the calls you need"
            ));
        }
        self.publish(&Event::ApprovalRequested {
            tool: REQUEST_PERMISSION.to_owned(),
            asked: Asked::Permission {
                rule: rule.to_owned(),
                reason: reason.to_owned(),
            },
        });
        let decision = warden_protocol::Decision {
            reason: reason.to_owned(),
            ..warden_protocol::Decision::unchecked()
        };
        let answer = match (self.approver, self.on_ask) {
            (Some(approver), _) => approver.ask(&Question {
                tool: REQUEST_PERMISSION,
                arguments: rule,
                decision: &decision,
                rule: Some(rule),
                preview: None,
                wider: None,
            }),
            (None, OnAsk::Allow) => Answer::Session,
            (None, OnAsk::Deny) => Answer::Deny(None),
        };
        self.publish(&Event::ApprovalResolved {
            tool: REQUEST_PERMISSION.to_owned(),
            answer: answer.kind(),
            of: Resolved::Rule {
                rule: Some(rule.to_owned()),
            },
        });
        match answer {
            Answer::Deny(message) => Err(format!(
                "permission {rule} was not granted{}",
                message.map(|m| format!(": {m}")).unwrap_or_default()
            )),
            Answer::Always => {
                let _ = self.settings.remember(RuleList::Allow, rule);
                new_rules.push(rule.to_owned());
                Ok(json!({"granted": rule, "for": "always"}))
            }
            Answer::Once | Answer::Session | Answer::Wider { .. } => {
                new_rules.push(rule.to_owned());
                Ok(json!({"granted": rule, "for": "session"}))
            }
        }
    }
}

/// What asking a person about a call uses, borrowed from whoever asks: the agent loop, or
/// `warden mcp serve` (whose client's user answers through a form).
pub struct Asking<'a> {
    pub engine: &'a Engine,
    pub registry: &'a warden_tools::Registry,
    pub ctx: &'a warden_tools::ToolContext,
    /// Where an answer of "always" is saved.
    pub settings: &'a warden_config::Settings,
    /// Redacts the preview.
    pub shield: &'a warden_context::Shield,
    /// A person to ask; `None` leaves the call as `--on-ask` left it.
    pub approver: Option<&'a dyn Approver>,
}

impl Asking<'_> {
    /// Puts a call to the person (the approval's preview, the rule an answer would remember)
    /// and applies the answer to it; `publish` gets the request and its resolution. A rule
    /// approved for the session or always is pushed on `new_rules`, for the caller to hold from
    /// its next call on.
    pub fn approve(
        &self,
        checked: &mut Checked,
        new_rules: &mut Vec<String>,
        publish: &mut dyn FnMut(&Event),
    ) {
        let escalation = checked.decision.decision == DecisionKind::RequireEscalation;
        // Only a plain approval can be remembered: a rewrite or a wider sandbox is for this
        // call alone.
        let remembered = if checked.decision.decision == DecisionKind::RequireApproval {
            remembered(self.engine, &checked.name, &checked.args)
        } else {
            Remembered::default()
        };
        let rule = remembered.rule.clone();
        let (wider, wider_refused) = match &remembered.wider {
            Some(Wider::Offered(rule)) => (Some(rule.clone()), None),
            Some(Wider::Refused { rule, why }) => (Some(rule.clone()), Some(why.clone())),
            None => (None, None),
        };
        let arguments = checked.args.to_string();
        // What the call would change, as the person and the trace see it: secrets redacted.
        let preview = match command_of(checked) {
            // A command: as the policy understood it.
            Some(command) => self
                .engine
                .explain(&Action::Bash(command.to_owned()))
                .analysis
                .and_then(|a| warden_tools::Preview::of(a.summary())),
            None => warden_tools::preview(self.registry, self.ctx, &checked.name, &checked.args),
        }
        .map(|p| (self.shield.redact(&p.text), p.truncated));
        publish(&Event::ApprovalRequested {
            tool: checked.name.clone(),
            asked: Asked::Call {
                arguments: checked.args.clone(),
                decision: checked.decision.decision,
                reason: checked.decision.reason.clone(),
                rule: rule.clone(),
                preview: preview.as_ref().map(|(text, _)| text.clone()),
                preview_truncated: preview.as_ref().map(|(_, cut)| *cut),
                wider,
                wider_refused,
            },
        });
        // The one wider sandbox granted for a call is the network for a command that needs it.
        let network = escalation
            && (checked.name == "webFetch"
                || checked.name == "bash" && needs_network(self.engine, &checked.args));
        // Refused before anyone is asked: not a person's answer.
        let unasked = escalation && !network;
        let answer = match self.approver {
            Some(_) | None if unasked => Answer::Deny(Some(
                "this needs a wider sandbox than the session has (writing outside the writable \
                 roots); warden grants only the network for one command — ask the user to add \
                 the path to [sandbox.filesystem] allow_write"
                    .to_owned(),
            )),
            // A flag never widens the sandbox.
            None if escalation => Answer::Deny(None),
            Some(approver) => approver.ask(&Question {
                tool: &checked.name,
                arguments: &arguments,
                decision: &checked.decision,
                rule: rule.as_deref(),
                preview: preview.as_ref().map(|(text, _)| text.as_str()),
                wider: remembered.wider.as_ref(),
            }),
            // `--on-ask allow` was applied by the runner already; what is left is refused.
            None => Answer::Deny(None),
        };
        let (answer, remembered_as) =
            self.apply(checked, answer, unasked, network, &remembered, new_rules);
        publish(&Event::ApprovalResolved {
            tool: checked.name.clone(),
            answer: answer.kind(),
            of: Resolved::Rule {
                rule: remembered_as.or(rule),
            },
        });
    }

    /// Applies the person's answer to the call: the answer as it counted, and the rule it
    /// remembered.
    fn apply(
        &self,
        checked: &mut Checked,
        answer: Answer,
        unasked: bool,
        network: bool,
        remembered: &Remembered,
        new_rules: &mut Vec<String>,
    ) -> (Answer, Option<String>) {
        let mut remembered_as = None;
        // A rewrite is approved as itself, once: no answer runs the call as it was asked, or
        // remembers a rule for it.
        let answer = match answer {
            Answer::Session | Answer::Always | Answer::Wider { .. }
                if checked.decision.decision == DecisionKind::Rewrite =>
            {
                Answer::Once
            }
            other => other,
        };
        match &answer {
            Answer::Once | Answer::Session | Answer::Always | Answer::Wider { .. } if network => {
                checked.approve("the network for this one command, approved by the user");
                checked.network_once = true;
            }
            Answer::Once if checked.decision.decision == DecisionKind::Rewrite => {
                match rewritten(
                    &checked.name,
                    &checked.args,
                    checked.decision.rewrite.as_ref(),
                ) {
                    Some(args) => {
                        checked.args = args;
                        checked.approve("the suggested rewrite, approved once by the user");
                    }
                    None => checked.refuse("the rewrite could not be applied; not run"),
                }
            }
            Answer::Once => checked.approve("approved once by the user"),
            Answer::Session | Answer::Always | Answer::Wider { .. } => {
                remembered_as = self.remember_answer(checked, &answer, remembered, new_rules);
            }
            // No one to ask: the call stays unapproved, and the model is told it needs approval.
            Answer::Deny(None) if self.approver.is_none() => {}
            Answer::Deny(Some(why)) if unasked => {
                let d = &mut checked.decision;
                d.reason = format!("{why}: {}", d.reason);
                d.decision = DecisionKind::Deny;
            }
            Answer::Deny(message) => {
                let how = match message {
                    Some(m) => format!("denied by the user, who says: {m}"),
                    None => "denied by the user".to_owned(),
                };
                checked.refuse(&how);
            }
        }
        (answer, remembered_as)
    }

    /// Approves a call for the session or always, and remembers the rule the person chose: the
    /// narrow one, or the wider one only where it was offered.
    fn remember_answer(
        &self,
        checked: &mut Checked,
        answer: &Answer,
        remembered: &Remembered,
        new_rules: &mut Vec<String>,
    ) -> Option<String> {
        let always = matches!(answer, Answer::Always | Answer::Wider { always: true });
        checked.approve(if always {
            "approved always by the user"
        } else {
            "approved for this session by the user"
        });
        let chosen = match (answer, &remembered.wider) {
            (Answer::Wider { .. }, Some(Wider::Offered(wider))) => wider.clone(),
            (Answer::Wider { .. }, _) => return None,
            _ => remembered.rule.clone()?,
        };
        new_rules.push(chosen.clone());
        if always {
            let _ = self.settings.remember(RuleList::Allow, &chosen);
        }
        Some(chosen)
    }
}

/// The command of a `bash` call.
fn command_of(checked: &Checked) -> Option<&str> {
    (checked.name == "bash")
        .then(|| checked.args.get("command").and_then(Value::as_str))
        .flatten()
}

/// Whether a shell command needs the network.
fn needs_network(engine: &Engine, args: &Value) -> bool {
    let Some(command) = args.get("command").and_then(Value::as_str) else {
        return false;
    };
    engine
        .explain(&Action::Bash(command.to_owned()))
        .analysis
        .is_some_and(|a| a.commands.iter().any(|c| c.flags.network))
}

/// The arguments of the suggested rewrite, when it is the same tool with another target.
fn rewritten(
    name: &str,
    args: &Value,
    rewrite: Option<&warden_protocol::Rewrite>,
) -> Option<Value> {
    let rewrite = rewrite.filter(|r| r.tool == name)?;
    let mut args = args.clone();
    let key = if name == "bash" { "command" } else { "path" };
    *args.get_mut(key)? = Value::String(rewrite.target.clone());
    Some(args)
}

/// The rule that remembers an approval of this call, if one narrow enough exists, and the wider
/// second choice.
pub fn remembered(engine: &Engine, name: &str, args: &Value) -> Remembered {
    let arg = |key: &str| args.get(key).and_then(Value::as_str);
    let path = |tool: &str| {
        arg("path").map_or_else(Remembered::default, |p| engine.remembered_path(tool, p))
    };
    match name {
        "bash" => arg("command")
            .and_then(|command| engine.explain(&Action::Bash(command.to_owned())).analysis)
            .map_or_else(Remembered::default, |a| {
                warden_policy::remembered_command(&a)
            }),
        "readFile" => path("Read"),
        "writeFile" => path("Write"),
        "editFile" => path("Edit"),
        _ => Remembered::default(),
    }
}
