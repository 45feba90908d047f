//! The tools of the MCP servers in the settings, in the registry as `mcp__SERVER__TOOL`: their
//! arguments checked against the server's schema like every tool's, their calls through the
//! same policy and trace, their results the text of the content with the structured content
//! and the server named.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use warden_mcp::{Given, Launch, McpError, Server};
use warden_protocol::{ToolError, ToolErrorKind};
use warden_sandbox::{Piped, Plan, Profile, Sandbox, request_from_settings};

use crate::ToolContext;
use crate::mcp_pins::{Pins, definition, says_read_only};
use crate::registry::{DynamicTool, Registry};

/// Where a server of the user's starts in a project that is not trusted: a directory with no
/// repository's files in it (nothing more is made readable for it).
const NEUTRAL_CWD: &str = "/";

mod added;
mod call;

use call::McpCall;

pub use added::AddedTool;

/// One running server and its tools' definitions as last listed.
struct Running {
    /// The session: replaced by a new one when a person logs in again (more scope).
    server: std::sync::RwLock<Server>,
    /// How many times a person logged in again during the session.
    step_ups: std::sync::atomic::AtomicUsize,
    /// The server's name in the settings.
    name: String,
    /// Its settings (which tools it offers, whether its hints are trusted).
    config: warden_config::McpServer,
    /// Tool → definition: read again when the server says its list changed.
    current: Mutex<BTreeMap<String, Value>>,
    /// The tools offered to the model, or put to a person, so far: a tool the server adds later
    /// is new until then.
    seen: Mutex<std::collections::BTreeSet<String>>,
}

impl Running {
    fn call(&self, tool: &str, args: Value) -> Result<warden_mcp::CallOutcome, McpError> {
        match self.server.read() {
            Ok(server) => server.call(tool, args),
            Err(_) => Err(McpError::Runtime(std::io::Error::other(
                "the session was lost while it was being replaced",
            ))),
        }
    }

    /// The definition of `tool` as the server has it now (listing again after `list_changed`);
    /// `None` when the server no longer has it.
    fn definition(&self, tool: &str) -> Option<Value> {
        let mut current = self.current.lock().ok()?;
        self.refresh(&mut current);
        current.get(tool).cloned()
    }

    /// Lists the tools again when the server said its list changed.
    fn refresh(&self, current: &mut BTreeMap<String, Value>) {
        let Ok(server) = self.server.read() else {
            current.clear();
            return;
        };
        if server.tools_changed() {
            match server.tools() {
                Ok(tools) => {
                    *current = tools
                        .iter()
                        .map(|t| (t.name.clone(), definition(t, self.config.trust_hints)))
                        .collect();
                }
                // Not known now: held, below.
                Err(_) => current.clear(),
            }
        }
    }
}

/// The servers started for a session; dropping it ends them.
#[derive(Default)]
pub struct McpServers {
    servers: Vec<Arc<Running>>,
    /// The running servers by name.
    named: BTreeMap<String, Arc<Running>>,
    /// What could not be started or listed, one line each, for the person and the trace.
    pub problems: Vec<String>,
    /// The pinned definitions, shared by every tool offered.
    pins: Option<Arc<Pins>>,
    /// The tools (`mcp__SERVER__TOOL`) a server whose hints the settings trust says only read:
    /// for the policy (`Engine::trust_read_only_hint`).
    pub read_only: Vec<String>,
}

impl McpServers {
    /// Starts every enabled server of the settings and adds its tools to `registry`. A server
    /// that cannot start, or a tool whose name cannot be offered, is a problem reported, not a
    /// failure of the session.
    pub fn start(ctx: &ToolContext, registry: &mut Registry) -> McpServers {
        Self::start_some(ctx, registry, None)
    }

