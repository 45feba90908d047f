//! The one error type of the trace store.

use std::io;
use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;
use warden_protocol::SessionId;

/// Everything that can go wrong with the trace. Every message names the database at fault.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot locate the trace database: none of WARDEN_HOME, XDG_DATA_HOME or HOME is set")]
    NoHome,

    #[error("cannot create directory {} for the trace database: {source}", path.display())]
    CreateDir { path: PathBuf, source: io::Error },

    #[error("cannot open trace database {}: {source}", path.display())]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },

    #[error(
        "trace database {} is corrupt (file is not a database); move it aside to start a new trace: {source}",
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        source: rusqlite::Error,
    },

    #[error(
        "trace database schema version {found} is newer than this warden supports ({supported}): {}",
        path.display()
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: usize,
    },

    #[error("trace database {} has an invalid schema version {found}", path.display())]
    InvalidSchema { path: PathBuf, found: i64 },

    #[error("trace database {}: migration to schema version {version} failed: {source}", path.display())]
    Migration {
        path: PathBuf,
        version: usize,
        source: rusqlite::Error,
    },

    #[error("trace database {}: event {seq} of session {session} is already recorded", path.display())]
    Duplicate {
        path: PathBuf,
        session: SessionId,
        seq: u64,
    },

    /// An event cannot be stored as given (a timestamp that is not RFC 3339 UTC, a number too
    /// large for `SQLite`).
    #[error("trace database {}: cannot record event {seq} of session {session}: {reason}", path.display())]
    InvalidEvent {
        path: PathBuf,
        session: SessionId,
        seq: u64,
        reason: String,
    },

    /// A stored row does not read back as an event (written by a newer or broken writer).
    #[error("trace database {}: row {row} of table {table}: {reason}", path.display())]
    BadRow {
        path: PathBuf,
        table: &'static str,
        row: i64,
        reason: String,
    },

    #[error("trace database {}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

impl TraceError {
    /// Wraps a `SQLite` error, telling a corrupt file apart from every other failure.
    pub(crate) fn sqlite(path: &Path, source: rusqlite::Error) -> Self {
        let path = path.to_owned();
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                Self::Corrupt { path, source }
            }
            Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => {
                Self::Open { path, source }
            }
            _ => Self::Sqlite { path, source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_a_database_is_reported_as_corrupt() {
        let source = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_NOTADB),
            None,
        );
        let err = TraceError::sqlite(Path::new("/tmp/t.db"), source);
        assert!(matches!(err, TraceError::Corrupt { .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.contains("/tmp/t.db"), "{message}");
        assert!(message.contains("file is not a database"), "{message}");
    }

    #[test]
    fn newer_schema_message_names_both_versions() {
        let err = TraceError::NewerSchema {
            path: PathBuf::from("/tmp/t.db"),
            found: 9,
            supported: 1,
        };
        assert_eq!(
            err.to_string(),
            "trace database schema version 9 is newer than this warden supports (1): /tmp/t.db"
        );
    }
}
