//! Schema v1 of the sandbox manifest (SPEC M1), as seed 003 writes it: what a run may read and
//! write, reach, obtain and use, what it leaves behind and when it is destroyed. Every field
//! is enforced by the sandbox, the egress proxy or the runner; unknown fields are errors.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A sandbox manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The schema version: 1.
    pub version: u32,
    pub run: Run,
    #[serde(default)]
    pub filesystem: Filesystem,
    #[serde(default)]
    pub network: Network,
    #[serde(default)]
    pub identity: Identity,
    #[serde(default)]
    pub cleanup: Cleanup,
    #[serde(default)]
    pub artifacts: Artifacts,
}

/// What the run is for, who answers for it, and how long and how much it may take.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// What the task is, in a sentence.
    pub purpose: Option<String>,
    /// Who answers for the run (a person or a team).
    pub owner: Option<String>,
    /// After this moment (RFC 3339) the manifest may not start a run.
    pub expires_at: Option<String>,
    /// The run is stopped after this many seconds, whatever it is doing.
    pub max_duration_seconds: Option<u64>,
    pub resources: Option<Resources>,
    pub budgets: Option<Budgets>,
}

/// Limits the sandbox enforces, outside the agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// CPUs (a quota: 1.5 is one and a half).
    pub cpu: Option<f64>,
    /// Memory, in MiB.
    pub memory_mb: Option<u64>,
    /// Processes at once.
    pub pids: Option<u64>,
    /// The size of the writable scratch space, in MiB (and the largest file written).
    pub disk_mb: Option<u64>,
}

/// Counts the runner enforces: past one, the run stops.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    /// Connections through the egress proxy, allowed or not.
    pub network_requests: Option<u64>,
    /// Tool calls (agent runs) or commands.
    pub tool_calls: Option<u64>,
    /// Model tokens, in and out (agent runs).
    pub tokens: Option<u64>,
}

/// What the sandbox sees.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filesystem {
    #[serde(default)]
    pub mounts: Vec<Mount>,
    /// Paths inside the sandbox that may be written; each must lie under a `read_write` mount.
    #[serde(default)]
    pub writable_paths: Vec<String>,
    /// Paths inside the sandbox that are never shown.
    #[serde(default)]
    pub forbidden_paths: Vec<String>,
}

/// One mount: a source alias (or a host path, read-only) at a target inside the sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mount {
    /// `repo` (the task's git repository at its pinned commit), `workspace` (a throwaway
    /// worktree of it at the same commit, where edits happen), `run-scratch` (a fresh empty
    /// directory), `cache` (the run's own caches: npm, pip, cargo), or an absolute host path.
    pub source: String,
    /// Where it appears inside the sandbox (absolute).
    pub target: String,
    pub mode: Mode,
}

/// How a mount may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    ReadOnly,
    ReadWrite,
}

/// Where the run may connect: only through warden's egress proxy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// `deny`: only what `allow` names.
    #[serde(default)]
    pub default: NetworkDefault,
    #[serde(default)]
    pub allow: Vec<NetworkAllow>,
    /// Refuse private, loopback and link-local addresses. Default true.
    #[serde(default = "yes")]
    pub block_private_ranges: bool,
    /// Connections go through the egress proxy (the only way out there is). Default true.
    #[serde(default = "yes")]
    pub proxy_required: bool,
}

impl Default for Network {
    fn default() -> Self {
        Self {
            default: NetworkDefault::Deny,
            allow: Vec::new(),
            block_private_ranges: true,
            proxy_required: true,
        }
    }
}

fn yes() -> bool {
    true
}

/// What is not allowed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NetworkDefault {
    #[default]
    Deny,
    /// Refused by preflight: a manifest lists what it reaches.
    Allow,
}

/// One host the run may reach.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkAllow {
    /// `registry.npmjs.org`, or `*.example.com` for its subdomains.
    pub host: String,
    /// Default: 443 for `https`, 80 for `http`, both when no protocol is given.
    pub ports: Option<Vec<u16>>,
    pub protocol: Option<Protocol>,
    /// Paths the requests may ask for (`/lodash/*`); with `methods`, the proxy ends this
    /// host's TLS to see them.
    pub paths: Option<Vec<String>>,
    /// Methods the requests may use (`GET`, `HEAD`).
    pub methods: Option<Vec<String>>,
}

/// What runs over a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Https,
    Http,
    /// Any bytes (ports must be named).
    Tcp,
}

