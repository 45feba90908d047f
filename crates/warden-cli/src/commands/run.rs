//! `warden run`, `warden resume` and `warden sessions` — a CLI contract: flags, JSON events and
//! exit codes are stable (0 finished, 1 error, 2 usage or no model, 3 budget, 130 Ctrl-C).

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::anyhow;
use serde_json::json;
use warden_agent::{Agent, Budgets, Human, Interrupt, JsonLines, Sink, State, Status, Terminal};
use warden_config::{PermissionMode, RawSettings, Settings};
use warden_model::{Client, Item, SelectError};
use warden_policy::Engine;
use warden_protocol::SessionId;
use warden_tools::{OnAsk, Registry, ToolContext};
use warden_trace::AgentSession;

use super::{load_settings_with, open_trace, print_json};
use crate::args::{AgentArgs, CompactArgs, ContextShowArgs, ResumeArgs, SessionsArgs};
use crate::{CliError, Exit};

/// The most tokens one answer may take.
const MAX_OUTPUT_TOKENS: u32 = 8192;

pub(super) fn run(dir: Option<PathBuf>, args: &AgentArgs, prompt: &str) -> Result<Exit, CliError> {
    if prompt.trim().is_empty() {
        return Err(CliError::usage(anyhow!("the prompt is empty")));
    }
    let state = State {
        goal: prompt.to_owned(),
        items: vec![Item::User {
            text: prompt.to_owned(),
        }],
        ..State::default()
    };
    start(dir, args, SessionId::new(), state, None, 0, false)
}

/// A saved run: its header and its state, conversation included.
fn load(session: &SessionId) -> Result<(AgentSession, State), CliError> {
    let store = open_trace()?;
    let (header, saved) = store
        .agent_state(session)
        .map_err(CliError::failure)?
        .ok_or_else(|| {
            CliError::usage(anyhow!("no saved run {session} (see `warden sessions`)"))
        })?;
    let unreadable = |e: &dyn std::fmt::Display| {
        CliError::failure(anyhow!("the saved state of {session} is unreadable: {e}"))
    };
    let mut state: State = serde_json::from_value(saved).map_err(|e| unreadable(&e))?;
    for item in store.agent_items(session).map_err(CliError::failure)? {
        state
            .items
            .push(serde_json::from_value(item).map_err(|e| unreadable(&e))?);
    }
    Ok((header, state))
}

pub(super) fn resume(dir: Option<PathBuf>, args: &ResumeArgs) -> Result<Exit, CliError> {
    let session: SessionId = args.session.parse().map_err(CliError::usage)?;
    let (header, mut state) = load(&session)?;
    let saved_items = state.items.len();
    interrupted_calls(&mut state);
    match &args.prompt {
        Some(prompt) => state.items.push(Item::User {
            text: prompt.clone(),
        }),
        None if header.status == "finished" => {
            return Err(CliError::usage(anyhow!(
                "run {session} has finished; give a prompt to continue it"
            )));
        }
        None => {}
    }
    go_on(
        dir,
        &args.agent,
        session,
        state,
        &header,
        saved_items,
        false,
    )
}

/// Runs a saved run again (or compacts it), in its own directory unless told otherwise, with
/// its own model.
fn go_on(
    dir: Option<PathBuf>,
    agent: &AgentArgs,
    session: SessionId,
    state: State,
    header: &AgentSession,
    saved_items: usize,
    compact_only: bool,
) -> Result<Exit, CliError> {
    let dir = dir.or_else(|| Some(PathBuf::from(&header.cwd)));
    let model = Some(header.model.clone());
    start(dir, agent, session, state, model, saved_items, compact_only)
}

/// `warden compact SESSION`: the saved run's older part becomes a handoff summary now.
pub(super) fn compact(dir: Option<PathBuf>, args: &CompactArgs) -> Result<Exit, CliError> {
    let session: SessionId = args.session.parse().map_err(CliError::usage)?;
    let (header, state) = load(&session)?;
    let saved_items = state.items.len();
    go_on(dir, &args.agent, session, state, &header, saved_items, true)
}

