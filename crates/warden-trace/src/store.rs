//! The trace store: recording events and reading them back.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, Transaction, TransactionBehavior, params};
use serde::Serialize;
use warden_protocol::{SessionId, ToolEvent};

use crate::row::{EVENT_COLUMNS, RawEvent, risk_str, timestamp_ms, to_sql_int};
use crate::{TraceError, db, redact, redact_value};

/// The `SQLite` trace of every tool event (SPEC R1).
///
/// Each [`record`](Self::record) is its own committed transaction, and secrets are redacted
/// before anything is written. Several processes may share one database: writers wait for each
/// other's locks for up to five seconds. A store is `Send` but not `Sync`; share it behind a
/// mutex, or open one per thread.
#[derive(Debug)]
pub struct TraceStore {
    conn: Connection,
    path: PathBuf,
}

/// One session of the trace, as [`TraceStore::sessions`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub session_id: SessionId,
    /// Number of events recorded.
    pub events: u64,
    /// Timestamp of the first event (lowest seq).
    pub first_timestamp: String,
    /// Timestamp of the last event (highest seq).
    pub last_timestamp: String,
    /// Events whose status is `denied`: the policy refused and the tool never ran.
    pub denied: u64,
    /// Events whose status is `error`.
    pub errors: u64,
    /// The MCP client whose connection the session is (`warden mcp serve`): its name, version
    /// and protocol revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<serde_json::Value>,
}

/// Creates the session on its first event; later events only look it up, so they write no page
/// of `sessions`.
const INSERT_SESSION: &str = "INSERT INTO sessions (id, started_at, started_ms) VALUES (?1, ?2, ?3) \
     ON CONFLICT (id) DO NOTHING";

const INSERT_EVENT: &str = "INSERT INTO tool_events (session_id, seq, tool, arguments, decision, \
     risk, layer, rule, reason, sandbox_profile, status, error, duration_ms, timestamp, ts_ms, \
     bytes_in, bytes_out, summary) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)";

const SESSIONS: &str = "SELECT s.id, count(*), \
       (SELECT timestamp FROM tool_events f WHERE f.session_id = s.id ORDER BY seq LIMIT 1), \
       (SELECT timestamp FROM tool_events l WHERE l.session_id = s.id ORDER BY seq DESC LIMIT 1), \
       coalesce(sum(e.status = 'denied'), 0), coalesce(sum(e.status = 'error'), 0), \
       (SELECT data FROM agent_events c WHERE c.session_id = s.id AND c.kind = 'mcp_client' \
        ORDER BY c.id LIMIT 1) \
     FROM sessions s JOIN tool_events e ON e.session_id = s.id \
     GROUP BY s.id ORDER BY s.started_ms DESC, s.id DESC";

