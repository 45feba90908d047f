//! `[mcp]`: each server checked and given its defaults.

use std::collections::BTreeMap;
use std::path::Path;

use super::Blame;
use crate::error::ConfigError;
use crate::merge::dedup;
use crate::raw::{RawMcp, RawMcpServer};
use crate::settings::{Mcp, McpServer};

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
        let RawMcpServer {
            command,
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
        } = server;
        let command = command
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| error("command", "required for every server"))?;
        let positive = |value: Option<u64>, field: &str, default: u64| match value {
            Some(0) => Err(error(field, "must be greater than zero")),
            Some(value) => Ok(value),
            None => Ok(default),
        };
        let env = env.unwrap_or_default();
        for key in env.keys() {
            if key.is_empty() || key.contains(['=', '\0']) {
                return Err(error("env", &format!("{key:?} is not a variable's name")));
            }
        }
        let place = |dir: String| {
            if let Some(rest) = dir.strip_prefix("~/") {
                std::env::var_os("HOME")
                    .map_or_else(|| root.join(rest), |h| Path::new(&h).join(rest))
            } else {
                root.join(dir)
            }
        };
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
            },
        );
    }
    Ok(Mcp { servers })
}
