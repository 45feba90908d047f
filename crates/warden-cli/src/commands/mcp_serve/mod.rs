//! `warden mcp serve`: warden's own tools offered to another agent over MCP (standard input and
//! output, or streamable HTTP on loopback), each call through the same registry, policy,
//! approvals, sandbox and trace as `warden run`'s; one session in the trace per connection,
//! named after its client.

mod answer;
mod form;
mod http;
mod progress;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::anyhow;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, Implementation, InitializeRequestParams,
    InitializeResult, InputRequest, InputRequiredResult, ListToolsResult, PaginatedRequestParams,
    RequestMetaObject, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use warden_agent::{Answer, Approver, Asking};
use warden_config::Settings;
use warden_policy::Engine;
use warden_protocol::{DecisionKind, Event, SessionId, ToolResult, ToolStatus};
use warden_tools::{OnAsk, Registry, ToolContext, ToolRunner};

use self::answer::{answer, instead};
use self::progress::Progress;
use super::open_trace;
use crate::{CliError, Exit};

/// The JSON Schema dialect warden's tool schemas are written in.
const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// What every connection shares.
struct Shared {
    settings: Settings,
    registry: Arc<Registry>,
    /// The policy as loaded, with the rules its users approved always since.
    engine: Mutex<Arc<Engine>>,
    on_ask: OnAsk,
    /// The questions put to 2026-07-28 clients, waiting for their answers.
    waiting: form::Waiting,
}

/// One connection: its session in the trace, the context its tools run with (a warm sandbox of
/// its own), and the rules its user approved for it.
struct Connection {
    session: SessionId,
    ctx: ToolContext,
    engine: Mutex<Arc<Engine>>,
    store: Mutex<warden_trace::TraceStore>,
    shield: warden_context::Shield,
}

impl Shared {
    /// A new connection; `client` says who it is (name, version, protocol revision).
    fn connection(&self, client: Option<Value>) -> Result<Connection, String> {
        let mut ctx = ToolContext::from_settings(&self.settings).map_err(|e| e.to_string())?;
        if let Ok(helper) = super::sandbox_helper() {
            ctx = ctx.with_sandbox_helper(helper);
        }
        let store = open_trace().map_err(|e| format!("{:#}", e.error))?;
        let session = SessionId::new();
        // The session is the client's: its name and version in the trace.
        if let Some(client) = client {
            let _ = store.record_agent_event(&session, "mcp_client", &client);
        }
        let engine = self
            .engine
            .lock()
            .map_err(|_| "the policy is unavailable".to_owned())?;
        Ok(Connection {
            session,
            ctx: ctx.for_session(),
            engine: Mutex::new(Arc::clone(&engine)),
            store: Mutex::new(store),
            shield: super::run::shield(&self.settings),
        })
    }
}

/// The MCP server of one connection.
struct Served {
    shared: Arc<Shared>,
    connection: OnceLock<Arc<Connection>>,
}

impl Served {
    fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            connection: OnceLock::new(),
        }
    }

    /// This connection's state: made at `initialize`. A request without one (2026-07-28's
    /// stateless requests) stands alone: a state of its own — its own context and jobs, no rule
    /// approved for another client's calls — and a session of its own in the trace, named after
    /// the client the request says it comes from.
    fn connection(&self, meta: &RequestMetaObject) -> Result<Arc<Connection>, ErrorData> {
        if let Some(connection) = self.connection.get() {
            return Ok(Arc::clone(connection));
        }
        let client = meta.client_info().map(|info| {
            json!({
                "name": info.name,
                "version": info.version,
                "protocolVersion": meta.protocol_version().map(|v| v.to_string()),
            })
        });
        self.shared
            .connection(client)
            .map(Arc::new)
            .map_err(|e| ErrorData::internal_error(e, None))
    }
}

