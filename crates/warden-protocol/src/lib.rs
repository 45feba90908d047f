//! The shared vocabulary of warden.
//!
//! The types that cross the crates: [`ToolResult`] and [`ToolError`] for what a tool gives the
//! model back, [`ToolEvent`] for what the trace records of a call, [`Decision`] and
//! [`RiskLevel`] for what the policy engine says, [`WorkingSet`] and [`Budgets`] for what a
//! session knows and may spend, [`Usage`] for the tokens it spent, and [`Event`] for what a run
//! reports as it goes. This crate depends on nothing of warden's.
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
pub use ids::{IdError, SessionId, ToolName};
pub use pattern::wildcard;
pub use session::{Budgets, WorkingSet};
pub use text::{printable, printable_text, short};
pub use tool::{ToolError, ToolErrorKind, ToolEvent, ToolResult, ToolStatus};
