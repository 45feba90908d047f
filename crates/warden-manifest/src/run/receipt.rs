//! The execution receipt (SPEC M7): what input, what was granted, what was attempted and
//! refused, what came out, and whether it was cleaned up. No model reasoning and no command
//! output.

use serde::{Deserialize, Serialize};

/// A run's receipt, written as `receipt.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    pub run_id: String,
    pub manifest_sha256: String,
    /// The digest approvals are bound to.
    pub approval_digest: String,
    pub purpose: Option<String>,
    pub owner: Option<String>,
    pub input: Input,
    /// The digest of the container image, when a container backend ran the command (the
    /// native sandbox runs the host's own programs: none).
    pub image_digest: Option<String>,
    pub grants: Grants,
    pub commands: Vec<CommandRun>,
    pub artifacts: Vec<Artifact>,
    pub denied: Denied,
    pub status: Status,
    pub exit_code: Option<i32>,
    pub cleanup: CleanupResult,
    pub timings: Timings,
    /// Things to know that did not stop the run.
    pub warnings: Vec<String>,
    /// Report-only mode: declared against used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
}

impl Receipt {
    /// What the sandbox said of a command: its layers, how each limit was bound, and its
    /// warnings (each once).
    pub(crate) fn sandboxed(&mut self, outcome: &warden_sandbox::Outcome) {
        self.grants.layers.clone_from(&outcome.layers);
        self.grants.limits.clone_from(&outcome.limits);
        for warning in &outcome.warnings {
            if !self.warnings.contains(warning) {
                self.warnings.push(warning.clone());
            }
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Nothing ran: the run could not be set up, or the manifest no longer allows it.
    #[default]
    Refused,
    /// The command exited 0.
    Succeeded,
    /// The command exited otherwise.
    Failed,
    /// `max_duration_seconds` ran out.
    TimedOut,
    /// A budget ran out.
    BudgetExceeded,
    /// Cleanup failed: the run's directories are kept apart, never reused.
    Quarantined,
    /// Its lease ran out and the reaper cancelled it.
    Reaped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::TimedOut => "timed_out",
            Self::BudgetExceeded => "budget_exceeded",
            Self::Quarantined => "quarantined",
            Self::Reaped => "reaped",
        }
    }
}

/// What the run started from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    pub repository: Option<String>,
    /// The pinned commit `repo` and `workspace` are checkouts of.
    pub commit: Option<String>,
    /// The working copy had changes the commit does not: they are not part of the run.
    pub dirty: bool,
    /// Repository settings that would have run programs on the host, overridden to nothing.
    pub neutralised: Vec<String>,
}

/// What the run was given, every alias resolved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Grants {
    pub mounts: Vec<MountGrant>,
    pub writable_paths: Vec<String>,
    pub forbidden_paths: Vec<String>,
    pub network: NetworkGrant,
    /// The names of the variables the command started with (never their values).
    pub environment: Vec<String>,
    pub capabilities: Vec<CapabilityGrant>,
    pub resources: crate::schema::Resources,
    pub budgets: crate::schema::Budgets,
    pub max_duration_seconds: Option<u64>,
    /// The uid the command ran as inside: never 0.
    pub uid: u32,
    /// The sandbox's layers, as the sandbox reported them.
    pub layers: Vec<String>,
    /// How each resource limit was bound: `cgroup-v2` or `cgroup-v1` (the whole sandbox),
    /// `rlimit` (each process), `unenforced`.
    #[serde(default)]
    pub limits: Vec<warden_sandbox::Bound>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountGrant {
    pub source: String,
    /// Where the alias resolved to on the host.
    pub resolved: String,
    pub target: String,
    pub mode: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkGrant {
    /// `none` (no way out at all) or `proxy` (only through the egress proxy).
    pub mode: String,
    /// The allowlist as the proxy enforced it.
    pub allow: Vec<String>,
    pub block_private_ranges: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityGrant {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub repository: String,
    pub hosts: Vec<String>,
    pub actions: Vec<String>,
    pub require_approval_for: Vec<String>,
    pub expires_at: String,
    /// Whether a credential was found for it (its value is never written anywhere).
    pub credential: bool,
}

/// One command run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRun {
    /// SHA-256 of its arguments, each followed by a NUL byte.
    pub sha256: String,
    pub exit_code: i32,
    pub duration_ms: u64,
    pub timed_out: bool,
    /// Started in the background (an agent session's dev server): it ran until it was stopped
    /// or the session ended, and its exit code and duration are not counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
}

/// One artifact collected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// The path declared (inside the sandbox), or `patch` for the workspace's diff.
    pub path: String,
    /// Where it is kept, on the host.
    pub stored: Option<String>,
    /// SHA-256 of the stored (redacted) bytes.
    pub sha256: Option<String>,
    pub bytes: u64,
    /// How many matches were redacted.
    pub redactions: usize,
    /// Why it was not collected.
    pub error: Option<String>,
}

/// What was refused, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denied {
    /// Connections and requests the egress proxy refused.
    pub network_denials: u64,
    /// Artifacts refused (links, outside the mounts) and, in report-only mode, writes the
    /// manifest did not declare. The kernel refuses writes outside the grant without
    /// reporting them, so those are not counted one by one.
    pub filesystem_denials: u64,
    /// Requests a capability refused: out of scope, an action not granted, expired, or an
    /// approval refused.
    pub capability_denials: u64,
    /// Past a budget.
    pub budget_denials: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanupResult {
    pub workspace_destroyed: bool,
    pub capabilities_revoked: bool,
    /// Every process of the sandbox is gone.
    pub processes_terminated: bool,
    pub artifacts_retained_until: Option<String>,
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timings {
    pub started_at: String,
    pub finished_at: String,
    pub setup_ms: u64,
    pub run_ms: u64,
    pub cleanup_ms: u64,
}

/// Report-only mode: what the manifest declared against what the run used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Paths written that no writable path or `read_write` mount declares.
    pub undeclared_writes: Vec<String>,
    /// Hosts connected to that no `allow` entry names.
    pub undeclared_hosts: Vec<String>,
    /// Hosts connected to that an entry names.
    pub declared_hosts_used: Vec<String>,
    /// Declared hosts nothing connected to.
    pub declared_hosts_unused: Vec<String>,
    pub duration_seconds: f64,
    pub declared_duration_seconds: Option<u64>,
    pub cpu_seconds: f64,
    pub max_memory_mb: f64,
    pub declared_memory_mb: Option<u64>,
    pub scratch_mb: f64,
    pub declared_disk_mb: Option<u64>,
    pub network_requests: u64,
    pub declared_network_requests: Option<u64>,
    /// What to change in the manifest before enforcing it.
    pub suggestions: Vec<String>,
}
