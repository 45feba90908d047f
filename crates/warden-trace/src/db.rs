//! Where the trace lives, how its connection is set up, and how its schema moves forward.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, TransactionBehavior};

use crate::TraceError;

/// The schema, as an ordered list of forward migrations. Entry `i` takes a database from
/// `PRAGMA user_version = i` to `i + 1`, inside one transaction.
///
/// To change the schema, append a migration; never edit, reorder or remove a released one, as
/// databases in the field are at every version in between.
const MIGRATIONS: &[&str] = &[
    // 1: sessions and their tool events (SPEC R1).
    //
    // Every index is paid for on each commit, so `tool_events` has only the one its UNIQUE
    // constraint makes, which serves reading a session in order and `next_seq`. Listing by time
    // goes through `sessions_by_start`, written once per session, not per event: an index on
    // `tool_events (ts_ms)` costs about a third of the write rate.
    "CREATE TABLE sessions (
        id TEXT PRIMARY KEY NOT NULL,
        started_at TEXT NOT NULL,
        started_ms INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX sessions_by_start ON sessions (started_ms);
    CREATE TABLE tool_events (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id),
        seq INTEGER NOT NULL CHECK (seq >= 1),
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        decision TEXT NOT NULL,
        risk TEXT,
        layer TEXT NOT NULL,
        rule TEXT,
        reason TEXT NOT NULL,
        sandbox_profile TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        duration_ms INTEGER NOT NULL,
        timestamp TEXT NOT NULL,
        ts_ms INTEGER NOT NULL,
        bytes_in INTEGER NOT NULL,
        bytes_out INTEGER NOT NULL,
        UNIQUE (session_id, seq)
    ) STRICT;",
    // 2: checkpoints of file changes, for `warden undo`: what each change found and left,
    // with contents kept once each by their SHA-256.
    "CREATE TABLE blobs (
        sha256 TEXT PRIMARY KEY NOT NULL,
        data BLOB NOT NULL
    ) STRICT;
    CREATE TABLE file_changes (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id),
        turn INTEGER NOT NULL,
        path TEXT NOT NULL,
        before_sha256 TEXT REFERENCES blobs (sha256),
        after_sha256 TEXT REFERENCES blobs (sha256),
        undone INTEGER NOT NULL DEFAULT 0
    ) STRICT;
    CREATE INDEX file_changes_by_session ON file_changes (session_id, turn);",
    // 3: what each session has read (or written), so calls of one session in separate
    // processes share the read-before-write guard.
    "CREATE TABLE file_reads (
        session_id TEXT NOT NULL,
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        len INTEGER NOT NULL,
        PRIMARY KEY (session_id, path)
    ) STRICT;",
    // 4: a brief summary of what a call did (changed ranges, diff stats), as JSON.
    "ALTER TABLE tool_events ADD COLUMN summary TEXT;",
    // 5: the state of agent runs (`warden run`), saved as it changes so that `warden resume`
    // continues after a crash; and the runs' own events (model requests, approvals, ends).
    "CREATE TABLE agent_sessions (
        session_id TEXT PRIMARY KEY NOT NULL,
        started_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        status TEXT NOT NULL,
        model TEXT NOT NULL,
        cwd TEXT NOT NULL,
        goal TEXT NOT NULL,
        state TEXT NOT NULL
    ) STRICT;
    CREATE TABLE agent_events (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        timestamp TEXT NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL
    ) STRICT;
    CREATE INDEX agent_events_by_session ON agent_events (session_id, id);",
    // 6: the conversation of agent runs, one row per item, written once: saving a run's state
    // costs what changed, not the whole conversation again.
    "CREATE TABLE agent_items (
        session_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        item TEXT NOT NULL,
        PRIMARY KEY (session_id, idx)
    ) STRICT;",
    // 7: skills a person approved, each pinned to the hash of its whole directory: a change to
    // any of its files asks again. Kept outside the project, so a repository cannot approve its
    // own skills.
    "CREATE TABLE skill_approvals (
        dir TEXT NOT NULL,
        tree_hash TEXT NOT NULL,
        name TEXT NOT NULL,
        approved_at TEXT NOT NULL,
        session_id TEXT NOT NULL,
        PRIMARY KEY (dir, tree_hash)
    ) STRICT;",
    // 8: every connection an allowlist sandbox made through the egress proxy (SPEC R3): what
    // it asked for, what was decided and why, and what went through.
    "CREATE TABLE network_events (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        timestamp TEXT NOT NULL,
        kind TEXT NOT NULL,
        host TEXT NOT NULL,
        port INTEGER NOT NULL,
        decision TEXT NOT NULL,
        data TEXT NOT NULL
    ) STRICT;
    CREATE INDEX network_events_by_session ON network_events (session_id, id);",
    // 9: sandbox manifests: approvals a person recorded, each bound to the digest of one
    // manifest, and the runs made under manifests with their receipts (SPEC M3, M7).
    "CREATE TABLE manifest_approvals (
        id TEXT PRIMARY KEY,
        digest TEXT NOT NULL,
        manifest TEXT NOT NULL,
        approved_by TEXT NOT NULL,
        approved_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
    ) STRICT;
    CREATE TABLE manifest_runs (
        run_id TEXT PRIMARY KEY,
        manifest_sha256 TEXT NOT NULL,
        started_at TEXT NOT NULL,
        status TEXT NOT NULL,
        receipt TEXT
    ) STRICT;",
];