    /// As [`McpServers::start`], for the one server named `only` when it is given (a call of one
    /// tool starts only its own server).
    pub fn start_some(
        ctx: &ToolContext,
        registry: &mut Registry,
        only: Option<&str>,
    ) -> McpServers {
        let settings = &ctx.settings;
        let mut out = McpServers::default();
        let pins = Arc::new(Pins::new(settings.dirs.data_dir.as_deref()));
        out.pins = Some(Arc::clone(&pins));
        if settings.dirs.data_dir.is_none() && !settings.mcp.servers.is_empty() {
            out.problems.push(
                "no data directory: MCP tool definitions are not pinned, so a server changing \
                 one between sessions is not noticed"
                    .to_owned(),
            );
        }
        for (name, server) in &settings.mcp.servers {
            if !server.enabled || only.is_some_and(|only| only != name) {
                continue;
            }
            let mut launch = Launch::from_settings(name, server, &settings.project_root);
            launch.asker.clone_from(&ctx.mcp_asker);
            // In a project not trusted, a server of the user's starts outside it: `npx` or
            // `python -m` started in the repository would take the repository's own files
            // (its `node_modules`, a module of the same name) for the server's.
            if server.cwd.is_none() && !settings.trust.allows_project_config() {
                launch.cwd = std::path::PathBuf::from(NEUTRAL_CWD);
            }
            // A server at a url runs elsewhere: warden only speaks to it, over its own client,
            // with the token of a login to it.
            let started = if let Some(url) = launch.url.clone() {
                launch.bearer = bearer(ctx, name, &url, &mut out.problems);
                Server::start(launch).map_err(|error| login_hint(name, error))
            } else if server.sandbox {
                start_sandboxed(ctx, launch, server)
            } else {
                out.problems.push(format!(
                    "MCP server {name} runs outside the sandbox (sandbox = false): it can read \
                     and write what you can, and reach the network"
                ));
                Server::start(launch)
            };
            let started = match started {
                Ok(started) => started,
                Err(error) => {
                    out.problems.push(error.to_string());
                    continue;
                }
            };
            let listed = started.tools();
            let started = Arc::new(Running {
                current: Mutex::new(
                    listed
                        .iter()
                        .flatten()
                        .map(|t| (t.name.clone(), definition(t, server.trust_hints)))
                        .collect(),
                ),
                server: std::sync::RwLock::new(started),
                step_ups: std::sync::atomic::AtomicUsize::new(0),
                name: name.clone(),
                config: server.clone(),
                seen: Mutex::default(),
            });
            match listed {
                Ok(tools) => out.offer(registry, &started, &pins, tools),
                Err(error) => out.problems.push(error.to_string()),
            }
            out.named.insert(name.clone(), Arc::clone(&started));
            out.servers.push(started);
        }
        out.offer_resources(registry);
        out
    }

    /// Offers `tools` of the server `running` in `registry` (those its settings offer), each
    /// pinned at first sight.
    fn offer(
        &mut self,
        registry: &mut Registry,
        running: &Arc<Running>,
        pins: &Arc<Pins>,
        tools: Vec<warden_mcp::McpTool>,
    ) {
        let (name, server) = (&running.name, &running.config);
        let tools: Vec<_> = tools
            .into_iter()
            .filter(|t| server.offers(&t.name))
            .collect();
        // What is offered now is pinned at first sight: a later change of a tool never called
        // is told against it too.
        let seen: Vec<(String, Value)> = tools
            .iter()
            .map(|t| (t.name.clone(), definition(t, server.trust_hints)))
            .collect();
        if let Err(why) = pins.pin_new(name, &seen) {
            self.problems.push(why);
        }
        if let Ok(mut seen) = running.seen.lock() {
            seen.extend(tools.iter().map(|t| t.name.clone()));
        }
        for tool in tools {
            let offered = warden_mcp::tool_name(name, &tool.name);
            if server.trust_hints && says_read_only(&tool) {
                self.read_only.push(offered.clone());
            }
            let description = describe(name, &tool);
            let call = Box::new(McpCall {
                running: Arc::clone(running),
                server: name.clone(),
                tool: tool.name.clone(),
                offered: definition(&tool, server.trust_hints),
                pins: Arc::clone(pins),
            });
            if let Err(error) =
                registry.register_dynamic(&offered, description, tool.input_schema.clone(), call)
            {
                self.problems.push(format!(
                    "MCP server {name}: its tool {:?} is not offered: {error}",
                    tool.name
                ));
            }
        }
    }

