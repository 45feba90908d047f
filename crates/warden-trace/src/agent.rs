//! Agent runs: their saved state, for `warden sessions` and `warden resume`, and their own
//! events (model requests, approval requests and answers, the end), redacted like tool events.

use rusqlite::{OptionalExtension as _, params};
use serde_json::Value;
use warden_protocol::SessionId;

use crate::error::TraceError;
use crate::redact::{redact, redact_value};
use crate::row::now_rfc3339;
use crate::store::TraceStore;

/// One saved agent run, as `warden sessions` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSession {
    pub session_id: SessionId,
    pub started_at: String,
    pub updated_at: String,
    /// `running`, `finished`, `budget_exhausted`, `interrupted`, `error`.
    pub status: String,
    pub model: String,
    pub cwd: String,
    pub goal: String,
}

impl TraceStore {
    /// Saves the state of run `session` (a JSON document the agent defines) and the items of
    /// its conversation from `first` on (those before are stored already), redacted, in one
    /// committed transaction: a crash leaves the previous state or this one, never half.
    pub fn save_agent_state(
        &self,
        session: &SessionId,
        header: &AgentSession,
        state: &Value,
        first: usize,
        items: &[Value],
    ) -> Result<(), TraceError> {
        let now = now_rfc3339();
        let state = redact_value(state).to_string();
        let tx = self
            .conn()
            .unchecked_transaction()
            .map_err(|source| self.sqlite_error(source))?;
        for (offset, item) in items.iter().enumerate() {
            let idx = i64::try_from(first + offset).unwrap_or(i64::MAX);
            tx.execute(
                "INSERT OR REPLACE INTO agent_items (session_id, idx, item) VALUES (?1, ?2, ?3)",
                params![session.as_str(), idx, redact_value(item).to_string()],
            )
            .map_err(|source| self.sqlite_error(source))?;
        }
        // A conversation that got shorter (compacted) leaves no stale rows behind.
        let end = i64::try_from(first + items.len()).unwrap_or(i64::MAX);
        tx.execute(
            "DELETE FROM agent_items WHERE session_id = ?1 AND idx >= ?2",
            params![session.as_str(), end],
        )
        .map_err(|source| self.sqlite_error(source))?;
        tx.execute(
            "INSERT INTO agent_sessions
                     (session_id, started_at, updated_at, status, model, cwd, goal, state)
                 VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (session_id) DO UPDATE SET
                     updated_at = excluded.updated_at, status = excluded.status,
                     model = excluded.model, state = excluded.state",
            params![
                session.as_str(),
                now,
                header.status,
                header.model,
                header.cwd,
                redact(&header.goal),
                state
            ],
        )
        .map_err(|source| self.sqlite_error(source))?;
        tx.commit().map_err(|source| self.sqlite_error(source))?;
        Ok(())
    }

    /// The stored conversation of run `session`, in order.
    pub fn agent_items(&self, session: &SessionId) -> Result<Vec<Value>, TraceError> {
        let mut stmt = self
            .conn()
            .prepare("SELECT item FROM agent_items WHERE session_id = ?1 ORDER BY idx")
            .map_err(|source| self.sqlite_error(source))?;
        let rows = stmt
            .query_map([session.as_str()], |row| row.get::<_, String>(0))
            .map_err(|source| self.sqlite_error(source))?;
        let mut items = Vec::new();
        for row in rows {
            let text = row.map_err(|source| self.sqlite_error(source))?;
            items.push(serde_json::from_str(&text).map_err(|e| TraceError::BadRow {
                path: self.path().to_owned(),
                table: "agent_items",
                row: 0,
                reason: format!("session {session}: an item is not JSON: {e}"),
            })?);
        }
        Ok(items)
    }

    /// The saved state of run `session`, if there is one.
    pub fn agent_state(
        &self,
        session: &SessionId,
    ) -> Result<Option<(AgentSession, Value)>, TraceError> {
        let row = self
            .conn()
            .query_row(
                "SELECT started_at, updated_at, status, model, cwd, goal, state
                 FROM agent_sessions WHERE session_id = ?1",
                [session.as_str()],
                |row| {
                    Ok((
                        AgentSession {
                            session_id: session.clone(),
                            started_at: row.get(0)?,
                            updated_at: row.get(1)?,
                            status: row.get(2)?,
                            model: row.get(3)?,
                            cwd: row.get(4)?,
                            goal: row.get(5)?,
                        },
                        row.get::<_, String>(6)?,
                    ))
                },
            )
            .optional()
            .map_err(|source| self.sqlite_error(source))?;
        let Some((header, text)) = row else {
            return Ok(None);
        };
        let state = serde_json::from_str(&text).map_err(|e| TraceError::BadRow {
            path: self.path().to_owned(),
            table: "agent_sessions",
            row: 0,
            reason: format!("session {session}: the saved state is not JSON: {e}"),
        })?;
        Ok(Some((header, state)))
    }

