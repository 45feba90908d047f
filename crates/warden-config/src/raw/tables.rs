//! Raw tables other than permissions and sandbox.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::kinds::{PermissionMode, ProviderKind};
use crate::merge::merge_struct;

/// `[tools]`: limits of the built-in tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawTools {
    /// The read tool.
    pub read: Option<RawReadTool>,
    /// The glob tool.
    pub glob: Option<RawGlobTool>,
    /// The grep tool.
    pub grep: Option<RawGrepTool>,
    /// The file-changing tools (writeFile, editFile).
    pub write: Option<RawWriteTool>,
}

merge_struct!(RawTools {
    read,
    glob,
    grep,
    write
});

/// `[tools.write]`: limits of the file-changing tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawWriteTool {
    /// The largest file writeFile writes or editFile produces, in bytes. Default `1048576`.
    pub max_bytes: Option<usize>,
}

merge_struct!(RawWriteTool { max_bytes });

/// `[tools.read]`: the file read tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawReadTool {
    /// Glob patterns of files the read tool never reads, besides the secret list it shares with
    /// the sandbox (`.env`, private keys, credentials: see `[permissions] unmask`). Layers add
    /// to the default list; no layer can remove its entries. Default `["**/.ssh/**",
    /// "**/.aws/**", ".git/config"]`.
    pub deny: Option<Vec<String>>,
    /// Lines returned per page. Default `2000`.
    pub page_lines: Option<usize>,
    /// Bytes returned per page at most. Default `262144`.
    pub max_bytes: Option<usize>,
    /// Characters per line; longer lines are cut. Default `2000`.
    pub max_line_chars: Option<usize>,
}

merge_struct!(RawReadTool {
    deny,
    page_lines,
    max_bytes,
    max_line_chars,
});

/// `[tools.glob]`: the file name search tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawGlobTool {
    /// Paths returned at most. Default `200`.
    pub max_results: Option<usize>,
    /// Directory names skipped. Setting it in any layer replaces the default.
    /// Default `["node_modules", ".git", "dist", "build", "target", "vendor"]`.
    pub exclude: Option<Vec<String>>,
}

merge_struct!(RawGlobTool {
    max_results,
    exclude
});

/// `[tools.grep]`: the content search tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawGrepTool {
    /// Matching lines returned at most. Default `200`.
    pub max_hits: Option<usize>,
    /// Characters per matching line; longer lines are cut. Default `300`.
    pub max_line_chars: Option<usize>,
    /// Directory names skipped. Setting it in any layer replaces the default.
    /// Default `["node_modules", ".git", "dist", "build", "target", "vendor"]`.
    pub exclude: Option<Vec<String>>,
}

merge_struct!(RawGrepTool {
    max_hits,
    max_line_chars,
    exclude,
});

/// `[model]`: which model to talk to and what it costs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawModel {
    /// The model used when none is named. Default none.
    pub default: Option<String>,
    /// Model providers by name, each a `[model.providers.NAME]` table. Default none.
    pub providers: Option<BTreeMap<String, RawProvider>>,
    /// Prices by model id, each a `[model.prices.MODEL]` table. Default none.
    pub prices: Option<BTreeMap<String, RawPrice>>,
    /// Context window in tokens, overriding what the model reports. Must be greater than
    /// zero. Default none.
    pub context_window: Option<u64>,
}

merge_struct!(RawModel {
    default,
    providers,
    prices,
    context_window,
});

/// `[model.providers.NAME]`: one model provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawProvider {
    /// Wire protocol: `openai` (chat completions) or `anthropic` (messages). Required.
    pub kind: Option<ProviderKind>,
    /// Base URL of the API. Default `https://api.openai.com/v1` for `openai`,
    /// `https://api.anthropic.com` for `anthropic`.
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key. Default none (no key sent).
    pub api_key_env: Option<String>,
    /// Model id sent to the provider. Required.
    pub model: Option<String>,
}

merge_struct!(RawProvider {
    kind,
    base_url,
    api_key_env,
    model,
});

