//! Resolved tables other than permissions and sandbox: tools, model, budgets, context, skills
//! and the organisation's limits.

use std::collections::BTreeMap;

use serde::Serialize;

use super::strings;
use crate::kinds::{PermissionMode, ProviderKind};

/// `[tools]`: limits of the built-in tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Tools {
    /// `[tools.read]`.
    pub read: ReadTool,
    /// `[tools.glob]`.
    pub glob: GlobTool,
    /// `[tools.grep]`.
    pub grep: GrepTool,
    /// `[tools.write]`.
    pub write: WriteTool,
}

/// `[tools.write]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct WriteTool {
    /// The largest file written, in bytes. Default 1 MiB.
    pub max_bytes: usize,
}

impl Default for WriteTool {
    fn default() -> Self {
        WriteTool {
            max_bytes: 1024 * 1024,
        }
    }
}

/// `[tools.read]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct ReadTool {
    /// Patterns never read: [`ReadTool::DEFAULT_DENY`] plus whatever the layers add.
    pub deny: Vec<String>,
    /// Lines per page. Default 2000.
    pub page_lines: usize,
    /// Bytes per returned page. Default 262144.
    pub max_bytes: usize,
    /// Longer lines are cut. Default 2000.
    pub max_line_chars: usize,
}

impl ReadTool {
    /// What the read tool refuses besides the one secret list (`.env`, keys, credentials),
    /// which it shares with the sandbox, whatever the settings say.
    pub const DEFAULT_DENY: [&'static str; 3] = ["**/.ssh/**", "**/.aws/**", ".git/config"];
}

impl Default for ReadTool {
    fn default() -> Self {
        ReadTool {
            deny: strings(&ReadTool::DEFAULT_DENY),
            page_lines: 2000,
            max_bytes: 262_144,
            max_line_chars: 2000,
        }
    }
}

/// Directory names glob and grep skip when no layer sets `exclude`.
pub(crate) const DEFAULT_EXCLUDE: [&str; 6] =
    ["node_modules", ".git", "dist", "build", "target", "vendor"];

/// `[tools.glob]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct GlobTool {
    /// Default 200.
    pub max_results: usize,
    /// Default `["node_modules", ".git", "dist", "build", "target", "vendor"]`.
    pub exclude: Vec<String>,
}

impl Default for GlobTool {
    fn default() -> Self {
        GlobTool {
            max_results: 200,
            exclude: strings(&DEFAULT_EXCLUDE),
        }
    }
}

/// `[tools.grep]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct GrepTool {
    /// Default 200.
    pub max_hits: usize,
    /// Longer matching lines are cut. Default 300.
    pub max_line_chars: usize,
    /// Default as for glob.
    pub exclude: Vec<String>,
}

impl Default for GrepTool {
    fn default() -> Self {
        GrepTool {
            max_hits: 200,
            max_line_chars: 300,
            exclude: strings(&DEFAULT_EXCLUDE),
        }
    }
}

/// `[model]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Model {
    /// The model to use when none is named. Default none.
    pub default: Option<String>,
    /// Providers by name. Default empty.
    pub providers: BTreeMap<String, Provider>,
    /// Prices by model id, in USD per million tokens. Default empty.
    pub prices: BTreeMap<String, Price>,
    /// Context window in tokens, overriding the model's own. Default none.
    pub context_window: Option<u64>,
}

/// `[model.providers.NAME]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Provider {
    /// Which wire protocol the provider speaks.
    pub kind: ProviderKind,
    /// Defaults to [`ProviderKind::default_base_url`].
    pub base_url: String,
    /// The environment variable holding the API key; none sends no key.
    pub api_key_env: Option<String>,
    /// The model id sent to the provider.
    pub model: String,
}

/// `[model.prices.MODEL]`: USD per million tokens, both at least zero.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Price {
    /// Input (prompt) tokens.
    pub input_per_mtok: f64,
    /// Output (completion) tokens.
    pub output_per_mtok: f64,
}

/// `[budgets]`: per-run limits; none means unlimited. All default none.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Budgets {
    /// Input plus output tokens.
    pub max_tokens: Option<u64>,
    /// Cost in USD, from `[model.prices]`.
    pub max_cost_usd: Option<f64>,
    /// Wall-clock seconds.
    pub max_wall_seconds: Option<u64>,
    /// Tool calls.
    pub max_tool_calls: Option<u64>,
    /// Model turns.
    pub max_turns: Option<u64>,
}

/// `[context]`: how the context window is shared out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Context {
    /// `[context.shares]`.
    pub shares: ContextShares,
    /// Tokens a single tool result may take before it is cut. Default 4000.
    pub tool_output_tokens: u64,
    /// The window, overriding `[model] context_window`. Default none.
    pub window_tokens: Option<u64>,
    /// Compaction runs when tool results take more than this percentage of the window.
    /// Default 50.
    pub tool_results_share: u64,
    /// Compaction runs when the conversation holds more tool results than this. Default 150.
    pub tool_results_count: u64,
}

