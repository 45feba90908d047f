//! Sandbox manifests in the trace: approvals a person recorded, each bound to the digest of
//! one manifest and expiring, and the runs made under manifests with their receipts.

use std::time::{Duration, SystemTime};

use rusqlite::{OptionalExtension as _, params};
use serde::Serialize;

use crate::TraceError;
use crate::row::now_rfc3339;
use crate::store::TraceStore;

/// A recorded approval of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ManifestApproval {
    /// `appr_` and 16 hex digits: what a manifest's `approval_ref` names.
    pub id: String,
    /// The manifest's approval digest (its content without the `approval_ref`s).
    pub digest: String,
    /// The file approved, as given.
    pub manifest: String,
    pub approved_by: String,
    pub approved_at: String,
    pub expires_at: String,
}

/// Why a manifest's approval does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalRefused {
    #[error("no approval of that id ({0}) is recorded; see `warden manifest approve`")]
    Unknown(String),
    #[error(
        "approval {0} was given to another manifest (or to this one before it changed): \
         approve it again"
    )]
    OtherManifest(String),
    #[error("approval {id} expired at {at}")]
    Expired { id: String, at: String },
    #[error("approval {0} has no readable expiry")]
    NoExpiry(String),
    /// The trace, where approvals are kept, could not be opened or read.
    #[error("{0}")]
    Unavailable(String),
}

impl ManifestApproval {
    /// `Ok` when this approval is of `digest` and has not expired at `now`, else why not.
    pub fn holds_for(&self, digest: &str, now: SystemTime) -> Result<(), ApprovalRefused> {
        if self.digest != digest {
            return Err(ApprovalRefused::OtherManifest(self.id.clone()));
        }
        match humantime::parse_rfc3339(&self.expires_at) {
            Ok(expiry) if expiry > now => Ok(()),
            Ok(_) => Err(ApprovalRefused::Expired {
                id: self.id.clone(),
                at: self.expires_at.clone(),
            }),
            Err(_) => Err(ApprovalRefused::NoExpiry(self.id.clone())),
        }
    }
}

