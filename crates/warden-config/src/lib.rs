//! warden-config: the one owner of warden's settings.
//!
//! Settings come in layers, highest priority first: the organisation's managed file, the
//! command line, the project-local file, the project file and the user file. Each file parses
//! into a [`RawSettings`] of optional values; [`load`] merges the layers and resolves them into
//! a complete [`Settings`]. Every failure is a [`ConfigError`] naming the file, line and key.
//! The JSON schema and the settings reference are generated from the same types
//! ([`json_schema`], [`settings_markdown`]).
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod agent_mcp;
mod autorun;
mod docs;
mod error;
mod hooks_edit;
mod kinds;
mod load;
mod mcp_edit;
mod merge;
mod parse;
mod places;
pub mod raw;
mod remember;
mod resolve;
mod settings;
mod state;
mod trust;

pub use agent_mcp::server_from_agent;
pub use autorun::{AUTO_RUN, repository_auto_run};
pub use docs::{json_schema, settings_markdown, trust_markdown};
pub use error::ConfigError;
pub use hooks_edit::{ClaudeHooks, add_hooks, claude_hooks};
pub use kinds::{
    Backend, Layer, LimitsFallback, NetworkMode, PermissionMode, Profile, ProviderKind, RiskName,
    RootIdentity,
};
pub use load::{LoadOptions, MANAGED_PATH, load};
pub use mcp_edit::{NewMcpServer, add_mcp_server, mcp_server_names, remove_mcp_server};
pub use parse::parse_str;
pub use places::{project_root, user_config_dir, within};
pub use raw::RawSettings;
pub use remember::{
    RememberedRules, RuleList, forget_rule, local_rules, move_local_rules, remember_rule,
    remembered, remembered_path,
};
pub use resolve::resolve_org;
pub use settings::{
    Budgets, Context, ContextShares, DEFAULT_UNPRIVILEGED_ID, GlobTool, GrepTool, HOME_SECRETS,
    Hook, HookEvent, HookOnError, Hooks, HttpTransport, ManifestRuns, Mcp, McpServer, Model, Org,
    OrgManifest, Permissions, Price, Provider, ReadTool, Sandbox, SandboxEnv, SandboxFilesystem,
    SandboxLimits, SandboxNetwork, Settings, SettingsSource, Skills, Tools, WardenDirs, WriteTool,
};
pub use state::data_dir;
pub use trust::{
    IgnoredSetting, KeyInfo, KeyTrust, ProjectTrust, Tighten, TrustBasis, TrustDecision,
    TrustRecord, forget_trust, key_trust, record_trust, trust_records,
};
