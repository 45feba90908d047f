//! warden's trace: every tool event in a `SQLite` database, secrets redacted before storage.
//!
//! [`TraceStore`] records [`ToolEvent`](warden_protocol::ToolEvent)s, one committed transaction
//! each, and reads them back by session; [`SessionSummary`] is one line of its session list.
//! [`redact`] and [`redact_value`] are the redaction it applies, usable on their own. The
//! database lives at [`default_path`] unless the caller says otherwise; its schema is versioned
//! and moved forward on open.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod agent;
mod changes;
mod db;
mod error;
mod manifests;
mod network;
mod redact;
mod row;
mod skills;
mod store;

pub use agent::AgentSession;
pub use changes::{FileChange, StoredChange, sha256_hex};
pub use db::default_path;
pub use error::TraceError;
pub use manifests::{ApprovalRefused, ManifestApproval};
pub use redact::{redact, redact_value};
pub use row::now_rfc3339;
pub use store::{SessionSummary, TraceStore};
