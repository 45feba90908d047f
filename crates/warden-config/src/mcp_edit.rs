//! Adding and removing MCP servers in a settings file (`warden mcp add|remove|import`): the
//! file's other contents, comments and order are kept.

use std::path::Path;

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

/// A server to write: what `[mcp.servers.NAME]` holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewMcpServer {
    /// The program; empty for a server at `url`.
    pub command: String,
    /// A streamable HTTP server's address.
    pub url: Option<String>,
    /// Headers for a `url` server (`${NAME}` read from the environment when it is reached).
    pub headers: Vec<(String, String)>,
    /// The `url` server speaks the older HTTP+SSE transport.
    pub legacy_sse: bool,
    pub args: Vec<String>,
    /// Set by value.
    pub env: Vec<(String, String)>,
    /// Passed from warden's environment by name.
    pub env_vars: Vec<String>,
}

pub(crate) fn read(path: &Path) -> Result<DocumentMut, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(format!("{}: {error}", path.display())),
    };
    text.parse::<DocumentMut>()
        .map_err(|error| format!("{}: {error}", path.display()))
}

pub(crate) fn write(path: &Path, document: &DocumentMut) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let temporary = path.with_extension(format!("toml.{}", std::process::id()));
    std::fs::write(&temporary, document.to_string())
        .and_then(|()| std::fs::rename(&temporary, path))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The names of the servers `path` holds.
pub fn mcp_server_names(path: &Path) -> Result<Vec<String>, String> {
    let document = read(path)?;
    Ok(document
        .get("mcp")
        .and_then(|mcp| mcp.get("servers"))
        .and_then(Item::as_table_like)
        .map(|servers| servers.iter().map(|(name, _)| name.to_owned()).collect())
        .unwrap_or_default())
}

/// The table at `key` in `table`, made (implicit, no header of its own) when missing.
fn implicit_table<'t>(
    table: &'t mut Table,
    key: &str,
    path: &Path,
) -> Result<&'t mut Table, String> {
    table
        .entry(key)
        .or_insert_with(|| {
            let mut made = Table::new();
            made.set_implicit(true);
            Item::Table(made)
        })
        .as_table_mut()
        .ok_or_else(|| format!("{}: `{key}` is not a table", path.display()))
}

/// Adds `[mcp.servers.NAME]` to the file at `path` (made if missing). A server of that name
/// already there is an error: it is not replaced.
pub fn add_mcp_server(path: &Path, name: &str, server: &NewMcpServer) -> Result<(), String> {
    let mut document = read(path)?;
    let mcp = implicit_table(document.as_table_mut(), "mcp", path)?;
    let servers = implicit_table(mcp, "servers", path)?;
    if servers.contains_key(name) {
        return Err(format!(
            "{} has an MCP server {name:?} already; remove it first (`warden mcp remove {name}`)",
            path.display()
        ));
    }
    let mut table = Table::new();
    if let Some(url) = &server.url {
        table.insert("url", value(url.as_str()));
        if server.legacy_sse {
            table.insert("transport", value("sse"));
        }
        if !server.headers.is_empty() {
            let mut headers = InlineTable::new();
            for (key, val) in &server.headers {
                headers.insert(key, val.as_str().into());
            }
            table.insert("headers", value(headers));
        }
        servers.insert(name, Item::Table(table));
        return write(path, &document);
    }
    table.insert("command", value(server.command.as_str()));
    if !server.args.is_empty() {
        table.insert("args", value(server.args.iter().collect::<Array>()));
    }
    if !server.env.is_empty() {
        let mut env = InlineTable::new();
        for (key, val) in &server.env {
            env.insert(key, val.as_str().into());
        }
        table.insert("env", value(env));
    }
    if !server.env_vars.is_empty() {
        table.insert("env_vars", value(server.env_vars.iter().collect::<Array>()));
    }
    servers.insert(name, Item::Table(table));
    write(path, &document)
}

/// Removes `[mcp.servers.NAME]` from the file at `path`; whether it was there.
pub fn remove_mcp_server(path: &Path, name: &str) -> Result<bool, String> {
    let mut document = read(path)?;
    let removed = document
        .get_mut("mcp")
        .and_then(|mcp| mcp.get_mut("servers"))
        .and_then(Item::as_table_like_mut)
        .and_then(|servers| servers.remove(name))
        .is_some();
    if removed {
        write(path, &document)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_added_beside_what_the_file_holds_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.toml");
        std::fs::write(&path, "# mine\n[permissions]\nallow = [\"Bash(ls *)\"]\n").unwrap();
        let server = NewMcpServer {
            command: "npx".to_owned(),
            args: vec!["-y".to_owned(), "@x/server".to_owned()],
            env: vec![("MODE".to_owned(), "ci".to_owned())],
            env_vars: vec!["TOKEN".to_owned()],
            ..NewMcpServer::default()
        };
        add_mcp_server(&path, "x", &server).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\n[permissions]"), "{text}");
        let parsed = crate::parse_str(&text, &path).unwrap();
        let servers = parsed.mcp.unwrap().servers.unwrap();
        assert_eq!(servers["x"].command.as_deref(), Some("npx"));
        assert_eq!(
            servers["x"].env_vars.as_deref(),
            Some(&["TOKEN".to_owned()][..])
        );
        assert!(add_mcp_server(&path, "x", &server).is_err());
        assert_eq!(mcp_server_names(&path).unwrap(), ["x"]);
        assert!(remove_mcp_server(&path, "x").unwrap());
        assert!(!remove_mcp_server(&path, "x").unwrap());
        assert!(mcp_server_names(&path).unwrap().is_empty());
        let web = NewMcpServer {
            url: Some("https://mcp.example/mcp".to_owned()),
            headers: vec![("Authorization".to_owned(), "Bearer ${TOKEN}".to_owned())],
            ..NewMcpServer::default()
        };
        add_mcp_server(&path, "web", &web).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let parsed = crate::parse_str(&text, &path).unwrap();
        let servers = parsed.mcp.unwrap().servers.unwrap();
        assert_eq!(
            servers["web"].url.as_deref(),
            Some("https://mcp.example/mcp")
        );
        assert!(servers["web"].command.is_none(), "{text}");
        assert_eq!(
            servers["web"].headers.as_ref().unwrap()["Authorization"],
            "Bearer ${TOKEN}"
        );
    }
}
