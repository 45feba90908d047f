//! `warden mcp serve`: warden's own tools offered to another agent over MCP (standard input and
//! output), each call through the same registry, policy, sandbox and trace as `warden run`'s;
//! one session in the trace per connection, named after the client.

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

use super::{load_settings, open_trace};
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
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
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
            runner.run(&name, arguments).map_err(|e| e.to_string())
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

/// Serves warden's tools on standard input and output until the client goes.
pub(super) fn serve(dir: Option<PathBuf>, on_ask: &str) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
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