impl ServerHandler for Served {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("warden", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "warden's tools: each call is checked by warden's policy, runs in its sandbox and \
                 is recorded in its trace. A refused call says why and what to ask for instead.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let connection = self
            .shared
            .connection(Some(json!({
                "name": request.client_info.name,
                "version": request.client_info.version,
                "protocolVersion": request.protocol_version.to_string(),
            })))
            .map_err(|e| ErrorData::internal_error(e, None))?;
        let _ = self.connection.set(Arc::new(connection));
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .shared
            .registry
            .specs()
            .map(|spec| {
                let mut schema = spec.parameters.as_object().cloned().unwrap_or_default();
                schema
                    .entry("$schema")
                    .or_insert_with(|| Value::String(DIALECT.to_owned()));
                Tool::new(spec.name.to_string(), spec.description.clone(), schema)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let meta = request.meta.clone().unwrap_or_else(|| context.meta.clone());
        let connection = self.connection(&meta)?;
        let (progress, sending) = Progress::new(&context, &meta);
        let name = request.name.to_string();
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let how = How::of(
            &self.shared,
            &context.peer,
            &meta,
            &request,
            &name,
            &arguments,
        )?;
        let (shared, peer) = (Arc::clone(&self.shared), context.peer.clone());
        let handle = tokio::runtime::Handle::current();
        let beat = progress.clone().beat();
        // A tool blocks (a command runs): on a thread of its own.
        let outcome = tokio::task::spawn_blocking(move || {
            call(
                &shared,
                &connection,
                &name,
                &arguments,
                how,
                &peer,
                &handle,
                &progress,
            )
        })
        .await;
        beat.abort();
        let _ = beat.await;
        // Every step said reaches the client before the result does.
        if let Some(sending) = sending {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), sending).await;
        }
        match outcome.map_err(|e| ErrorData::internal_error(e.to_string(), None))? {
            Ok(Called::Ran(result, instead)) => {
                Ok(CallToolResponse::Complete(answer(result, instead)))
            }
            Ok(Called::Asking(question, handle)) => {
                let question = serde_json::from_value(json!({
                    "method": "elicitation/create",
                    "params": question,
                }))
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let requests = [(form::KEY.to_owned(), InputRequest::Elicitation(question))];
                Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                    Some(requests.into_iter().collect()),
                    Some(handle),
                )))
            }
            Err(e) => Err(ErrorData::internal_error(e, None)),
        }
    }
}

/// How a call that needs approval is put to the client's user.
enum How {
    /// While the call waits (a client before 2026-07-28 that takes forms).
    Ask,
    /// In a second request (a 2026-07-28 client that takes forms): the question now.
    Later,
    /// The answer the client's user gave to the question `Later` put.
    Answered(Answer),
    /// Not at all: `--on-ask` answers.
    OnAsk,
}

impl How {
    fn of(
        shared: &Shared,
        peer: &rmcp::Peer<RoleServer>,
        meta: &RequestMetaObject,
        request: &CallToolRequestParams,
        name: &str,
        args: &Value,
    ) -> Result<Self, ErrorData> {
        if let Some(state) = &request.request_state {
            // An answer: to a question warden put, about this very call.
            if !shared.waiting.answered(state, name, args) {
                return Err(ErrorData::invalid_params(
                    "this answer is to no question warden is waiting on (unknown, expired, or \
                     about another call); call the tool again to be asked",
                    None,
                ));
            }
            let reply = request
                .input_responses
                .as_ref()
                .and_then(|r| r.get(form::KEY))
                .cloned()
                .unwrap_or(Value::Null);
            return Ok(Self::Answered(form::answer(&reply)));
        }
        // A stateless (2026-07-28) request says who sends it; a connection said it once.
        if let Some(version) = meta.protocol_version() {
            let forms = meta
                .client_capabilities()
                .is_some_and(|c| c.elicitation.is_some());
            return Ok(match (forms, version.as_str() >= "2026-07-28") {
                (false, _) => Self::OnAsk,
                (true, true) => Self::Later,
                (true, false) => Self::Ask,
            });
        }
        let Some(info) = peer.peer_info() else {
            return Ok(Self::OnAsk);
        };
        if info.capabilities.elicitation.is_none() {
            return Ok(Self::OnAsk);
        }
        let modern = info.protocol_version.as_str() >= "2026-07-28";
        Ok(if modern { Self::Later } else { Self::Ask })
    }
}

