//! The loop (SPEC A2): build the context, call the model, check each call it makes, ask when the
//! policy says so, run what is allowed (read-only calls of a turn at once), observe, repeat —
//! until a final answer, a budget, Ctrl-C or an error. The state is saved after every step.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde_json::{Value, json};
use warden_config::Settings;
use warden_model::{Client, Item, Request, ToolCall, ToolDef};
use warden_policy::Engine;
use warden_protocol::{
    Budgets, CallStatus, DecisionKind, Event, NetworkCounts, RunStatus, SessionId, ToolError,
    ToolErrorKind, ToolResult, Trigger,
};
use warden_tools::{Checked, OnAsk, Registry, ToolContext, ToolRunner};
use warden_trace::{AgentSession, TraceStore};

use crate::approve::Approver;
use crate::extra::{self, REQUEST_PERMISSION, UPDATE_PLAN};
use crate::output::Sink;
use crate::prompt;
use crate::state::{CommandRecord, State};

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// The model gave its final answer.
    Finished,
    /// A budget ran out: which one.
    BudgetExhausted(String),
    /// Ctrl-C.
    Interrupted,
    Error(String),
}

impl Status {
    /// Which way it ended, without the details.
    pub fn kind(&self) -> RunStatus {
        match self {
            Self::Finished => RunStatus::Finished,
            Self::BudgetExhausted(_) => RunStatus::BudgetExhausted,
            Self::Interrupted => RunStatus::Interrupted,
            Self::Error(_) => RunStatus::Error,
        }
    }

    pub fn as_str(&self) -> &'static str {
        self.kind().as_str()
    }
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    /// Messages the summary replaced.
    pub messages: usize,
    /// The summary, nine sections, with the identifiers put back.
    pub summary: String,
    pub restored: Vec<warden_context::Identifier>,
}

/// Set by Ctrl-C; the loop stops at the next step, and the model call in flight is abandoned.
#[derive(Debug, Default)]
pub struct Interrupt {
    flag: AtomicBool,
    notify: tokio::sync::Notify,
}

