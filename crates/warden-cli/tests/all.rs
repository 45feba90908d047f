//! End-to-end tests of the `warden` binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent;
mod architecture;
mod audit;
mod autorun;
mod bash_tool;
mod cli;
mod compaction;
mod history;
mod hooks;
mod identity;
mod limits;
mod manifest;
mod manifest_run;
mod mcp;
mod network;
mod policy;
mod sandbox;
mod secrets;
mod session;
mod skills;
mod streams;
mod support;
mod trace;
mod trust;
mod undo;
