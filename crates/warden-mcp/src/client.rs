//! One running server: its process and the protocol session over its standard streams (or a
//! streamable HTTP session with a server elsewhere),
//! and a runtime of its own, so that callers (warden's tools are synchronous) block on it.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::IntoTransport;
use rmcp::{RoleClient, ServiceExt};
use serde::Serialize;
use serde_json::Value;
use tokio::process::{Child, Command};

use crate::handler::{Handler, Watched};
use crate::messages::{failure, keep_tail, stderr_note};
use crate::result::CallOutcome;
use crate::{Launch, McpError, McpTool};

/// The most tools one server may list: past it, none is offered (a listing that large is a
/// server trying to fill the model's context, or broken).
const MAX_TOOLS: usize = 512;

/// How many times its timeout a call may take while the server keeps reporting progress.
const MOST_WITH_PROGRESS: u32 = 10;

/// Who the server said it is when it started.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// The server's name in the settings.
    pub name: String,
    /// What it answered to `initialize` (protocol version, capabilities, implementation).
    pub initialize: Value,
}

/// A server's process given by the caller: its standard streams, and what ends it when dropped
/// (a sandboxed command's handle).
pub struct Given {
    pub stdin: std::fs::File,
    pub stdout: std::fs::File,
    pub stderr: std::fs::File,
    pub keep: Box<dyn Send + Sync>,
}

/// The server's process: one this crate started, or one given to it.
enum Process {
    Child(Child),
    /// Kept for its drop, which ends the process.
    Given {
        _keep: Box<dyn Send + Sync>,
    },
    /// A server reached over HTTP: no process of warden's.
    Remote,
}

/// A started, initialised server. Dropping it ends the session and kills the process.
pub struct Server {
    launch: Launch,
    runtime: tokio::runtime::Runtime,
    service: Option<RunningService<RoleClient, Handler>>,
    process: Process,
    stderr: Arc<Mutex<Vec<u8>>>,
    tools_changed: Arc<AtomicBool>,
    /// Ticks at each progress notice of the server.
    progress: tokio::sync::watch::Receiver<u64>,
    info: ServerInfo,
}