/// `[model.prices.MODEL]`: price of one model in USD per million tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawPrice {
    /// USD per million input tokens, at least zero. Required.
    pub input_per_mtok: Option<f64>,
    /// USD per million output tokens, at least zero. Required.
    pub output_per_mtok: Option<f64>,
}

merge_struct!(RawPrice {
    input_per_mtok,
    output_per_mtok,
});

/// `[budgets]`: per-run limits; a run stops when one is reached. Each must be greater than
/// zero; unset means unlimited.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawBudgets {
    /// Input plus output tokens. Default none (unlimited).
    pub max_tokens: Option<u64>,
    /// Cost in USD, computed from `[model.prices]`. Default none (unlimited).
    pub max_cost_usd: Option<f64>,
    /// Wall-clock seconds. Default none (unlimited).
    pub max_wall_seconds: Option<u64>,
    /// Tool calls. Default none (unlimited).
    pub max_tool_calls: Option<u64>,
    /// Model turns. Default none (unlimited).
    pub max_turns: Option<u64>,
}

merge_struct!(RawBudgets {
    max_tokens,
    max_cost_usd,
    max_wall_seconds,
    max_tool_calls,
    max_turns,
});

/// `[context]`: how the model's context window is shared out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawContext {
    /// Percentages of the window per part of the prompt.
    pub shares: Option<RawContextShares>,
    /// Tokens one tool result may take before it is cut. Must be greater than zero.
    /// Default `4000`.
    pub tool_output_tokens: Option<u64>,
    /// The model's window in tokens, overriding `[model] context_window` and what the model
    /// reports (for small local models). Must be greater than zero. Default none.
    pub window_tokens: Option<u64>,
    /// Compaction runs when the conversation's tool results take more than this percentage of
    /// the window, before anything has to be cut (1 to 100). Default `50`.
    pub tool_results_share: Option<u64>,
    /// Compaction runs when the conversation holds more than this many tool results. Must be
    /// greater than zero. Default `150`.
    pub tool_results_count: Option<u64>,
}

merge_struct!(RawContext {
    shares,
    tool_output_tokens,
    window_tokens,
    tool_results_share,
    tool_results_count,
});

/// `[context.shares]`: percentages of the context window; after merging they must sum to
/// 100 (± 1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawContextShares {
    /// Project rules and instructions. Default `10`.
    pub rules: Option<u32>,
    /// The goal and the current plan state. Default `15`.
    pub goal_state: Option<u32>,
    /// Tool definitions and the permission summary. Default `15`.
    pub tools_permissions: Option<u32>,
    /// File contents and references. Default `40`.
    pub files_references: Option<u32>,
    /// The most recent turns of the trace. Default `10`.
    pub recent_trace: Option<u32>,
    /// The summary of older turns. Default `10`.
    pub summary: Option<u32>,
}

merge_struct!(RawContextShares {
    rules,
    goal_state,
    tools_permissions,
    files_references,
    recent_trace,
    summary,
});

/// `[manifest]`: runs under sandbox manifests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawManifest {
    /// A TOML file of source-control credentials by host (`["github.com"] token = "…"`),
    /// which manifest capabilities use without the sandbox ever seeing them. `~/` is the home
    /// directory. Only the user's settings and the managed file may set this. Default none
    /// (`GITHUB_TOKEN` or `GH_TOKEN` serve `github.com`).
    pub credentials_file: Option<String>,
    /// How long a run's lease lasts without renewal before `warden manifest reap` may cancel
    /// it, in seconds. Default 30.
    pub lease_seconds: Option<u64>,
    /// Where runs' directories (their workspaces' layers or worktrees, scratch, artifacts and
    /// receipts) and the commits' shared checkouts (`.checkouts/`) are made. A tmpfs such as
    /// `/dev/shm/warden-runs` makes the first run of a commit of a large repository fast (later
    /// runs of the commit take its checkout).
    /// `~/` is the home directory. Only the user's settings and the managed file may set this.
    /// Default `runs` beside the trace database.
    pub runs_dir: Option<String>,
}

merge_struct!(RawManifest {
    credentials_file,
    lease_seconds,
    runs_dir
});

