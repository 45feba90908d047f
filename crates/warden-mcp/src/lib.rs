//! warden's MCP client: a server configured in `[mcp.servers.NAME]` is started, initialised and
//! asked for its tools, which warden offers as `mcp__NAME__TOOL` through the same registry,
//! policy and trace as its own. This crate speaks the protocol (with `rmcp`, the official SDK)
//! and owns the server's process; deciding whether a call may run is the policy's.

mod client;
mod elicit;
mod environment;
mod handler;
mod http;
mod legacy_sse;
mod messages;
pub mod oauth;
mod result;

pub use client::{Given, Server, ServerInfo};
pub use elicit::{Answer, Asker, Question, with_defaults};
pub use environment::{environment, expand};
pub use result::{CallOutcome, MAX_TEXT, text_of};

use std::time::Duration;

use serde::Serialize;

/// The prefix of every MCP tool's name as warden offers it.
pub const PREFIX: &str = "mcp__";

/// `mcp__SERVER__TOOL`, the name a server's tool is offered under.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{PREFIX}{server}__{tool}")
}

/// The server and tool a `mcp__SERVER__TOOL` name stands for.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// One tool as a server defines it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool {
    /// The name the server knows it by.
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    /// The JSON schema of its arguments.
    pub input_schema: serde_json::Value,
    /// The JSON schema of its structured result, if it declares one.
    pub output_schema: Option<serde_json::Value>,
    /// What the server says about it (`readOnlyHint`, …): hints, never trusted by the policy.
    pub annotations: Option<serde_json::Value>,
}

/// How to start (or reach) one server.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The server's name in the settings.
    pub name: String,
    /// A streamable HTTP server's address; `None` for a program on standard input and output.
    pub url: Option<String>,
    /// An HTTP server's headers, as the settings give them: `${NAME}` in a value is the
    /// variable `NAME` of warden's environment, read when the server is reached.
    pub headers: Vec<(String, String)>,
    /// Who answers the server's requests for input; none refuses them (headless).
    pub asker: Option<Asker>,
    /// An HTTP server's access token (from a login), sent as `Authorization: Bearer`.
    pub bearer: Option<String>,
    /// The server at `url` speaks the older HTTP+SSE transport (protocol 2024-11-05).
    pub legacy_sse: bool,
    pub command: String,
    pub args: Vec<String>,
    /// Its whole environment: nothing of warden's is inherited.
    pub env: Vec<(String, String)>,
    pub cwd: std::path::PathBuf,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
}

impl Launch {
    /// The program `command args` named `name`, with an empty environment, started in the
    /// temporary directory, 30 s to start and per call.
    pub fn program(name: &str, command: &str, args: Vec<String>) -> Launch {
        Launch {
            name: name.to_owned(),
            url: None,
            headers: Vec::new(),
            asker: None,
            bearer: None,
            legacy_sse: false,
            command: command.to_owned(),
            args,
            env: Vec::new(),
            cwd: std::env::temp_dir(),
            startup_timeout: Duration::from_secs(30),
            tool_timeout: Duration::from_secs(30),
        }
    }

    /// The streamable HTTP server at `url` named `name`, no headers, 30 s to start and per
    /// call.
    pub fn http(name: &str, url: &str) -> Launch {
        Launch {
            url: Some(url.to_owned()),
            ..Launch::program(name, "", Vec::new())
        }
    }

    /// A server of the settings, started in `root` unless it names its own directory.
    pub fn from_settings(
        name: &str,
        server: &warden_config::McpServer,
        root: &std::path::Path,
    ) -> Launch {
        Launch {
            name: name.to_owned(),
            url: server.url.clone(),
            headers: server
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            asker: None,
            bearer: None,
            legacy_sse: server.transport == warden_config::HttpTransport::Sse,
            command: server.command.clone(),
            args: server.args.clone(),
            env: environment(server, |key| std::env::var(key).ok()),
            cwd: server.cwd.clone().unwrap_or_else(|| root.to_path_buf()),
            startup_timeout: Duration::from_secs(server.startup_timeout_seconds),
            tool_timeout: Duration::from_secs(server.tool_timeout_seconds),
        }
    }
}

/// What went wrong with a server, said so that a person or a model can act on it.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("MCP server {server}: cannot start {command:?}: {source}")]
    Spawn {
        server: String,
        command: String,
        source: std::io::Error,
    },
    #[error("MCP server {server} did not answer {what} within {seconds} s{stderr}")]
    Timeout {
        server: String,
        what: String,
        seconds: u64,
        stderr: String,
    },
    #[error("MCP server {server}: {what} failed: {message}{stderr}")]
    Protocol {
        server: String,
        what: String,
        message: String,
        stderr: String,
    },
    /// A server at a url refused the request (`401`): it asks for a login, or its token expired
    /// or was revoked. `challenge` is its `WWW-Authenticate`.
    #[error("MCP server {server}: {what} refused: it asks for a login ({challenge})")]
    LoginNeeded {
        server: String,
        what: String,
        challenge: String,
    },
    /// A server at a url refused the request for a scope the token lacks (`403
    /// insufficient_scope`); `scope` is the one it names.
    #[error("MCP server {server}: {what} refused: the login lacks a scope ({challenge})")]
    MoreScope {
        server: String,
        what: String,
        challenge: String,
        scope: Option<String>,
    },
    #[error("MCP server {server} has no tool {tool:?}")]
    NoTool { server: String, tool: String },
    #[error("MCP server {server}: {message}")]
    Settings { server: String, message: String },
    #[error("MCP tool arguments must be a JSON object, not {0}")]
    Arguments(String),
    #[error("cannot run the MCP client: {0}")]
    Runtime(std::io::Error),
}
