//! Checkpoints of file changes: what each change found and left, so `warden undo` can put the
//! files back — and can tell when someone changed them since.

use std::path::PathBuf;

use rusqlite::{OptionalExtension as _, params};
use sha2::{Digest, Sha256};
use warden_protocol::SessionId;

use crate::{TraceError, TraceStore};

/// One change to one file. `None` content: the file did not exist (before) or was deleted (after).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    pub before: Option<Vec<u8>>,
    pub after: Option<Vec<u8>>,
}

/// A change as stored: which turn made it, and the contents' digests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChange {
    pub id: i64,
    pub turn: u64,
    pub path: PathBuf,
    pub before_sha256: Option<String>,
    pub after_sha256: Option<String>,
}

/// The SHA-256 of `bytes`, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            use std::fmt::Write as _;
            let _ = write!(s, "{b:02x}");
            s
        })
}

impl TraceStore {
    /// Records the changes one turn made (in one transaction).
    pub fn record_changes(
        &self,
        session: &SessionId,
        turn: u64,
        changes: &[FileChange],
        timestamp: &str,
    ) -> Result<(), TraceError> {
        let sql = |source| self.sqlite_error(source);
        let tx = self.conn().unchecked_transaction().map_err(sql)?;
        let ts_ms = crate::row::timestamp_ms(timestamp).unwrap_or(0);
        tx.execute(
            "INSERT OR IGNORE INTO sessions (id, started_at, started_ms) VALUES (?1, ?2, ?3)",
            params![session.as_str(), timestamp, ts_ms],
        )
        .map_err(sql)?;
        let turn = i64::try_from(turn).unwrap_or(i64::MAX);
        for change in changes {
            let keep = |content: &Option<Vec<u8>>| -> Result<Option<String>, TraceError> {
                let Some(bytes) = content else {
                    return Ok(None);
                };
                let sha = sha256_hex(bytes);
                tx.execute(
                    "INSERT OR IGNORE INTO blobs (sha256, data) VALUES (?1, ?2)",
                    params![sha, bytes],
                )
                .map_err(sql)?;
                Ok(Some(sha))
            };
            let before = keep(&change.before)?;
            let after = keep(&change.after)?;
            tx.execute(
                "INSERT INTO file_changes (session_id, turn, path, before_sha256, after_sha256) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![session.as_str(), turn, change.path.to_string_lossy(), before, after],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)
    }

    /// The changes of `session` not yet undone, in the order they were made.
    pub fn changes(&self, session: &SessionId) -> Result<Vec<StoredChange>, TraceError> {
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT id, turn, path, before_sha256, after_sha256 FROM file_changes
                 WHERE session_id = ?1 AND undone = 0 ORDER BY id",
            )
            .map_err(|e| self.sqlite_error(e))?;
        let rows = stmt
            .query_map(params![session.as_str()], |row| {
                Ok(StoredChange {
                    id: row.get(0)?,
                    turn: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
                    path: PathBuf::from(row.get::<_, String>(2)?),
                    before_sha256: row.get(3)?,
                    after_sha256: row.get(4)?,
                })
            })
            .map_err(|e| self.sqlite_error(e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| self.sqlite_error(e))
    }

    /// Every change of `session`, undone ones too, each with whether it was undone.
    pub fn all_changes(
        &self,
        session: &SessionId,
    ) -> Result<Vec<(StoredChange, bool)>, TraceError> {
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT id, turn, path, before_sha256, after_sha256, undone FROM file_changes
                 WHERE session_id = ?1 ORDER BY id",
            )
            .map_err(|e| self.sqlite_error(e))?;
        let rows = stmt
            .query_map(params![session.as_str()], |row| {
                Ok((
                    StoredChange {
                        id: row.get(0)?,
                        turn: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
                        path: PathBuf::from(row.get::<_, String>(2)?),
                        before_sha256: row.get(3)?,
                        after_sha256: row.get(4)?,
                    },
                    row.get::<_, i64>(5)? != 0,
                ))
            })
            .map_err(|e| self.sqlite_error(e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| self.sqlite_error(e))
    }

    /// A kept content by its digest.
    pub fn blob(&self, sha256: &str) -> Result<Option<Vec<u8>>, TraceError> {
        self.conn()
            .query_row(
                "SELECT data FROM blobs WHERE sha256 = ?1",
                params![sha256],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.sqlite_error(e))
    }

    /// Marks changes as undone, so a second undo does not repeat them.
    pub fn mark_undone(&self, ids: &[i64]) -> Result<(), TraceError> {
        let tx = self
            .conn()
            .unchecked_transaction()
            .map_err(|e| self.sqlite_error(e))?;
        for id in ids {
            tx.execute(
                "UPDATE file_changes SET undone = 1 WHERE id = ?1",
                params![id],
            )
            .map_err(|e| self.sqlite_error(e))?;
        }
        tx.commit().map_err(|e| self.sqlite_error(e))
    }
}

impl TraceStore {
    /// Keeps what a session knows a file holds (its digest and length), replacing what was kept.
    pub fn record_reads(
        &self,
        session: &SessionId,
        reads: &[(PathBuf, String, u64)],
    ) -> Result<(), TraceError> {
        let tx = self
            .conn()
            .unchecked_transaction()
            .map_err(|e| self.sqlite_error(e))?;
        for (path, sha, len) in reads {
            tx.execute(
                "INSERT OR REPLACE INTO file_reads (session_id, path, sha256, len) VALUES (?1, ?2, ?3, ?4)",
                params![session.as_str(), path.to_string_lossy(), sha, i64::try_from(*len).unwrap_or(i64::MAX)],
            )
            .map_err(|e| self.sqlite_error(e))?;
        }
        tx.commit().map_err(|e| self.sqlite_error(e))
    }

    /// What `session` knows of the files it read or wrote: path, digest, length.
    pub fn reads(&self, session: &SessionId) -> Result<Vec<(PathBuf, String, u64)>, TraceError> {
        let mut stmt = self
            .conn()
            .prepare_cached("SELECT path, sha256, len FROM file_reads WHERE session_id = ?1")
            .map_err(|e| self.sqlite_error(e))?;
        let rows = stmt
            .query_map(params![session.as_str()], |row| {
                Ok((
                    PathBuf::from(row.get::<_, String>(0)?),
                    row.get(1)?,
                    u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
                ))
            })
            .map_err(|e| self.sqlite_error(e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| self.sqlite_error(e))
    }
}
