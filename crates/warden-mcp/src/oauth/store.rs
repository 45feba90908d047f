//! The tokens of the servers a person logged in to: `mcp-tokens.json` in warden's data
//! directory, readable and writable by the user only (`0600`, written whole through a file made
//! with that mode), never anywhere else.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use super::Tokens;

/// The token file of a data directory.
#[derive(Debug, Clone)]
pub struct TokenStore {
    path: PathBuf,
}

impl TokenStore {
    pub fn new(data_dir: &Path) -> TokenStore {
        TokenStore {
            path: data_dir.join("mcp-tokens.json"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn all(&self) -> Result<BTreeMap<String, Tokens>, String> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| format!("{} cannot be read: {e}", self.path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(format!("{}: {e}", self.path.display())),
        }
    }

    /// The tokens of `server`, if it was logged in to.
    pub fn get(&self, server: &str) -> Result<Option<Tokens>, String> {
        Ok(self.all()?.remove(server))
    }

    /// Keeps `tokens` for `server` (`None` forgets them); whether there were any before.
    pub fn put(&self, server: &str, tokens: Option<Tokens>) -> Result<bool, String> {
        let mut all = self.all()?;
        let had = match tokens {
            Some(tokens) => all.insert(server.to_owned(), tokens).is_some(),
            None => all.remove(server).is_some(),
        };
        let text = serde_json::to_vec_pretty(&all).map_err(|e| e.to_string())?;
        let failed = |e: std::io::Error| format!("{}: {e}", self.path.display());
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(failed)?;
        }
        let temporary = self
            .path
            .with_extension(format!("json.{}", std::process::id()));
        let _ = std::fs::remove_file(&temporary);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .map_err(failed)?;
        file.write_all(&text).map_err(failed)?;
        file.sync_all().map_err(failed)?;
        std::fs::rename(&temporary, &self.path).map_err(failed)?;
        Ok(had)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::oauth::Client;

    #[test]
    fn tokens_are_kept_for_the_user_alone_and_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path());
        let tokens = Tokens {
            access_token: "at".to_owned(),
            refresh_token: None,
            expires_at: None,
            scope: None,
            resource: "https://x.example/mcp".to_owned(),
            token_endpoint: "https://x.example/token".to_owned(),
            client: Client {
                client_id: "c".to_owned(),
                client_secret: None,
            },
            auth_method: "none".to_owned(),
        };
        assert!(!store.put("x", Some(tokens.clone())).unwrap());
        assert_eq!(store.get("x").unwrap(), Some(tokens));
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(store.put("x", None).unwrap());
        assert_eq!(store.get("x").unwrap(), None);
    }
}
