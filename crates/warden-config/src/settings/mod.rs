//! The resolved settings: every value present, defaults filled in, validated.
//!
//! These are the types other crates code against. Defaults live in the `Default` impls here and
//! in [`tables`]; `resolve` falls back to them, so the reference docs and the loader agree.

mod hooks;
mod mcp;
mod tables;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

pub(crate) use crate::kinds::{
    Backend, Layer, LimitsFallback, NetworkMode, PermissionMode, Profile, RiskName, RootIdentity,
};

pub use hooks::{Hook, HookEvent, HookOnError, Hooks};
pub use mcp::{HttpTransport, Mcp, McpServer};
pub use tables::{
    Budgets, Context, ContextShares, GlobTool, GrepTool, ManifestRuns, Model, Org, OrgManifest,
    Price, Provider, ReadTool, Skills, Tools, WriteTool,
};

/// Credential directories and files under `$HOME` that nothing shows, not a tool and not a
/// command, whatever the settings say (`[permissions] unmask` included).
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".netrc",
    ".docker",
    ".kube",
    ".git-credentials",
];

/// Every setting, resolved from all layers. Build one with [`crate::load`], or
/// [`Settings::defaults`] in tests and tools.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Settings {
    /// Nearest ancestor of `cwd` holding `.warden/` or `.git`, else `cwd`.
    pub project_root: PathBuf,
    /// The canonical working directory the settings were loaded for.
    pub cwd: PathBuf,
    /// Settings files actually read, highest priority first.
    pub sources: Vec<SettingsSource>,
    /// Whether the project's own settings files are honoured in full, and what they would
    /// grant.
    pub trust: crate::trust::verdict::ProjectTrust,
    /// warden's own directories, which no tool or command may change.
    pub dirs: WardenDirs,
    /// `trusted_projects`, from the user's and the managed settings only.
    pub trusted_projects: Vec<String>,
    /// `[permissions]`.
    pub permissions: Permissions,
    /// `[sandbox]`.
    pub sandbox: Sandbox,
    /// `[tools]`.
    pub tools: Tools,
    /// `[model]`.
    pub model: Model,
    /// `[budgets]`.
    pub budgets: Budgets,
    /// `[context]`.
    pub context: Context,
    /// `[skills]`.
    pub skills: Skills,
    /// `[manifest]`.
    pub manifest: ManifestRuns,
    /// `[mcp]`.
    pub mcp: Mcp,
    /// `[hooks]`.
    pub hooks: Hooks,
    /// `[org]`, only ever set by the managed file.
    pub org: Org,
}

impl Settings {
    /// Every setting at its default, rooted at `project_root` (also used as `cwd`), no sources.
    pub fn defaults(project_root: PathBuf) -> Settings {
        Settings {
            cwd: project_root.clone(),
            project_root,
            sources: Vec::new(),
            trust: crate::trust::verdict::ProjectTrust::none(),
            dirs: WardenDirs::default(),
            trusted_projects: Vec::new(),
            permissions: Permissions::default(),
            sandbox: Sandbox::default(),
            tools: Tools::default(),
            model: Model::default(),
            budgets: Budgets::default(),
            context: Context::default(),
            skills: Skills::default(),
            manifest: ManifestRuns::default(),
            mcp: Mcp::default(),
            hooks: Hooks::default(),
            org: Org::default(),
        }
    }
}

/// warden's own directories: the user's configuration (settings, skills) and data (the trace,
/// the trust records, the remembered rules).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct WardenDirs {
    /// Where the user's `settings.toml` is; `None` when no user layer is read.
    pub config_dir: Option<PathBuf>,
    /// Where warden keeps its state; `None` when it has none (no `HOME`).
    pub data_dir: Option<PathBuf>,
}

impl WardenDirs {
    /// The standard locations, from the environment.
    pub fn from_env() -> Self {
        WardenDirs {
            config_dir: crate::places::user_config_dir(),
            data_dir: crate::state::data_dir(),
        }
    }

