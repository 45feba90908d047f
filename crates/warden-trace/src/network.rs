//! Connections through the egress proxy, per session: the kind, host, port and decision as
//! columns, everything else (method, address, reason, server name, status, bytes, whether
//! credentials were sent) as a JSON document, redacted like every other event.

use rusqlite::params;
use serde_json::Value;
use warden_protocol::SessionId;

use crate::TraceError;
use crate::redact::redact_value;
use crate::row::now_rfc3339;
use crate::store::TraceStore;

impl TraceStore {
    /// Records one connection of `session`; `data` holds at least `kind`, `host`, `port` and
    /// `decision`.
    pub fn record_network(&self, session: &SessionId, data: &Value) -> Result<(), TraceError> {
        let text = |key: &str| {
            data.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let port = data.get("port").and_then(Value::as_i64).unwrap_or(0);
        self.conn()
            .execute(
                "INSERT INTO network_events (session_id, timestamp, kind, host, port, decision, data)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    session.as_str(),
                    now_rfc3339(),
                    text("kind"),
                    text("host"),
                    port,
                    text("decision"),
                    redact_value(data).to_string()
                ],
            )
            .map_err(|source| self.sqlite_error(source))?;
        Ok(())
    }

    /// The connections of `session`, in order, each with its time.
    pub fn network_events(&self, session: &SessionId) -> Result<Vec<(String, Value)>, TraceError> {
        let mut stmt = self
            .conn()
            .prepare("SELECT timestamp, data FROM network_events WHERE session_id = ?1 ORDER BY id")
            .map_err(|source| self.sqlite_error(source))?;
        let rows = stmt
            .query_map([session.as_str()], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|source| self.sqlite_error(source))?;
        let mut out = Vec::new();
        for row in rows {
            let (time, data) = row.map_err(|source| self.sqlite_error(source))?;
            out.push((time, serde_json::from_str(&data).unwrap_or(Value::Null)));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_kept_per_session_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TraceStore::open(&tmp.path().join("trace.db")).unwrap();
        let session = SessionId::new();
        for host in ["a.example", "b.example"] {
            store
                .record_network(
                    &session,
                    &serde_json::json!({"kind": "connect", "host": host, "port": 443, "decision": "allow"}),
                )
                .unwrap();
        }
        let events = store.network_events(&session).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].1["host"], "b.example");
        assert!(store.network_events(&SessionId::new()).unwrap().is_empty());
    }
}