    /// Every saved agent run, the most recently updated first.
    pub fn agent_sessions(&self) -> Result<Vec<AgentSession>, TraceError> {
        let mut stmt = self
            .conn()
            .prepare(
                "SELECT session_id, started_at, updated_at, status, model, cwd, goal
                 FROM agent_sessions ORDER BY updated_at DESC, session_id DESC",
            )
            .map_err(|source| self.sqlite_error(source))?;
        let rows = stmt
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, String>(4)?,
                    row.get::<_, String>(5)?,
                    row.get::<_, String>(6)?,
                ))
            })
            .map_err(|source| self.sqlite_error(source))?;
        let mut sessions = Vec::new();
        for row in rows {
            let (id, started_at, updated_at, status, model, cwd, goal) =
                row.map_err(|source| self.sqlite_error(source))?;
            let session_id = id.parse().map_err(|e| TraceError::BadRow {
                path: self.path().to_owned(),
                table: "agent_sessions",
                row: 0,
                reason: format!("session id {id:?}: {e}"),
            })?;
            sessions.push(AgentSession {
                session_id,
                started_at,
                updated_at,
                status,
                model,
                cwd,
                goal,
            });
        }
        Ok(sessions)
    }

    /// Records one event of run `session` (`kind` and a JSON payload, redacted).
    pub fn record_agent_event(
        &self,
        session: &SessionId,
        kind: &str,
        data: &Value,
    ) -> Result<(), TraceError> {
        self.conn()
            .execute(
                "INSERT INTO agent_events (session_id, timestamp, kind, data)
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    session.as_str(),
                    now_rfc3339(),
                    kind,
                    redact_value(data).to_string()
                ],
            )
            .map_err(|source| self.sqlite_error(source))?;
        Ok(())
    }

    /// Every event of `kind`, of any run, oldest first: its payload.
    pub fn agent_events_of_kind(&self, kind: &str) -> Result<Vec<Value>, TraceError> {
        let mut stmt = self
            .conn()
            .prepare("SELECT data FROM agent_events WHERE kind = ?1 ORDER BY id")
            .map_err(|source| self.sqlite_error(source))?;
        let rows = stmt
            .query_map([kind], |row| row.get::<_, String>(0))
            .map_err(|source| self.sqlite_error(source))?;
        let mut events = Vec::new();
        for row in rows {
            let data = row.map_err(|source| self.sqlite_error(source))?;
            events.push(serde_json::from_str(&data).unwrap_or(Value::Null));
        }
        Ok(events)
    }

    /// The events of run `session`, in order: when, kind and payload.
    pub fn agent_events_timed(
        &self,
        session: &SessionId,
    ) -> Result<Vec<(String, String, Value)>, TraceError> {
        let mut stmt = self
            .conn()
            .prepare(
                "SELECT timestamp, kind, data FROM agent_events WHERE session_id = ?1 ORDER BY id",
            )
            .map_err(|source| self.sqlite_error(source))?;
        let rows = stmt
            .query_map([session.as_str()], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                ))
            })
            .map_err(|source| self.sqlite_error(source))?;
        let mut events = Vec::new();
        for row in rows {
            let (time, kind, data) = row.map_err(|source| self.sqlite_error(source))?;
            events.push((
                time,
                kind,
                serde_json::from_str(&data).unwrap_or(Value::Null),
            ));
        }
        Ok(events)
    }

    /// The events of run `session`, in order: kind and payload.
    pub fn agent_events(&self, session: &SessionId) -> Result<Vec<(String, Value)>, TraceError> {
        let mut stmt = self
            .conn()
            .prepare("SELECT kind, data FROM agent_events WHERE session_id = ?1 ORDER BY id")
            .map_err(|source| self.sqlite_error(source))?;
        let rows = stmt
            .query_map([session.as_str()], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|source| self.sqlite_error(source))?;
        let mut events = Vec::new();
        for row in rows {
            let (kind, data) = row.map_err(|source| self.sqlite_error(source))?;
            events.push((kind, serde_json::from_str(&data).unwrap_or(Value::Null)));
        }
        Ok(events)
    }
}
