//! Tool calls, their results, and the events the trace records.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Decision, SessionId, ToolName};

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool ran and produced a result.
    Ok,
    /// The tool ran (or tried to) and failed; the error goes back to the model.
    Error,
    /// The policy refused the call; the tool never ran.
    Denied,
}

impl ToolStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Denied => "denied",
        }
    }
}

/// What kind of failure a tool reports. Closed, so callers can react to each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    UnknownTool,
    InvalidArguments,
    /// The path resolves outside every allowed root.
    OutsideRoots,
    /// A symlink on the path points outside the allowed roots.
    SymlinkEscape,
    /// The path matches a protected or denied pattern.
    DeniedPath,
    /// The policy refused the call outright.
    PolicyDenied,
    /// The policy asked for approval (or a wider sandbox) and no one gave it.
    NeedsApproval,
    NotFound,
    IsDirectory,
    NotAFile,
    BinaryFile,
    TooLarge,
    InvalidPattern,
    /// The sandbox could not be established; nothing ran.
    SandboxUnavailable,
    /// Overwriting a file this session has not read.
    NotReadFirst,
    /// The file changed on disk since this session read it.
    ChangedSinceRead,
    /// The text to replace was not found.
    NoMatch,
    /// The text to replace was found more than once.
    MultipleMatches,
    Io,
    /// The tool ran and said it failed (an MCP server's `isError`).
    Failed,
    /// The call took longer than its limit and was cancelled.
    Timeout,
    /// What runs the tool (an MCP server) could not be started or stopped answering.
    Unavailable,
}

/// A structured tool failure: returned to the model as data, never a crash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{message}")]
pub struct ToolError {
    pub kind: ToolErrorKind,
    pub message: String,
    /// The argument at fault, as a JSON pointer (`/startLine`), when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What was expected there, when it can be said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
}

impl ToolError {
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            field: None,
            expected: None,
        }
    }

    #[must_use]
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    #[must_use]
    pub fn with_expected(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }
}

/// What a call returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub tool: ToolName,
    pub status: ToolStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

/// One row of the trace: a tool call and everything decided and measured about it (SPEC R1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolEvent {
    pub session_id: SessionId,
    /// Position of the event in its session, from 1.
    pub seq: u64,
    pub tool: ToolName,
    pub arguments: Value,
    pub decision: Decision,
    pub sandbox_profile: String,
    pub status: ToolStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: u64,
    /// RFC 3339, UTC.
    pub timestamp: String,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// What the call did, briefly, where the tool says (a file change's path, changed ranges and
    /// diff stats). Never file contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Value>,
}
