//! warden's sandbox runtime: runs a command inside a boundary the kernel enforces and every child
//! inherits. It runs and never decides: the caller hands it a [`Request`] built from its policy,
//! [`Plan::new`] turns that into mounts and limits, and [`Sandbox::run`] runs the command through
//! the helper process (the `warden` binary re-executed, single-threaded), which enters new user,
//! mount, PID, IPC, UTS and network namespaces, builds a file system of read-only and writable
//! binds, drops every capability, sets `no_new_privs`, installs a seccomp filter and closes
//! inherited descriptors before `exec`. If any of that fails, nothing runs.
//!
//! All `unsafe` is in the private `sys` module.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod backend;
mod background;
mod bwrap;
mod capture;
mod cgroup;
mod from_settings;
mod helper;
pub mod history;
mod landlock;
mod last_steps;
mod links;
mod live;
mod masking;
mod mounts;
mod placeholder;
mod plan;
mod probe;
mod process;
mod running;
mod seatbelt;
mod seccomp;
mod spare;
mod spawn;
mod sys;
mod toolchains;
mod warm;
mod watch;

pub use backend::{Backend, Seatbelt};
pub use background::{NewOutput, Piped, Running};
pub use bwrap::Bwrap;
pub use cgroup::{Bound, Mechanism, Usage as CgroupUsage, reap as reap_cgroups};
pub use from_settings::{
    HOME_SECRETS, HOME_TOOLCHAINS, PROXY_PORT, WORKSPACE_PROTECTED, expand, host_root_warning,
    proxy_env, request_from_settings, root_identity,
};
pub use helper::{Collected, LAYERS, Usage, main as helper_main};
pub use history::git;
pub use masking::{MaskDecision, MaskRule, Masking};
pub use plan::INSIDE_ID;
pub use plan::{
    Fallback, Limits, Mount, Overlay, Plan, Profile, Refused, Request, RootIdentity,
    overlay_can_hold, overlay_opaque,
};
pub use probe::{LayerCheck, PROBE_ARG, check_layers, probe_main};
pub use running::kill_running;
pub use seatbelt::profile as seatbelt_profile;
pub use spawn::{HELPER_ARG, Outcome, Output, Sandbox, SandboxError};
pub use watch::{ChangeWatch, Changed};