/// `[skills]`: skill discovery.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawSkills {
    /// Load skills at all. Default `true`.
    pub enabled: Option<bool>,
    /// Extra directories searched for skills, relative to the project root unless absolute,
    /// after the project's own (`.warden/skills`, `.agents/skills`, `.claude/skills`) and before
    /// the user's and the organisation's. Default empty.
    pub roots: Option<Vec<String>>,
    /// Extra roots whose skills load without a person's approval. The user's and the
    /// organisation's roots are trusted; the project's are not (a cloned repository's skills
    /// are approved once, pinned to the hash of their directory). Only the user's settings and
    /// the managed file may set this. Default empty.
    pub trusted_roots: Option<Vec<String>>,
    /// The share of the model's window the skill index may take, in percent. Default 2.
    pub index_percent: Option<u32>,
    /// A skill one of whose triggers or file globs matches the task, and whose score reaches
    /// this, is loaded without the model asking (a trigger counts 2, a matching file glob 1.5,
    /// plus BM25 over its name and description). Default 2.0; 0 turns automatic loading off.
    pub auto_load_score: Option<f64>,
}

merge_struct!(RawSkills {
    enabled,
    roots,
    trusted_roots,
    index_percent,
    auto_load_score
});

/// `[org]`: limits the organisation imposes. Only allowed in `/etc/warden/managed.toml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawOrg {
    /// Refuse the `bypass` permission mode. Default `false`.
    pub disable_bypass_mode: Option<bool>,
    /// Require `sandbox.enabled` and `sandbox.fail_if_unavailable` to stay `true`.
    /// Default `false`.
    pub require_sandbox: Option<bool>,
    /// Permission modes that may be used; empty allows all. Default empty.
    pub allowed_modes: Option<Vec<PermissionMode>>,
    /// What run manifests must carry and may ask for.
    pub manifest: Option<RawOrgManifest>,
    /// Run only the hooks the managed file itself sets; every other layer's are dropped.
    /// Default `false`.
    pub managed_hooks_only: Option<bool>,
}

merge_struct!(RawOrg {
    disable_bypass_mode,
    require_sandbox,
    allowed_modes,
    manifest,
    managed_hooks_only,
});

/// `[org.manifest]`: requirements on run manifests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawOrgManifest {
    /// Every manifest must state its purpose. Default `true`.
    pub require_purpose: Option<bool>,
    /// Every manifest must name an owner. Default `true`.
    pub require_owner: Option<bool>,
    /// Every manifest must carry an expiry. Default `true`.
    pub require_expiry: Option<bool>,
    /// Longest run duration a manifest may ask for, in seconds. Default `3600`.
    pub max_duration_seconds: Option<u64>,
    /// Most memory a manifest may ask for, in MiB. Default `8192`.
    pub max_memory_mb: Option<u64>,
    /// Most CPUs a manifest may ask for. Default `4.0`.
    pub max_cpu: Option<f64>,
    /// Most processes a manifest may ask for. Default `512`.
    pub max_pids: Option<u64>,
    /// Most scratch disk a manifest may ask for, in MiB. Default `10240`.
    pub max_disk_mb: Option<u64>,
    /// Where writable mounts may be, inside the sandbox (`/workspace`, `/scratch`); empty
    /// allows any target. Default empty.
    pub writable_bases: Option<Vec<String>>,
    /// Paths every manifest must forbid (its `filesystem.forbidden_paths` must hold each, or a
    /// parent of it). Default `["/home", "/root", "/var/run/docker.sock"]`.
    pub forbidden_paths: Option<Vec<String>>,
    /// Allow `*.example.com` network entries (unattended runs must list hosts). Default `false`.
    pub allow_wildcard_hosts: Option<bool>,
}

merge_struct!(RawOrgManifest {
    require_purpose,
    require_owner,
    require_expiry,
    max_duration_seconds,
    max_memory_mb,
    max_cpu,
    max_pids,
    max_disk_mb,
    writable_bases,
    forbidden_paths,
    allow_wildcard_hosts,
});
