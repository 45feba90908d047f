//! The per-file layer: what one settings file (or the command line) says, every key optional.
//!
//! Each file parses into a [`RawSettings`]; the loader merges them highest priority first and
//! resolves the result into [`crate::Settings`]. The command line builds a `RawSettings` for its
//! flags, e.g. `permissions.mode`. The doc comments here are the settings reference: they become
//! the JSON schema and `docs/settings.md`.

mod hooks;
mod mcp;
mod tables;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::kinds::{
    Backend, LimitsFallback, NetworkMode, PermissionMode, Profile, RiskName, RootIdentity,
};
use crate::merge::merge_struct;

pub use hooks::{RawHook, RawHooks};
pub use mcp::{RawMcp, RawMcpServer};
pub use tables::{
    RawBudgets, RawContext, RawContextShares, RawGlobTool, RawGrepTool, RawManifest, RawModel,
    RawOrg, RawOrgManifest, RawPrice, RawProvider, RawReadTool, RawSkills, RawTools, RawWriteTool,
};

/// warden settings: one file's worth. Files merge highest priority first: managed, command
/// line, project-local, project, user. Scalars: the highest layer that sets one wins. Lists:
/// concatenated across layers, duplicates removed. Maps and tables: merged by key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schemars(title = "warden settings")]
pub struct RawSettings {
    /// Projects whose own settings files are honoured in full without `warden trust`, as
    /// absolute paths or `~/…`, where `*` matches within one directory name and `**` any
    /// number of directories (`~/src/*` trusts the projects directly below `~/src`; `**` also
    /// trusts a project a command could make deeper inside one). A pattern is matched as
    /// written against the project's real path, `~` being the real home directory; a link along
    /// it is not followed. Only the user's settings and the managed file may set this. Default
    /// empty.
    pub trusted_projects: Option<Vec<String>>,
    /// Permission mode and the allow, ask and deny rules of the policy engine.
    pub permissions: Option<RawPermissions>,
    /// How commands are confined: backend, profile, filesystem, network, limits, environment.
    pub sandbox: Option<RawSandbox>,
    /// Limits of the built-in read, glob and grep tools.
    pub tools: Option<RawTools>,
    /// Model providers, the default model and prices.
    pub model: Option<RawModel>,
    /// Per-run limits on tokens, cost, time, tool calls and turns.
    pub budgets: Option<RawBudgets>,
    /// How the model's context window is shared out.
    pub context: Option<RawContext>,
    /// Skill discovery.
    pub skills: Option<RawSkills>,
    /// Runs under sandbox manifests: credentials and leases.
    pub manifest: Option<RawManifest>,
    /// MCP servers whose tools are offered as `mcp__SERVER__TOOL`.
    pub mcp: Option<RawMcp>,
    /// Commands run at points of a session (`[[hooks.PreToolUse]]`…), as Claude Code's hooks.
    pub hooks: Option<RawHooks>,
    /// Organisation limits. Only allowed in the managed file, `/etc/warden/managed.toml`.
    pub org: Option<RawOrg>,
}

merge_struct!(RawSettings {
    trusted_projects,
    permissions,
    sandbox,
    tools,
    model,
    budgets,
    context,
    skills,
    manifest,
    mcp,
    hooks,
    org,
});

/// `[permissions]`: the permission mode and the policy rules.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawPermissions {
    /// How much the agent may do without asking: `plan` (read only), `default` (ask before
    /// edits and commands), `accept-edits` (edits allowed, commands ask), `auto` (safe actions
    /// run) or `bypass` (everything not denied runs). Default `default`.
    pub mode: Option<PermissionMode>,
    /// Permission rules whose matches run without asking. Default empty.
    pub allow: Option<Vec<String>>,
    /// Permission rules whose matches always ask. Default empty.
    pub ask: Option<Vec<String>>,
    /// Permission rules whose matches are refused. Default empty.
    pub deny: Option<Vec<String>>,
    /// Path patterns no tool or command may read or write, added to the built-in protected
    /// paths; relative to the project root unless absolute (`//abs`, `~/…`). Default empty.
    pub protected_paths: Option<Vec<String>>,
    /// Risk levels for programs, `name = "L0"` … `"L5"`, added to or overriding the built-in
    /// table (e.g. `deploy-tool = "L4"`). Default empty.
    pub risk: Option<BTreeMap<String, RiskName>>,
    /// Built-in secrets made readable again, to the file tools and to commands alike: path
    /// patterns like `protected_paths` (`.env`, `tls/dev.key`, `~/.npmrc`). Every read of one
    /// is recorded in the trace. The protected paths (`~/.ssh`, …) stay. Only the user's
    /// settings and the managed file may set this. Default empty.
    pub unmask: Option<Vec<String>>,
}

merge_struct!(RawPermissions {
    mode,
    allow,
    ask,
    deny,
    protected_paths,
    risk,
    unmask,
});