impl TraceStore {
    /// Records an approval of the manifest whose approval digest is `digest`, valid for `ttl`.
    pub fn approve_manifest(
        &self,
        digest: &str,
        manifest: &str,
        approved_by: &str,
        ttl: Duration,
    ) -> Result<ManifestApproval, TraceError> {
        let now = SystemTime::now();
        let approved_at = now_rfc3339();
        let nanos = now
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let seed = format!("{digest} {nanos} {}", std::process::id());
        let id = format!("appr_{}", &crate::sha256_hex(seed.as_bytes())[..16]);
        let approval = ManifestApproval {
            id,
            digest: digest.to_owned(),
            manifest: manifest.to_owned(),
            approved_by: approved_by.to_owned(),
            approved_at,
            expires_at: humantime::format_rfc3339_millis(now + ttl).to_string(),
        };
        self.conn()
            .execute(
                "INSERT INTO manifest_approvals (id, digest, manifest, approved_by, approved_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    approval.id,
                    approval.digest,
                    approval.manifest,
                    approval.approved_by,
                    approval.approved_at,
                    approval.expires_at
                ],
            )
            .map_err(|source| self.sqlite_error(source))?;
        Ok(approval)
    }

    /// The approval of that id, if there is one.
    pub fn manifest_approval(&self, id: &str) -> Result<Option<ManifestApproval>, TraceError> {
        self.conn()
            .query_row(
                "SELECT id, digest, manifest, approved_by, approved_at, expires_at
                 FROM manifest_approvals WHERE id = ?1",
                params![id],
                |row| {
                    Ok(ManifestApproval {
                        id: row.get(0)?,
                        digest: row.get(1)?,
                        manifest: row.get(2)?,
                        approved_by: row.get(3)?,
                        approved_at: row.get(4)?,
                        expires_at: row.get(5)?,
                    })
                },
            )
            .optional()
            .map_err(|source| self.sqlite_error(source))
    }

    /// Records that the run `run_id` of the manifest `sha256` started (status `running`).
    pub fn manifest_run_started(&self, run_id: &str, sha256: &str) -> Result<(), TraceError> {
        self.conn()
            .execute(
                "INSERT OR REPLACE INTO manifest_runs (run_id, manifest_sha256, started_at, status)
                 VALUES (?1, ?2, ?3, 'running')",
                params![run_id, sha256, now_rfc3339()],
            )
            .map_err(|source| self.sqlite_error(source))?;
        Ok(())
    }

    /// Records how the run `run_id` ended, with its receipt (redacted before storage).
    pub fn manifest_run_finished(
        &self,
        run_id: &str,
        status: &str,
        receipt: &serde_json::Value,
    ) -> Result<(), TraceError> {
        let receipt = crate::redact_value(receipt).to_string();
        self.conn()
            .execute(
                "UPDATE manifest_runs SET status = ?2, receipt = ?3 WHERE run_id = ?1",
                params![run_id, status, receipt],
            )
            .map_err(|source| self.sqlite_error(source))?;
        Ok(())
    }

    /// Every run under a manifest: its id and when it started, the latest first.
    pub fn manifest_runs(&self) -> Result<Vec<(String, String)>, TraceError> {
        let mut stmt = self
            .conn()
            .prepare("SELECT run_id, started_at FROM manifest_runs ORDER BY started_at DESC")
            .map_err(|source| self.sqlite_error(source))?;
        let rows = stmt
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|source| self.sqlite_error(source))?;
        rows.collect::<Result<_, _>>()
            .map_err(|source| self.sqlite_error(source))
    }

    /// The status and receipt of the run `run_id`, if it is known.
    pub fn manifest_run(
        &self,
        run_id: &str,
    ) -> Result<Option<(String, Option<serde_json::Value>)>, TraceError> {
        let row: Option<(String, Option<String>)> = self
            .conn()
            .query_row(
                "SELECT status, receipt FROM manifest_runs WHERE run_id = ?1",
                params![run_id],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(|source| self.sqlite_error(source))?;
        Ok(row
            .map(|(status, receipt)| (status, receipt.and_then(|r| serde_json::from_str(&r).ok()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_is_found_by_id_and_holds_for_its_digest_until_it_expires() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TraceStore::open(&tmp.path().join("trace.db")).unwrap();
        let given = store
            .approve_manifest("d1", "m.yaml", "alice", Duration::from_secs(60))
            .unwrap();
        assert!(given.id.starts_with("appr_") && given.id.len() == 21);
        let found = store.manifest_approval(&given.id).unwrap().unwrap();
        assert_eq!(found, given);
        let now = SystemTime::now();
        assert_eq!(found.holds_for("d1", now), Ok(()));
        let other = found.holds_for("d2", now).unwrap_err();
        assert_eq!(other, ApprovalRefused::OtherManifest(given.id.clone()));
        assert!(other.to_string().contains("another manifest"), "{other}");
        let later = now + Duration::from_secs(120);
        let expired = found.holds_for("d1", later).unwrap_err();
        assert!(
            matches!(expired, ApprovalRefused::Expired { .. }),
            "{expired}"
        );
        assert!(expired.to_string().contains("expired"), "{expired}");
        assert_eq!(store.manifest_approval("appr_nope").unwrap(), None);
    }

    #[test]
    fn a_run_is_recorded_with_its_receipt_redacted() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TraceStore::open(&tmp.path().join("trace.db")).unwrap();
        store.manifest_run_started("run_1", "abc").unwrap();
        assert_eq!(store.manifest_run("run_1").unwrap().unwrap().0, "running");
        let receipt = serde_json::json!({"note": "token=ghp_abcdefghijklmnopqrstuvwxyz0123456789"});
        store
            .manifest_run_finished("run_1", "succeeded", &receipt)
            .unwrap();
        let (status, stored) = store.manifest_run("run_1").unwrap().unwrap();
        assert_eq!(status, "succeeded");
        assert!(!stored.unwrap().to_string().contains("ghp_abc"));
    }
}