impl Interrupt {
    pub fn raise(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn raised(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Lowers the flag: an interactive session goes on after a stopped run.
    pub fn clear(&self) {
        self.flag.store(false, Ordering::SeqCst);
    }

    /// Waits until Ctrl-C.
    pub async fn wait(&self) {
        let notified = self.notify.notified();
        if self.raised() {
            return;
        }
        notified.await;
    }
}

/// Everything one run uses.
pub struct Agent<'a> {
    pub settings: &'a Settings,
    pub client: &'a Client,
    pub registry: &'a Registry,
    pub ctx: &'a ToolContext,
    /// Shared with each turn's runner; changed (a session approval) only between turns.
    pub engine: Arc<Engine>,
    pub store: &'a TraceStore,
    pub session: SessionId,
    /// The answer when no person is asked.
    pub on_ask: OnAsk,
    /// A person to ask, on a terminal.
    pub approver: Option<&'a dyn Approver>,
    pub budgets: Budgets,
    pub sink: &'a mut dyn Sink,
    pub interrupt: Arc<Interrupt>,
    /// Whether commands have the network (for the prompt).
    pub network: bool,
    pub max_output_tokens: u32,
    /// How many items of the conversation are saved already (those loaded, on resume).
    pub saved_items: std::cell::Cell<usize>,
    /// Labels tool output as data and redacts secrets before the model sees it.
    pub shield: warden_context::Shield,
    /// The skills found for this project (`None` when skills are off).
    pub skills: Option<&'a warden_skills::Registry>,
}

/// The tools the model is offered: the registry's and the loop's own (`Skill` when there are
/// skills).
pub fn tool_defs(registry: &Registry, skills: bool) -> Vec<ToolDef> {
    let mut defs: Vec<ToolDef> = registry
        .specs()
        .map(|s| ToolDef {
            name: s.name.to_string(),
            description: s.description.clone(),
            parameters: s.parameters.clone(),
        })
        .collect();
    defs.extend(extra::defs());
    if skills {
        defs.push(crate::skills::def());
    }
    defs
}

/// The context of the next call: the rules and the state rebuilt, the conversation selected
/// and trimmed within the window (see `warden-context`). The system prompt, and what was built.
pub fn context(
    settings: &Settings,
    state: &State,
    tools: &[ToolDef],
    network: bool,
    model: &str,
    skills: Option<&warden_skills::Registry>,
) -> (String, warden_context::Built) {
    // Exact for the model's own encoding where warden has it, else calibrated estimates.
    let tokens = warden_context::Tokens::for_model(model, state.calibration);
    let mut rules = prompt::rules(settings, network);
    // The skill index and the loaded skills: rebuilt on every call, never cut.
    let index_budget =
        window(settings).saturating_mul(u64::from(settings.skills.index_percent)) / 100;
    rules.push_str(&crate::skills::layer(
        skills,
        state,
        &settings.project_root,
        index_budget,
        &|text: &str| tokens.count(text),
    ));
    let known = prompt::known(state);
    let tool_text = serde_json::to_string(tools).unwrap_or_default();
    let signals = signals(state);
    let built = warden_context::build(&warden_context::Input {
        window: window(settings),
        threshold_percent: 80,
        shares: &settings.context.shares,
        rules: &rules,
        goal_state: &known,
        tool_tokens: tokens.count(&tool_text),
        items: &state.items,
        tokens: &tokens,
        signals: &signals,
    });
    (format!("{rules}{known}"), built)
}

/// What trimming weighs: the goal, the plan, the latest things the user said and the files
/// edited (relevance), the pinned constraints, and the risk of each call.
fn signals(state: &State) -> warden_context::Signals {
    let latest = state
        .items
        .iter()
        .rev()
        .filter_map(|item| match item {
            Item::User { text } if !text.starts_with('[') => Some(text.as_str()),
            _ => None,
        })
        .take(3);
    let focus = std::iter::once(state.goal.as_str())
        .chain(state.plan.iter().map(String::as_str))
        .chain(latest)
        .chain(state.working_set.files_edited.iter().map(String::as_str));
    let risks = state
        .risks
        .iter()
        .map(|(id, level)| (id.clone(), *level))
        .collect();
    warden_context::Signals::new(focus, state.pinned.iter().map(String::as_str), risks)
}

/// Whether a context calls for compaction: when pruning was not enough, or after a switch to a
/// smaller window when anything had to be cut.
fn trigger(built: &warden_context::Built, switched: bool) -> Option<Trigger> {
    let cut = |pruned: bool| {
        built
            .report
            .layers
            .iter()
            .any(|l| l.dropped > 0 || (pruned && l.trimmed > 0))
    };
    if switched && cut(true) {
        Some(Trigger::ModelSwitch)
    } else if cut(false) {
        Some(Trigger::Threshold)
    } else {
        None
    }
}

/// The model's window: `[context] window_tokens`, else `[model] context_window`, else 128k.
pub fn window(settings: &Settings) -> u64 {
    settings
        .context
        .window_tokens
        .or(settings.model.context_window)
        .unwrap_or(128_000)
}

impl Agent<'_> {
    fn tool_defs(&self) -> Vec<ToolDef> {
        tool_defs(
            self.registry,
            self.skills.is_some_and(|r| !r.skills.is_empty()),
        )
    }

    /// Saves the state and the conversation items not saved yet.
    pub fn save(&self, state: &State, status: &str) -> Result<(), String> {
        let header = AgentSession {
            session_id: self.session.clone(),
            started_at: String::new(),
            updated_at: String::new(),
            status: status.to_owned(),
            model: self.client.spec().label(),
            cwd: self.settings.cwd.display().to_string(),
            goal: state.goal.clone(),
        };
        let value = serde_json::to_value(state).map_err(|e| e.to_string())?;
        let first = self.saved_items.get().min(state.items.len());
        let new = state.items[first..]
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        self.store
            .save_agent_state(&self.session, &header, &value, first, &new)
            .map_err(|e| format!("saving the session: {e}"))?;
        self.saved_items.set(state.items.len());
        Ok(())
    }

    /// Records a step in the trace and shows it.
    pub(crate) fn publish(&mut self, event: &Event) {
        self.trace(event.kind(), &event.fields());
        self.sink.event(event);
    }

    pub(crate) fn trace(&self, kind: &str, data: &Value) {
        // The run goes on if an event cannot be written; the tool events themselves are
        // recorded by the runner, which stops the run when it cannot.
        let _ = self.store.record_agent_event(&self.session, kind, data);
    }