/// What became of a call.
enum Called {
    /// It ran, or was refused: its result, and what to ask for instead where it was refused.
    Ran(ToolResult, Option<String>),
    /// Its question for the client's user, and the handle the answer comes back with.
    Asking(Value, String),
}

/// Checks, approves, runs and records one call, on a thread of its own.
#[allow(clippy::too_many_arguments)]
fn call(
    shared: &Shared,
    connection: &Connection,
    name: &str,
    arguments: &Value,
    how: How,
    peer: &rmcp::Peer<RoleServer>,
    handle: &tokio::runtime::Handle,
    progress: &Progress,
) -> Result<Called, String> {
    let store = connection
        .store
        .lock()
        .map_err(|_| "the trace is unavailable".to_owned())?;
    let engine = Arc::clone(
        &*connection
            .engine
            .lock()
            .map_err(|_| "the policy is unavailable".to_owned())?,
    );
    let mut runner = ToolRunner::new(
        &shared.registry,
        &connection.ctx,
        &engine,
        Some(&store),
        connection.session.clone(),
    )
    .map_err(|e| e.to_string())?;
    if matches!(how, How::OnAsk) {
        runner = runner.with_on_ask(shared.on_ask);
    }
    let mut checked = runner.check(name, arguments.clone());
    // The user's hooks hold for calls through here too: `PreToolUse` narrows the decision.
    let hooks = warden_agent::ServedHooks::new(&shared.settings, connection.session.as_str());
    let call_id = format!("mcp_{}", SessionId::new());
    let held = shared.registry.held(name).is_some();
    // A client that takes no forms has `--on-ask` answer for it, a hook's ask included (never
    // the organisation's).
    let on_ask_allows = matches!(how, How::OnAsk) && shared.on_ask == OnAsk::Allow;
    let pre = hooks.before(&call_id, arguments, &mut checked, held, on_ask_allows);
    record_hooks(&store, connection, &pre);
    let (mut new_rules, mut always) = (Vec::new(), false);
    if checked.needs_approval() {
        let asked;
        let kept = form::Kept::default();
        let given;
        let approver: Option<&dyn Approver> = match how {
            How::Ask => {
                asked = form::Asked {
                    peer: peer.clone(),
                    handle: handle.clone(),
                };
                Some(&asked)
            }
            How::Later => {
                // The question is only kept: nothing is decided, run or recorded until the
                // answer comes.
                let mut probe = checked.clone();
                asking(shared, connection, &engine, Some(&kept)).approve(
                    &mut probe,
                    &mut Vec::new(),
                    &mut |_| {},
                );
                if let Some(question) = kept.question() {
                    let handle = shared
                        .waiting
                        .keep(name, arguments)
                        .ok_or_else(|| "no randomness".to_owned())?;
                    return Ok(Called::Asking(question, handle));
                }
                None
            }
            How::Answered(answer) => {
                given = form::Given(answer);
                Some(&given)
            }
            How::OnAsk => None,
        };
        asking(shared, connection, &engine, approver).approve(
            &mut checked,
            &mut new_rules,
            &mut |event: &Event| {
                if let Event::ApprovalResolved { answer, .. } = event {
                    always = *answer == warden_protocol::Answer::Always;
                }
                let _ =
                    store.record_agent_event(&connection.session, event.kind(), &event.fields());
            },
        );
    }
    // Said only by the round that decides: a question's round says nothing, so the steps of
    // both rounds (one progress token) keep rising.
    progress.say("checked by warden's policy");
    remember(shared, connection, &new_rules, always);
    let instead = instead(&engine, &checked);
    if checked.decision.decision == DecisionKind::Allow && checked.invalid.is_none() {
        progress.say("running");
    }
    let result = runner.executor().execute(&checked);
    progress.say(match result.status {
        ToolStatus::Ok => "done",
        ToolStatus::Denied => "not run",
        ToolStatus::Error => "failed",
    });
    if result.status != ToolStatus::Denied {
        let post = hooks.after(name, &call_id, &checked.args, &result);
        record_hooks(&store, connection, &post);
    }
    runner.record(checked, &result).map_err(|e| e.to_string())?;
    Ok(Called::Ran(result, instead))
}