/// Calls that were running when the process died get an answer saying so: never run again
/// behind the model's back.
fn interrupted_calls(state: &mut State) {
    let pending = std::mem::take(&mut state.pending);
    let names: Vec<(String, String)> = state
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Assistant { calls, .. } => Some(calls),
            _ => None,
        })
        .flatten()
        .map(|c| (c.id.clone(), c.name.clone()))
        .collect();
    for id in pending {
        let name = names
            .iter()
            .find(|(i, _)| *i == id)
            .map_or_else(|| "unknown".to_owned(), |(_, n)| n.clone());
        state.items.push(Item::ToolResult {
            call_id: id,
            name,
            content: json!({"error": {"kind": "interrupted", "message":
                "interrupted: warden stopped while this call was running or about to run; it \
                 was not run again — check its effects before repeating it"}})
            .to_string(),
            is_error: true,
        });
    }
}

fn cli_layer(args: &AgentArgs) -> Result<RawSettings, CliError> {
    let mut raw = RawSettings::default();
    let permissions = raw.permissions.get_or_insert_with(Default::default);
    if let Some(mode) = &args.mode {
        let mode: PermissionMode = mode
            .parse()
            .map_err(|e| CliError::usage(anyhow!("--mode: {e}")))?;
        permissions.mode = Some(mode);
    }
    if !args.allow.is_empty() {
        permissions.allow = Some(args.allow.clone());
    }
    if !args.deny.is_empty() {
        permissions.deny = Some(args.deny.clone());
    }
    if let Some(window) = args.context_window {
        raw.context
            .get_or_insert_with(Default::default)
            .window_tokens = Some(window);
    }
    Ok(raw)
}

fn budgets(settings: &Settings, args: &AgentArgs) -> Budgets {
    let b = &settings.budgets;
    Budgets {
        max_tokens: b.max_tokens,
        max_cost_usd: args.max_cost.or(b.max_cost_usd),
        max_wall_seconds: b.max_wall_seconds,
        max_tool_calls: b.max_tool_calls,
        max_turns: args.max_turns.or(b.max_turns),
    }
}

#[allow(clippy::too_many_lines)]
fn start(
    dir: Option<PathBuf>,
    args: &AgentArgs,
    session: SessionId,
    mut state: State,
    saved_model: Option<String>,
    saved_items: usize,
    compact_only: bool,
) -> Result<Exit, CliError> {
    let settings =
        load_settings_with(dir, cli_layer(args)?).map_err(|e| CliError::usage(e.error))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::failure)?;
    let env = |name: &str| std::env::var(name).ok();
    let wanted = args.model.clone().or(saved_model);
    // A resumed run keeps its endpoint unless told otherwise.
    let base_url = args.base_url.clone().or_else(|| state.base_url.clone());
    let spec = runtime
        .block_on(warden_model::select(
            wanted.as_deref(),
            base_url.as_deref(),
            &settings,
            &env,
        ))
        .map_err(|e| match e {
            SelectError::NoneFound | SelectError::Unknown(_) => CliError::usage(anyhow!(e)),
        })?;
    state.base_url = Some(spec.base_url.clone());
    let client = Client::new(spec).map_err(CliError::failure)?;
    let registry = Registry::builtin().map_err(CliError::failure)?;
    let mut ctx = ToolContext::from_settings(&settings).map_err(CliError::usage)?;
    if let Ok(helper) = super::sandbox_helper() {
        ctx = ctx.with_sandbox_helper(helper);
    }
    let mut engine = Engine::from_settings(&settings).map_err(CliError::usage)?;
    for rule in &state.session_rules {
        engine.allow_for_session(rule).map_err(CliError::failure)?;
    }
    let store = open_trace()?;
    let interactive =
        !args.json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let terminal = Terminal;
    let on_ask = match args.on_ask.as_deref() {
        Some("allow") => OnAsk::Allow,
        _ => OnAsk::Deny,
    };
    let mut json_sink = JsonLines;
    let mut human = Human::default();
    let sink: &mut dyn Sink = if args.json {
        &mut json_sink
    } else {
        &mut human
    };
    let interrupt = Arc::new(Interrupt::default());
    {
        let interrupt = interrupt.clone();
        runtime.spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                interrupt.raise();
                warden_sandbox::kill_running();
            }
        });
    }
    sink.event(
        "session_started",
        &json!({
            "sessionId": session.as_str(),
            "model": client.spec().label(),
            "cwd": settings.cwd,
            "mode": settings.permissions.mode.to_string(),
            "resumed": state.turns > 0,
        }),
    );
    let mut agent = Agent {
        settings: &settings,
        client: &client,
        registry: &registry,
        ctx: &ctx,
        engine: Arc::new(engine),
        store: &store,
        session,
        on_ask,
        approver: interactive.then_some(&terminal as &dyn warden_agent::Approver),
        budgets: budgets(&settings, args),
        sink,
        interrupt,
        network: settings.sandbox.network.mode == "on",
        max_output_tokens: MAX_OUTPUT_TOKENS,
        saved_items: std::cell::Cell::new(saved_items),
        shield: warden_context::Shield::from_env(std::env::vars()),
    };
    if compact_only {
        let compacted = runtime.block_on(agent.compact_now(&mut state));
        drop(agent);
        runtime.shutdown_background();
        return match compacted {
            Ok(()) => {
                println!("compacted: {} messages now", state.items.len());
                Ok(Exit::Success)
            }
            Err(why) => Err(CliError::failure(anyhow!(why))),
        };
    }
    let status = runtime.block_on(agent.run(&mut state));
    drop(agent);
    // Background commands end with the session.
    ctx.jobs.stop_all();
    runtime.shutdown_background();
    Ok(match status {
        Status::Finished => Exit::Success,
        Status::BudgetExhausted(_) => Exit::Code(3),
        Status::Interrupted => Exit::Code(130),
        Status::Error(why) => {
            eprintln!("warden: error: {why}");
            Exit::Failure
        }
    })
}

