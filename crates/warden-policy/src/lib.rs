//! warden's policy engine: decides every tool call before it runs, and explains why.
//!
//! [`Engine::check`] takes an [`Action`] (a shell command, a path, a URL, a custom tool call) and
//! returns a [`Verdict`]: the [`Decision`](warden_protocol::Decision) and what each of the five
//! layers said (hard block → path sandbox → rules → mode → approval). Shell commands are parsed
//! with a real bash grammar ([`shell::analyze`]); risk levels come from [`risk::classify`]; paths
//! go through the one resolved path policy ([`PathPolicy`], [`Protection`]) that the tools and
//! the sandbox share. The engine is pure: no I/O beyond reading settings and resolving paths.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod approvals;
mod arguments;
mod engine;
mod error;
mod hardblock;
mod modes;
mod pathrules;
mod paths;
pub mod risk;
mod rules;
pub mod secrets;
pub mod shell;

pub use approvals::{Remembered, Wider, remembered_command, remembered_rule};
pub use engine::{Action, Engine, Narrowing, Step, Verdict};
pub use error::PolicyError;
pub use modes::{Outcome, Row};
pub use paths::{
    PathPolicy, PatternError, Protection, ResolvedPath, Target, WalkCache, normalize, real_path,
};
pub use rules::{Anchors, Rule, RuleError, RuleKind, RuleTool};
pub use secrets::{Secret, Secrets};
