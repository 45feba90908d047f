//! warden's tool registry and built-in tools.
//!
//! A [`Tool`] is a type whose argument struct derives the JSON Schema the model sees; the
//! [`Registry`] compiles that same schema to validate every incoming call, so the two cannot drift
//! (SPEC T1). Tools run with a [`ToolContext`] holding the [`PathPolicy`] every path goes through,
//! and a [`ToolRunner`] records each call in the trace. Built in: `readFile`, `glob`, `grep`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod bash;
mod context;
mod edit;
pub mod egress;
mod fetch;
mod glob;
mod grep;
mod html;
mod jobs;
mod mcp;
mod mcp_pins;
pub mod normalise;
mod outline;
mod patch;
mod preview;
mod read;
mod registry;
mod runner;
mod secrets;
mod sniff;
mod walk;
mod write;

pub use bash::{Bash, BashArgs};
pub use context::{
    ChangeLog, CommandRecord, ReadLedger, ReadRecord, ShowAddress, ShowLogin, ToolContext,
};
pub use edit::{EditFile, EditFileArgs};
pub use fetch::{WebFetch, WebFetchArgs};
pub use glob::{Glob, GlobArgs, GlobSort};
pub use grep::{Grep, GrepArgs};
pub use jobs::{Jobs, MAX_JOBS};
pub use mcp::{AddedTool, McpServers};
pub use patch::{ApplyPatch, ApplyPatchArgs, FileOp, Hunk, apply_hunks, parse as parse_patch};
pub use preview::{PREVIEW_CAP, Preview, preview};
pub use read::{ReadFile, ReadFileArgs};
pub use registry::{DynamicTool, Registry, RegistryError, Tool, ToolSpec};
pub use runner::{Checked, Executor, OnAsk, ToolRunner};
pub use secrets::SecretMask;
pub use warden_policy::{PathPolicy, PatternError, ResolvedPath, normalize};
pub use write::{WriteFile, WriteFileArgs, replace_file};
