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
    /// A server started as `command args`, every other key at its default.
    pub fn stdio(command: impl Into<String>, args: Vec<String>) -> McpServer {
        McpServer {
            command: command.into(),
            args,
            env: BTreeMap::new(),
            env_vars: Vec::new(),
            cwd: None,
            enabled: true,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            startup_timeout_seconds: 30,
            tool_timeout_seconds: 120,
            sandbox: true,
            allow_read: Vec::new(),
        }
    }

    /// Whether `name` may name a server: letters, digits, `-` and `_`, without `__` and not
    /// starting or ending with `_` (its tools are `mcp__NAME__TOOL`, read back by the first
    /// `__`: `mcp__a___x` is `a`'s `_x`, so `a_` could pass for `a`).
    pub fn name_fits(name: &str) -> bool {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && !name.contains("__")
            && !name.starts_with('_')
            && !name.ends_with('_')
    }

    /// Whether the settings offer `tool` of this server.
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }
}