    /// What no tool or command may write, whatever the settings allow: the user's
    /// configuration directory, and warden's state files (the trust records, the remembered
    /// rules, the trace). Each as spelled and as its real path.
    pub fn protected(&self) -> Vec<PathBuf> {
        let mut paths = spellings(self.config_dir.as_deref());
        paths.extend(self.state_files());
        paths
    }

    /// The two directories, each as spelled and as its real path.
    pub fn dirs(&self) -> Vec<PathBuf> {
        let mut paths = spellings(self.config_dir.as_deref());
        paths.extend(spellings(self.data_dir.as_deref()));
        paths
    }

    /// Where the index of toolchain directories the sandbox walks is kept, in the data
    /// directory (a state file like the others: no tool or command may write it).
    pub fn toolchain_index(&self) -> Option<PathBuf> {
        self.data_dir
            .as_ref()
            .map(|d| d.join(crate::state::TOOLCHAIN_INDEX))
    }

    /// warden's state files in the data directory, which no tool or command may read either;
    /// each as spelled and as its real path.
    pub fn state_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for data in spellings(self.data_dir.as_deref()) {
            for name in [
                crate::state::TRUST_FILE,
                crate::state::REMEMBERED_FILE,
                crate::state::TOOLCHAIN_INDEX,
                "trace.db",
                "trace.db-wal",
                "trace.db-shm",
                // The sessions' transcripts hooks read.
                "transcripts",
            ] {
                files.push(data.join(name));
            }
        }
        files
    }
}

/// `path` as spelled and, where that differs, as its real path (symbolic links followed).
fn spellings(path: Option<&std::path::Path>) -> Vec<PathBuf> {
    let Some(path) = path else {
        return Vec::new();
    };
    let real = crate::state::real_path(path);
    if real == path {
        vec![real]
    } else {
        vec![path.to_path_buf(), real]
    }
}

/// One settings file that was read, and the layer it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct SettingsSource {
    /// Which layer the file is.
    pub layer: Layer,
    /// Where the file is.
    pub path: PathBuf,
}

/// `[permissions]`: the mode and the rules the policy engine applies.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Permissions {
    /// Default [`PermissionMode::Default`].
    pub mode: PermissionMode,
    /// Rules that allow without asking. Default empty.
    pub allow: Vec<String>,
    /// Rules that always ask. Default empty.
    pub ask: Vec<String>,
    /// Rules that always deny. Default empty.
    pub deny: Vec<String>,
    /// Paths no tool may read or write, as patterns, added to the built-in ones. Default empty.
    pub protected_paths: Vec<String>,
    /// Risk levels for programs, added to (or overriding) the built-in table. Default empty.
    pub risk: BTreeMap<String, RiskName>,
    /// Ask rules of an untrusted project: a match asks, but never loosens what the rest of
    /// the policy decides (a denial stays one). Default empty.
    pub project_ask: Vec<String>,
    /// Risk levels of an untrusted project: a floor for the program's level, never lowering
    /// it. Default empty.
    pub project_risk: BTreeMap<String, RiskName>,
    /// Built-in secrets made readable again (user and managed settings only). Default empty.
    pub unmask: Vec<String>,
}

/// The host uid and gid commands run as when warden runs as root: outside the ranges
/// `adduser` and `/etc/subuid` hand out by default, so that it owns none of the host's files.
pub const DEFAULT_UNPRIVILEGED_ID: u32 = 2_000_000_000;