    fn exhausted(&self, state: &State, started: Instant) -> Option<String> {
        let b = &self.budgets;
        let wall = state.elapsed_ms + u64::try_from(started.elapsed().as_millis()).unwrap_or(0);
        if b.max_turns.is_some_and(|m| state.turns >= m) {
            return Some(format!("max_turns ({})", state.turns));
        }
        if b.max_tool_calls.is_some_and(|m| state.tool_calls >= m) {
            return Some(format!("max_tool_calls ({})", state.tool_calls));
        }
        if b.max_tokens.is_some_and(|m| state.usage.total() >= m) {
            return Some(format!("max_tokens ({})", state.usage.total()));
        }
        if b.max_cost_usd.is_some_and(|m| state.cost_usd >= m) {
            return Some(format!("max_cost_usd ({:.4})", state.cost_usd));
        }
        if b.max_wall_seconds
            .is_some_and(|m| wall >= m.saturating_mul(1000))
        {
            return Some(format!("max_wall_seconds ({} s)", wall / 1000));
        }
        None
    }

    /// The context of the next call (see [`context`]).
    pub fn context(&self, state: &State, tools: &[ToolDef]) -> (String, warden_context::Built) {
        context(
            self.settings,
            state,
            tools,
            self.network,
            &self.client.spec().model,
            self.skills,
        )
    }

    /// Runs until the model is done, a budget runs out, Ctrl-C, or an error.
    pub async fn run(&mut self, state: &mut State) -> Status {
        let started = Instant::now();
        // Skills still active from before (a resumed task) narrow again; a new request may call
        // for one by itself.
        if let Err(why) = self.apply_narrowings(state) {
            return Status::Error(why);
        }
        if state
            .items
            .last()
            .is_some_and(|i| matches!(i, Item::User { .. }))
        {
            self.auto_load(state);
        }
        let status = self.turns(state, started).await;
        if status == Status::Finished {
            self.unload_all(state);
        }
        state.elapsed_ms += u64::try_from(started.elapsed().as_millis()).unwrap_or(0);
        let _ = self.save(state, status.as_str());
        let network = self.ctx.egress.as_ref().map(|egress| {
            let counts = egress.proxy.counts();
            NetworkCounts {
                allowed: counts.allowed,
                denied: counts.denied,
            }
        });
        let (budget, error) = match &status {
            Status::BudgetExhausted(which) => (Some(which.clone()), None),
            Status::Error(why) => (None, Some(why.clone())),
            Status::Finished | Status::Interrupted => (None, None),
        };
        self.publish(&Event::SessionFinished {
            status: status.kind(),
            usage: state.usage,
            cost_usd: state.cost_usd,
            turns: state.turns,
            tool_calls: state.tool_calls,
            duration_ms: state.elapsed_ms,
            session_id: self.session.as_str().to_owned(),
            network,
            budget,
            error,
        });
        status
    }

    async fn turns(&mut self, state: &mut State, started: Instant) -> Status {
        let tools = self.tool_defs();
        let window = window(self.settings);
        // A run going on with a model whose window is smaller: what the larger one saw is
        // summarised once, before the first call, if it no longer fits whole.
        let mut switched = state.window.is_some_and(|before| window < before);
        loop {
            if self.interrupt.raised() {
                return Status::Interrupted;
            }
            if let Some(which) = self.exhausted(state, started) {
                return Status::BudgetExhausted(which);
            }
            let (mut system, mut built) = self.context(state, &tools);
            // Pruning was not enough: the model summarises the older part, once this turn;
            // whatever still does not fit is trimmed, and the turn goes on.
            let trigger = trigger(&built, std::mem::take(&mut switched));
            if let Some(trigger) = trigger {
                match self.compact(state, trigger).await {
                    Ok(_) => (system, built) = self.context(state, &tools),
                    Err(Some(status)) => return status,
                    Err(None) => {}
                }
            }
            state.window = Some(window);
            let estimated = built.report.total;
            if built
                .report
                .layers
                .iter()
                .any(|l| l.trimmed > 0 || l.dropped > 0)
                || built.report.over_budget
            {
                self.trace("context", &json!(built.report));
            }
            let request = Request {
                items: built.items,
                system,
                tools: tools.clone(),
                max_output_tokens: self.max_output_tokens,
            };
            self.publish(&Event::ModelRequest {
                turn: state.turns + 1,
                items: request.items.len(),
            });
            let interrupt = self.interrupt.clone();
            let turn = {
                let sink = &mut *self.sink;
                let mut retries = Vec::new();
                let mut on_event = |event: warden_model::Event| {
                    if let warden_model::Event::Text(text) = event {
                        sink.text(&text);
                    }
                };
                let mut on_retry = |notice| retries.push(notice);
                let result = tokio::select! {
                    turn = self.client.complete(&request, &mut on_event, &mut on_retry) => Some(turn),
                    () = interrupt.wait() => None,
                };
                for notice in retries {
                    sink.event(&Event::Retry {
                        attempt: notice.attempt,
                        wait_ms: u64::try_from(notice.wait.as_millis()).unwrap_or(u64::MAX),
                        why: notice.why,
                    });
                }
                result
            };
            let turn = match turn {
                None => return Status::Interrupted,
                Some(Err(err)) => return Status::Error(err.to_string()),
                Some(Ok(turn)) => turn,
            };
            self.account(state, &request, &turn, estimated);
            state.turns += 1;
            if !turn.text.is_empty() {
                self.sink.event(&Event::AssistantText {
                    text: turn.text.clone(),
                });
            }
            state.items.push(Item::Assistant {
                text: turn.text.clone(),
                calls: turn.calls.clone(),
            });
            state.pending = turn.calls.iter().map(|c| c.id.clone()).collect();
            if let Err(why) = self.save(state, "running") {
                return Status::Error(why);
            }
            if turn.calls.is_empty() {
                return Status::Finished;
            }
            if let Some(status) = self.calls(state, &turn.calls) {
                return status;
            }
        }
    }

