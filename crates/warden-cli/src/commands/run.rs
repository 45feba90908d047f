//! `warden run`, `warden resume` and `warden sessions` — a CLI contract: flags, JSON events and
//! exit codes are stable (0 finished, 1 error, 2 usage or no model, 3 budget, 130 Ctrl-C).

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::anyhow;
use serde_json::json;
use warden_agent::{
    Agent, Budgets, Compacted, Event, Interrupt, Quiet, Sink, State, Terminal, Trigger,
};
use warden_config::{PermissionMode, RawSettings, Settings};
use warden_model::{Client, Item, SelectError};
use warden_policy::Engine;
use warden_protocol::SessionId;
use warden_tools::{OnAsk, ToolContext};
use warden_trace::AgentSession;

use super::{open_trace, print_json};
use crate::args::{AgentArgs, CompactArgs, ResumeArgs, SessionsArgs};
use crate::{CliError, Exit};

/// What a started agent does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Runs until the model is done, then (interactive) asks for more.
    Run { interactive: bool },
    /// Compacts the saved run and stops (`warden compact`, `warden handoff`).
    Compact(Trigger),
}

pub(super) fn run(
    dir: Option<PathBuf>,
    args: &AgentArgs,
    prompt: Option<&str>,
    manifest: Option<&std::path::Path>,
) -> Result<Exit, CliError> {
    let on_terminal = std::io::stdin().is_terminal();
    let prompt = match prompt {
        Some(prompt) => Some(prompt.to_owned()),
        // No task on a terminal: an interactive session, whose first line is the task.
        None if on_terminal && !args.json => None,
        None => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|e| {
                CliError::usage(anyhow!("reading the task from standard input: {e}"))
            })?;
            Some(text)
        }
    };
    if prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(CliError::usage(anyhow!("the prompt is empty")));
    }
    let state = State {
        goal: prompt.clone().unwrap_or_default(),
        items: prompt
            .iter()
            .map(|text| Item::User { text: text.clone() })
            .collect(),
        ..State::default()
    };
    let interactive = args.interactive || prompt.is_none();
    let session = SessionId::new();
    let governed = match manifest {
        Some(file) => Some(super::manifest_run::prepare_session(
            dir.clone(),
            file,
            &session,
        )?),
        None => None,
    };
    start(
        dir,
        args,
        session,
        state,
        Saved::default(),
        Mode::Run { interactive },
        governed,
    )
}

/// What a saved run brings back: its model, and how many of its items are stored already.
#[derive(Debug, Default)]
struct Saved {
    model: Option<String>,
    items: usize,
}

/// A saved run: its header and its state, conversation included.
pub(super) fn load(session: &SessionId) -> Result<(AgentSession, State), CliError> {
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
        // On a terminal a finished run goes on with what is typed next.
        None if header.status == "finished" && args.agent.interactive => {}
        None if header.status == "finished" => {
            return Err(CliError::usage(anyhow!(
                "run {session} has finished; give a prompt to continue it"
            )));
        }
        None => {}
    }
    let interactive = args.agent.interactive;
    let mode = Mode::Run { interactive };
    go_on(dir, &args.agent, session, state, &header, saved_items, mode)
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
    mode: Mode,
) -> Result<Exit, CliError> {
    let dir = dir.or_else(|| Some(PathBuf::from(&header.cwd)));
    let saved = Saved {
        model: Some(header.model.clone()),
        items: saved_items,
    };
    start(dir, agent, session, state, saved, mode, None)
}

