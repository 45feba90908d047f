//! The closed sets settings name: the layers settings come from, the permission modes, risk
//! levels and model providers. Every other module of this crate speaks in them; they depend on
//! nothing else of it.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// The settings layers, highest priority first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// `/etc/warden/managed.toml`, set by the organisation; the only place `[org]` may appear.
    Managed,
    /// Command-line flags.
    CommandLine,
    /// Rules remembered from "always" answers, in the user's data directory.
    Remembered,
    /// `<project_root>/.warden/settings.local.toml`, personal and not committed.
    Local,
    /// `<project_root>/.warden/settings.toml`, shared with the project.
    Project,
    /// `$XDG_CONFIG_HOME/warden/settings.toml`.
    User,
}

impl Layer {
    /// The `snake_case` name used in JSON and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Managed => "managed",
            Layer::CommandLine => "command_line",
            Layer::Remembered => "remembered",
            Layer::Local => "local",
            Layer::Project => "project",
            Layer::User => "user",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much the agent may do without asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Read-only: the agent may look but not change anything.
    Plan,
    /// Ask before edits and commands not allowed by a rule.
    #[default]
    Default,
    /// File edits inside the project are allowed; commands still ask.
    AcceptEdits,
    /// Allowed by rules or judged safe runs; the rest asks.
    Auto,
    /// Everything not denied runs without asking.
    Bypass,
}

impl PermissionMode {
    /// All modes, most restrictive first.
    pub const ALL: [PermissionMode; 5] = [
        PermissionMode::Plan,
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Auto,
        PermissionMode::Bypass,
    ];

    /// The kebab-case name used in settings and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Plan => "plan",
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Auto => "auto",
            PermissionMode::Bypass => "bypass",
        }
    }
}

impl FromStr for PermissionMode {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PermissionMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == s)
            .ok_or_else(|| ConfigError::UnknownPermissionMode(s.to_owned()))
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A risk level, as settings name it: `L0` (information) to `L5` (privilege, secrets).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum RiskName {
    L0,
    L1,
    L2,
    L3,
    L4,
    L5,
}

/// The wire protocols warden speaks to model providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions.
    Openai,
    /// Anthropic messages.
    Anthropic,
}

impl ProviderKind {
    /// The `snake_case` name used in settings.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    /// The base URL used when a provider sets none: `https://api.openai.com/v1` (the path prefix
    /// included) and `https://api.anthropic.com` (without `/v1`), as the vendors' own SDKs do.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Openai => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }
}
