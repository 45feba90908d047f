//! The agent: everything one run uses ([`Agent`]), how a run ends ([`Status`]), Ctrl-C
//! ([`Interrupt`]), and what every step shares — saving the session, recording and showing
//! events. The loop itself is in `turn.rs`, the call pipeline in `calls.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;
use warden_config::Settings;
use warden_model::{Client, ToolDef};
use warden_policy::Engine;
use warden_protocol::{Budgets, Event, RunStatus, SessionId};
use warden_tools::{OnAsk, Registry, ToolContext};
use warden_trace::{AgentSession, TraceStore};

use crate::approve::Approver;
use crate::output::Sink;
use crate::state::State;

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

/// Why the agent could not do what it was asked, outside a run's own ending (a run ends in a
/// [`Status`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgentError {
    /// The settings do not make an agent: a pattern, a rule or a path that does not parse.
    #[error("{0}")]
    Settings(String),
    /// The built-in tools could not be registered.
    #[error("the tools: {0}")]
    Tools(String),
    /// The session could not be saved to the trace.
    #[error("saving the session: {0}")]
    Save(String),
    /// A compaction was stopped (Ctrl-C), or the session could not be saved after it.
    #[error("compaction stopped: {}", .0.as_str())]
    CompactionStopped(Status),
    #[error(
        "nothing was compacted: the run is too short, or the model could not summarise it \
         (see the trace)"
    )]
    NothingCompacted,
}

/// Where a failure goes: a step that can fail says which, and its caller must handle both.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Flow {
    /// Back to the model as the call's error result; the turn goes on.
    ToModel(String),
    /// The run ends, with this status.
    End(Status),
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

/// Everything one run uses. Made by [`Agent::builder`].
pub struct Agent<'a> {
    pub(crate) settings: &'a Settings,
    pub(crate) client: &'a Client,
    pub(crate) registry: Arc<Registry>,
    pub(crate) ctx: Arc<ToolContext>,
    /// Shared with each turn's runner; changed (a session approval) only between turns.
    pub(crate) engine: Arc<Engine>,
    pub(crate) store: &'a TraceStore,
    pub(crate) session: SessionId,
    /// The answer when no person is asked.
    pub(crate) on_ask: OnAsk,
    /// A person to ask, on a terminal.
    pub(crate) approver: Option<&'a dyn Approver>,
    pub(crate) budgets: Budgets,
    pub(crate) sink: &'a mut dyn Sink,
    pub(crate) interrupt: Arc<Interrupt>,
    /// Whether commands have the network (for the prompt).
    pub(crate) network: bool,
    pub(crate) max_output_tokens: u32,
    /// How many items of the conversation are saved already (those loaded, on resume).
    pub(crate) saved_items: std::cell::Cell<usize>,
    /// Labels tool output as data and redacts secrets before the model sees it.
    pub(crate) shield: warden_context::Shield,
    /// The skills found for this project (`None` when skills are off).
    pub(crate) skills: Option<&'a warden_skills::Registry>,
    /// The session's MCP servers: a tool one adds is offered once a person approves it.
    pub(crate) mcp: Option<&'a warden_tools::McpServers>,
    /// The hooks of the settings (`[[hooks.EVENT]]`).
    pub(crate) hooks: warden_hooks::HookRunner,
    /// What hooks said about a call before it ran, for its result, by call id.
    pub(crate) hook_notes: std::collections::HashMap<String, Vec<String>>,
    /// The last event written to the transcript hooks read (it grows by what is new).
    pub(crate) transcript_seq: std::cell::Cell<u64>,
    /// Calls an organisation's hook (from the managed settings) asked about: only the
    /// organisation's own hooks may answer them.
    pub(crate) asked_by_org: std::collections::HashSet<String>,
    /// How many times in a row `Stop` hooks sent the model back to work.
    pub(crate) stop_blocks: u32,
    /// Whether `SessionStart` hooks ran (once per agent, however many prompts it takes).
    pub(crate) opened: bool,
}

impl Agent<'_> {
    /// The session this agent runs.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// Ctrl-C for this agent: raise it to stop the run at its next step.
    pub fn interrupt(&self) -> &Arc<Interrupt> {
        &self.interrupt
    }

    /// The tools its commands run with (background jobs included), shared.
    pub fn tool_context(&self) -> Arc<ToolContext> {
        Arc::clone(&self.ctx)
    }

    /// The tools the model is offered.
    pub fn tools(&self) -> Vec<ToolDef> {
        self.tool_defs()
    }

    /// The skills found for the project, when skills are on.
    pub fn skills(&self) -> Option<&warden_skills::Registry> {
        self.skills
    }

    pub(crate) fn tool_defs(&self) -> Vec<ToolDef> {
        crate::owned::tool_defs(
            &self.registry,
            self.skills.is_some_and(|r| !r.skills.is_empty()),
        )
    }

    /// Saves the state and the conversation items not saved yet.
    pub fn save(&self, state: &State, status: &str) -> Result<(), AgentError> {
        let header = AgentSession {
            session_id: self.session.clone(),
            started_at: String::new(),
            updated_at: String::new(),
            status: status.to_owned(),
            model: self.client.spec().label(),
            cwd: self.settings.cwd.display().to_string(),
            goal: state.goal.clone(),
        };
        let value = serde_json::to_value(state).map_err(|e| AgentError::Save(e.to_string()))?;
        let first = self.saved_items.get().min(state.items.len());
        let new = state.items[first..]
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| AgentError::Save(e.to_string()))?;
        self.store
            .save_agent_state(&self.session, &header, &value, first, &new)
            .map_err(|e| AgentError::Save(e.to_string()))?;
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
}