/// The schema version this code writes: the number of migrations.
pub(crate) const SCHEMA_VERSION: usize = MIGRATIONS.len();

/// How long a writer waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the trace lives when the caller does not say: `$WARDEN_HOME/trace.db`, else
/// `$XDG_DATA_HOME/warden/trace.db`, else `$HOME/.local/share/warden/trace.db`.
///
/// Empty variables count as unset, and a relative `XDG_DATA_HOME` is ignored, as the XDG base
/// directory specification asks.
pub fn default_path() -> Result<PathBuf, TraceError> {
    default_path_from(|name| std::env::var_os(name))
}

fn default_path_from(var: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, TraceError> {
    let var = |name| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(home) = var("WARDEN_HOME") {
        return Ok(home.join("trace.db"));
    }
    if let Some(data) = var("XDG_DATA_HOME").filter(|p| p.is_absolute()) {
        return Ok(data.join("warden").join("trace.db"));
    }
    let home = var("HOME").ok_or(TraceError::NoHome)?;
    Ok(home.join(".local/share/warden/trace.db"))
}

/// Opens (creating if needed) the database at `path`, configures it and brings its schema to
/// [`SCHEMA_VERSION`].
/// What every `SQLite` database file starts with.
const HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Refuses a file that is there and is not a `SQLite` database. `SQLite` itself would not
/// notice while the write-ahead log beside the file still holds the pages it reads first: a
/// trace overwritten by something else would open, and fail (or answer wrongly) later.
fn check_header(path: &Path) -> Result<(), TraceError> {
    use std::io::Read as _;
    let Ok(mut file) = fs::File::open(path) else {
        // Not there (it is created) or not readable (opening says why).
        return Ok(());
    };
    let mut start = [0u8; 16];
    let mut read = 0;
    while read < start.len() {
        match file.read(&mut start[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Ok(()),
        }
    }
    if read == 0 || start == *HEADER {
        return Ok(());
    }
    let source = rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_NOTADB),
        Some("file is not a database".to_owned()),
    );
    Err(TraceError::Corrupt {
        path: path.to_owned(),
        source,
    })
}

pub(crate) fn connect(path: &Path) -> Result<Connection, TraceError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|source| TraceError::CreateDir {
            path: parent.to_owned(),
            source,
        })?;
    }
    let sqlite = |source| TraceError::sqlite(path, source);
    check_header(path)?;
    let mut conn = Connection::open(path).map_err(|source| TraceError::Open {
        path: path.to_owned(),
        source,
    })?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sqlite)?;
    // WAL: readers (`warden trace`) never block the writer, and a commit is one append to the
    // log. `synchronous = NORMAL` skips the fsync at each commit and syncs at checkpoints
    // instead: a commit that returned survives the process being killed (the log is in the OS
    // page cache, and the next open replays it), and only an OS crash or power cut can lose the
    // last few commits, never corrupt the file. That trade buys tens of thousands of commits a
    // second, so every event can be its own transaction.
    conn.pragma_update(None, "journal_mode", "wal")
        .map_err(sqlite)?;
    conn.pragma_update(None, "synchronous", "normal")
        .map_err(sqlite)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(sqlite)?;
    // Each `warden` process is short-lived. Checkpointing on close would fsync the database at
    // every exit; leaving the log to SQLite's automatic checkpoints keeps one-shot commands fast
    // and loses nothing (the log is replayed on the next open).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
        .map_err(sqlite)?;
    let current: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(sqlite)?;
    // Up to date: no write transaction needed (the common case on every open).
    if usize::try_from(current).is_ok_and(|v| v == SCHEMA_VERSION) {
        return Ok(conn);
    }
    migrate(&mut conn, path)?;
    Ok(conn)
}