impl Default for Context {
    fn default() -> Self {
        Context {
            shares: ContextShares::default(),
            tool_output_tokens: 4000,
            window_tokens: None,
            tool_results_share: 50,
            tool_results_count: 150,
        }
    }
}

/// `[context.shares]`: percentages of the context window, summing to 100 (± 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct ContextShares {
    /// Default 10.
    pub rules: u32,
    /// Default 15.
    pub goal_state: u32,
    /// Default 15.
    pub tools_permissions: u32,
    /// Default 40.
    pub files_references: u32,
    /// Default 10.
    pub recent_trace: u32,
    /// Default 10.
    pub summary: u32,
}

impl ContextShares {
    /// The sum of all shares.
    pub fn total(&self) -> u32 {
        let ContextShares {
            rules,
            goal_state,
            tools_permissions,
            files_references,
            recent_trace,
            summary,
        } = self;
        rules + goal_state + tools_permissions + files_references + recent_trace + summary
    }
}

impl Default for ContextShares {
    fn default() -> Self {
        ContextShares {
            rules: 10,
            goal_state: 15,
            tools_permissions: 15,
            files_references: 40,
            recent_trace: 10,
            summary: 10,
        }
    }
}

/// `[manifest]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct ManifestRuns {
    /// Default none.
    pub credentials_file: Option<String>,
    /// Default 30.
    pub lease_seconds: u64,
    /// Default none (`runs` beside the trace database).
    pub runs_dir: Option<String>,
}

impl Default for ManifestRuns {
    fn default() -> Self {
        ManifestRuns {
            credentials_file: None,
            lease_seconds: 30,
            runs_dir: None,
        }
    }
}

/// `[skills]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Skills {
    /// Default `true`.
    pub enabled: bool,
    /// Extra directories searched for skills. Default empty.
    pub roots: Vec<String>,
    /// Extra roots trusted without approval. Default empty.
    pub trusted_roots: Vec<String>,
    /// The index's share of the window, in percent. Default 2.
    pub index_percent: u32,
    /// The match score that loads a skill by itself (with a trigger or glob matched). Default
    /// 2.0; 0 is off.
    pub auto_load_score: f64,
}

impl Default for Skills {
    fn default() -> Self {
        Skills {
            enabled: true,
            roots: Vec::new(),
            trusted_roots: Vec::new(),
            index_percent: 2,
            auto_load_score: 2.0,
        }
    }
}

/// `[org]`: limits the organisation imposes; only the managed file may set them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct Org {
    /// Default `false`.
    pub disable_bypass_mode: bool,
    /// Default `false`.
    pub require_sandbox: bool,
    /// Empty (the default) allows every mode.
    pub allowed_modes: Vec<PermissionMode>,
    /// `[org.manifest]`.
    pub manifest: OrgManifest,
    /// Default `false`.
    pub managed_hooks_only: bool,
}

impl Org {
    /// Whether the organisation permits `mode`.
    pub fn allows(&self, mode: PermissionMode) -> bool {
        let bypass_ok = !(self.disable_bypass_mode && mode == PermissionMode::Bypass);
        bypass_ok && (self.allowed_modes.is_empty() || self.allowed_modes.contains(&mode))
    }
}

/// `[org.manifest]`: what every run manifest must carry and may ask for.
// Each flag is an independent rule an organisation switches on or off.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct OrgManifest {
    /// Default `true`.
    pub require_purpose: bool,
    /// Default `true`.
    pub require_owner: bool,
    /// Default `true`.
    pub require_expiry: bool,
    /// Default 3600.
    pub max_duration_seconds: u64,
    /// Default 8192.
    pub max_memory_mb: u64,
    /// Default 4.0.
    pub max_cpu: f64,
    /// Default 512.
    pub max_pids: u64,
    /// Default 10240.
    pub max_disk_mb: u64,
    /// Default empty (any target).
    pub writable_bases: Vec<String>,
    /// Default `/home`, `/root`, `/var/run/docker.sock`.
    pub forbidden_paths: Vec<String>,
    /// Default `false`.
    pub allow_wildcard_hosts: bool,
}

impl Default for OrgManifest {
    fn default() -> Self {
        OrgManifest {
            require_purpose: true,
            require_owner: true,
            require_expiry: true,
            max_duration_seconds: 3600,
            max_memory_mb: 8192,
            max_cpu: 4.0,
            max_pids: 512,
            max_disk_mb: 10240,
            writable_bases: Vec::new(),
            forbidden_paths: vec![
                "/home".to_owned(),
                "/root".to_owned(),
                "/var/run/docker.sock".to_owned(),
            ],
            allow_wildcard_hosts: false,
        }
    }
}
