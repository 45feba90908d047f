//! `warden mcp serve`: warden's own tools offered to another agent over MCP (standard input and
//! output), each call through the same registry, policy, sandbox and trace as `warden run`'s;
//! one session in the trace per connection, named after the client.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::anyhow;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use warden_policy::Engine;
use warden_protocol::{SessionId, ToolStatus};
use warden_tools::{OnAsk, Registry, ToolContext, ToolRunner};

use super::open_trace;
use crate::{CliError, Exit};

/// What one connection's calls run with.
struct Served {
    registry: Arc<Registry>,
    ctx: Arc<ToolContext>,
    engine: Arc<Engine>,
    store: Arc<Mutex<warden_trace::TraceStore>>,
    session: SessionId,
    on_ask: OnAsk,
}

impl ServerHandler for Served {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("warden", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "warden's tools: each call is checked by warden's policy, runs in its sandbox and \
                 is recorded in its trace. A refused call says why.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        // The session is the client's: its name and version in the trace.
        if let Ok(store) = self.store.lock() {
            let _ = store.record_agent_event(
                &self.session,
                "mcp_client",
                &json!({
                    "name": request.client_info.name,
                    "version": request.client_info.version,
                    "protocolVersion": request.protocol_version.to_string(),
                }),
            );
        }
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .registry
            .specs()
            .map(|spec| {
                let schema = spec.parameters.as_object().cloned().unwrap_or_default();
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
        let peer = context.peer.clone();
        let handle = tokio::runtime::Handle::current();
        let (registry, ctx, engine, store) = (
            Arc::clone(&self.registry),
            Arc::clone(&self.ctx),
            Arc::clone(&self.engine),
            Arc::clone(&self.store),
        );
        let (session, on_ask) = (self.session.clone(), self.on_ask);
        let name = request.name.to_string();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        // A tool blocks (a command runs): on a thread of its own.
        let result = tokio::task::spawn_blocking(move || {
            let store = store
                .lock()
                .map_err(|_| "the trace is unavailable".to_owned())?;
            let mut runner = ToolRunner::new(&registry, &ctx, &engine, Some(&store), session)
                .map_err(|e| e.to_string())?
                .with_on_ask(on_ask);
            let mut checked = runner.check(&name, arguments);
            // What the policy asks about is put to the client's user, where the client can
            // ask them (elicitation); else `--on-ask` has answered it already.
            if checked.needs_approval() {
                match ask_client(&peer, &handle, &checked) {
                    Some(true) => checked.approve("approved by the client's user"),
                    Some(false) => checked.refuse("refused by the client's user"),
                    None => {}
                }
            }
            let result = runner.executor().execute(&checked);
            runner.record(checked, &result).map_err(|e| e.to_string())?;
            Ok::<_, String>(result)
        })
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
        .map_err(|e| ErrorData::internal_error(e, None))?;
        let answer = match (result.status, result.output, result.error) {
            (ToolStatus::Ok, Some(output), _) => {
                CallToolResult::success(vec![ContentBlock::text(output.to_string())])
            }
            (_, _, error) => {
                let error = error.map_or_else(
                    || json!({"message": "the tool returned nothing"}),
                    |e| json!({ "error": e }),
                );
                CallToolResult::error(vec![ContentBlock::text(error.to_string())])
            }
        };
        Ok(CallToolResponse::Complete(answer))
    }
}

/// Asks the client's user whether `checked` may run, where the client takes forms: `None` when
/// it does not (or the question could not be put).
fn ask_client(
    peer: &rmcp::Peer<RoleServer>,
    handle: &tokio::runtime::Handle,
    checked: &warden_tools::Checked,
) -> Option<bool> {
    let info = peer.peer_info()?;
    info.capabilities.elicitation.as_ref()?;
    let decision = &checked.decision;
    let mut message = format!(
        "warden asks before running {} {}: {}",
        checked.name,
        warden_protocol::short(&checked.args.to_string(), 400),
        decision.reason
    );
    if let Some(approval) = &decision.approval {
        let _ = write!(message, " (risk {:?}", approval.risk);
        if approval.why != decision.reason {
            let _ = write!(message, "; {}", approval.why);
        }
        message.push(')');
    }
    let params: rmcp::model::ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {"approve": {
                "type": "boolean",
                "title": "Run it",
                "description": "Let warden run this call once",
            }},
            "required": ["approve"],
        },
    }))
    .ok()?;
    let answer = handle.block_on(peer.create_elicitation(params)).ok()?;
    let approved = matches!(answer.action, rmcp::model::ElicitationAction::Accept)
        && answer
            .content
            .as_ref()
            .is_some_and(|c| c["approve"] == Value::Bool(true));
    Some(approved)
}

/// Serves warden's tools on standard input and output until the client goes.
pub(super) fn serve(
    dir: Option<PathBuf>,
    on_ask: &str,
    mode: Option<&str>,
) -> Result<Exit, CliError> {
    let mut cli = warden_config::RawSettings::default();
    if let Some(mode) = mode {
        let mode: warden_config::PermissionMode = mode
            .parse()
            .map_err(|e| CliError::usage(anyhow!("--mode: {e}")))?;
        cli.permissions.get_or_insert_with(Default::default).mode = Some(mode);
    }
    let settings = super::load_settings_with(dir, cli)?;
    let mut ctx = ToolContext::from_settings(&settings).map_err(CliError::usage)?;
    if let Ok(helper) = super::sandbox_helper() {
        ctx = ctx.with_sandbox_helper(helper);
    }
    let ctx = ctx.for_session();
    let engine = Engine::from_settings(&settings).map_err(CliError::usage)?;
    let registry = Registry::builtin().map_err(CliError::failure)?;
    let store = open_trace()?;
    let session = SessionId::new();
    let served = Served {
        registry: Arc::new(registry),
        ctx: Arc::new(ctx),
        engine: Arc::new(engine),
        store: Arc::new(Mutex::new(store)),
        session,
        on_ask: if on_ask == "allow" {
            OnAsk::Allow
        } else {
            OnAsk::Deny
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(anyhow!(e)))?;
    runtime.block_on(async {
        let running = served
            .serve((tokio::io::stdin(), tokio::io::stdout()))
            .await
            .map_err(|e| CliError::failure(anyhow!("serving MCP: {e}")))?;
        let _ = running.waiting().await;
        Ok::<(), CliError>(())
    })?;
    Ok(Exit::Success)
}