    /// Compacts now (`/compact`, `warden compact`, `warden handoff`): the older part of the
    /// conversation (for a handoff, all of it but the task) becomes a handoff summary, as when
    /// the context outgrows its window.
    pub async fn compact_now(
        &mut self,
        state: &mut State,
        trigger: Trigger,
    ) -> Result<Compacted, String> {
        match self.compact(state, trigger).await {
            Ok(done) => Ok(done),
            Err(Some(status)) => Err(format!("compaction stopped: {}", status.as_str())),
            Err(None) => Err(
                "nothing was compacted: the run is too short, or the model could not summarise \
                 it (see the trace)"
                    .to_owned(),
            ),
        }
    }

    /// Replaces the older part of the conversation by a handoff summary the model writes, with
    /// every opaque identifier of that part checked and put back where it dropped one. `Err(None)`
    /// when it could not be done (the builder trims instead); `Err(Some(_))` when the run must
    /// stop (Ctrl-C).
    async fn compact(
        &mut self,
        state: &mut State,
        trigger: Trigger,
    ) -> Result<Compacted, Option<Status>> {
        use warden_context::compaction;
        let end = if trigger == Trigger::Handoff {
            state.items.len()
        } else {
            compaction::cut(&state.items)
        };
        if end <= 2 {
            // Handed off already, nothing since: the summary there is the handoff.
            if let (Trigger::Handoff, [_, Item::User { text }]) = (trigger, state.items.as_slice())
                && let Some(summary) = compaction::summary_of(text)
            {
                return Ok(Compacted {
                    messages: 0,
                    summary: summary.to_owned(),
                    restored: Vec::new(),
                });
            }
            return Err(None);
        }
        let range = state.items[1..end].to_vec();
        let mut text = compaction::render(&range);
        // The request must fit the window itself: the oldest part goes first (its identifiers
        // are put back from the range by the repair anyway).
        let room = usize::try_from(window(self.settings).saturating_mul(2)).unwrap_or(usize::MAX);
        if text.len() > room {
            let mut from = text.len() - room;
            while !text.is_char_boundary(from) {
                from += 1;
            }
            text = format!("[… the oldest part is left out …]\n{}", &text[from..]);
        }
        let request = Request {
            system: compaction::PROMPT.to_owned(),
            items: vec![Item::User { text }],
            tools: Vec::new(),
            max_output_tokens: 4096,
        };
        let interrupt = self.interrupt.clone();
        let (mut quiet, mut no_notice) = (|_| {}, |_| {});
        let turn = tokio::select! {
            turn = self.client.complete(&request, &mut quiet, &mut no_notice) => turn,
            () = interrupt.wait() => return Err(Some(Status::Interrupted)),
        };
        let turn = match turn {
            Ok(turn) => turn,
            Err(err) => {
                self.trace(
                    "compaction_failed",
                    &json!({"trigger": trigger.as_str(), "error": err.to_string()}),
                );
                return Err(None);
            }
        };
        self.account(state, &request, &turn, 0);
        let (summary, restored) = compaction::repair(&turn.text, &range);
        state
            .items
            .splice(1..end, [compaction::summary_item(&summary, range.len())]);
        state.compactions += 1;
        // The stored conversation is rewritten from the start.
        self.saved_items.set(0);
        let data = json!({
            "trigger": trigger.as_str(),
            "messages": range.len(),
            "summaryChars": summary.len(),
            "restoredIdentifiers": restored,
        });
        // The trace keeps what was put back; the stream says how much.
        self.trace("compaction", &data);
        self.sink.event(&Event::Compaction {
            trigger,
            messages: range.len(),
            restored: restored.len(),
        });
        self.save(state, "running")
            .map_err(|why| Some(Status::Error(why)))?;
        Ok(Compacted {
            messages: range.len(),
            summary,
            restored,
        })
    }