/// `warden compact SESSION`: the saved run's older part becomes a handoff summary now.
/// `warden handoff SESSION`: all of it does, and the summary is printed for the next agent.
pub(super) fn compact(
    dir: Option<PathBuf>,
    args: &CompactArgs,
    handoff: bool,
) -> Result<Exit, CliError> {
    let session: SessionId = args.session.parse().map_err(CliError::usage)?;
    let (header, state) = load(&session)?;
    let saved_items = state.items.len();
    let trigger = if handoff {
        Trigger::Handoff
    } else {
        Trigger::Manual
    };
    let mode = Mode::Compact(trigger);
    go_on(dir, &args.agent, session, state, &header, saved_items, mode)
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

fn start(
    dir: Option<PathBuf>,
    args: &AgentArgs,
    session: SessionId,
    mut state: State,
    saved: Saved,
    mode: Mode,
    mut governed: Option<super::manifest_run::Governed>,
) -> Result<Exit, CliError> {
    state.pin(&args.pin);
    // Under a manifest the session works in the run's worktree.
    let dir = governed.as_ref().map_or(dir, |g| Some(g.work_dir.clone()));
    // An untrusted project whose files would widen something: asked once, on a terminal.
    let asking = !args.json && governed.is_none() && matches!(mode, Mode::Run { .. });
    let mut settings = super::trust::settings_for_run(dir, &cli_layer(args)?, asking)?;
    if let Some(g) = &governed {
        g.govern(&mut settings);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::failure)?;
    let client = model(&runtime, args, &mut state, saved.model, &settings)?;
    let store = open_trace()?;
    if !settings.trust.ignored.is_empty() {
        let _ = store.record_agent_event(
            &session,
            "settings_ignored",
            &super::trust::ignored_event(&settings),
        );
    }
    let skills = super::skills::registry(&settings);
    let interactive =
        !args.json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let (ctx, mut engine) = tools(&settings, &state, &session, interactive, governed.as_ref())?;
    let on_ask = match args.on_ask.as_deref() {
        Some("allow") => OnAsk::Allow,
        _ => OnAsk::Deny,
    };
    let mut json_sink = crate::print::JsonLines;
    // An interactive session keeps what the last command printed for `/last`.
    let last = crate::print::Last::default();
    let mut human = match mode {
        Mode::Run { interactive: true } => crate::print::Human::keeping(last.clone()),
        _ => crate::print::Human::default(),
    };
    let mut quiet = Quiet;
    let sink: &mut dyn Sink = match mode {
        // Compacting prints its own result only.
        Mode::Compact(_) => &mut quiet,
        Mode::Run { .. } if args.json => &mut json_sink,
        Mode::Run { .. } => &mut human,
    };
    let interrupt = on_ctrl_c(&runtime);
    sink.event(&Event::SessionStarted {
        session_id: session.as_str().to_owned(),
        model: client.spec().label(),
        cwd: settings.cwd.clone(),
        mode: settings.permissions.mode.to_string(),
        resumed: state.turns > 0,
    });
    let terminal = Terminal;
    // The MCP servers of the settings run for the session: their tools join the built-ins.
    let mut registry = warden_tools::Registry::builtin().map_err(CliError::failure)?;
    let mcp = warden_tools::McpServers::start(&ctx, &mut registry);
    for tool in &mcp.read_only {
        engine.trust_read_only_hint(tool);
    }
    for problem in &mcp.problems {
        eprintln!("warden: {}", warden_protocol::printable_text(problem));
        let _ = store.record_agent_event(
            &session,
            "mcp_problem",
            &serde_json::json!({ "problem": problem }),
        );
    }
    let mut agent = Agent::builder(&settings, &client, &store, session)
        .registry(registry)
        .tool_context(ctx)
        .engine(engine)
        .on_ask(on_ask)
        .approver(interactive.then_some(&terminal as &dyn warden_agent::Approver))
        .budgets(budgets(&settings, args))
        .sink(sink)
        .interrupt(interrupt)
        .saved_items(saved.items)
        .skills(skills.as_ref())
        .shield(shield(&settings))
        .mcp(Some(&mcp))
        .build()
        .map_err(|e| match e {
            warden_agent::AgentError::Settings(_) => CliError::usage(anyhow!(e)),
            _ => CliError::failure(anyhow!(e)),
        })?;
    let exit = drive(&runtime, &mut agent, &mut state, mode, args.json, &last);
    let ctx = agent.tool_context();
    drop(agent);
    drop(mcp);
    // Background commands end with the session.
    ctx.jobs.stop_all();
    runtime.shutdown_background();
    let exit = exit?;
    if let Some(g) = governed.take() {
        return g.finish(&ctx, exit, args.json);
    }
    Ok(exit)
}

/// What is redacted before the model sees it: the environment's secrets, and the tokens of the
/// MCP servers logged in to (a server could echo its own back).
pub(super) fn shield(settings: &Settings) -> warden_context::Shield {
    let mut secrets: Vec<(String, String)> = std::env::vars().collect();
    if let Some(data_dir) = settings.dirs.data_dir.as_deref() {
        let store = warden_mcp::oauth::store::TokenStore::new(data_dir);
        for name in settings.mcp.servers.keys() {
            if let Ok(Some(tokens)) = store.get(name) {
                secrets.push((format!("MCP_TOKEN_{name}"), tokens.access_token));
                if let Some(refresh) = tokens.refresh_token {
                    secrets.push((format!("MCP_REFRESH_TOKEN_{name}"), refresh));
                }
            }
        }
    }
    warden_context::Shield::from_env(secrets)
}

/// The model to ask: `--model`, else the saved run's, else the settings'; a resumed run keeps
/// its endpoint unless told otherwise.
fn model(
    runtime: &tokio::runtime::Runtime,
    args: &AgentArgs,
    state: &mut State,
    saved_model: Option<String>,
    settings: &Settings,
) -> Result<Client, CliError> {
    let env = |name: &str| std::env::var(name).ok();
    let wanted = args.model.clone().or(saved_model);
    let base_url = args
        .base_url
        .clone()
        .or_else(|| state.base_url.clone().filter(|_| state.base_url_given));
    let spec = runtime
        .block_on(warden_model::select(
            wanted.as_deref(),
            base_url.as_deref(),
            settings,
            &env,
        ))
        .map_err(|e| match e {
            SelectError::NoneFound | SelectError::Unknown(_) => CliError::usage(anyhow!(e)),
        })?;
    state.base_url = Some(spec.base_url.clone());
    state.base_url_given = base_url.is_some();
    Client::new(spec).map_err(CliError::failure)
}

/// What the tools run with (the sandbox helper, the trace of connections, the manifest's
/// sandbox or an allowlist's proxy) and the policy engine, the session's approvals in it.
fn tools(
    settings: &Settings,
    state: &State,
    session: &SessionId,
    interactive: bool,
    governed: Option<&super::manifest_run::Governed>,
) -> Result<(ToolContext, Engine), CliError> {
    let mut ctx = ToolContext::from_settings(settings).map_err(CliError::usage)?;
    if let Ok(helper) = super::sandbox_helper() {
        ctx = ctx.with_sandbox_helper(helper);
    }
    ctx = ctx.for_session();
    if interactive {
        super::mcp_form::on_terminal(&mut ctx);
    }
    let mut engine = Engine::from_settings(settings).map_err(CliError::usage)?;
    for rule in &state.session_rules {
        engine.allow_for_session(rule).map_err(CliError::failure)?;
    }
    ctx = ctx.with_egress_sink(warden_tools::egress::trace_sink(session.clone()));
    if let Some(g) = governed {
        ctx = g.tools(ctx);
    } else if settings.sandbox.network.mode == warden_config::NetworkMode::Allowlist {
        let sink = warden_tools::egress::trace_sink(session.clone());
        let ask = interactive.then(|| network_asker(settings, &engine));
        let proxy = warden_tools::egress::start(settings, &[], &[], sink, ask)
            .map_err(|e| CliError::usage(anyhow!(e)))?;
        ctx = ctx.with_egress(proxy);
    }
    Ok((ctx, engine))
}

/// Ctrl-C raises the returned flag and kills the commands running. The handler is in place
/// from here on, before any prompt is shown: a listener made inside the spawned task would
/// only be registered once the runtime first ran it.
fn on_ctrl_c(runtime: &tokio::runtime::Runtime) -> Arc<Interrupt> {
    let interrupt = Arc::new(Interrupt::default());
    let _entered = runtime.enter();
    let listener = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
    let raise = interrupt.clone();
    runtime.spawn(async move {
        let Some(mut listener) = listener else {
            return;
        };
        while listener.recv().await.is_some() {
            raise.raise();
            warden_sandbox::kill_running();
        }
    });
    interrupt
}

/// Runs the agent as `mode` says, or compacts its session and prints the result.
fn drive(
    runtime: &tokio::runtime::Runtime,
    agent: &mut Agent<'_>,
    state: &mut State,
    mode: Mode,
    json: bool,
    last: &crate::print::Last,
) -> Result<Exit, CliError> {
    match mode {
        Mode::Compact(trigger) => match runtime.block_on(agent.compact_now(state, trigger)) {
            Ok(done) if trigger == Trigger::Handoff => {
                print_handoff(agent.session(), &done, json)?;
                Ok(Exit::Success)
            }
            Ok(_) => {
                println!("compacted: {} messages now", state.items.len());
                Ok(Exit::Success)
            }
            Err(why) => Err(CliError::failure(anyhow!(why))),
        },
        Mode::Run { interactive } => {
            // Nothing to answer yet: an interactive session that starts with a prompt, or a
            // finished run resumed to go on interactively.
            let waiting = match state.items.last() {
                None => false,
                Some(Item::Assistant { calls, .. }) => !calls.is_empty(),
                Some(_) => true,
            };
            let mut reason = "finished".to_owned();
            let mut exit = if waiting {
                let status = runtime.block_on(agent.run(state));
                status.as_str().clone_into(&mut reason);
                super::exit_of(status)
            } else {
                Exit::Success
            };
            if interactive {
                exit = super::repl::session(runtime, agent, state, exit, last);
                "prompt_input_exit".clone_into(&mut reason);
            }
            agent.close(&reason);
            Ok(exit)
        }
    }
}

/// Who decides about a host the allowlist does not name, during an interactive run: the policy
/// engine first (a `WebFetch(domain:…)` deny refuses it), then the person at the terminal —
/// once, for the session, or always (the rule remembered in warden's own `remembered.toml`).
fn network_asker(settings: &Settings, engine: &Engine) -> warden_netproxy::Ask {
    use warden_agent::{Answer, Approver as _, Question};
    use warden_netproxy::Answer as NetAnswer;
    let engine = engine.clone();
    let settings = settings.clone();
    std::sync::Arc::new(move |host: &str, port: u16| {
        let url = format!("https://{host}:{port}/");
        let verdict = engine.check(&warden_policy::Action::Fetch(url));
        if verdict.decision.decision == warden_protocol::DecisionKind::Deny {
            return NetAnswer::Deny;
        }
        let rule = format!("WebFetch(domain:{host})");
        let standard = warden_netproxy::DEFAULT_PORTS.contains(&port);
        let decision = warden_protocol::Decision {
            reason: format!(
                "a command wants to reach {host}:{port}, which the network allowlist does not name"
            ),
            ..verdict.decision
        };
        let answer = Terminal.ask(&Question {
            tool: "network",
            arguments: &format!("{host}:{port}"),
            decision: &decision,
            rule: standard.then_some(rule.as_str()),
            preview: None,
            wider: None,
        });
        match answer {
            Answer::Once => NetAnswer::Once,
            Answer::Session | Answer::Wider { always: false } => NetAnswer::Session,
            Answer::Always | Answer::Wider { always: true } => {
                let _ = settings.remember(warden_config::RuleList::Allow, &rule);
                NetAnswer::Always
            }
            Answer::Deny(_) => NetAnswer::Deny,
        }
    })
}

/// The handoff summary: as text for the next agent, or JSON with its sections.
fn print_handoff(session: &SessionId, done: &Compacted, json: bool) -> Result<(), CliError> {
    if !json {
        print!("{}", done.summary);
        return Ok(());
    }
    let mut sections = serde_json::Map::new();
    let mut current: Option<(String, String)> = None;
    for line in done.summary.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            if let Some((name, body)) = current.take() {
                sections.insert(name, json!(body.trim()));
            }
            current = Some((heading.to_owned(), String::new()));
        } else if let Some((_, body)) = &mut current {
            body.push_str(line);
            body.push('\n');
        }
    }
    if let Some((name, body)) = current {
        sections.insert(name, json!(body.trim()));
    }
    print_json(&json!({
        "sessionId": session.as_str(),
        "messages": done.messages,
        "summary": done.summary,
        "sections": sections,
        "restoredIdentifiers": done.restored,
    }))
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
