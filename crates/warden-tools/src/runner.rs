//! Running calls through the registry and recording each one in the trace.

use std::time::Instant;

use serde_json::Value;
use warden_protocol::{
    Decision, DecisionKind, PolicyLayer, SessionId, ToolErrorKind, ToolEvent, ToolName, ToolResult,
    ToolStatus,
};
use warden_trace::{TraceError, TraceStore};

use crate::{Registry, ToolContext};

/// Runs tool calls for one session and records every call, whatever its outcome.
pub struct ToolRunner<'a> {
    registry: &'a Registry,
    ctx: &'a ToolContext,
    trace: Option<&'a TraceStore>,
    session: SessionId,
    sandbox_profile: String,
    seq: u64,
}

impl<'a> ToolRunner<'a> {
    /// A runner for `session`. With a trace store, the next sequence number continues the
    /// session's existing events.
    pub fn new(
        registry: &'a Registry,
        ctx: &'a ToolContext,
        trace: Option<&'a TraceStore>,
        session: SessionId,
    ) -> Result<Self, TraceError> {
        let seq = match trace {
            Some(store) => store.next_seq(&session)?,
            None => 1,
        };
        Ok(Self {
            registry,
            ctx,
            trace,
            session,
            sandbox_profile: "none".to_owned(),
            seq,
        })
    }

    /// The sandbox profile recorded with each event. Default `none` (the tools run in-process).
    #[must_use]
    pub fn with_sandbox_profile(mut self, profile: impl Into<String>) -> Self {
        self.sandbox_profile = profile.into();
        self
    }

    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// Runs one call and records it. The tool's own failure is in the returned result; only a
    /// failure to record is an `Err`, so nothing runs unrecorded without the caller knowing.
    pub fn run(&mut self, name: &str, args: Value) -> Result<ToolResult, TraceError> {
        let started = Instant::now();
        let outcome = self.registry.call(self.ctx, name, args.clone());
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let tool: ToolName = name.parse().unwrap_or_else(|_| unknown_tool_name());
        let (result, decision, error) = match outcome {
            Ok(output) => (
                ToolResult {
                    tool: tool.clone(),
                    status: ToolStatus::Ok,
                    output: Some(output),
                    error: None,
                },
                Decision::unchecked(),
                None,
            ),
            Err(err) => {
                let refused = matches!(
                    err.kind,
                    ToolErrorKind::OutsideRoots
                        | ToolErrorKind::SymlinkEscape
                        | ToolErrorKind::DeniedPath
                );
                let (status, decision) = if refused {
                    let decision = Decision {
                        decision: DecisionKind::Deny,
                        risk: None,
                        reason: err.message.clone(),
                        layer: PolicyLayer::Tool,
                        rule: None,
                        rewrite: None,
                        approval: None,
                    };
                    (ToolStatus::Denied, decision)
                } else {
                    (ToolStatus::Error, Decision::unchecked())
                };
                let message = err.message.clone();
                (
                    ToolResult {
                        tool: tool.clone(),
                        status,
                        output: None,
                        error: Some(err),
                    },
                    decision,
                    Some(message),
                )
            }
        };
        if let Some(store) = self.trace {
            let bytes_out = result.output.as_ref().map_or(0, |o| o.to_string().len());
            let event = ToolEvent {
                session_id: self.session.clone(),
                seq: self.seq,
                tool,
                bytes_in: args.to_string().len() as u64,
                arguments: args,
                decision,
                sandbox_profile: self.sandbox_profile.clone(),
                status: result.status,
                error,
                duration_ms,
                timestamp: warden_trace::now_rfc3339(),
                bytes_out: bytes_out as u64,
            };
            store.record(&event)?;
            self.seq += 1;
        }
        Ok(result)
    }
}

fn unknown_tool_name() -> ToolName {
    // A constant that satisfies the name check; recorded when the model used an invalid name.
    "unknown"
        .parse()
        .unwrap_or_else(|_| unreachable!("\"unknown\" is a valid tool name"))
}