/// Applies the missing migrations in order, one transaction each. The version is read inside
/// each write transaction, so two processes opening a new database at once do not both apply
/// the same migration.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), TraceError> {
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|source| TraceError::sqlite(path, source))?;
        let found: i64 = tx
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(|source| TraceError::sqlite(path, source))?;
        let version = usize::try_from(found).map_err(|_| TraceError::InvalidSchema {
            path: path.to_owned(),
            found,
        })?;
        if version > SCHEMA_VERSION {
            return Err(TraceError::NewerSchema {
                path: path.to_owned(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        let Some(sql) = MIGRATIONS.get(version) else {
            return Ok(());
        };
        let failed = |source| TraceError::Migration {
            path: path.to_owned(),
            version: version + 1,
            source,
        };
        tx.execute_batch(sql).map_err(failed)?;
        tx.pragma_update(None, "user_version", version + 1)
            .map_err(failed)?;
        tx.commit().map_err(failed)?;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn path_with(vars: &[(&str, &str)]) -> Result<PathBuf, TraceError> {
        let vars: HashMap<_, _> = vars.iter().copied().collect();
        default_path_from(|name| vars.get(name).map(OsString::from))
    }

    #[test]
    fn default_path_prefers_warden_home_then_xdg_then_home() {
        let all = [
            ("WARDEN_HOME", "/w"),
            ("XDG_DATA_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(path_with(&all).unwrap(), Path::new("/w/trace.db"));
        assert_eq!(
            path_with(&all[1..]).unwrap(),
            Path::new("/x/warden/trace.db")
        );
        assert_eq!(
            path_with(&all[2..]).unwrap(),
            Path::new("/h/.local/share/warden/trace.db")
        );
    }

    #[test]
    fn default_path_skips_empty_and_relative_variables() {
        let vars = [
            ("WARDEN_HOME", ""),
            ("XDG_DATA_HOME", "rel"),
            ("HOME", "/h"),
        ];
        assert_eq!(
            path_with(&vars).unwrap(),
            Path::new("/h/.local/share/warden/trace.db")
        );
        assert!(matches!(path_with(&[]), Err(TraceError::NoHome)));
    }

    fn user_version(conn: &Connection) -> i64 {
        conn.pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap()
    }

    #[test]
    fn fresh_database_migrates_to_latest_and_reopen_is_a_no_op() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/trace.db");
        let conn = connect(&path).unwrap();
        assert_eq!(user_version(&conn), i64::try_from(SCHEMA_VERSION).unwrap());
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        conn.execute_batch("CREATE TABLE marker (x INTEGER)")
            .unwrap();
        drop(conn);

        // A re-run of any migration would fail on the existing tables.
        let conn = connect(&path).unwrap();
        assert_eq!(user_version(&conn), i64::try_from(SCHEMA_VERSION).unwrap());
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 13);
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.db");
        drop(connect(&path).unwrap());
        let newer = SCHEMA_VERSION + 1;
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", newer)
            .unwrap();

        let err = connect(&path).unwrap_err();
        assert!(matches!(err, TraceError::NewerSchema { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "trace database schema version {newer} is newer than this warden supports \
                 ({SCHEMA_VERSION}): {}",
                path.display()
            )
        );
        // Refusing did not touch the version.
        let conn = Connection::open(&path).unwrap();
        assert_eq!(user_version(&conn), i64::try_from(newer).unwrap());
    }

    #[test]
    fn negative_schema_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", -3)
            .unwrap();
        let err = connect(&path).unwrap_err();
        assert!(
            matches!(err, TraceError::InvalidSchema { found: -3, .. }),
            "{err:?}"
        );
    }
}
