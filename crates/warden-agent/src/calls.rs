//! The calls of one turn, each through the same pipeline: decide (the loop's own tools are
//! answered here, every other call goes to the policy engine), approve (a person or
//! `--on-ask`), execute (read-only calls that follow each other at once), observe (the result
//! recorded, handed to the model labelled and redacted, the session saved).

use std::sync::Arc;

use serde_json::{Value, json};
use warden_model::{Item, ToolCall};
use warden_protocol::{CallStatus, DecisionKind, Event, ToolError, ToolErrorKind, ToolResult};
use warden_tools::{Checked, ToolRunner};

use crate::agent::{Agent, Flow, Status};
use crate::extra;
use crate::owned::Owned;
use crate::state::{CommandRecord, State};

/// The most symbols a session keeps in its working set.
const MAX_SYMBOLS: usize = 5_000;

/// The working set from what a tool actually did: the files it read and changed, and the names
/// its files define and its searches found (for compaction to keep).
fn learn(state: &mut State, runner: &ToolRunner<'_>, tool: &str, result: &ToolResult) {
    let ws = runner.working_set();
    let known = &mut state.working_set;
    known.files_read.extend(ws.files_read.iter().cloned());
    known.files_edited.extend(ws.files_edited.iter().cloned());
    if let Some(output) = &result.output {
        for name in warden_context::symbols_of(tool, output) {
            if known.relevant_symbols.len() >= MAX_SYMBOLS {
                break;
            }
            known.relevant_symbols.insert(name);
        }
    }
}