/// `[sandbox]`: how commands are confined.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawSandbox {
    /// Run commands inside the sandbox. Default `true`.
    pub enabled: Option<bool>,
    /// Refuse to run commands when sandboxing is enabled but no backend works, instead of
    /// running them unconfined. Default `true`.
    pub fail_if_unavailable: Option<bool>,
    /// Refuse to run commands when the kernel has no Landlock. Landlock is used wherever the
    /// kernel has it either way. Default `false`.
    pub require_landlock: Option<bool>,
    /// Sandbox backend of `warden exec`: `auto` (the native sandbox, with bubblewrap standing in
    /// where `fail_if_unavailable = false`), `native` or `bwrap`; `--backend` overrides it. The
    /// agent's commands and manifest runs always use the native sandbox. Default `auto`.
    pub backend: Option<Backend>,
    /// Who commands are on the host when warden runs as root: `unprivileged` (an unprivileged
    /// host uid and gid, the writable roots shown to it through idmapped mounts, so that files
    /// only root may read stay unreadable) or `host` (root, as warden is; warned on every
    /// command). User and managed settings only. Default `unprivileged`.
    pub root_identity: Option<RootIdentity>,
    /// The host uid and gid commands run as when warden runs as root with
    /// `root_identity = "unprivileged"`. User and managed settings only. Default `2000000000`.
    pub unprivileged_id: Option<u32>,
    /// Base sandbox profile, naming what commands may read and write. Default
    /// `workspace-write`.
    pub profile: Option<Profile>,
    /// Paths added to or removed from the profile.
    pub filesystem: Option<RawSandboxFilesystem>,
    /// Network access from inside the sandbox.
    pub network: Option<RawSandboxNetwork>,
    /// Resource limits per command.
    pub limits: Option<RawSandboxLimits>,
    /// The environment commands see.
    pub env: Option<RawSandboxEnv>,
}

merge_struct!(RawSandbox {
    enabled,
    fail_if_unavailable,
    require_landlock,
    backend,
    root_identity,
    unprivileged_id,
    profile,
    filesystem,
    network,
    limits,
    env,
});

/// `[sandbox.filesystem]`: path patterns, relative to the project root unless absolute.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawSandboxFilesystem {
    /// Extra paths commands may read. Default empty.
    pub allow_read: Option<Vec<String>>,
    /// Paths commands may never read, even if the profile allows them. Default empty.
    pub deny_read: Option<Vec<String>>,
    /// Extra paths commands may write. Default empty.
    pub allow_write: Option<Vec<String>>,
    /// Paths commands may never write, even if the profile allows them. Default empty.
    pub deny_write: Option<Vec<String>>,
    /// Directories under `$HOME` commands may read, besides the built-in toolchain list
    /// (`~/.cargo`, `~/.rustup`, `~/.npm`, `~/.nvm`, `~/.pyenv`, `~/.local/bin`, `~/.local/lib`,
    /// …); relative to `$HOME`. Default empty.
    pub home_toolchains: Option<Vec<String>>,
}

merge_struct!(RawSandboxFilesystem {
    allow_read,
    deny_read,
    allow_write,
    deny_write,
    home_toolchains,
});

/// `[sandbox.network]`: network access from inside the sandbox.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawSandboxNetwork {
    /// Network mode: `off` (no network at all), `on` (the host's network), or `allowlist`
    /// (only through warden's egress proxy, to `allowed_domains` and the `WebFetch(domain:…)`
    /// allow rules, each connection checked by host, port and address). Default `off`.
    pub mode: Option<NetworkMode>,
    /// With `allowlist`: hosts commands may reach — `example.com`, `*.example.com` (its
    /// subdomains, not itself), `host:port` (ports 80 and 443 unless given), an address; with
    /// methods and a path, only those requests (`GET,HEAD registry.npmjs.org/lodash*`: the proxy
    /// then ends the host's TLS with a CA of the run's own). An empty list is no network.
    /// Default empty.
    pub allowed_domains: Option<Vec<String>>,
    /// Domains always refused, even if allowed elsewhere. Default empty.
    pub denied_domains: Option<Vec<String>>,
    /// Refuse connections to private, loopback, link-local (cloud metadata), CGNAT,
    /// unique-local, multicast and unspecified addresses, unless an entry names the address or
    /// a private name (`localhost`, a single label) itself. Default `true`.
    pub block_private_ranges: Option<bool>,
}

merge_struct!(RawSandboxNetwork {
    mode,
    allowed_domains,
    denied_domains,
    block_private_ranges,
});

/// `[sandbox.limits]`: resource limits per command; each must be greater than zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawSandboxLimits {
    /// Wall-clock seconds before the command is killed. Default `120`.
    pub timeout_seconds: Option<u64>,
    /// Memory limit in MiB. Default `2048`.
    pub memory_mb: Option<u64>,
    /// Maximum number of processes and threads. Default `256`.
    pub pids: Option<u64>,
    /// CPU limit in CPUs, fractions allowed. Default `1.0`.
    pub cpu: Option<f64>,
    /// Limit on disk written, in MiB. Default `1024`.
    pub disk_mb: Option<u64>,
    /// Output captured per command in bytes; the rest is cut. Default `1048576`.
    pub output_bytes: Option<u64>,
    /// What a memory, process or CPU limit no cgroup can hold becomes: `"none"` (nothing
    /// runs) or `"rlimits"` (per-process limits, said on every command). Default `"none"`.
    pub fallback: Option<LimitsFallback>,
}

merge_struct!(RawSandboxLimits {
    timeout_seconds,
    memory_mb,
    pids,
    cpu,
    disk_mb,
    output_bytes,
    fallback,
});

/// `[sandbox.env]`: the environment commands see; everything else is cleared.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawSandboxEnv {
    /// Variables passed through from warden's environment. Setting it in any layer replaces
    /// the default. Default `["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "USER"]`.
    pub allow: Option<Vec<String>>,
    /// Variables set to fixed values, `NAME = "value"`. Default empty.
    pub set: Option<BTreeMap<String, String>>,
}

merge_struct!(RawSandboxEnv { allow, set });

impl RawSettings {
    /// This layer with `lower` beneath it: what this one sets wins, lists are joined, tables
    /// merged key by key. For building the command-line layer from several files and flags.
    #[must_use]
    pub fn over(mut self, lower: Self) -> Self {
        crate::merge::Merge::merge(&mut self, lower);
        self
    }
}
