//! `warden mcp import`: the MCP servers other agents are configured with — Claude Code's
//! `.mcp.json` and `~/.claude.json`, Codex's `[mcp_servers]` in `~/.codex/config.toml` — shown
//! one by one, then written to the user's settings once confirmed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;
use warden_config::NewMcpServer;
use warden_protocol::printable;

/// One server found in another agent's configuration.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Found {
    pub(super) name: String,
    pub(super) from: PathBuf,
    /// What is written, or why it is not.
    pub(super) server: Result<NewMcpServer, String>,
}

/// The files read when none is named: the project's `.mcp.json`, `~/.claude.json` (its user
/// servers and this project's), `~/.codex/config.toml`.
pub(super) fn default_files(project: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut files = vec![project.join(".mcp.json")];
    if let Some(home) = home {
        files.push(home.join(".claude.json"));
        files.push(home.join(".codex/config.toml"));
    }
    files
}

/// The servers in `file` (Claude Code's JSON or Codex's TOML, by its extension); for
/// `~/.claude.json`, its user servers and those of `project`.
pub(super) fn read(file: &Path, project: &Path) -> Result<Vec<Found>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut found = Vec::new();
    if file.extension().is_some_and(|e| e == "toml") {
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let servers = table
            .get("mcp_servers")
            .and_then(toml::Value::as_table)
            .cloned()
            .unwrap_or_default();
        for (name, server) in servers {
            let json = serde_json::to_value(&server).unwrap_or_default();
            found.push(Found {
                server: warden_config::server_from_agent(&json),
                name,
                from: file.to_path_buf(),
            });
        }
        return Ok(found);
    }
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut tables = vec![json.get("mcpServers")];
    let project_key = project.display().to_string();
    tables.push(
        json.get("projects")
            .and_then(|p| p.get(&project_key))
            .and_then(|p| p.get("mcpServers")),
    );
    for servers in tables.into_iter().flatten().filter_map(Value::as_object) {
        for (name, server) in servers {
            found.push(Found {
                name: name.clone(),
                from: file.to_path_buf(),
                server: warden_config::server_from_agent(server),
            });
        }
    }
    Ok(found)
}

/// A server as one line for a person: its command, and what its environment takes.
pub(super) fn line(server: &NewMcpServer) -> String {
    if let Some(url) = &server.url {
        let mut out = printable(url);
        if !server.headers.is_empty() {
            // Only the names: a header's value may be a token written out.
            let names: Vec<String> = server.headers.iter().map(|(k, _)| printable(k)).collect();
            let _ = write!(out, "  (headers {})", names.join(", "));
        }
        return out;
    }
    let mut out = printable(&server.command);
    for arg in &server.args {
        out.push(' ');
        out.push_str(&printable(arg));
    }
    if !server.env_vars.is_empty() {
        let _ = write!(out, "  (passes {})", server.env_vars.join(", "));
    }
    if !server.env.is_empty() {
        let keys: Vec<&str> = server.env.iter().map(|(k, _)| k.as_str()).collect();
        let _ = write!(out, "  (sets {})", keys.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_and_codex_servers_are_read_with_their_http_headers() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        let claude = dir.path().join(".mcp.json");
        std::fs::write(
            &claude,
            r#"{"mcpServers": {
                "gh": {"command": "gh-mcp", "args": ["stdio"], "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "MODE": "ro"}},
                "web": {"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}},
                "old": {"type": "sse", "url": "https://x.example/sse"}
            }}"#,
        )
        .unwrap();
        let found = read(&claude, &project).unwrap();
        let gh = found.iter().find(|f| f.name == "gh").unwrap();
        let server = gh.server.as_ref().unwrap();
        assert_eq!(server.env_vars, ["GITHUB_TOKEN"]);
        assert_eq!(server.env, [("MODE".to_owned(), "ro".to_owned())]);
        let web = found.iter().find(|f| f.name == "web").unwrap();
        let web = web.server.as_ref().unwrap();
        assert_eq!(web.url.as_deref(), Some("https://x.example/mcp"));
        assert_eq!(
            web.headers,
            [("Authorization".to_owned(), "Bearer ${WEB_TOKEN}".to_owned())]
        );
        assert!(!line(web).contains("WEB_TOKEN"), "{}", line(web));
        let old = found.iter().find(|f| f.name == "old").unwrap();
        assert!(old.server.as_ref().unwrap().legacy_sse);
        let codex = dir.path().join("config.toml");
        std::fs::write(
            &codex,
            "model = \"x\"\n[mcp_servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"@m/fs\"]\n\
             [mcp_servers.gh]\nurl = \"https://gh.example/mcp\"\nbearer_token_env_var = \"GH_PAT\"\n\
             env_http_headers = { \"X-Org\" = \"ORG_ID\" }\n",
        )
        .unwrap();
        let found = read(&codex, &project).unwrap();
        assert_eq!(found[0].name, "fs");
        assert_eq!(found[0].server.as_ref().unwrap().args, ["-y", "@m/fs"]);
        let gh = found[1].server.as_ref().unwrap();
        assert_eq!(
            gh.headers,
            [
                ("X-Org".to_owned(), "${ORG_ID}".to_owned()),
                ("Authorization".to_owned(), "Bearer ${GH_PAT}".to_owned())
            ]
        );
    }
}
