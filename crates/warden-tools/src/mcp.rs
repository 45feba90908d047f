//! The tools of the MCP servers in the settings, in the registry as `mcp__SERVER__TOOL`: their
//! arguments checked against the server's schema like every tool's, their calls through the
//! same policy and trace, their results the text of the content with the structured content
//! and the server named.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use warden_config::Settings;
use warden_mcp::{Launch, McpError, Server};
use warden_protocol::{ToolError, ToolErrorKind};

use crate::ToolContext;
use crate::mcp_pins::{Pins, definition};
use crate::registry::{DynamicTool, Registry};

/// One running server and its tools' definitions as last listed.
struct Running {
    server: Server,
    /// Tool → definition: read again when the server says its list changed.
    current: Mutex<BTreeMap<String, Value>>,
}

impl Running {
    /// The definition of `tool` as the server has it now (listing again after `list_changed`);
    /// `None` when the server no longer has it.
    fn definition(&self, tool: &str) -> Option<Value> {
        let mut current = self.current.lock().ok()?;
        if self.server.tools_changed() {
            match self.server.tools() {
                Ok(tools) => {
                    *current = tools
                        .iter()
                        .map(|t| (t.name.clone(), definition(t)))
                        .collect();
                }
                // Not known now: held, below.
                Err(_) => current.clear(),
            }
        }
        current.get(tool).cloned()
    }
}

/// The servers started for a session; dropping it ends them.
#[derive(Default)]
pub struct McpServers {
    servers: Vec<Arc<Running>>,
    /// What could not be started or listed, one line each, for the person and the trace.
    pub problems: Vec<String>,
}

impl McpServers {
    /// Starts every enabled server of the settings and adds its tools to `registry`. A server
    /// that cannot start, or a tool whose name cannot be offered, is a problem reported, not a
    /// failure of the session.
    pub fn start(settings: &Settings, registry: &mut Registry) -> McpServers {
        Self::start_some(settings, registry, None)
    }

    /// As [`McpServers::start`], for the one server named `only` when it is given (a call of one
    /// tool starts only its own server).
    pub fn start_some(
        settings: &Settings,
        registry: &mut Registry,
        only: Option<&str>,
    ) -> McpServers {
        let mut out = McpServers::default();
        let pins = Arc::new(Pins::new(settings.dirs.data_dir.as_deref()));
        for (name, server) in &settings.mcp.servers {
            if !server.enabled || only.is_some_and(|only| only != name) {
                continue;
            }
            let launch = Launch::from_settings(name, server, &settings.project_root);
            let started = match Server::start(launch) {
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
                        .map(|t| (t.name.clone(), definition(t)))
                        .collect(),
                ),
                server: started,
            });
            match listed {
                Ok(tools) => {
                    for tool in tools.into_iter().filter(|t| server.offers(&t.name)) {
                        let offered = warden_mcp::tool_name(name, &tool.name);
                        let description = describe(name, &tool);
                        let call = Box::new(McpCall {
                            running: Arc::clone(&started),
                            server: name.clone(),
                            tool: tool.name.clone(),
                            offered: definition(&tool),
                            pins: Arc::clone(&pins),
                        });
                        if let Err(error) = registry.register_dynamic(
                            &offered,
                            description,
                            tool.input_schema.clone(),
                            call,
                        ) {
                            out.problems.push(format!(
                                "MCP server {name}: its tool {:?} is not offered: {error}",
                                tool.name
                            ));
                        }
                    }
                }
                Err(error) => out.problems.push(error.to_string()),
            }
            out.servers.push(started);
        }
        out
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

/// One tool of one server.
struct McpCall {
    running: Arc<Running>,
    /// The server's name in the settings.
    server: String,
    tool: String,
    /// Its definition as offered to the model at the start.
    offered: Value,
    pins: Arc<Pins>,
}

impl DynamicTool for McpCall {
    fn held(&self) -> Option<String> {
        let Some(now) = self.running.definition(&self.tool) else {
            return Some(format!(
                "the MCP server {} no longer lists its tool {}",
                self.server, self.tool
            ));
        };
        if now != self.offered {
            return Some(format!(
                "the MCP server {} changed the definition of its tool {} during the session \
                 (after telling warden its tools changed); what the model was shown is not \
                 what the server has now",
                self.server, self.tool
            ));
        }
        self.pins.held(&self.server, &self.tool, &now)
    }

    fn call(&self, _ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        // The call was allowed (a held one only by a person): its definition is the one pinned.
        let unpinned = self
            .running
            .definition(&self.tool)
            .and_then(|now| self.pins.pin(&self.server, &self.tool, &now).err());
        let server = &self.running.server;
        let outcome = server.call(&self.tool, args).map_err(|error| {
            let kind = match &error {
                McpError::Timeout { .. } => ToolErrorKind::Timeout,
                McpError::Arguments(_) => ToolErrorKind::InvalidArguments,
                McpError::NoTool { .. } => ToolErrorKind::UnknownTool,
                _ => ToolErrorKind::Unavailable,
            };
            ToolError::new(kind, error.to_string())
        })?;
        if outcome.is_error {
            return Err(ToolError::new(
                ToolErrorKind::Failed,
                format!(
                    "the MCP tool {} of {} failed: {}",
                    self.tool, self.server, outcome.text
                ),
            ));
        }
        let mut out = json!({
            "server": self.server,
            "tool": self.tool,
            "content": outcome.text,
        });
        if let Some(structured) = outcome.structured {
            out["structuredContent"] = structured;
        }
        if let Some(warning) = unpinned {
            out["warning"] = Value::String(warning);
        }
        Ok(out)
    }
}