/// `[sandbox]`: how commands are confined.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Sandbox {
    /// Default `true`.
    pub enabled: bool,
    /// Refuse to run commands when no sandbox backend works. Default `true`.
    pub fail_if_unavailable: bool,
    /// Refuse to run commands without Landlock. Default `false`.
    pub require_landlock: bool,
    /// Default `auto`.
    pub backend: Backend,
    /// `"unprivileged"` (default) or `"host"`: who commands are on the host when warden runs
    /// as root.
    pub root_identity: RootIdentity,
    /// The host uid and gid of commands when warden runs as root. Default
    /// [`DEFAULT_UNPRIVILEGED_ID`].
    pub unprivileged_id: u32,
    /// Default `workspace-write`.
    pub profile: Profile,
    /// `[sandbox.filesystem]`.
    pub filesystem: SandboxFilesystem,
    /// `[sandbox.network]`.
    pub network: SandboxNetwork,
    /// `[sandbox.limits]`.
    pub limits: SandboxLimits,
    /// `[sandbox.env]`.
    pub env: SandboxEnv,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            enabled: true,
            fail_if_unavailable: true,
            require_landlock: false,
            backend: Backend::Auto,
            root_identity: RootIdentity::Unprivileged,
            unprivileged_id: DEFAULT_UNPRIVILEGED_ID,
            profile: Profile::WorkspaceWrite,
            filesystem: SandboxFilesystem::default(),
            network: SandboxNetwork::default(),
            limits: SandboxLimits::default(),
            env: SandboxEnv::default(),
        }
    }
}

/// `[sandbox.filesystem]`: path patterns added to the profile. All default empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct SandboxFilesystem {
    /// Extra readable paths.
    pub allow_read: Vec<String>,
    /// Paths never readable.
    pub deny_read: Vec<String>,
    /// Extra writable paths.
    pub allow_write: Vec<String>,
    /// Paths never writable.
    pub deny_write: Vec<String>,
    /// Extra readable directories under `$HOME`, relative to it.
    pub home_toolchains: Vec<String>,
}

/// `[sandbox.network]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct SandboxNetwork {
    /// Default `off`.
    pub mode: NetworkMode,
    /// Default empty.
    pub allowed_domains: Vec<String>,
    /// Default empty.
    pub denied_domains: Vec<String>,
    /// Default `true`.
    pub block_private_ranges: bool,
}

impl Default for SandboxNetwork {
    fn default() -> Self {
        SandboxNetwork {
            mode: NetworkMode::Off,
            allowed_domains: Vec::new(),
            denied_domains: Vec::new(),
            block_private_ranges: true,
        }
    }
}

/// `[sandbox.limits]`: per-command resource limits, all greater than zero.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct SandboxLimits {
    /// Default 120.
    pub timeout_seconds: u64,
    /// Default 2048.
    pub memory_mb: u64,
    /// Default 256.
    pub pids: u64,
    /// CPUs. Default 1.0.
    pub cpu: f64,
    /// Default 1024.
    pub disk_mb: u64,
    /// Captured output per command. Default 1048576.
    pub output_bytes: u64,
    /// `"none"` (default): a memory, process or CPU limit no cgroup can hold means nothing
    /// runs. `"rlimits"`: it binds each process instead, said on every command.
    pub fallback: LimitsFallback,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        SandboxLimits {
            timeout_seconds: 120,
            memory_mb: 2048,
            pids: 256,
            cpu: 1.0,
            disk_mb: 1024,
            output_bytes: 1_048_576,
            fallback: LimitsFallback::None,
        }
    }
}

/// `[sandbox.env]`: the environment commands see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct SandboxEnv {
    /// Variables passed through. Default [`SandboxEnv::DEFAULT_ALLOW`].
    pub allow: Vec<String>,
    /// Variables set to fixed values. Default empty.
    pub set: std::collections::BTreeMap<String, String>,
}

impl SandboxEnv {
    /// Variables passed through when no layer sets `sandbox.env.allow`.
    pub const DEFAULT_ALLOW: [&'static str; 7] =
        ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "USER"];
}

impl Default for SandboxEnv {
    fn default() -> Self {
        SandboxEnv {
            allow: strings(&SandboxEnv::DEFAULT_ALLOW),
            set: std::collections::BTreeMap::new(),
        }
    }
}

pub(crate) fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|&s| s.to_owned()).collect()
}
