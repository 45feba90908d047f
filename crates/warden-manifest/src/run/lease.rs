//! Leases: a running run renews its lease (a heartbeat in its directory) while it lives. A run
//! whose lease ran out — its warden was killed, even with `kill -9`, or hangs — is cancelled
//! and cleaned up by [`reap`], which also removes artifacts kept past their time and retries
//! the cleanup of quarantined runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::git::{Repo, remove_tree};
use super::layout::{Resolved, destroy};

/// The lease file of a run, in its directory.
pub(crate) const LEASE_FILE: &str = "lease.json";

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LeaseStatus {
    Running,
    Finished,
    Quarantined,
    Reaped,
}

/// What [`reap`] did with a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReapAction {
    /// Its lease ran out: cancelled and cleaned up.
    Cancelled,
    /// A retried cleanup of a quarantined run worked.
    Unquarantined,
    /// A retried cleanup failed again.
    StillQuarantined,
    /// Its artifacts were past their time: its directory is gone.
    ExpiredArtifacts,
}

/// What a run's directory says about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Lease {
    pub(crate) run_id: String,
    pub manifest_sha256: String,
    /// The warden process running it, and when that process started (clock ticks since boot),
    /// so that a reused pid is never taken for it.
    pub(crate) pid: u32,
    pub(crate) pid_start: u64,
    pub(crate) started_ms: u64,
    /// Renewed every third of `lease_seconds` while the run lives.
    pub(crate) heartbeat_ms: u64,
    #[allow(clippy::struct_field_names)] // as lease.json names it
    pub(crate) lease_seconds: u64,
    pub(crate) status: LeaseStatus,
    /// The repository the worktrees belong to.
    pub(crate) repository: Option<PathBuf>,
    pub(crate) resolved: Vec<Resolved>,
    /// When the collected artifacts may be removed.
    pub(crate) artifacts_until_ms: Option<u64>,
    /// Why cleanup failed, for a quarantined run.
    #[serde(default)]
    pub(crate) quarantine: Vec<String>,
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// When the process `pid` started, in clock ticks since boot (`/proc/PID/stat`, field 22).
pub(crate) fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields count from after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(19)?.parse().ok()
}

impl Lease {
    /// Writes the lease into `dir`, atomically.
    pub(crate) fn write(&self, dir: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        let tmp = dir.join(format!(".{LEASE_FILE}.tmp"));
        std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join(LEASE_FILE)).map_err(|e| format!("{}: {e}", dir.display()))
    }

    pub(crate) fn read(dir: &Path) -> Result<Self, String> {
        let path = dir.join(LEASE_FILE);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Whether its holder is alive: the same process, still running.
    fn holder_alive(&self) -> bool {
        process_start(self.pid) == Some(self.pid_start)
    }

    fn expired(&self, now: u64) -> bool {
        self.heartbeat_ms
            .saturating_add(self.lease_seconds.saturating_mul(1000))
            < now
    }
}

/// Renews a lease until dropped.
pub(crate) struct Heartbeat {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    pub(crate) fn start(dir: PathBuf, lease: Arc<std::sync::Mutex<Lease>>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let every = {
            let l = lease
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Duration::from_millis((l.lease_seconds * 1000 / 3).max(100))
        };
        let thread = std::thread::Builder::new()
            .name("warden-lease".into())
            .spawn(move || {
                let mut last = std::time::Instant::now();
                while !stopping.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(50));
                    if last.elapsed() < every {
                        continue;
                    }
                    last = std::time::Instant::now();
                    let mut l = lease
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    l.heartbeat_ms = now_ms();
                    let _ = l.write(&dir);
                }
            })
            .ok();
        Self { stop, thread }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What [`reap`] did with one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reaped {
    pub run_id: String,
    pub action: ReapAction,
    pub errors: Vec<String>,
    /// Whether the lease's holder was alive, and killed.
    pub killed: bool,
}

/// Goes through the runs under `runs`: cancels and cleans up those whose lease ran out,
/// retries the cleanup of quarantined ones, and removes directories whose artifacts are past
/// their time.
pub fn reap(runs: &Path) -> Vec<Reaped> {
    let now = now_ms();
    let Ok(entries) = std::fs::read_dir(runs) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(mut lease) = Lease::read(&dir) else {
            continue;
        };
        let repo = lease.repository.as_deref().and_then(|r| Repo::open(r).ok());
        // A lease is only data: nothing outside the run's own directory is ever removed.
        let own = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        lease
            .resolved
            .retain(|r| r.path.starts_with(&own) && r.path != own);
        let mut reaped = Reaped {
            run_id: lease.run_id.clone(),
            action: ReapAction::Cancelled,
            errors: Vec::new(),
            killed: false,
        };
        match lease.status {
            LeaseStatus::Running if lease.expired(now) => {
                if lease.holder_alive() {
                    // Alive but not renewing: hung. Its sandbox dies with it.
                    reaped.killed = kill(lease.pid);
                }
                let done = destroy(
                    repo.as_ref(),
                    &lease.resolved,
                    &[("git directory", dir.join("gitdir"))],
                );
                reaped.errors = done.errors;
                lease.status = if done.destroyed {
                    LeaseStatus::Reaped
                } else {
                    LeaseStatus::Quarantined
                };
                lease.quarantine.clone_from(&reaped.errors);
                let _ = lease.write(&dir);
                let _ = write_reaped_receipt(&dir, &lease);
            }
            LeaseStatus::Quarantined => {
                let done = destroy(
                    repo.as_ref(),
                    &lease.resolved,
                    &[("git directory", dir.join("gitdir"))],
                );
                reaped.errors.clone_from(&done.errors);
                if done.destroyed {
                    lease.status = LeaseStatus::Reaped;
                    lease.quarantine.clear();
                    reaped.action = ReapAction::Unquarantined;
                } else {
                    reaped.action = ReapAction::StillQuarantined;
                }
                let _ = lease.write(&dir);
            }
            LeaseStatus::Finished | LeaseStatus::Reaped
                if lease.artifacts_until_ms.is_none_or(|until| until <= now) =>
            {
                if let Err(e) = remove_tree(&dir) {
                    reaped.errors.push(e);
                }
                reaped.action = ReapAction::ExpiredArtifacts;
            }
            _ => continue,
        }
        out.push(reaped);
    }
    out
}

fn kill(pid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success())
}

/// The receipt of a run cancelled by the reaper: what its lease knew.
fn write_reaped_receipt(dir: &Path, lease: &Lease) -> Result<(), String> {
    let path = dir.join("receipt.json");
    let mut receipt = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .unwrap_or_else(|| {
            serde_json::json!({
                "run_id": lease.run_id,
                "manifest_sha256": lease.manifest_sha256,
            })
        });
    let reaped = lease.status == LeaseStatus::Reaped;
    receipt["status"] = serde_json::json!(if reaped { "reaped" } else { "quarantined" });
    receipt["cleanup"] = serde_json::json!({
        "workspace_destroyed": reaped,
        "capabilities_revoked": true,
        "reaped_at_ms": now_ms(),
        "errors": lease.quarantine,
    });
    let text = serde_json::to_string_pretty(&receipt).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}
