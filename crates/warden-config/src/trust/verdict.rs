//! What trust decides, as the resolved settings carry it: whether the project's files are
//! honoured ([`ProjectTrust`]) and why ([`TrustBasis`]), what was set aside
//! ([`IgnoredSetting`]), and what an untrusted project may do with each key ([`KeyTrust`]).

use std::fmt::{self, Write as _};
use std::path::PathBuf;

use serde::Serialize;
use sha2::{Digest as _, Sha256};

/// What an untrusted project's settings file may do with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyTrust {
    /// Cosmetic, or narrowing by nature: honoured from any file.
    MaySet,
    /// Honoured only where it narrows what the user's own settings give, in the way named.
    MayOnlyTighten(Tighten),
    /// Ignored, and reported, until the project is trusted.
    IgnoredWhenUntrusted,
    /// Never from a project's files, trusted or not: the user's settings and the managed file
    /// only.
    UserOnly,
    /// Only in the managed file.
    ManagedOnly,
    /// A table, whose keys say for themselves.
    Table,
}

/// How a key that may only tighten is held to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tighten {
    /// Its entries are added to everyone else's; each only restricts.
    Adds,
    /// Only a value no higher than the user's.
    Lower,
    /// Only `true`, unless the user's is `false` too.
    OnlyTrue,
    /// Only `false`, unless the user's is `true` too.
    OnlyFalse,
    /// Only a permission mode no looser than the user's (`plan` < `default` < `accept-edits`
    /// < `auto` < `bypass`).
    StricterMode,
    /// Only a network mode no looser than the user's (`off` < `allowlist` < `on`).
    StricterNetwork,
    /// Only a list holding nothing the user's lacks.
    Subset,
    /// Its rules make what they match ask, and never turn a refusal into a question.
    AsksOnly,
    /// Its levels raise a program's risk, never lower it.
    RaisesOnly,
}

impl KeyTrust {
    /// In plain words, for the settings reference.
    pub fn describe(self) -> &'static str {
        match self {
            KeyTrust::MaySet => "may set",
            KeyTrust::MayOnlyTighten(how) => match how {
                Tighten::Adds => "may only tighten: its entries are added",
                Tighten::Lower => "may only tighten: a lower value than yours",
                Tighten::OnlyTrue => "may only tighten: `true` only",
                Tighten::OnlyFalse => "may only tighten: `false` only",
                Tighten::StricterMode => "may only tighten: a stricter mode than yours",
                Tighten::StricterNetwork => "may only tighten: a stricter network mode than yours",
                Tighten::Subset => "may only tighten: names your list already has",
                Tighten::AsksOnly => "may only tighten: its rules ask, never loosen a denial",
                Tighten::RaisesOnly => "may only tighten: levels raise, never lower",
            },
            KeyTrust::IgnoredWhenUntrusted => "ignored when untrusted",
            KeyTrust::UserOnly => "never (user and managed settings only)",
            KeyTrust::ManagedOnly => "never (managed file only)",
            KeyTrust::Table => "table",
        }
    }
}

/// One key of the settings and what an untrusted project may do with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyInfo {
    /// The dotted key, `sandbox.network.mode`.
    pub key: String,
    /// What an untrusted project may do with it.
    pub trust: KeyTrust,
    /// What the key is, in a few plain words.
    pub what: &'static str,
}

/// A value of a project's settings file that was not applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IgnoredSetting {
    /// The file.
    pub file: PathBuf,
    /// Its 1-based line, where found.
    pub line: Option<usize>,
    /// The dotted key (a map's entry included: `model.providers.corp`).
    pub key: String,
    /// The value, or the one list entry, as written.
    pub value: String,
    /// What the key is, in plain words.
    pub what: String,
    /// Why it was not applied.
    pub why: String,
}

impl fmt::Display for IgnoredSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = crate::error::location(&self.file, self.line, None);
        write!(
            f,
            "{at}: {} = {} ({}): not applied: {}",
            self.key, self.value, self.what, self.why
        )
    }
}

/// Whether the project's own settings files are honoured in full, and what they would grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct ProjectTrust {
    /// The project's files are honoured in full.
    pub trusted: bool,
    /// Why, or why not.
    pub basis: TrustBasis,
    /// The digest of what the project's files would grant when trusted; a trust record is bound
    /// to it.
    pub digest: String,
    /// The project's settings files that were read.
    pub files: Vec<PathBuf>,
    /// What the project's files would grant beyond the user's own settings: what an untrusted
    /// load sets aside, and what it applies only as tightening (ask rules, risk levels) but
    /// trusted would do more; what `warden trust` shows.
    pub widening: Vec<IgnoredSetting>,
    /// What this load set aside: [`ProjectTrust::widening`] when untrusted, and always the keys
    /// no project may set.
    pub ignored: Vec<IgnoredSetting>,
}

impl ProjectTrust {
    /// The one trust check: whether what the project carries (its settings, and the servers,
    /// hooks and agents it defines) may be used as it says.
    pub fn allows_project_config(&self) -> bool {
        self.trusted
    }

    pub(crate) fn none() -> Self {
        ProjectTrust {
            trusted: false,
            basis: TrustBasis::Untrusted,
            digest: digest_of(&std::collections::BTreeMap::new()),
            files: Vec::new(),
            widening: Vec::new(),
            ignored: Vec::new(),
        }
    }
}

/// Why a project is, or is not, trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TrustBasis {
    /// `--trust-project`, for this command.
    CommandLine,
    /// A `trusted_projects` pattern of the user's or the organisation's settings.
    Pattern {
        pattern: String,
        /// The file that holds it.
        file: PathBuf,
    },
    /// `warden trust`, recorded at `at`, for what the files grant now.
    Record { at: String },
    /// Never trusted.
    Untrusted,
    /// Trusted at `at`, for files that have changed since: trust no longer applies.
    Changed { at: String },
    /// The user said no at `at`, to what the files grant now.
    Declined { at: String },
}

impl fmt::Display for TrustBasis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrustBasis::CommandLine => f.write_str("trusted for this command (--trust-project)"),
            TrustBasis::Pattern { pattern, file } => write!(
                f,
                "trusted by trusted_projects = \"{pattern}\" in {}",
                file.display()
            ),
            TrustBasis::Record { at } => write!(f, "trusted with `warden trust` at {at}"),
            TrustBasis::Untrusted => f.write_str("not trusted"),
            TrustBasis::Changed { at } => write!(
                f,
                "not trusted: trusted at {at}, but its settings files have changed since"
            ),
            TrustBasis::Declined { at } => write!(f, "not trusted: declined at {at}"),
        }
    }
}

/// The digest of what a project's files grant.
pub(crate) fn digest_of(
    material: &std::collections::BTreeMap<String, serde_json::Value>,
) -> String {
    let text = serde_json::to_string(material).unwrap_or_default();
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().fold(String::from("sha256:"), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}
