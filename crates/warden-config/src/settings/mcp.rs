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

/// How a server at a url is spoken to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HttpTransport {
    /// Streamable HTTP (protocol 2025-03-26 and later).
    #[default]
    StreamableHttp,
    /// The older HTTP+SSE transport (protocol 2024-11-05).
    Sse,
}

/// `[mcp.servers.NAME]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct McpServer {
    /// The program to start; empty for a server reached at `url`.
    pub command: String,
    /// A streamable HTTP server's address.
    pub url: Option<String>,
    /// Headers sent to a `url` server, `${NAME}` still to be read from the environment.
    #[serde(serialize_with = "shown_headers")]
    pub headers: BTreeMap<String, String>,
    /// How the `url` server is spoken to.
    pub transport: HttpTransport,
    /// A client registered beforehand, for logging in to a `url` server.
    pub client_id: Option<String>,
    /// A published Client ID Metadata Document, used as the client id where taken.
    pub client_metadata_url: Option<String>,
    /// The variable holding that client's secret.
    pub client_secret_env: Option<String>,
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
    /// Hosts it may reach from the sandbox, through its own egress proxy.
    pub allow_hosts: Vec<String>,
    /// Whether its `readOnlyHint`s are taken at their word.
    pub trust_hints: bool,
}

/// Headers as settings listings show them: a value written out (a token in the file) is not
/// printed; one that only names variables (`Bearer ${TOKEN}`) is.
fn shown_headers<S: serde::Serializer>(
    headers: &BTreeMap<String, String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(headers.iter().map(|(name, value)| {
        let shown = if value.contains("${") {
            value.as_str()
        } else {
            "(set in the settings)"
        };
        (name, shown)
    }))
}

impl McpServer {
    /// A server started as `command args`, every other key at its default.
    pub fn stdio(command: impl Into<String>, args: Vec<String>) -> McpServer {
        McpServer {
            command: command.into(),
            url: None,
            headers: BTreeMap::new(),
            transport: HttpTransport::StreamableHttp,
            client_id: None,
            client_metadata_url: None,
            client_secret_env: None,
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
            allow_hosts: Vec::new(),
            trust_hints: false,
        }
    }

    /// A server reached over streamable HTTP at `url`, every other key at its default.
    pub fn http(url: impl Into<String>) -> McpServer {
        McpServer {
            url: Some(url.into()),
            ..McpServer::stdio("", Vec::new())
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