    /// Adds a turn's tokens and cost; learns the estimate's calibration from the provider's
    /// count, and estimates where the provider gave none.
    fn account(
        &self,
        state: &mut State,
        request: &Request,
        turn: &warden_model::Turn,
        estimated: u64,
    ) {
        let mut usage = turn.usage;
        // Learn how the estimate compares with the provider's own count.
        state.calibration =
            warden_context::calibrate(state.calibration, estimated, usage.input_tokens);
        if usage.total() == 0 {
            // Some servers report no usage: the budgets count an estimate instead.
            let plain = warden_context::Tokens::estimate(1.0);
            let item_tokens = |item: &Item| warden_context::item_tokens(item, &plain);
            usage.input_tokens =
                plain.count(&request.system) + request.items.iter().map(item_tokens).sum::<u64>();
            usage.output_tokens = item_tokens(&Item::Assistant {
                text: turn.text.clone(),
                calls: turn.calls.clone(),
            });
        }
        state.usage.add(usage);
        state.cost_usd += self.cost(usage);
    }

    fn cost(&self, usage: warden_model::Usage) -> f64 {
        let spec = self.client.spec();
        let prices = &self.settings.model.prices;
        let Some(price) = prices
            .get(&spec.model)
            .or_else(|| prices.get(&spec.label()))
        else {
            return 0.0;
        };
        #[allow(clippy::cast_precision_loss)]
        let cost = (usage.input_tokens as f64 * price.input_per_mtok
            + usage.output_tokens as f64 * price.output_per_mtok)
            / 1_000_000.0;
        cost
    }

