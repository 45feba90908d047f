//! The backends behind one trait: each runs a [`Plan`], and the plan is built once for all.

use crate::plan::Plan;
use crate::spawn::{Outcome, Output, Sandbox, SandboxError};

/// A way of running a plan inside a boundary.
pub trait Backend {
    /// The name reported in results (`native`, `seatbelt`).
    fn name(&self) -> &'static str;
    /// Runs the plan's command; nothing runs when the boundary cannot be made.
    fn run(&self, plan: &Plan, output: Output) -> Result<Outcome, SandboxError>;
}

impl Backend for Sandbox {
    fn name(&self) -> &'static str {
        "native"
    }

    fn run(&self, plan: &Plan, output: Output) -> Result<Outcome, SandboxError> {
        Sandbox::run(self, plan, output)
    }
}

/// macOS: `sandbox-exec` with the profile [`crate::seatbelt_profile`] writes. Not verified on
/// macOS; elsewhere it refuses, so nothing runs unsandboxed by mistake.
#[derive(Debug, Clone, Copy, Default)]
pub struct Seatbelt;

impl Backend for Seatbelt {
    fn name(&self) -> &'static str {
        "seatbelt"
    }

    fn run(&self, plan: &Plan, _output: Output) -> Result<Outcome, SandboxError> {
        let _profile = crate::seatbelt::profile(plan);
        Err(SandboxError::Setup(
            "the Seatbelt backend runs only on macOS, where it is not yet verified".to_owned(),
        ))
    }
}