/// Each hook that ran, in the connection's trace session, as a run records it.
fn record_hooks(
    store: &warden_trace::TraceStore,
    connection: &Connection,
    outcome: &warden_hooks::Outcome,
) {
    for ran in &outcome.runs {
        let event = Event::Hook {
            hook_event: ran.event.as_str().to_owned(),
            matcher: ran.matcher.clone(),
            command_sha256: ran.command_sha256.clone(),
            source: ran.source.clone(),
            duration_ms: ran.duration_ms,
            exit: ran.exit,
            timed_out: ran.timed_out,
            decision: ran.decision.clone(),
            error: ran
                .error
                .as_deref()
                .map(|e| connection.shield.redact(&warden_protocol::short(e, 400))),
        };
        let _ = store.record_agent_event(&connection.session, event.kind(), &event.fields());
    }
}

fn asking<'a>(
    shared: &'a Shared,
    connection: &'a Connection,
    engine: &'a Engine,
    approver: Option<&'a dyn Approver>,
) -> Asking<'a> {
    Asking {
        engine,
        registry: &shared.registry,
        ctx: &connection.ctx,
        settings: &shared.settings,
        shield: &connection.shield,
        approver,
    }
}

/// The rules approved this call hold for the rest of the connection; one approved always (saved
/// in the settings already) for connections made from now on too.
fn remember(shared: &Shared, connection: &Connection, rules: &[String], always: bool) {
    for rule in rules {
        if let Ok(mut engine) = connection.engine.lock() {
            let _ = Arc::make_mut(&mut engine).allow_for_session(rule);
        }
        if always && let Ok(mut engine) = shared.engine.lock() {
            let _ = Arc::make_mut(&mut engine).allow_for_session(rule);
        }
    }
}

/// How `warden mcp serve` was asked to serve.
pub(super) struct Options<'a> {
    pub(super) dir: Option<PathBuf>,
    pub(super) on_ask: &'a str,
    pub(super) mode: Option<&'a str>,
    pub(super) http: Option<SocketAddr>,
}

/// Serves warden's tools on standard input and output until the client goes, or on `--http`'s
/// loopback address until Ctrl-C.
pub(super) fn serve(options: &Options<'_>) -> Result<Exit, CliError> {
    let mut cli = warden_config::RawSettings::default();
    if let Some(mode) = options.mode {
        let mode: warden_config::PermissionMode = mode
            .parse()
            .map_err(|e| CliError::usage(anyhow!("--mode: {e}")))?;
        cli.permissions.get_or_insert_with(Default::default).mode = Some(mode);
    }
    let settings = super::load_settings_with(options.dir.clone(), cli)?;
    let engine = Engine::from_settings(&settings).map_err(CliError::usage)?;
    let registry = Registry::builtin().map_err(CliError::failure)?;
    let shared = Arc::new(Shared {
        settings,
        registry: Arc::new(registry),
        engine: Mutex::new(Arc::new(engine)),
        on_ask: if options.on_ask == "allow" {
            OnAsk::Allow
        } else {
            OnAsk::Deny
        },
        waiting: form::Waiting::default(),
    });
    // The settings must make a context before any client is told warden is ready.
    ToolContext::from_settings(&shared.settings).map_err(CliError::usage)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(anyhow!(e)))?;
    runtime.block_on(async {
        if let Some(addr) = options.http {
            return http::serve(addr, shared).await;
        }
        let running = Served::new(shared)
            .serve((tokio::io::stdin(), tokio::io::stdout()))
            .await
            .map_err(|e| CliError::failure(anyhow!("serving MCP: {e}")))?;
        let _ = running.waiting().await;
        Ok::<(), CliError>(())
    })?;
    Ok(Exit::Success)
}