/// `warden context show`: what the next call of a saved run would contain, per layer.
pub(super) fn context_show(dir: Option<PathBuf>, args: &ContextShowArgs) -> Result<Exit, CliError> {
    let session: SessionId = args.session.parse().map_err(CliError::usage)?;
    let (header, state) = load(&session)?;
    let mut raw = RawSettings::default();
    if let Some(window) = args.context_window {
        raw.context
            .get_or_insert_with(Default::default)
            .window_tokens = Some(window);
    }
    let dir = dir.or_else(|| Some(PathBuf::from(&header.cwd)));
    let settings = load_settings_with(dir, raw).map_err(|e| CliError::usage(e.error))?;
    let registry = Registry::builtin().map_err(CliError::failure)?;
    let tools = warden_agent::tool_defs(&registry);
    let network = settings.sandbox.network.mode == "on";
    let model = header.model.rsplit('/').next().unwrap_or(&header.model);
    let (_, built) = warden_agent::context(&settings, &state, &tools, network, model);
    let report = &built.report;
    if args.json {
        print_json(report)?;
        return Ok(Exit::Success);
    }
    println!(
        "window {} tokens, budget {}, this context {}{}",
        report.window,
        report.budget,
        report.total,
        if report.over_budget {
            " (over budget)"
        } else {
            ""
        }
    );
    println!(
        "{:<18} {:>8} {:>8} {:>6} {:>8} {:>8}",
        "layer", "budget", "used", "kept", "trimmed", "dropped"
    );
    for layer in &report.layers {
        println!(
            "{:<18} {:>8} {:>8} {:>6} {:>8} {:>8}",
            layer.name, layer.budget, layer.used, layer.kept, layer.trimmed, layer.dropped
        );
        for reason in &layer.reasons {
            println!("    {reason}");
        }
    }
    Ok(Exit::Success)
}

pub(super) fn sessions(args: &SessionsArgs) -> Result<Exit, CliError> {
    let store = open_trace()?;
    let sessions = store.agent_sessions().map_err(CliError::failure)?;
    if args.json {
        let list: Vec<_> = sessions
            .iter()
            .map(|s| {
                json!({
                    "sessionId": s.session_id.as_str(),
                    "status": s.status,
                    "model": s.model,
                    "cwd": s.cwd,
                    "goal": s.goal,
                    "startedAt": s.started_at,
                    "updatedAt": s.updated_at,
                })
            })
            .collect();
        print_json(&list)?;
        return Ok(Exit::Success);
    }
    for s in &sessions {
        let goal: String = s.goal.chars().take(60).collect();
        println!(
            "{}  {:<16}  {:<28}  {}  {}",
            s.session_id, s.status, s.model, s.updated_at, goal
        );
    }
    Ok(Exit::Success)
}