    /// Checks, approves, runs and records the calls of one turn, in order; read-only calls that
    /// follow each other run at once. `Some` when the run must stop.
    #[allow(clippy::too_many_lines)]
    fn calls(&mut self, state: &mut State, calls: &[ToolCall]) -> Option<Status> {
        let mut new_rules: Vec<String> = Vec::new();
        let mut stop: Option<Status> = None;
        // Decide every call first (asking where needed), then run.
        let mut prepared: Vec<Prepared> = Vec::new();
        // One runner decides, runs and records the turn's calls. A session approval given now
        // changes the engine for the turns after (the runner keeps the one it decided with).
        let engine = Arc::clone(&self.engine);
        let mut runner = match ToolRunner::new(
            self.registry,
            self.ctx,
            &engine,
            Some(self.store),
            self.session.clone(),
        ) {
            Ok(r) => r.with_on_ask(self.on_ask),
            Err(err) => return Some(Status::Error(format!("the trace: {err}"))),
        };
        for call in calls {
            if stop.is_none() {
                if self.interrupt.raised() {
                    stop = Some(Status::Interrupted);
                } else if self
                    .budgets
                    .max_tool_calls
                    .is_some_and(|m| state.tool_calls >= m)
                {
                    stop = Some(Status::BudgetExhausted(format!(
                        "max_tool_calls ({})",
                        state.tool_calls
                    )));
                }
            }
            if let Some(status) = &stop {
                let why = match status {
                    Status::Interrupted => "interrupted: the run was stopped before this call",
                    _ => "not run: the run's budget of tool calls is spent",
                };
                prepared.push(Prepared::Answered(call.clone(), Err(why.to_owned())));
                continue;
            }
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
            if call.name == UPDATE_PLAN {
                let answer = args.and_then(|a| extra::update_plan(state, &a));
                prepared.push(Prepared::Answered(call.clone(), answer));
                continue;
            }
            if call.name == crate::skills::SKILL {
                let answer = args.and_then(|a| self.skill_call(state, &a));
                prepared.push(Prepared::Answered(call.clone(), answer));
                continue;
            }
            if call.name == REQUEST_PERMISSION {
                let answer = args
                    .and_then(|a| extra::permission(&a))
                    .and_then(|(rule, reason)| self.permission(&rule, &reason, &mut new_rules));
                prepared.push(Prepared::Answered(call.clone(), answer));
                continue;
            }
            let mut checked = match args {
                Ok(args) => runner.check(&call.name, args),
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
            if checked.needs_approval() {
                self.approve(&mut checked, &mut new_rules);
            }
            prepared.push(Prepared::Checked(call.clone(), Box::new(checked)));
        }
        for rule in &new_rules {
            if Arc::make_mut(&mut self.engine)
                .allow_for_session(rule)
                .is_ok()
                && !state.session_rules.contains(rule)
            {
                state.session_rules.push(rule.clone());
            }
        }
        let executor = runner.executor();
        // Runs of read-only, allowed calls go together; everything else one by one.
        let mut index = 0;
        while index < prepared.len() {
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
            let mut end = index + 1;
            if parallel(&prepared[index]) {
                while end < prepared.len() && parallel(&prepared[end]) {
                    end += 1;
                }
            }
            if self.interrupt.raised() && stop.is_none() {
                stop = Some(Status::Interrupted);
            }
            let group = &prepared[index..end];
            if stop.is_none() {
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
            }
            let results: Vec<Option<ToolResult>> = if stop.is_some() {
                group.iter().map(|_| None).collect()
            } else {
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
                                (Prepared::Checked(_, checked), None) => {
                                    Some(executor.execute(checked))
                                }
                                (Prepared::Answered(..), None) => None,
                            })
                            .collect()
                    })
                })
            };
            for (p, result) in prepared[index..end].iter().zip(results) {
                if let Err(why) = self.observe(state, &mut runner, p, result) {
                    return Some(Status::Error(why));
                }
            }
            index = end;
        }
        stop
    }

    /// Records one call's result, hands it to the model's conversation and saves.
    fn observe(
        &mut self,
        state: &mut State,
        runner: &mut ToolRunner<'_>,
        prepared: &Prepared,
        result: Option<ToolResult>,
    ) -> Result<(), String> {
        let cap = usize::try_from(self.settings.context.tool_output_tokens.saturating_mul(4))
            .unwrap_or(usize::MAX);
        // What the model is sent, and what the stream says of it.
        let mut exit_code = None;
        let mut error = None;
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
                runner
                    .record((**checked).clone(), &result)
                    .map_err(|e| format!("recording a tool call in the trace: {e}"))?;
                // The working set from what the tools actually did.
                let ws = runner.working_set();
                let known = &mut state.working_set;
                known.files_read.extend(ws.files_read.iter().cloned());
                known.files_edited.extend(ws.files_edited.iter().cloned());
                if call.name == "bash" {
                    let command = checked.args.get("command").and_then(Value::as_str);
                    exit_code = result
                        .output
                        .as_ref()
                        .and_then(|o| o.get("exitCode"))
                        .and_then(Value::as_i64);
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
                (call, content, CallStatus::from(result.status), is_error)
            }
        };
        let content = match prepared {
            // What the tools return is data from outside: labelled, secrets redacted.
            Prepared::Checked(call, checked) => {
                let source = format!("{} {}", call.name, short(&checked.args.to_string(), 160));
                self.shield.wrap(&source, &cap_output(content, cap))
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
        state.items.push(Item::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
        });
        state.pending.retain(|id| *id != call.id);
        self.save(state, "running")
    }
}

/// A call ready to run, or already answered by the loop itself.
enum Prepared {
    Checked(ToolCall, Box<Checked>),
    Answered(ToolCall, Result<Value, String>),
}

/// A refusal or failure as the model gets it.
fn error_content(why: &str) -> String {
    json!({"error": {"message": why}}).to_string()
}

/// At most `max` characters of `text`, on one line.
fn short(text: &str, max: usize) -> String {
    let mut cut: String = text.chars().take(max).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut.replace('\n', " ")
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
