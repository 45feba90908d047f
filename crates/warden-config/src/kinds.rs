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

/// Declares a closed set named in settings: its variants with their names (the default marked
/// `#[default]`: the settings' own), `as_str`, `ALL`, `Display` and `FromStr` (an unknown name
/// lists the known ones).
macro_rules! named_set {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
            JsonSchema,
        )]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every value, in the order the reference lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name settings use.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| {
                        let known: Vec<&str> = $name::ALL.iter().map(|v| v.as_str()).collect();
                        format!("unknown {} {s:?}: expected {}", $what, known.join(", "))
                    })
            }
        }
    };
}

named_set!(
    /// What commands may reach: nothing, everything, or only the allowlist (through warden's
    /// egress proxy). Ordered from the strictest.
    NetworkMode, "network mode" {
        #[default]
        Off = "off",
        Allowlist = "allowlist",
        On = "on",
    }
);

named_set!(
    /// Which sandbox runs commands: the best available (`auto`, the native one, with bubblewrap
    /// standing in only where `fail_if_unavailable = false`), the native one, or bubblewrap.
    Backend, "sandbox backend" {
        #[default]
        Auto = "auto",
        Native = "native",
        Bwrap = "bwrap",
    }
);

named_set!(
    /// What commands may read and write, before `[sandbox.filesystem]` adds to it.
    Profile, "sandbox profile" {
        /// Read the roots, write nothing.
        ReadOnly = "read-only",
        /// Read the roots, write the workspace.
        #[default]
        WorkspaceWrite = "workspace-write",
        /// Workspace-write with the network forced off, an empty `$HOME` and no toolchains
        /// from it.
        FullIsolated = "full-isolated",
    }
);

named_set!(
    /// Who commands are on the host when warden runs as root.
    RootIdentity, "root identity" {
        /// An unprivileged uid that owns none of the host's files.
        #[default]
        Unprivileged = "unprivileged",
        /// Root itself, chosen knowingly.
        Host = "host",
    }
);

named_set!(
    /// Where resource limits cannot be bound by a cgroup: refuse, or bound each process.
    LimitsFallback, "limits fallback" {
        /// Nothing runs.
        #[default]
        None = "none",
        /// Per-process rlimits only, said in every result.
        Rlimits = "rlimits",
    }
);
