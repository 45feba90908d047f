//! Integration tests of the registry and the read-only tools, on real temporary workspaces.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod glob;
mod grep;
mod mcp;
mod patch;
mod read;
mod registry;
mod secrets;
mod support;
mod write;
