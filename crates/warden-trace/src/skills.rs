//! Skill approvals: a person's yes to a skill from an untrusted root, pinned to the hash of its
//! whole directory.

use std::path::Path;

use rusqlite::{OptionalExtension as _, params};
use warden_protocol::SessionId;

use crate::TraceError;
use crate::row::now_rfc3339;
use crate::store::TraceStore;

impl TraceStore {
    /// Records that the skill `name` in `dir`, as its files hash to `tree_hash`, was approved.
    pub fn approve_skill(
        &self,
        dir: &Path,
        name: &str,
        tree_hash: &str,
        session: &SessionId,
    ) -> Result<(), TraceError> {
        self.conn()
            .execute(
                "INSERT OR REPLACE INTO skill_approvals (dir, tree_hash, name, approved_at, session_id)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    dir.to_string_lossy(),
                    tree_hash,
                    name,
                    now_rfc3339(),
                    session.as_str()
                ],
            )
            .map_err(|source| self.sqlite_error(source))?;
        Ok(())
    }

    /// When the skill in `dir` was approved with its files as they hash to `tree_hash`.
    pub fn skill_approval(
        &self,
        dir: &Path,
        tree_hash: &str,
    ) -> Result<Option<String>, TraceError> {
        self.conn()
            .query_row(
                "SELECT approved_at FROM skill_approvals WHERE dir = ?1 AND tree_hash = ?2",
                params![dir.to_string_lossy(), tree_hash],
                |row| row.get(0),
            )
            .optional()
            .map_err(|source| self.sqlite_error(source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_holds_for_its_hash_only() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TraceStore::open(&tmp.path().join("trace.db")).unwrap();
        let dir = Path::new("/p/.warden/skills/x");
        assert_eq!(store.skill_approval(dir, "aa").unwrap(), None);
        store
            .approve_skill(dir, "x", "aa", &SessionId::new())
            .unwrap();
        assert!(store.skill_approval(dir, "aa").unwrap().is_some());
        assert_eq!(
            store.skill_approval(dir, "bb").unwrap(),
            None,
            "changed: ask again"
        );
        assert_eq!(store.skill_approval(Path::new("/q"), "aa").unwrap(), None);
    }
}