    /// Registers `readMcpResource` when a running server lists resources: the servers and
    /// their resources (the first 50 of each) in its description, the server's name an `enum`
    /// of its schema.
    fn offer_resources(&mut self, registry: &mut Registry) {
        let mut lines = Vec::new();
        let mut by_name = BTreeMap::new();
        for (name, running) in &self.named {
            let resources = match running.server.read() {
                Ok(server) => server.resources(),
                Err(_) => continue,
            };
            match resources {
                Ok(resources) if !resources.is_empty() => {
                    let listed: Vec<String> = resources
                        .iter()
                        .take(50)
                        .map(|r| {
                            format!(
                                "{} ({})",
                                r["uri"].as_str().unwrap_or_default(),
                                r["name"].as_str().unwrap_or_default()
                            )
                        })
                        .collect();
                    let more = resources.len().saturating_sub(50);
                    let more = if more > 0 {
                        format!("; and {more} more")
                    } else {
                        String::new()
                    };
                    lines.push(format!("{name}: {}{more}", listed.join(", ")));
                    by_name.insert(name.clone(), Arc::clone(running));
                }
                Ok(_) => {}
                Err(error) => self.problems.push(error.to_string()),
            }
        }
        if by_name.is_empty() {
            return;
        }
        let names: Vec<&String> = by_name.keys().collect();
        let schema = json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "enum": names, "description": "The MCP server."},
                "uri": {"type": "string", "description": "The resource's URI."}
            },
            "required": ["server", "uri"],
            "additionalProperties": false
        });
        let description = format!(
            "Reads a resource of an MCP server: its contents as text. Resources by server: {}",
            lines.join(". ")
        );
        if let Err(error) = registry.register_dynamic(
            "readMcpResource",
            description,
            schema,
            Box::new(ReadResource { servers: by_name }),
        ) {
            self.problems
                .push(format!("readMcpResource is not offered: {error}"));
        }
    }

    /// The resources and prompts the running server `name` lists.
    pub fn listings(&self, name: &str) -> Result<(Vec<Value>, Vec<Value>), String> {
        let running = self
            .named
            .get(name)
            .ok_or_else(|| format!("the MCP server {name} is not running"))?;
        let server = running.server.read().map_err(|e| e.to_string())?;
        let resources = server.resources().map_err(|e| e.to_string())?;
        let prompts = server.prompts().map_err(|e| e.to_string())?;
        Ok((resources, prompts))
    }

    /// How many servers are running.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

/// Starts a server inside warden's sandbox: the settings' sandbox with the project read-only,
/// no network, exactly the server's environment, no timeout (it lives as long as the session),
/// the secret list masked; its streams piped to the client.
fn start_sandboxed(
    ctx: &ToolContext,
    launch: Launch,
    server: &warden_config::McpServer,
) -> Result<Server, McpError> {
    let refused = |why: String| McpError::Protocol {
        server: launch.name.clone(),
        what: "the sandbox".to_owned(),
        message: why,
        stderr: String::new(),
    };
    let Some(helper) = &ctx.sandbox_helper else {
        return Err(refused(
            "no sandbox helper to start it in, so it was not started".to_owned(),
        ));
    };
    let settings = &ctx.settings;
    let root = &settings.project_root;
    let mut request = request_from_settings(settings, root, &launch.command, &launch.args, &[])
        .map_err(|e| refused(e.to_string()))?;
    request.allow_read.extend(server.allow_read.iter().cloned());
    request.workspace.clone_from(root);
    request.profile = Profile::ReadOnly;
    request.network = false;
    request.proxy_port = None;
    request.env.clone_from(&launch.env);
    request.limits.timeout_ms = None;
    request.mask = ctx.mask.clone();
    if launch.cwd == std::path::Path::new(NEUTRAL_CWD) {
        request.cwd = Some(launch.cwd.clone());
    } else if launch.cwd != *root {
        request.allow_read.push(launch.cwd.clone());
        request.cwd = Some(launch.cwd.clone());
    }
    // Its network: none, or the hosts it names through an egress proxy of its own.
    let egress = if server.allow_hosts.is_empty() {
        None
    } else {
        let egress = server_egress(ctx, &server.allow_hosts).map_err(refused)?;
        request.proxy_port = Some(warden_sandbox::PROXY_PORT);
        request
            .env
            .extend(warden_sandbox::proxy_env(warden_sandbox::PROXY_PORT));
        egress.trust(&mut request);
        Some(egress)
    };
    let plan = Plan::new(&request).map_err(|e| refused(e.to_string()))?;
    let piped = Sandbox::new(helper)
        .start_piped_serving(&plan, &mut |listener| {
            if let Some(egress) = &egress {
                let _ = egress.proxy.serve(listener);
            }
        })
        .map_err(|e| refused(e.to_string()))?;
    let Piped {
        running,
        stdin,
        stdout,
        stderr,
    } = piped;
    let running = Arc::new(Mutex::new(running));
    let name = launch.name.clone();
    let started = Server::start_on(
        launch,
        Given {
            stdin,
            stdout,
            stderr,
            keep: Box::new((Arc::clone(&running), egress)),
        },
    );
    match started {
        Ok(server) => Ok(server),
        Err(error) => {
            // A program that could not start inside the sandbox (not there, not visible there)
            // says nothing on its streams: the sandbox knows why.
            let why = running.lock().ok().and_then(|mut r| r.stop().err());
            match why {
                Some(why) => Err(McpError::Protocol {
                    server: name,
                    what: "the start inside the sandbox".to_owned(),
                    message: format!(
                        "{why} (a program outside the project needs its directory in the \
                         server's allow_read)"
                    ),
                    stderr: String::new(),
                }),
                None => Err(error),
            }
        }
    }
}

