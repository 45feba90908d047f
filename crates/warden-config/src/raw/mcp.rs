//! `[mcp]`: the MCP servers whose tools warden offers.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::merge::merge_struct;

/// `[mcp]`: MCP servers, each a `[mcp.servers.NAME]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawMcp {
    /// MCP servers by name. A name is letters, digits, `-` and `_`, without `__`; its tools are
    /// offered as `mcp__NAME__TOOL`. A server set in a higher layer replaces the same name's
    /// whole table in a lower one. Default none.
    pub servers: Option<BTreeMap<String, RawMcpServer>>,
}

merge_struct!(RawMcp { servers });

/// `[mcp.servers.NAME]`: one MCP server, either started as a program that speaks MCP on its
/// standard input and output (`command`) or reached over streamable HTTP (`url`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawMcpServer {
    /// The program to start. Required unless `url` is set.
    pub command: Option<String>,
    /// A streamable HTTP server's address (`https://example.com/mcp`), reached by warden's own
    /// HTTP client. Required unless `command` is set; the two do not go together.
    pub url: Option<String>,
    /// HTTP headers sent to a `url` server with every request. `${NAME}` in a value is the
    /// variable `NAME` of warden's environment (`Authorization = "Bearer ${GITHUB_TOKEN}"`);
    /// a variable that is not set stops the server from starting. Default none.
    pub headers: Option<BTreeMap<String, String>>,
    /// How a `url` server is spoken to: `"streamable-http"`, or `"sse"` for the older HTTP+SSE
    /// transport (protocol 2024-11-05: `url` is its event stream). Default
    /// `"streamable-http"`.
    pub transport: Option<String>,
    /// A client registered beforehand with the server's authorization server, for `warden mcp
    /// login`: its id. Default none (warden registers itself, or uses its metadata document).
    pub client_id: Option<String>,
    /// An `https://` address where a Client ID Metadata Document describing warden as your
    /// client is published: used as the client id by an authorization server that takes such
    /// documents, before dynamic registration. Default none.
    pub client_metadata_url: Option<String>,
    /// The variable of warden's environment that holds that client's secret (never the
    /// secret itself). Default none (a public client).
    pub client_secret_env: Option<String>,
    /// Its arguments. Default none.
    pub args: Option<Vec<String>>,
    /// Variables set in its environment, by value. Its environment holds nothing else but
    /// `PATH`, `HOME`, the locale and the variables `env_vars` names: none of yours is passed
    /// unless named. Default none.
    pub env: Option<BTreeMap<String, String>>,
    /// Names of variables passed from warden's environment to the server's (`GITHUB_TOKEN`).
    /// Default none.
    pub env_vars: Option<Vec<String>>,
    /// The directory it starts in. Default the project root.
    pub cwd: Option<String>,
    /// Whether warden starts it. Default `true`.
    pub enabled: Option<bool>,
    /// Only these of its tools are offered. Default all.
    pub enabled_tools: Option<Vec<String>>,
    /// These of its tools are never offered. Default none.
    pub disabled_tools: Option<Vec<String>>,
    /// Seconds it has to start and answer `initialize`. Must be greater than zero. Default `30`.
    pub startup_timeout_seconds: Option<u64>,
    /// Seconds one tool call may take. Must be greater than zero. Default `120`.
    pub tool_timeout_seconds: Option<u64>,
    /// Whether it runs inside warden's sandbox: the project read-only, no network, the secret
    /// list masked, the sandbox's limits, its processes ended with the session. `false` runs
    /// it as the user, which is said at every start. Default `true`.
    pub sandbox: Option<bool>,
    /// Hosts the server may reach from the sandbox, through an egress proxy of its own (and
    /// only those): `HOST` or `HOST:PORT`, `*.example.com` for its subdomains, ports 80 and
    /// 443 unless given. `[sandbox.network] denied_domains` and `block_private_ranges` still
    /// apply. Default none: no network at all.
    pub allow_hosts: Option<Vec<String>>,
    /// Whether the policy takes this server's word that a tool only reads (`readOnlyHint`):
    /// such a tool is then allowed like a read, without a rule (deny and ask rules still
    /// apply, and a tool whose hints change is held until approved). Only for a server you
    /// trust to say so truthfully. Default `false`: every tool is asked about.
    pub trust_hints: Option<bool>,
    /// Directories (or files) outside the project the server may read inside the sandbox: where
    /// its program and its libraries are (`~/.local/lib/node_modules`). Relative paths are
    /// relative to the project root. Default none.
    pub allow_read: Option<Vec<String>>,
}

/// A server set in a higher layer stands whole: its arguments and environment are not mixed
/// with a lower layer's server of the same name.
impl crate::merge::Merge for RawMcpServer {
    fn merge(&mut self, _lower: Self) {}
}