/// What the run starts with: its environment and the credentials it may obtain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// `allowlist`: only the variables named in `variables` (and the sandbox's basics).
    #[serde(default)]
    pub environment: Environment,
    /// Variables passed from warden's environment.
    #[serde(default)]
    pub variables: Vec<String>,
    #[serde(default)]
    pub capabilities: Vec<Capability>,
}

impl Default for Identity {
    fn default() -> Self {
        Self {
            environment: Environment::Allowlist,
            variables: Vec::new(),
            capabilities: Vec::new(),
        }
    }
}

/// How the environment is built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Environment {
    #[default]
    Allowlist,
}

/// A short-lived credential the run may use, held by warden and never seen inside.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    #[serde(rename = "type")]
    pub kind: CapabilityKind,
    /// The repository it is for, `owner/name`.
    pub repository: Option<String>,
    /// The source-control host, with a port when not 443. Default `github.com`, whose API
    /// is `api.github.com`; any other host serves its API under `/api/v3` (GitHub Enterprise).
    pub host: Option<String>,
    /// What it may do: `read`, `create_branch`, `push_branch`, `create_pull_request`,
    /// `comment`.
    #[serde(default)]
    pub actions: Vec<String>,
    /// It expires after this many seconds. Default 900.
    pub expires_after_seconds: Option<u64>,
    /// Actions that wait for a person's approval, each time.
    #[serde(default)]
    pub require_approval_for: Vec<String>,
    /// The id of a recorded approval of this manifest (`warden manifest approve`), needed by
    /// the organisation for actions that write or publish.
    pub approval_ref: Option<String>,
}

/// The kinds of capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapabilityKind {
    /// A source-control host (GitHub's API and git over HTTPS).
    SourceControl,
}

/// What is left after the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cleanup {
    /// Destroy the workspace and the scratch space at the end. Default true.
    #[serde(default = "yes")]
    pub delete_workspace: bool,
    /// How long the collected artifacts are kept. Default 24.
    #[serde(default = "day")]
    pub retain_artifacts_hours: u64,
}

fn day() -> u64 {
    24
}

impl Default for Cleanup {
    fn default() -> Self {
        Self {
            delete_workspace: true,
            retain_artifacts_hours: day(),
        }
    }
}

/// What the run hands back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Artifacts {
    /// Files inside the sandbox to collect (nothing else leaves).
    #[serde(default)]
    pub collect: Vec<String>,
    /// Regular expressions whose matches are redacted from what is collected (warden's own
    /// secret patterns always apply).
    #[serde(default)]
    pub redact: Vec<String>,
}

/// A mount source that names one of the run's own directories rather than a host path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Alias {
    /// The task's git repository at its pinned commit (read-only: the run's input).
    Repo,
    /// A throwaway worktree of it at the same commit, where edits happen.
    Workspace,
    /// A fresh empty directory.
    RunScratch,
    /// The run's own caches (npm, pip, cargo).
    Cache,
}

impl Alias {
    pub const ALL: [Alias; 4] = [
        Alias::Repo,
        Alias::Workspace,
        Alias::RunScratch,
        Alias::Cache,
    ];

    /// The name a manifest uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Alias::Repo => "repo",
            Alias::Workspace => "workspace",
            Alias::RunScratch => "run-scratch",
            Alias::Cache => "cache",
        }
    }

    /// The alias `source` names, if it names one.
    pub fn of(source: &str) -> Option<Alias> {
        Alias::ALL.into_iter().find(|a| a.as_str() == source)
    }

    /// A directory the run makes and destroys (the repository is only its input): the only
    /// sources a writable mount may have.
    pub fn run_owned(self) -> bool {
        self != Alias::Repo
    }

    /// The names, for messages.
    pub fn names() -> String {
        Alias::ALL.map(Alias::as_str).join(", ")
    }
}

impl Mount {
    /// The alias the source names; `None` for a host path.
    pub fn alias(&self) -> Option<Alias> {
        Alias::of(&self.source)
    }
}

/// The capability actions known.
pub const ACTIONS: &[&str] = &[
    "read",
    "create_branch",
    "push_branch",
    "create_pull_request",
    "comment",
];

/// Actions that write or publish.
pub const WRITING_ACTIONS: &[&str] = &[
    "create_branch",
    "push_branch",
    "create_pull_request",
    "comment",
];