/// The egress proxy of one server: only `hosts`, under the settings' denied domains and
/// private ranges; its connections recorded where the session's are.
fn server_egress(ctx: &ToolContext, hosts: &[String]) -> Result<crate::egress::Egress, String> {
    let net = &ctx.settings.sandbox.network;
    let policy =
        warden_netproxy::NetPolicy::new(hosts, &net.denied_domains, net.block_private_ranges)
            .map_err(|e| format!("allow_hosts: {e}"))?;
    let sink: warden_netproxy::Sink = ctx.egress_sink.as_ref().map_or_else(
        || Arc::new(|_| {}) as warden_netproxy::Sink,
        |s| Arc::clone(&s.0),
    );
    let config = warden_netproxy::Config::new(policy, crate::egress::resolver()?, sink);
    Ok(crate::egress::launch(config, None)?)
}

/// The access token of a login to the server `name` at `url`, refreshed when it is about to
/// expire; `None` (and a problem said) when there is none to send.
fn bearer(ctx: &ToolContext, name: &str, url: &str, problems: &mut Vec<String>) -> Option<String> {
    let store = warden_mcp::oauth::store::TokenStore::new(ctx.settings.dirs.data_dir.as_deref()?);
    let tokens = match store.get(name) {
        Ok(tokens) => tokens?,
        Err(why) => {
            problems.push(format!(
                "MCP server {name}: its login cannot be read: {why}"
            ));
            return None;
        }
    };
    if !tokens.is_for(url) {
        problems.push(format!(
            "MCP server {name}: its login is for {}, not {url}: the token is not sent (run \
             `warden mcp login {name}`)",
            tokens.resource
        ));
        return None;
    }
    if !tokens.expiring() {
        return Some(tokens.access_token);
    }
    match warden_mcp::oauth::refresh(&tokens) {
        Ok(renewed) => {
            let token = renewed.access_token.clone();
            if let Err(why) = store.put(name, Some(renewed)) {
                problems.push(format!("MCP server {name}: {why}"));
            }
            Some(token)
        }
        Err(error) => {
            problems.push(format!(
                "MCP server {name}: its login has expired and could not be renewed ({error}): \
                 run `warden mcp login {name}`"
            ));
            None
        }
    }
}

/// A server that asks for a login says how to give it one.
fn login_hint(name: &str, error: McpError) -> McpError {
    if let McpError::LoginNeeded { challenge, .. } = &error {
        return McpError::Settings {
            server: name.to_owned(),
            message: format!("it asks for a login: run `warden mcp login {name}` ({challenge})"),
        };
    }
    error
}

/// What the model is told: the server's description, and whose it is.
fn describe(server: &str, tool: &warden_mcp::McpTool) -> String {
    let text = tool.description.trim();
    let text = if text.is_empty() {
        tool.title.as_deref().unwrap_or(&tool.name)
    } else {
        text
    };
    format!("{text} (a tool of the MCP server {server})")
}

/// `readMcpResource`: a resource of one of the servers.
struct ReadResource {
    servers: BTreeMap<String, Arc<Running>>,
}

impl DynamicTool for ReadResource {
    fn call(&self, _ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let server = args["server"].as_str().unwrap_or_default();
        let uri = args["uri"].as_str().unwrap_or_default();
        let running = self.servers.get(server).ok_or_else(|| {
            ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("no MCP server {server:?} with resources"),
            )
        })?;
        let session = running.server.read().map_err(|e| {
            ToolError::new(ToolErrorKind::Unavailable, format!("the MCP server {e}"))
        })?;
        let text = session.read_resource(uri).map_err(|error| {
            let kind = match &error {
                McpError::Timeout { .. } => ToolErrorKind::Timeout,
                _ => ToolErrorKind::Unavailable,
            };
            ToolError::new(kind, error.to_string())
        })?;
        Ok(json!({ "server": server, "uri": uri, "content": text }))
    }
}
