//! Project trust: nothing a repository's settings files carry widens what the user granted,
//! until the user trusts the project.
//!
//! A project's files (`.warden/settings.toml`, `.warden/settings.local.toml`) go through a
//! gate before they are merged ([`gate`]): every key says whether an untrusted project may set
//! it, may only tighten it, or is ignored ([`keys`]). A project is trusted when the user said so
//! with `warden trust` (a record in the user's data directory, bound to a digest of what the
//! files would grant: a change to them ends the trust), when the user's or the organisation's
//! `trusted_projects` names it, or for one command with `--trust-project`.

pub(crate) mod gate;
mod keys;
mod store;
#[cfg(test)]
mod tests;

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::raw::RawSettings;
use crate::settings::{Layer, RiskName, Settings};
use gate::{Gate as _, Gatekeeper, Pass};

pub use store::{TrustDecision, TrustRecord, forget_trust, record_trust, trust_records};

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

/// Every key of the settings files, tables included, in the order of the reference.
pub fn key_trust() -> Vec<KeyInfo> {
    let mut g = Gatekeeper::describing();
    let base = Settings::defaults(PathBuf::new());
    let _ = RawSettings::default().gate(&base, &mut g);
    g.keys
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

/// A project settings file, read and parsed.
pub(crate) struct ProjectFile {
    pub(crate) layer: Layer,
    pub(crate) path: PathBuf,
    pub(crate) text: String,
    pub(crate) raw: RawSettings,
}

/// The project's files after the gate.
pub(crate) struct Gated {
    /// Each file's layer, path and what of it stands.
    pub(crate) layers: Vec<(Layer, PathBuf, RawSettings)>,
    /// Ask rules that only tighten.
    pub(crate) asks: Vec<String>,
    /// Risk levels that only raise.
    pub(crate) risk_floors: std::collections::BTreeMap<String, RiskName>,
    pub(crate) trust: ProjectTrust,
}

/// What the caller knows of trust for this load.
pub(crate) struct TrustInputs<'a> {
    /// `--trust-project`.
    pub(crate) command_line: bool,
    /// The user's data directory, where the records are; `None` reads none.
    pub(crate) data_dir: Option<&'a Path>,
    /// The real home directory, for `~/` in patterns.
    pub(crate) home: Option<&'a Path>,
    /// `trusted_projects` patterns of the user's and the managed settings, with their files.
    pub(crate) patterns: Vec<(String, PathBuf)>,
}

/// Gates `files` against `base` (the user's own layers resolved) and decides trust.
pub(crate) fn gate_project(
    root: &Path,
    files: Vec<ProjectFile>,
    base: &Settings,
    inputs: &TrustInputs<'_>,
) -> Result<Gated, crate::ConfigError> {
    let mut untrusted = Vec::new();
    let mut material = std::collections::BTreeMap::new();
    let mut widening = Vec::new();
    let mut set_aside = Vec::new();
    let (mut asks, mut risk_floors) = (Vec::new(), std::collections::BTreeMap::new());
    for file in &files {
        let mut g = Gatekeeper::new(Pass::Untrusted, &file.path, &file.text);
        let kept = file.raw.clone().gate(base, &mut g);
        let name = file
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        material.insert(name, serde_json::to_value(&g.material).unwrap_or_default());
        set_aside.extend(g.ignored.iter().cloned());
        widening.extend(g.ignored);
        widening.extend(g.limited);
        asks.extend(g.asks);
        for (program, level) in g.risk_floors {
            let floor = risk_floors.entry(program).or_insert(level);
            *floor = std::cmp::max(*floor, level);
        }
        untrusted.push(kept);
    }
    let digest = digest_of(&material);
    let basis = decide(root, inputs, &digest)?;
    let trusted = matches!(
        basis,
        TrustBasis::CommandLine | TrustBasis::Pattern { .. } | TrustBasis::Record { .. }
    );
    let mut layers = Vec::new();
    let mut ignored = Vec::new();
    for (file, kept) in files.iter().zip(untrusted) {
        let raw = if trusted {
            let mut g = Gatekeeper::new(Pass::Trusted, &file.path, &file.text);
            let raw = file.raw.clone().gate(base, &mut g);
            ignored.extend(g.ignored);
            raw
        } else {
            kept
        };
        layers.push((file.layer, file.path.clone(), raw));
    }
    if trusted {
        asks.clear();
        risk_floors.clear();
    } else {
        ignored = set_aside;
    }
    // In the order of the files, then of their lines.
    let order = |i: &IgnoredSetting| {
        let file = files.iter().position(|f| f.path == i.file);
        (file, i.line)
    };
    widening.sort_by_key(order);
    ignored.sort_by_key(order);
    Ok(Gated {
        layers,
        asks,
        risk_floors,
        trust: ProjectTrust {
            trusted,
            basis,
            digest,
            files: files.into_iter().map(|f| f.path).collect(),
            widening,
            ignored,
        },
    })
}

