//! MCP servers as other agents write them: Claude Code's JSON (`.mcp.json`, `~/.claude.json`)
//! and Codex's `[mcp_servers]` (read as JSON values), turned into warden's. A project's
//! `.mcp.json` is one of its settings files: its servers stand only in a trusted project, and
//! what it grants is part of what the trust is bound to.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::error::ConfigError;
use crate::mcp_edit::NewMcpServer;
use crate::raw::{RawMcp, RawMcpServer, RawSettings};
use crate::settings::McpServer;

/// One server of either agent's shape as warden's, or why it cannot be.
pub fn server_from_agent(server: &Value) -> Result<NewMcpServer, String> {
    let kind = server
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("stdio");
    if let Some(url) = server.get("url") {
        let mut remote = remote(server, url)?;
        remote.legacy_sse = kind == "sse";
        return Ok(remote);
    }
    if kind != "stdio" {
        return Err(format!(
            "a server of type {kind:?}, which warden does not know"
        ));
    }
    let command = server
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .ok_or("no command")?
        .to_owned();
    let strings = |key: &str| -> Vec<String> {
        server
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let args = strings("args");
    let mut env = Vec::new();
    let mut env_vars = strings("env_vars");
    for (key, val) in server
        .get("env")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let text = val.as_str().unwrap_or_default();
        // `${NAME}` (or `${NAME:-default}`) of the same name: passed from warden's environment.
        let named = text
            .strip_prefix("${")
            .and_then(|rest| rest.strip_suffix('}'))
            .map(|inner| inner.split(":-").next().unwrap_or(inner));
        match named {
            Some(name) if name == key => env_vars.push(name.to_owned()),
            _ => env.push((key.clone(), text.to_owned())),
        }
    }
    Ok(NewMcpServer {
        command,
        args,
        env,
        env_vars,
        ..NewMcpServer::default()
    })
}

/// A streamable HTTP server: Claude Code's `headers` (whose `${NAME}`s warden reads the same
/// way), Codex's `http_headers`, `env_http_headers` (header → variable) and
/// `bearer_token_env_var`.
fn remote(server: &Value, url: &Value) -> Result<NewMcpServer, String> {
    let url = url
        .as_str()
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
        .ok_or("its url is not http:// or https://")?
        .to_owned();
    let table = |key: &str| {
        server
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect::<Vec<_>>()
    };
    let mut headers = table("headers");
    headers.extend(table("http_headers"));
    for (header, variable) in table("env_http_headers") {
        headers.push((header, format!("${{{variable}}}")));
    }
    if let Some(variable) = server.get("bearer_token_env_var").and_then(Value::as_str) {
        headers.push((
            "Authorization".to_owned(),
            format!("Bearer ${{{variable}}}"),
        ));
    }
    Ok(NewMcpServer {
        url: Some(url),
        headers,
        ..NewMcpServer::default()
    })
}

impl NewMcpServer {
    /// As a `[mcp.servers.NAME]` table of a settings file.
    pub(crate) fn raw(&self) -> RawMcpServer {
        let some_vec = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
        let some_map = |v: &Vec<(String, String)>| {
            (!v.is_empty()).then(|| v.iter().cloned().collect::<BTreeMap<_, _>>())
        };
        RawMcpServer {
            command: (!self.command.is_empty()).then(|| self.command.clone()),
            url: self.url.clone(),
            headers: some_map(&self.headers),
            transport: self.legacy_sse.then(|| "sse".to_owned()),
            args: some_vec(&self.args),
            env: some_map(&self.env),
            env_vars: some_vec(&self.env_vars),
            ..RawMcpServer::default()
        }
    }
}

/// A project's `.mcp.json` as a settings layer: the servers warden can run (a name it does not
/// take, or a server of another kind, is left out); an error when the file is not JSON.
pub(crate) fn project_layer(text: &str, path: &Path) -> Result<RawSettings, ConfigError> {
    let json: Value = serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
        path: path.to_owned(),
        line: Some(e.line()),
        column: Some(e.column()),
        message: e.to_string(),
    })?;
    let servers: BTreeMap<String, RawMcpServer> = json
        .get("mcpServers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(name, _)| McpServer::name_fits(name))
        .filter_map(|(name, server)| Some((name.clone(), server_from_agent(server).ok()?.raw())))
        .collect();
    Ok(RawSettings {
        mcp: (!servers.is_empty()).then_some(RawMcp {
            servers: Some(servers),
        }),
        ..RawSettings::default()
    })
}