impl Server {
    /// Starts the server's program (`launch`'s command, environment and directory) and
    /// initialises the session, within its start-up timeout.
    pub fn start(launch: Launch) -> Result<Server, McpError> {
        if let Some(url) = launch.url.clone() {
            return Self::connect(launch, &url);
        }
        let runtime = runtime()?;
        let mut command = Command::new(&launch.command);
        command
            .args(&launch.args)
            .env_clear()
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&launch.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let spawned = {
            let _entered = runtime.enter();
            command.spawn()
        };
        let mut child = spawned.map_err(|source| McpError::Spawn {
            server: launch.name.clone(),
            command: launch.command.clone(),
            source,
        })?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(pipe) = child.stderr.take() {
            keep_tail(&runtime, pipe, &stderr);
        }
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(McpError::Runtime(std::io::Error::other(
                "the server's standard input or output is missing",
            )));
        };
        Self::initialise(
            launch,
            runtime,
            (stdout, stdin),
            stderr,
            Process::Child(child),
        )
    }

    /// Speaks with a server whose process the caller started (inside warden's sandbox), on its
    /// given streams; `launch` names it and sets its timeouts (its command is not run again).
    pub fn start_on(launch: Launch, given: Given) -> Result<Server, McpError> {
        let runtime = runtime()?;
        let Given {
            stdin,
            stdout,
            stderr: error_stream,
            keep,
        } = given;
        let (reader, writer, error_reader) = {
            let _entered = runtime.enter();
            (
                tokio::net::unix::pipe::Receiver::from_file(stdout),
                tokio::net::unix::pipe::Sender::from_file(stdin),
                tokio::net::unix::pipe::Receiver::from_file(error_stream),
            )
        };
        let (reader, writer) = match (reader, writer) {
            (Ok(reader), Ok(writer)) => (reader, writer),
            (Err(error), _) | (_, Err(error)) => return Err(McpError::Runtime(error)),
        };
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Ok(pipe) = error_reader {
            keep_tail(&runtime, pipe, &stderr);
        }
        Self::initialise(
            launch,
            runtime,
            (reader, writer),
            stderr,
            Process::Given { _keep: keep },
        )
    }

    /// Reaches a streamable HTTP server at `url` over warden's HTTP client, its headers'
    /// `${NAME}`s read from warden's environment, and initialises the session.
    fn connect(launch: Launch, url: &str) -> Result<Server, McpError> {
        let settings = |message: String| McpError::Settings {
            server: launch.name.clone(),
            message,
        };
        let parsed = reqwest::Url::parse(url).map_err(|e| settings(format!("url {url:?}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(settings(format!("url {url:?} is not http or https")));
        }
        let mut headers = std::collections::HashMap::new();
        for (name, value) in &launch.headers {
            if crate::http::reserved(name) {
                return Err(settings(format!(
                    "the header {name} is the transport's own and cannot be set"
                )));
            }
            let value = crate::expand(value, |key| std::env::var(key).ok())
                .map_err(|why| settings(format!("header {name}: {why}")))?;
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| settings(format!("{name:?} is not a header's name")))?;
            let mut value = http::HeaderValue::from_str(&value)
                .map_err(|_| settings(format!("header {name}'s value is not valid in HTTP")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if launch.legacy_sse {
            return Self::connect_legacy(launch, url, headers);
        }
        let client = crate::http::Http::new(launch.startup_timeout)
            .map_err(|e| McpError::Runtime(std::io::Error::other(e)))?;
        let runtime = runtime()?;
        let mut config =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                url,
            )
            .custom_headers(headers)
            .max_sse_event_size(crate::http::MAX_MESSAGE);
        if let Some(token) = &launch.bearer {
            config = config.auth_header(token.clone());
        }
        config.max_json_response_size = crate::http::MAX_MESSAGE;
        let transport = {
            let _entered = runtime.enter();
            rmcp::transport::StreamableHttpClientTransport::with_client(client, config)
        };
        let stderr = Arc::new(Mutex::new(Vec::new()));
        Self::initialise(launch, runtime, transport, stderr, Process::Remote)
    }

    /// As [`Server::connect`], over the older HTTP+SSE transport.
    fn connect_legacy(
        launch: Launch,
        url: &str,
        headers: std::collections::HashMap<http::HeaderName, http::HeaderValue>,
    ) -> Result<Server, McpError> {
        let mut map: reqwest::header::HeaderMap = headers.into_iter().collect();
        if let Some(token) = &launch.bearer
            && let Ok(mut value) = http::HeaderValue::from_str(&format!("Bearer {token}"))
        {
            value.set_sensitive(true);
            map.insert(http::header::AUTHORIZATION, value);
        }
        let runtime = runtime()?;
        let transport = runtime
            .block_on(crate::legacy_sse::LegacySse::connect(
                url,
                map,
                launch.startup_timeout,
            ))
            .map_err(|message| McpError::Protocol {
                server: launch.name.clone(),
                what: "the event stream".to_owned(),
                message,
                stderr: String::new(),
            })?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        Self::initialise(launch, runtime, transport, stderr, Process::Remote)
    }

    /// `initialize` over `transport`, within the start-up timeout.
    fn initialise<T, E, A>(
        launch: Launch,
        runtime: tokio::runtime::Runtime,
        transport: T,
        stderr: Arc<Mutex<Vec<u8>>>,
        process: Process,
    ) -> Result<Server, McpError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let tools_changed = Arc::new(AtomicBool::new(false));
        let handler = Handler {
            server: launch.name.clone(),
            tools_changed: Arc::clone(&tools_changed),
            asker: launch.asker.clone(),
        };
        let (progress_sender, progress) = tokio::sync::watch::channel(0);
        let transport = {
            let _entered = runtime.enter();
            Watched {
                inner: transport.into_transport(),
                tools_changed: Arc::clone(&tools_changed),
                progress: progress_sender,
            }
        };
        let started = runtime.block_on(async {
            tokio::time::timeout(launch.startup_timeout, handler.serve(transport)).await
        });
        let tail = |stderr: &Arc<Mutex<Vec<u8>>>| stderr_note(stderr);
        let service = match started {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => {
                return Err(failure(&launch.name, "initialize", &error, tail(&stderr)));
            }
            Err(_) => {
                return Err(McpError::Timeout {
                    server: launch.name.clone(),
                    what: "initialize".to_owned(),
                    seconds: launch.startup_timeout.as_secs(),
                    stderr: tail(&stderr),
                });
            }
        };
        let initialize = service
            .peer_info()
            .and_then(|info| serde_json::to_value(&*info).ok())
            .unwrap_or_default();
        // A list announced as changed during start-up is read on first use anyway.
        tools_changed.store(false, Ordering::SeqCst);
        Ok(Server {
            info: ServerInfo {
                name: launch.name.clone(),
                initialize,
            },
            launch,
            runtime,
            service: Some(service),
            process,
            stderr,
            tools_changed,
            progress,
        })
    }

    /// Who the server is.
    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// Whether the server said its tools changed since they were last listed.
    pub fn tools_changed(&self) -> bool {
        self.tools_changed.load(Ordering::SeqCst)
    }

    /// Every tool the server has, every page of the list.
    pub fn tools(&self) -> Result<Vec<McpTool>, McpError> {
        self.tools_changed.store(false, Ordering::SeqCst);
        let peer = self.peer()?;
        let listed = self.within("tools/list", self.launch.startup_timeout, async {
            peer.list_all_tools().await
        })?;
        if listed.len() > MAX_TOOLS {
            return Err(McpError::Protocol {
                server: self.launch.name.clone(),
                what: "tools/list".to_owned(),
                message: format!(
                    "it lists {} tools; more than {MAX_TOOLS} are not offered",
                    listed.len()
                ),
                stderr: String::new(),
            });
        }
        Ok(listed
            .into_iter()
            .map(|tool| {
                let value = serde_json::to_value(&tool).unwrap_or_default();
                McpTool {
                    name: tool.name.to_string(),
                    title: tool.title.clone(),
                    description: tool.description.as_deref().unwrap_or_default().to_owned(),
                    input_schema: value.get("inputSchema").cloned().unwrap_or_default(),
                    output_schema: value.get("outputSchema").cloned(),
                    annotations: value.get("annotations").cloned(),
                }
            })
            .collect())
    }

    /// Calls `tool` with `arguments` (a JSON object), within the tool timeout; a call that
    /// takes longer is cancelled at the server (`notifications/cancelled`).
    pub fn call(&self, tool: &str, arguments: Value) -> Result<CallOutcome, McpError> {
        let Value::Object(arguments) = arguments else {
            return Err(McpError::Arguments(arguments.to_string()));
        };
        let peer = self.peer()?;
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let limit = self.launch.tool_timeout;
        let mut progress = self.progress.clone();
        progress.borrow_and_update();
        let answered = self.runtime.block_on(async {
            let started = tokio::time::Instant::now();
            let most = started + limit * MOST_WITH_PROGRESS;
            let mut deadline = started + limit;
            let mut hearing = true;
            let call = peer.call_tool(params);
            tokio::pin!(call);
            loop {
                tokio::select! {
                    result = &mut call => break Some(result),
                    () = tokio::time::sleep_until(deadline) => break None,
                    heard = progress.changed(), if hearing => match heard {
                        // A server saying how far it got has another timeout from now, up to
                        // its most.
                        Ok(()) => deadline = (tokio::time::Instant::now() + limit).min(most),
                        Err(_) => hearing = false,
                    },
                }
            }
        });
        // Past its time the call's future is dropped, which cancels it at the server.
        let result = match answered {
            Some(Ok(result)) => result,
            Some(Err(error)) => {
                return Err(failure(
                    &self.launch.name,
                    "tools/call",
                    &error,
                    stderr_note(&self.stderr),
                ));
            }
            None => {
                return Err(McpError::Timeout {
                    server: self.launch.name.clone(),
                    what: "tools/call".to_owned(),
                    seconds: limit.as_secs(),
                    stderr: stderr_note(&self.stderr),
                });
            }
        };
        let value = serde_json::to_value(&result).unwrap_or_default();
        Ok(CallOutcome::from_result(&value))
    }

    /// Whether the server said at `initialize` that it has `capability` (`resources`, …).
    pub fn has(&self, capability: &str) -> bool {
        self.info.initialize["capabilities"]
            .get(capability)
            .is_some_and(|c| !c.is_null())
    }

    /// Every resource the server lists (each as its JSON: `uri`, `name`, `mimeType`, …); none
    /// when it has no resources.
    pub fn resources(&self) -> Result<Vec<Value>, McpError> {
        if !self.has("resources") {
            return Ok(Vec::new());
        }
        let peer = self.peer()?;
        let listed = self.within("resources/list", self.launch.startup_timeout, async {
            peer.list_all_resources().await
        })?;
        Ok(listed
            .iter()
            .filter_map(|r| serde_json::to_value(r).ok())
            .collect())
    }

    /// Every prompt the server lists (each as its JSON: `name`, `description`, `arguments`).
    pub fn prompts(&self) -> Result<Vec<Value>, McpError> {
        if !self.has("prompts") {
            return Ok(Vec::new());
        }
        let peer = self.peer()?;
        let listed = self.within("prompts/list", self.launch.startup_timeout, async {
            peer.list_all_prompts().await
        })?;
        Ok(listed
            .iter()
            .filter_map(|p| serde_json::to_value(p).ok())
            .collect())
    }

    /// Reads the resource at `uri`, within the tool timeout: its contents as text (a binary
    /// one as a line naming its type and size), at most [`crate::MAX_TEXT`] of it.
    pub fn read_resource(&self, uri: &str) -> Result<String, McpError> {
        let peer = self.peer()?;
        let params = rmcp::model::ReadResourceRequestParams::new(uri.to_owned());
        let read = self.within("resources/read", self.launch.tool_timeout, async {
            peer.read_resource(params).await
        })?;
        let value = serde_json::to_value(&read).unwrap_or_default();
        let mut parts = Vec::new();
        for content in value["contents"].as_array().into_iter().flatten() {
            match content.get("text").and_then(Value::as_str) {
                Some(text) => parts.push(text.to_owned()),
                None => parts.push(format!(
                    "[{} {}: {} bytes of base64]",
                    content["uri"].as_str().unwrap_or(uri),
                    content["mimeType"].as_str().unwrap_or("binary"),
                    content["blob"].as_str().map_or(0, str::len)
                )),
            }
        }
        let mut text = parts.join("\n");
        crate::result::cap(&mut text);
        Ok(text)
    }

    fn peer(&self) -> Result<rmcp::Peer<RoleClient>, McpError> {
        self.service
            .as_ref()
            .map(|service| service.peer().clone())
            .ok_or_else(|| McpError::Protocol {
                server: self.launch.name.clone(),
                what: "the session".to_owned(),
                message: "it has ended".to_owned(),
                stderr: String::new(),
            })
    }

    /// Runs one request on the server's runtime, within `limit`.
    fn within<T>(
        &self,
        what: &str,
        limit: Duration,
        request: impl Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, McpError> {
        match self
            .runtime
            .block_on(async { tokio::time::timeout(limit, request).await })
        {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(failure(
                &self.launch.name,
                what,
                &error,
                stderr_note(&self.stderr),
            )),
            Err(_) => Err(McpError::Timeout {
                server: self.launch.name.clone(),
                what: what.to_owned(),
                seconds: limit.as_secs(),
                stderr: stderr_note(&self.stderr),
            }),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut service) = self.service.take() {
            let _ = self.runtime.block_on(async {
                tokio::time::timeout(Duration::from_millis(500), service.close()).await
            });
        }
        match &mut self.process {
            Process::Child(child) => {
                let _ = child.start_kill();
            }
            // Dropped with the server: a sandboxed command's handle kills it and its tree. An
            // HTTP server's session was ended by `close` (its DELETE).
            Process::Given { .. } | Process::Remote => {}
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, McpError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("warden-mcp")
        .enable_all()
        .build()
        .map_err(McpError::Runtime)
}
