//! `[mcp]`, resolved.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

/// `[mcp]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Mcp {
    /// Servers by name. Default empty.
    pub servers: BTreeMap<String, McpServer>,
}

/// `[mcp.servers.NAME]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct McpServer {
    /// The program to start.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set by value.
    pub env: BTreeMap<String, String>,
    /// Variables passed from warden's environment.
    pub env_vars: Vec<String>,
    /// Where it starts; `None` is the project root.
    pub cwd: Option<PathBuf>,
    /// Whether it is started.
    pub enabled: bool,
    /// Only these tools are offered; `None` offers all.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    pub disabled_tools: Vec<String>,
    /// Seconds to start and initialise.
    pub startup_timeout_seconds: u64,
    /// Seconds per tool call.
    pub tool_timeout_seconds: u64,
    /// Whether it runs inside warden's sandbox.
    pub sandbox: bool,
    /// What it may read outside the project inside the sandbox, absolute.
    pub allow_read: Vec<PathBuf>,
}

impl McpServer {
    /// Whether the settings offer `tool` of this server.
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }
}
