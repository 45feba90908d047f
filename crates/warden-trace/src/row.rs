//! Turning events into rows and rows back into events.
//!
//! Enums are stored as their wire names (`require_approval`, `path_sandbox`, `L3`) and read back
//! through serde, so the two directions cannot drift apart.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::Row;
use serde::Deserialize;
use serde::de::IntoDeserializer;
use serde::de::value::Error as ValueError;
use warden_protocol::{Decision, DecisionKind, PolicyLayer, RiskLevel, ToolEvent, ToolStatus};

use crate::TraceError;

/// The current time as RFC 3339 UTC with millisecond precision: `2025-01-31T09:15:02.123Z`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Milliseconds since the Unix epoch of an RFC 3339 UTC timestamp, for ordering by time.
pub(crate) fn timestamp_ms(timestamp: &str) -> Result<i64, String> {
    let invalid = || format!("timestamp {timestamp:?} is not RFC 3339 UTC");
    let time = humantime::parse_rfc3339(timestamp).map_err(|_| invalid())?;
    let since = time.duration_since(UNIX_EPOCH).map_err(|_| invalid())?;
    i64::try_from(since.as_millis()).map_err(|_| invalid())
}

/// A count or size as `SQLite` stores it.
pub(crate) fn to_sql_int(field: &str, value: u64) -> Result<i64, String> {
    i64::try_from(value).map_err(|_| format!("{field} {value} is too large to store"))
}

pub(crate) fn risk_str(risk: RiskLevel) -> &'static str {
    match risk {
        RiskLevel::L0 => "L0",
        RiskLevel::L1 => "L1",
        RiskLevel::L2 => "L2",
        RiskLevel::L3 => "L3",
        RiskLevel::L4 => "L4",
        RiskLevel::L5 => "L5",
    }
}

/// The columns [`event_from_row`] reads, in order.
pub(crate) const EVENT_COLUMNS: &str = "id, session_id, seq, tool, arguments, decision, risk, \
     layer, rule, reason, sandbox_profile, status, error, duration_ms, timestamp, bytes_in, \
     bytes_out, summary";

/// One stored row, read with [`EVENT_COLUMNS`], as it came out of `SQLite`.
pub(crate) struct RawEvent {
    id: i64,
    session_id: String,
    seq: i64,
    tool: String,
    arguments: String,
    decision: String,
    risk: Option<String>,
    layer: String,
    rule: Option<String>,
    reason: String,
    sandbox_profile: String,
    status: String,
    error: Option<String>,
    duration_ms: i64,
    timestamp: String,
    bytes_in: i64,
    bytes_out: i64,
    summary: Option<String>,
}

impl RawEvent {
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            session_id: row.get(1)?,
            seq: row.get(2)?,
            tool: row.get(3)?,
            arguments: row.get(4)?,
            decision: row.get(5)?,
            risk: row.get(6)?,
            layer: row.get(7)?,
            rule: row.get(8)?,
            reason: row.get(9)?,
            sandbox_profile: row.get(10)?,
            status: row.get(11)?,
            error: row.get(12)?,
            duration_ms: row.get(13)?,
            timestamp: row.get(14)?,
            bytes_in: row.get(15)?,
            bytes_out: row.get(16)?,
            summary: row.get(17)?,
        })
    }

    /// The event again; a value this code does not know is an error naming the row.
    pub(crate) fn into_event(self, path: &Path) -> Result<ToolEvent, TraceError> {
        let row = self.id;
        let bad = |reason: String| TraceError::BadRow {
            path: path.to_owned(),
            table: "tool_events",
            row,
            reason,
        };
        let count = |field: &str, value: i64| {
            u64::try_from(value).map_err(|_| bad(format!("negative {field} {value}")))
        };
        let risk = match self.risk {
            Some(risk) => Some(wire_enum::<RiskLevel>("risk", &risk).map_err(bad)?),
            None => None,
        };
        Ok(ToolEvent {
            session_id: self.session_id.parse().map_err(|e| bad(format!("{e}")))?,
            seq: count("seq", self.seq)?,
            tool: self.tool.parse().map_err(|e| bad(format!("{e}")))?,
            arguments: serde_json::from_str(&self.arguments)
                .map_err(|e| bad(format!("arguments are not JSON: {e}")))?,
            decision: Decision {
                decision: wire_enum::<DecisionKind>("decision", &self.decision).map_err(bad)?,
                risk,
                reason: self.reason,
                layer: wire_enum::<PolicyLayer>("layer", &self.layer).map_err(bad)?,
                rule: self.rule,
                rewrite: None,
                approval: None,
            },
            sandbox_profile: self.sandbox_profile,
            status: wire_enum::<ToolStatus>("status", &self.status).map_err(bad)?,
            error: self.error,
            duration_ms: count("duration_ms", self.duration_ms)?,
            timestamp: self.timestamp,
            bytes_in: count("bytes_in", self.bytes_in)?,
            bytes_out: count("bytes_out", self.bytes_out)?,
            summary: self
                .summary
                .as_deref()
                .and_then(|s| serde_json::from_str(s).ok()),
        })
    }
}

/// Parses a unit variant from its serde name.
fn wire_enum<'de, T: Deserialize<'de>>(field: &str, value: &'de str) -> Result<T, String> {
    T::deserialize(IntoDeserializer::<ValueError>::into_deserializer(value))
        .map_err(|_| format!("unknown {field} {value:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_enum_names_read_back_as_the_same_variant() {
        use DecisionKind as D;
        use PolicyLayer as L;
        use RiskLevel as R;
        for kind in [
            D::Allow,
            D::Deny,
            D::RequireApproval,
            D::RequireEscalation,
            D::Rewrite,
        ] {
            assert_eq!(wire_enum::<D>("decision", kind.as_str()), Ok(kind));
        }
        for layer in [
            L::None,
            L::Tool,
            L::HardBlock,
            L::PathSandbox,
            L::Rules,
            L::Mode,
            L::Approval,
        ] {
            assert_eq!(wire_enum::<L>("layer", layer.as_str()), Ok(layer));
        }
        for status in [ToolStatus::Ok, ToolStatus::Error, ToolStatus::Denied] {
            assert_eq!(
                wire_enum::<ToolStatus>("status", status.as_str()),
                Ok(status)
            );
        }
        for risk in [R::L0, R::L1, R::L2, R::L3, R::L4, R::L5] {
            assert_eq!(wire_enum::<R>("risk", risk_str(risk)), Ok(risk));
        }
    }

    #[test]
    fn unknown_enum_names_are_errors() {
        assert_eq!(
            wire_enum::<DecisionKind>("decision", "maybe"),
            Err("unknown decision \"maybe\"".to_owned())
        );
    }

    #[test]
    fn timestamps_parse_to_epoch_milliseconds() {
        assert_eq!(timestamp_ms("1970-01-01T00:00:01.250Z"), Ok(1250));
        assert_eq!(timestamp_ms("2025-01-31T09:15:02Z"), Ok(1_738_314_902_000));
        assert!(timestamp_ms("yesterday").is_err());
        assert!(timestamp_ms("2025-01-31T09:15:02+02:00").is_err());
        let now = now_rfc3339();
        assert!(
            now.ends_with('Z') && now.len() == "2025-01-31T09:15:02.123Z".len(),
            "{now}"
        );
        assert!(timestamp_ms(&now).is_ok());
    }

    #[test]
    fn oversized_counts_are_refused() {
        assert_eq!(to_sql_int("bytes_in", 7), Ok(7));
        assert!(to_sql_int("bytes_in", u64::MAX).is_err());
    }
}
