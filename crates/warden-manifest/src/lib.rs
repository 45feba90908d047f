//! warden's sandbox manifest (SPEC M1–M10): a per-task permission contract. A [`Manifest`]
//! (schema v1, read by [`parse`] with every error's line and column) states what a run may
//! read and write, reach, obtain and use, what it leaves and when it is destroyed;
//! [`preflight`] holds it against built-in rules and the organisation's policy before anything
//! runs. The runner that enforces it, and the receipt it ends with, build on these.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod parse;
mod preflight;
pub mod run;
mod schema;
mod templates;

pub use parse::{Parsed, Problem, locate, parse};
pub use preflight::{Approvals, preflight};
pub use schema::{
    ACTIONS, Alias, Artifacts, Budgets, Capability, CapabilityKind, Cleanup, Environment,
    Filesystem, Identity, Manifest, Mode, Mount, Network, NetworkAllow, NetworkDefault, Protocol,
    Resources, Run, WRITING_ACTIONS,
};
pub use templates::{TEMPLATES, template};

/// The JSON Schema of the manifest, generated from its types.
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Manifest)).unwrap_or_default()
}
