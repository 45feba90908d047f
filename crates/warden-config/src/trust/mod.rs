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
pub(crate) mod verdict;

use std::path::{Path, PathBuf};

use crate::raw::RawSettings;
use crate::settings::{Layer, RiskName, Settings};
use gate::{Gate as _, Gatekeeper, Pass};

pub use store::{TrustDecision, TrustRecord, forget_trust, record_trust, trust_records};
use verdict::digest_of;
pub use verdict::{IgnoredSetting, KeyInfo, KeyTrust, ProjectTrust, Tighten, TrustBasis};

/// Every key of the settings files, tables included, in the order of the reference.
pub fn key_trust() -> Vec<KeyInfo> {
    let mut g = Gatekeeper::describing();
    let base = Settings::defaults(PathBuf::new());
    let _ = RawSettings::default().gate(&base, &mut g);
    g.keys
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