impl TraceStore {
    /// Opens the trace at `path`, creating the file and its parent directories if needed and
    /// bringing its schema up to date.
    ///
    /// A file that is not a `SQLite` database, a directory that cannot be created and a schema
    /// newer than this code knows are errors naming `path`.
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let conn = db::connect(path)?;
        Ok(Self {
            conn,
            path: path.to_owned(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The seq the next event of `session` should carry: one past the highest recorded, or 1
    /// for a session with none.
    pub fn next_seq(&self, session: &SessionId) -> Result<u64, TraceError> {
        let last: Option<i64> = self
            .conn
            .prepare_cached("SELECT max(seq) FROM tool_events WHERE session_id = ?1")
            .and_then(|mut stmt| stmt.query_row([session.as_str()], |row| row.get(0)))
            .map_err(|source| self.sqlite(source))?;
        let last = u64::try_from(last.unwrap_or(0)).map_err(|_| TraceError::BadRow {
            path: self.path.clone(),
            table: "tool_events",
            row: 0,
            reason: format!("negative seq in session {session}"),
        })?;
        Ok(last + 1)
    }

    /// Stores one event, its arguments, error and reason redacted, in one committed
    /// transaction. An event whose (session, seq) is already stored is
    /// [`TraceError::Duplicate`].
    pub fn record(&self, event: &ToolEvent) -> Result<(), TraceError> {
        self.record_batch(std::slice::from_ref(event))
    }

    /// Stores `events` in one transaction: all of them or, on any error, none.
    pub fn record_batch(&self, events: &[ToolEvent]) -> Result<(), TraceError> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|source| self.sqlite(source))?;
        for event in events {
            self.insert(&tx, event)?;
        }
        tx.commit().map_err(|source| self.sqlite(source))
    }

    fn insert(&self, tx: &Transaction<'_>, event: &ToolEvent) -> Result<(), TraceError> {
        let invalid = |reason: String| TraceError::InvalidEvent {
            path: self.path.clone(),
            session: event.session_id.clone(),
            seq: event.seq,
            reason,
        };
        if event.seq == 0 {
            return Err(invalid("seq starts at 1".to_owned()));
        }
        let seq = to_sql_int("seq", event.seq).map_err(invalid)?;
        let ts_ms = timestamp_ms(&event.timestamp).map_err(invalid)?;
        let duration_ms = to_sql_int("duration_ms", event.duration_ms).map_err(invalid)?;
        let bytes_in = to_sql_int("bytes_in", event.bytes_in).map_err(invalid)?;
        let bytes_out = to_sql_int("bytes_out", event.bytes_out).map_err(invalid)?;
        let arguments = redact_value(&event.arguments).to_string();
        let error = event.error.as_deref().map(redact);
        let reason = redact(&event.decision.reason);
        let summary = event.summary.as_ref().map(|s| redact_value(s).to_string());
        let session = event.session_id.as_str();

        tx.prepare_cached(INSERT_SESSION)
            .and_then(|mut stmt| stmt.execute(params![session, event.timestamp, ts_ms]))
            .map_err(|source| self.sqlite(source))?;
        let decision = &event.decision;
        tx.prepare_cached(INSERT_EVENT)
            .and_then(|mut stmt| {
                stmt.execute(params![
                    session,
                    seq,
                    event.tool.as_str(),
                    arguments,
                    decision.decision.as_str(),
                    decision.risk.map(risk_str),
                    decision.layer.as_str(),
                    decision.rule,
                    reason,
                    event.sandbox_profile,
                    event.status.as_str(),
                    error,
                    duration_ms,
                    event.timestamp,
                    ts_ms,
                    bytes_in,
                    bytes_out,
                    summary,
                ])
            })
            .map_err(|source| {
                if is_unique_violation(&source) {
                    TraceError::Duplicate {
                        path: self.path.clone(),
                        session: event.session_id.clone(),
                        seq: event.seq,
                    }
                } else {
                    self.sqlite(source)
                }
            })?;
        Ok(())
    }

    /// Every session with at least one event, the most recently started first.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, TraceError> {
        let mut stmt = self
            .conn
            .prepare_cached(SESSIONS)
            .map_err(|source| self.sqlite(source))?;
        let rows = stmt
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, i64>(4)?,
                    row.get::<_, i64>(5)?,
                    row.get::<_, Option<String>>(6)?,
                ))
            })
            .map_err(|source| self.sqlite(source))?;
        let mut sessions = Vec::new();
        for row in rows {
            let (id, events, first_timestamp, last_timestamp, denied, errors, client) =
                row.map_err(|source| self.sqlite(source))?;
            let bad = |reason: String| TraceError::BadRow {
                path: self.path.clone(),
                table: "sessions",
                row: 0,
                reason: format!("session {id:?}: {reason}"),
            };
            let count = |n: i64| u64::try_from(n).map_err(|_| bad(format!("negative count {n}")));
            sessions.push(SessionSummary {
                session_id: id.parse().map_err(|e| bad(format!("{e}")))?,
                events: count(events)?,
                first_timestamp,
                last_timestamp,
                denied: count(denied)?,
                errors: count(errors)?,
                client: client.and_then(|c| serde_json::from_str(&c).ok()),
            });
        }
        Ok(sessions)
    }

    /// The events of `session` in seq order; empty for an unknown session.
    pub fn events(&self, session: &SessionId) -> Result<Vec<ToolEvent>, TraceError> {
        self.events_after(session, 0)
    }

    /// The events of `session` after sequence number `after`, in order: what a reader that has
    /// the earlier ones still needs.
    pub fn events_after(
        &self,
        session: &SessionId,
        after: u64,
    ) -> Result<Vec<ToolEvent>, TraceError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM tool_events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq"
        );
        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .map_err(|source| self.sqlite(source))?;
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(
                rusqlite::params![session.as_str(), after],
                RawEvent::from_row,
            )
            .map_err(|source| self.sqlite(source))?;
        rows.map(|raw| {
            raw.map_err(|source| self.sqlite(source))?
                .into_event(&self.path)
        })
        .collect()
    }

    fn sqlite(&self, source: rusqlite::Error) -> TraceError {
        TraceError::sqlite(&self.path, source)
    }

    pub(crate) fn sqlite_error(&self, source: rusqlite::Error) -> TraceError {
        self.sqlite(source)
    }

    pub(crate) fn conn(&self) -> &rusqlite::Connection {
        &self.conn
    }
}

/// Only UNIQUE (session, seq) can fail this way; a foreign key or CHECK failure is not a
/// duplicate.
fn is_unique_violation(error: &rusqlite::Error) -> bool {
    matches!(
        error,
        rusqlite::Error::SqliteFailure(e, _) if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
    )
}