impl Agent<'_> {
    /// Checks, approves, runs and records the calls of one turn, in order; read-only calls that
    /// follow each other run at once. `Some` when the run must stop.
    pub(crate) fn calls(&mut self, state: &mut State, calls: &[ToolCall]) -> Option<Status> {
        // One runner decides, runs and records the turn's calls. A session approval given now
        // changes the engine for the turns after (the runner keeps the one it decided with).
        let engine = Arc::clone(&self.engine);
        let (registry, ctx) = (Arc::clone(&self.registry), Arc::clone(&self.ctx));
        let mut runner = match ToolRunner::new(
            &registry,
            &ctx,
            &engine,
            Some(self.store),
            self.session.clone(),
        ) {
            Ok(r) => r.with_on_ask(self.on_ask),
            Err(err) => return Some(Status::Error(format!("the trace: {err}"))),
        };
        // Decide every call first (asking where needed), then run.
        let mut new_rules: Vec<String> = Vec::new();
        let mut stop: Option<Status> = None;
        let mut prepared: Vec<Prepared> = Vec::new();
        for call in calls {
            if stop.is_none() {
                stop = self.stopped_before_call(state);
            }
            if let Some(status) = &stop {
                let why = match status {
                    Status::Interrupted => "interrupted: the run was stopped before this call",
                    _ => "not run: the run's budget of tool calls is spent",
                };
                prepared.push(Prepared::Answered(call.clone(), Err(why.to_owned())));
                continue;
            }
            match self.decide(state, &mut runner, call, &mut new_rules) {
                Ok(p) => prepared.push(p),
                Err(Flow::ToModel(why)) => {
                    prepared.push(Prepared::Answered(call.clone(), Err(why)));
                }
                Err(Flow::End(status)) => return Some(status),
            }
        }
        self.remember(state, &new_rules);
        if let Err(status) = self.execute_all(state, &mut runner, &prepared, &mut stop) {
            return Some(status);
        }
        stop
    }

    /// Ctrl-C, or the budget of tool calls spent: no more calls of this turn run.
    fn stopped_before_call(&self, state: &State) -> Option<Status> {
        if self.interrupt.raised() {
            return Some(Status::Interrupted);
        }
        self.budgets
            .max_tool_calls
            .filter(|m| state.tool_calls >= *m)
            .map(|_| Status::BudgetExhausted(format!("max_tool_calls ({})", state.tool_calls)))
    }

    /// Decides one call: the loop's own tools are answered now; every other call is checked by
    /// the policy engine and, where it says so, put to a person.
    fn decide(
        &mut self,
        state: &mut State,
        runner: &mut ToolRunner<'_>,
        call: &ToolCall,
        new_rules: &mut Vec<String>,
    ) -> Result<Prepared, Flow> {
        state.tool_calls += 1;
        let args: Result<Value, String> = serde_json::from_str(&call.arguments)
            .map_err(|e| format!("the arguments are not valid JSON ({e}): {}", call.arguments));
        self.sink.event(&Event::ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: args
                .clone()
                .unwrap_or_else(|_| Value::String(call.arguments.clone())),
        });
        if let Some(owned) = Owned::of(&call.name) {
            let args = args.map_err(Flow::ToModel)?;
            let answer = self.answer(owned, state, &args, new_rules)?;
            return Ok(Prepared::Answered(call.clone(), Ok(answer)));
        }
        let mut checked = match args {
            Ok(args) => {
                let (args, hooked) = self.pre_tool_use(call, args);
                if let Some(why) = &hooked.stop {
                    return Err(Flow::End(Status::Error(format!(
                        "a PreToolUse hook stopped the run: {why}"
                    ))));
                }
                let mut checked = runner.check(&call.name, args);
                self.narrow(&mut checked, &hooked);
                checked
            }
            Err(why) => {
                let mut checked = runner.check(&call.name, Value::Null);
                checked.invalid = Some(ToolError::new(ToolErrorKind::InvalidArguments, why));
                checked
            }
        };
        let d = &checked.decision;
        if let Some(risk) = d.risk {
            state.risks.insert(call.id.clone(), risk as u8);
        }
        self.sink.event(&Event::PolicyDecision {
            id: call.id.clone(),
            decision: d.decision,
            risk: d.risk,
            reason: d.reason.clone(),
            layer: d.layer,
            rule: d.rule.clone(),
        });
        if checked.needs_approval() && !self.permission_hooks(runner, call, &mut checked)? {
            self.approve(&mut checked, new_rules);
        }
        Ok(Prepared::Checked(call.clone(), Box::new(checked)))
    }

    /// A call of one of the loop's own tools, answered by the loop.
    fn answer(
        &mut self,
        owned: Owned,
        state: &mut State,
        args: &Value,
        new_rules: &mut Vec<String>,
    ) -> Result<Value, Flow> {
        match owned {
            Owned::UpdatePlan => extra::update_plan(state, args),
            Owned::Skill => self.skill_call(state, args),
            Owned::RequestPermission => extra::permission(args)
                .and_then(|(rule, reason)| self.permission(&rule, &reason, new_rules)),
        }
        .map_err(Flow::ToModel)
    }

    /// The rules approved for the session this turn hold from the next call on.
    fn remember(&mut self, state: &mut State, new_rules: &[String]) {
        for rule in new_rules {
            if Arc::make_mut(&mut self.engine)
                .allow_for_session(rule)
                .is_ok()
                && !state.session_rules.contains(rule)
            {
                state.session_rules.push(rule.clone());
            }
        }
    }

    /// Runs the decided calls in order — runs of read-only, allowed calls together, everything
    /// else one by one — and observes each result. After Ctrl-C nothing more runs; each call
    /// left is reported as interrupted. `Err` when the run must end.
    fn execute_all(
        &mut self,
        state: &mut State,
        runner: &mut ToolRunner<'_>,
        prepared: &[Prepared],
        stop: &mut Option<Status>,
    ) -> Result<(), Status> {
        let executor = runner.executor();
        let parallel = |p: &Prepared| match p {
            Prepared::Checked(_, checked) => {
                checked.decision.decision == DecisionKind::Allow
                    && checked.invalid.is_none()
                    && self
                        .registry
                        .spec(&checked.name)
                        .is_some_and(|s| s.read_only)
            }
            Prepared::Answered(..) => false,
        };
        let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
        let mut index = 0;
        while index < prepared.len() {
            let mut end = index + 1;
            if parallel(&prepared[index]) {
                while end < prepared.len() && parallel(&prepared[end]) {
                    end += 1;
                }
            }
            groups.push(index..end);
            index = end;
        }
        for range in groups {
            if self.interrupt.raised() && stop.is_none() {
                *stop = Some(Status::Interrupted);
            }
            let group = &prepared[range];
            let results: Vec<Option<ToolResult>> = if stop.is_some() {
                group.iter().map(|_| None).collect()
            } else {
                for p in group {
                    if let Prepared::Checked(call, checked) = p
                        && checked.decision.decision == DecisionKind::Allow
                    {
                        self.sink.event(&Event::ToolRunning {
                            id: call.id.clone(),
                            name: call.name.clone(),
                        });
                    }
                }
                execute(&executor, group)
            };
            for (p, result) in group.iter().zip(results) {
                match self.observe(state, runner, p, result) {
                    Ok(()) => {}
                    // A result that cannot be recorded or saved ends the run.
                    Err(Flow::ToModel(why) | Flow::End(Status::Error(why))) => {
                        return Err(Status::Error(why));
                    }
                    Err(Flow::End(status)) => return Err(status),
                }
            }
        }
        Ok(())
    }

    /// Records one call's result, hands it to the model's conversation and saves.
    fn observe(
        &mut self,
        state: &mut State,
        runner: &mut ToolRunner<'_>,
        prepared: &Prepared,
        result: Option<ToolResult>,
    ) -> Result<(), Flow> {
        let cap = usize::try_from(self.settings.context.tool_output_tokens.saturating_mul(4))
            .unwrap_or(usize::MAX);
        // What the model is sent, and what the stream says of it.
        let mut exit_code = None;
        let mut error = None;
        // What a command printed, for the person watching (the model gets the whole result).
        let mut printed = None;
        // What hooks tell the model about the call besides its result.
        let mut notes = Vec::new();
        let mut stopped = None;
        let (call, content, status, is_error) = match (prepared, result) {
            (Prepared::Answered(call, answer), _) => match answer {
                Ok(value) => (call, value.to_string(), CallStatus::Ok, false),
                Err(why) => (call, error_content(why), CallStatus::Error, true),
            },
            (Prepared::Checked(call, _), None) => {
                let why = "interrupted: the run was stopped before this call ran";
                (call, error_content(why), CallStatus::Interrupted, true)
            }
            (Prepared::Checked(call, checked), Some(result)) => {
                runner.record((**checked).clone(), &result).map_err(|e| {
                    Flow::End(Status::Error(format!(
                        "recording a tool call in the trace: {e}"
                    )))
                })?;
                learn(state, runner, &call.name, &result);
                if call.name == "bash" {
                    let command = checked.args.get("command").and_then(Value::as_str);
                    exit_code = result
                        .output
                        .as_ref()
                        .and_then(|o| o.get("exitCode"))
                        .and_then(Value::as_i64);
                    printed = result.output.as_ref().map(command_printed);
                    if let Some(command) = command {
                        state.commands.push(CommandRecord {
                            command: command.to_owned(),
                            exit_code,
                        });
                    }
                }
                let content = match (&result.output, &result.error) {
                    (Some(output), _) => output.to_string(),
                    (None, Some(err)) => {
                        error = Some(err.message.clone());
                        json!({"error": err}).to_string()
                    }
                    (None, None) => "{}".to_owned(),
                };
                let is_error = error.is_some();
                (notes, stopped) = self.post_tool_use(call, checked, &result);
                (call, content, CallStatus::from(result.status), is_error)
            }
        };
        let content = match prepared {
            // What the tools return is data from outside: labelled, secrets redacted.
            Prepared::Checked(call, checked) => {
                let source = format!(
                    "{} {}",
                    call.name,
                    warden_protocol::short(&checked.args.to_string(), 160)
                );
                let mut content = self.shield.wrap(&source, &cap_output(content, cap));
                for note in &notes {
                    content.push('\n');
                    content.push_str(note);
                }
                content
            }
            Prepared::Answered(..) => cap_output(content, cap),
        };
        self.sink.event(&Event::ToolResult {
            id: call.id.clone(),
            name: call.name.clone(),
            status,
            exit_code,
            error,
        });
        if let Some(text) = printed.filter(|t| !t.trim().is_empty()) {
            self.sink.output(&call.name, &self.shield.redact(&text));
        }
        state.items.push(Item::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
        });
        state.pending.retain(|id| *id != call.id);
        self.save(state, "running")
            .map_err(|why| Flow::End(Status::Error(why.to_string())))?;
        match stopped {
            Some(why) => Err(Flow::End(Status::Error(format!(
                "a {} hook stopped the run: {why}",
                if is_error {
                    "PostToolUseFailure"
                } else {
                    "PostToolUse"
                }
            )))),
            None => Ok(()),
        }
    }
}