/// Whether `path` matches `pattern` component by component: `*` within one component, `**`
/// any number of them (so `~/src/*` trusts the projects directly below `~/src`, not a
/// directory a command made deeper inside one of them).
fn path_matches(pattern: &str, path: &str) -> bool {
    fn matches(pattern: &[&str], path: &[&str]) -> bool {
        match (pattern.first(), path.first()) {
            (None, None) => true,
            (Some(&"**"), _) => {
                matches(&pattern[1..], path) || (!path.is_empty() && matches(pattern, &path[1..]))
            }
            (Some(p), Some(c)) => {
                warden_protocol::wildcard(p, c) && matches(&pattern[1..], &path[1..])
            }
            _ => false,
        }
    }
    fn split(s: &str) -> Vec<&str> {
        s.split('/').filter(|c| !c.is_empty()).collect()
    }
    matches(&split(pattern), &split(path))
}

fn digest_of(material: &std::collections::BTreeMap<String, serde_json::Value>) -> String {
    let text = serde_json::to_string(material).unwrap_or_default();
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().fold(String::from("sha256:"), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn decide(
    root: &Path,
    inputs: &TrustInputs<'_>,
    digest: &str,
) -> Result<TrustBasis, crate::ConfigError> {
    if inputs.command_line {
        return Ok(TrustBasis::CommandLine);
    }
    if let Some(basis) = by_pattern(root, inputs) {
        return Ok(basis);
    }
    let Some(data_dir) = inputs.data_dir else {
        return Ok(TrustBasis::Untrusted);
    };
    let records = trust_records(data_dir)?;
    let Some(record) = records.into_iter().find(|r| r.root == root) else {
        return Ok(TrustBasis::Untrusted);
    };
    let at = record.at.clone();
    Ok(match (record.decision, record.digest == digest) {
        (TrustDecision::Trusted, true) => TrustBasis::Record { at },
        (TrustDecision::Trusted, false) => TrustBasis::Changed { at },
        (TrustDecision::Declined, true) => TrustBasis::Declined { at },
        (TrustDecision::Declined, false) => TrustBasis::Untrusted,
    })
}

/// The first `trusted_projects` pattern (of the user's and the managed settings, the only
/// layers that may set it) naming `root`.
fn by_pattern(root: &Path, inputs: &TrustInputs<'_>) -> Option<TrustBasis> {
    let root_text = root.to_string_lossy();
    inputs.patterns.iter().find_map(|(pattern, file)| {
        let expanded = match pattern.strip_prefix("~/") {
            Some(rest) => format!("{}/{rest}", inputs.home?.display()),
            None if pattern.starts_with('/') => pattern.clone(),
            None => return None,
        };
        // Matched as written against the root's real path: a link along the pattern is not
        // followed (a repository could point one elsewhere).
        path_matches(expanded.trim_end_matches('/'), &root_text).then(|| TrustBasis::Pattern {
            pattern: pattern.clone(),
            file: file.clone(),
        })
    })
}
