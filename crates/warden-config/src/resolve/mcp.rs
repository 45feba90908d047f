//! `[mcp]`: each server checked and given its defaults.

use std::collections::BTreeMap;
use std::path::Path;

use super::Blame;
use crate::error::ConfigError;
use crate::merge::dedup;
use crate::raw::{RawMcp, RawMcpServer};
use crate::settings::{HttpTransport, Mcp, McpServer};

pub(super) fn build(raw: RawMcp, root: &Path, blame: &Blame<'_>) -> Result<Mcp, ConfigError> {
    let mut servers = BTreeMap::new();
    for (name, server) in raw.servers.unwrap_or_default() {
        let error = |field: &str, message: &str| {
            blame.error(&["mcp", "servers", &name, field], message.to_owned())
        };
        if !McpServer::name_fits(&name) {
            return Err(blame.error(
                &["mcp", "servers", &name],
                "a server's name is letters, digits, '-' and '_', without '__' and not starting \
                 or ending with '_' (its tools are mcp__NAME__TOOL, read back by the first '__')",
            ));
        }
        let server_keys = [
            ("args", server.args.is_some()),
            ("env", server.env.is_some()),
            ("env_vars", server.env_vars.is_some()),
            ("cwd", server.cwd.is_some()),
            ("allow_read", server.allow_read.is_some()),
            ("allow_hosts", server.allow_hosts.is_some()),
        ];
        let RawMcpServer {
            command,
            url,
            headers,
            transport: spoken,
            client_id,
            client_metadata_url,
            client_secret_env,
            args,
            env,
            env_vars,
            cwd,
            enabled,
            enabled_tools,
            disabled_tools,
            startup_timeout_seconds,
            tool_timeout_seconds,
            sandbox,
            allow_read,
            trust_hints,
            allow_hosts,
        } = server;
        let (command, url, headers) = transport(command, url, headers, &server_keys, &error)?;
        let transport = http_transport(spoken.as_deref(), url.is_some(), &error)?;
        login_client(
            url.as_ref(),
            [client_id.as_ref(), client_metadata_url.as_ref()],
            client_secret_env.as_ref(),
            &error,
        )?;
        let positive = |value: Option<u64>, field: &str, default: u64| match value {
            Some(0) => Err(error(field, "must be greater than zero")),
            Some(value) => Ok(value),
            None => Ok(default),
        };
        let env = env.unwrap_or_default();
        if let Some(key) = env.keys().find(|k| k.is_empty() || k.contains(['=', '\0'])) {
            return Err(error("env", &format!("{key:?} is not a variable's name")));
        }
        let place = |dir: String| placed(&dir, root);
        let cwd = cwd.map(place);
        let allow_read = allow_read
            .unwrap_or_default()
            .into_iter()
            .map(place)
            .collect();
        servers.insert(
            name.clone(),
            McpServer {
                command,
                url,
                headers,
                transport,
                client_id,
                client_metadata_url,
                client_secret_env,
                args: args.unwrap_or_default(),
                env,
                env_vars: dedup(env_vars.unwrap_or_default()),
                cwd,
                enabled: enabled.unwrap_or(true),
                enabled_tools,
                disabled_tools: dedup(disabled_tools.unwrap_or_default()),
                startup_timeout_seconds: positive(
                    startup_timeout_seconds,
                    "startup_timeout_seconds",
                    30,
                )?,
                tool_timeout_seconds: positive(tool_timeout_seconds, "tool_timeout_seconds", 120)?,
                sandbox: sandbox.unwrap_or(true),
                allow_read,
                trust_hints: trust_hints.unwrap_or(false),
                allow_hosts: dedup(allow_hosts.unwrap_or_default()),
            },
        );
    }
    Ok(Mcp { servers })
}

/// A server's `command`, `url` and `headers`, checked.
type Transport = (String, Option<String>, BTreeMap<String, String>);

/// What a server is: a program (`command`) or an address (`url`, with its `headers`), each with
/// only the keys that fit it; `program_keys` says which of a program's keys are set.
fn transport(
    command: Option<String>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    program_keys: &[(&str, bool)],
    error: &dyn Fn(&str, &str) -> ConfigError,
) -> Result<Transport, ConfigError> {
    let command = command.filter(|c| !c.trim().is_empty());
    let url = url.filter(|u| !u.trim().is_empty());
    let headers = headers.unwrap_or_default();
    let command = match (command, &url) {
        (Some(_), Some(_)) => {
            return Err(error(
                "url",
                "a server is a program (command) or an address (url), not both",
            ));
        }
        (None, None) => return Err(error("command", "required for every server, or else url")),
        (Some(_), None) if !headers.is_empty() => {
            return Err(error(
                "headers",
                "applies to a server at a url, not to one warden starts (command)",
            ));
        }
        (Some(command), None) => command,
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(error("url", "must start with http:// or https://"));
            }
            if let Some((field, _)) = program_keys.iter().find(|(_, set)| *set) {
                return Err(error(
                    field,
                    "applies to a server warden starts (command), not to one at a url",
                ));
            }
            String::new()
        }
    };
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if let Some(name) = headers
        .keys()
        .find(|n| n.is_empty() || !n.chars().all(token))
    {
        return Err(error(
            "headers",
            &format!("{name:?} is not a header's name"),
        ));
    }
    Ok((command, url, headers))
}

/// `transport`: streamable HTTP unless `"sse"`, and only for a server at a url.
fn http_transport(
    spoken: Option<&str>,
    at_url: bool,
    error: &dyn Fn(&str, &str) -> ConfigError,
) -> Result<HttpTransport, ConfigError> {
    match (spoken, at_url) {
        (None | Some("streamable-http"), _) => Ok(HttpTransport::StreamableHttp),
        (Some("sse"), true) => Ok(HttpTransport::Sse),
        (Some("sse"), false) => Err(error("transport", "applies to a server at a url")),
        (Some(other), _) => Err(error(
            "transport",
            &format!("{other:?} is not \"streamable-http\" or \"sse\""),
        )),
    }
}

/// A login's client (its id, its metadata document's address): for a server at a url, a secret
/// only with an id, a document only at an `https://` address.
fn login_client(
    url: Option<&String>,
    [client_id, metadata_url]: [Option<&String>; 2],
    secret_env: Option<&String>,
    error: &dyn Fn(&str, &str) -> ConfigError,
) -> Result<(), ConfigError> {
    if url.is_none() && (client_id.is_some() || metadata_url.is_some() || secret_env.is_some()) {
        return Err(error(
            "client_id",
            "a login's client belongs to a server at a url, not to one warden starts",
        ));
    }
    if secret_env.is_some() && client_id.is_none() {
        return Err(error(
            "client_secret_env",
            "names a secret for no client_id",
        ));
    }
    if metadata_url.is_some_and(|u| !u.starts_with("https://")) {
        return Err(error("client_metadata_url", "must start with https://"));
    }
    Ok(())
}

/// A directory of a server's settings: `~/` is the home directory, anything else relative to
/// the project root.
fn placed(dir: &str, root: &Path) -> std::path::PathBuf {
    if let Some(rest) = dir.strip_prefix("~/") {
        std::env::var_os("HOME").map_or_else(|| root.join(rest), |h| Path::new(&h).join(rest))
    } else {
        root.join(dir)
    }
}