/// A command's normalised output as one text: its standard output, then its standard error.
fn command_printed(output: &Value) -> String {
    let part = |key: &str| output.get(key).and_then(Value::as_str).unwrap_or_default();
    let (out, err) = (part("stdoutSummary"), part("stderrSummary"));
    match (out.trim().is_empty(), err.trim().is_empty()) {
        (_, true) => out.to_owned(),
        (true, false) => err.to_owned(),
        (false, false) => format!("{}\n{err}", out.trim_end_matches('\n')),
    }
}

/// Runs one group of calls: alone, or at once on threads when there are several (read-only
/// calls only). `None` for a call the loop answered itself.
fn execute(executor: &warden_tools::Executor<'_>, group: &[Prepared]) -> Vec<Option<ToolResult>> {
    tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            let handles: Vec<_> = group
                .iter()
                .map(|p| match p {
                    Prepared::Checked(_, checked) if group.len() > 1 => {
                        Some(scope.spawn(move || executor.execute(checked)))
                    }
                    _ => None,
                })
                .collect();
            group
                .iter()
                .zip(handles)
                .map(|(p, handle)| match (p, handle) {
                    (_, Some(handle)) => handle.join().ok(),
                    (Prepared::Checked(_, checked), None) => Some(executor.execute(checked)),
                    (Prepared::Answered(..), None) => None,
                })
                .collect()
        })
    })
}

/// A call ready to run, or already answered by the loop itself (an `Err` goes back to the
/// model as the call's error).
enum Prepared {
    Checked(ToolCall, Box<Checked>),
    Answered(ToolCall, Result<Value, String>),
}

/// A refusal or failure as the model gets it.
fn error_content(why: &str) -> String {
    json!({"error": {"message": why}}).to_string()
}

/// A tool output as the model gets it: at most `cap` bytes, saying when it was cut.
fn cap_output(content: String, cap: usize) -> String {
    if content.len() <= cap {
        return content;
    }
    let mut end = cap;
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… [truncated: {} more bytes of this output were dropped]",
        &content[..end],
        content.len() - end
    )
}
