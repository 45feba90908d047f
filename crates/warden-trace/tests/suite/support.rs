//! Fixture builders.

use serde_json::json;
use warden_protocol::{
    Decision, DecisionKind, PolicyLayer, RiskLevel, SessionId, ToolEvent, ToolStatus,
};

/// An ordinary allowed `readFile` event.
pub(crate) fn event(session: &SessionId, seq: u64) -> ToolEvent {
    ToolEvent {
        session_id: session.clone(),
        seq,
        tool: "readFile".parse().unwrap(),
        arguments: json!({"path": format!("src/file{seq}.rs"), "startLine": seq}),
        decision: Decision {
            decision: DecisionKind::Allow,
            risk: Some(RiskLevel::L1),
            reason: "read inside the project".to_owned(),
            layer: PolicyLayer::Rules,
            rule: Some("allow-reads".to_owned()),
            rewrite: None,
            approval: None,
        },
        sandbox_profile: "workspace-write".to_owned(),
        status: ToolStatus::Ok,
        error: None,
        duration_ms: seq * 3,
        timestamp: format!("2025-03-01T10:00:{:02}.{:03}Z", seq % 60, seq % 1000),
        bytes_in: 40 + seq,
        bytes_out: 1000 + seq,
        summary: seq
            .is_multiple_of(2)
            .then(|| json!({"path": format!("src/file{seq}.rs"), "changedRanges": ["3-4"]})),
    }
}

/// A denied `bash` event.
pub(crate) fn denied(session: &SessionId, seq: u64) -> ToolEvent {
    let mut event = event(session, seq);
    event.tool = "bash".parse().unwrap();
    event.arguments = json!({"command": "rm -rf /"});
    event.decision = Decision {
        decision: DecisionKind::Deny,
        risk: Some(RiskLevel::L5),
        reason: "critical deletion".to_owned(),
        layer: PolicyLayer::HardBlock,
        rule: None,
        rewrite: None,
        approval: None,
    };
    event.status = ToolStatus::Denied;
    event
}

/// A failed event, its error text carrying `error`.
pub(crate) fn failed(session: &SessionId, seq: u64, error: &str) -> ToolEvent {
    let mut event = event(session, seq);
    event.decision = Decision::unchecked();
    event.status = ToolStatus::Error;
    event.error = Some(error.to_owned());
    event
}

/// A fake secret, assembled at run time so that secret scanners do not flag this file.
pub(crate) fn fake(prefix: &str, body: &str) -> String {
    format!("{prefix}{body}")
}
