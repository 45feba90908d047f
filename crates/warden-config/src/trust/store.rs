//! The trust records: `trust.toml` in the user's data directory, one entry per project root,
//! each bound to the digest of what the project's files granted when the user answered.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::state::{self, TRUST_FILE};

const HEADER: &str = "# Projects whose settings files warden honours, written by `warden trust` and \
`warden untrust`.\n# Each is bound to the digest of what its files grant: when they change, the \
trust ends.";

/// The user's answer about one project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustDecision {
    /// Its files are honoured in full while they grant what they granted.
    Trusted,
    /// Not trusted, and not to be asked again while its files grant what they granted.
    Declined,
}

/// One project's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustRecord {
    /// The project root, canonical.
    pub root: PathBuf,
    /// The digest of what its files granted when the user answered.
    pub digest: String,
    /// The answer.
    pub decision: TrustDecision,
    /// When, RFC 3339.
    pub at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default, rename = "project")]
    projects: Vec<TrustRecord>,
}

/// Every record in `data_dir`, oldest first.
pub fn trust_records(data_dir: &Path) -> Result<Vec<TrustRecord>, ConfigError> {
    let file: TrustFile = state::read(data_dir, TRUST_FILE)?;
    Ok(file.projects)
}

/// Records `decision` for `root`, bound to `digest`, replacing what was recorded for it.
/// Returns the file written.
pub fn record_trust(
    data_dir: &Path,
    root: &Path,
    digest: &str,
    decision: TrustDecision,
) -> Result<PathBuf, ConfigError> {
    let at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let record = TrustRecord {
        root: root.to_path_buf(),
        digest: digest.to_owned(),
        decision,
        at,
    };
    let (path, ()) = state::update(data_dir, TRUST_FILE, HEADER, |file: &mut TrustFile| {
        file.projects.retain(|r| r.root != root);
        file.projects.push(record);
    })?;
    Ok(path)
}

/// Removes the record of `root`; whether there was one.
pub fn forget_trust(data_dir: &Path, root: &Path) -> Result<bool, ConfigError> {
    let (_, removed) = state::update(data_dir, TRUST_FILE, HEADER, |file: &mut TrustFile| {
        let before = file.projects.len();
        file.projects.retain(|r| r.root != root);
        file.projects.len() != before
    })?;
    Ok(removed)
}
