//! The shared vocabulary of warden.
//!
//! Every other crate speaks in these types: [`ToolCall`] and [`ToolResult`] for what a model asks
//! and what it gets back, [`ToolEvent`] for what the trace records, [`Decision`] and [`RiskLevel`]
//! for what the policy engine says, [`SessionState`] for what a session knows, and [`Event`] for what a run reports as it goes. This crate
//! depends on nothing of warden's.
//!
//! Casing: tool results and events are camelCase on the wire; decisions use single words.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod decision;
mod event;
mod ids;
mod pattern;
mod session;
mod text;
mod tool;

pub use decision::{ApprovalRequest, Decision, DecisionKind, PolicyLayer, Rewrite, RiskLevel};
pub use event::{
    Answer, Asked, CallStatus, Event, NetworkCounts, Resolved, RunStatus, Trigger, Usage,
};
pub use ids::{CallId, IdError, SessionId, ToolName};
pub use pattern::wildcard;
pub use session::{Budgets, Message, Role, SessionState, WorkingSet};
pub use text::{printable, printable_text};
pub use tool::{ToolCall, ToolError, ToolErrorKind, ToolEvent, ToolResult, ToolStatus};
