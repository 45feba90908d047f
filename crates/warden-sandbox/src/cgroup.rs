//! Control groups for the limits rlimits cannot hold: a process count that binds even when
//! warden runs as root, total memory, and a CPU quota. Version 1 controllers where the host has
//! them, else the unified hierarchy. Created by the parent, joined by the helper before it runs
//! anything, removed when the command is over.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

const ROOT: &str = "/sys/fs/cgroup";

/// The control groups of one command.
#[derive(Debug, Default)]
pub(crate) struct Cgroup {
    dirs: Vec<PathBuf>,
    /// Which limits they hold: `pids`, `memory`, `cpu`.
    pub(crate) holds: Vec<&'static str>,
}

/// One limit to set: controller, file, value.
type Setting = (&'static str, &'static str, String);

impl Cgroup {
    /// Creates what `pids`, `memory_mb` and `cpus` need. A limit that cannot be placed is an error
    /// naming it: the caller asked for it, so nothing may run without it.
    pub(crate) fn create(
        pids: Option<u64>,
        memory_mb: Option<u64>,
        cpus: Option<f64>,
    ) -> io::Result<Self> {
        let mut settings: Vec<Setting> = Vec::new();
        if let Some(pids) = pids {
            settings.push(("pids", "pids.max", pids.to_string()));
        }
        if let Some(mb) = memory_mb {
            settings.push((
                "memory",
                "memory.limit_in_bytes",
                (mb * 1024 * 1024).to_string(),
            ));
        }
        if let Some(cpus) = cpus {
            let period = 100_000u64;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let quota = (cpus * 100_000.0).round().max(1000.0) as u64;
            settings.push(("cpu", "cpu.cfs_period_us", period.to_string()));
            settings.push(("cpu", "cpu.cfs_quota_us", quota.to_string()));
        }
        // The process id alone repeats (a group whose processes the kernel has not yet let go
        // of outlives its process): the time makes the name new, and a clash tries another.
        let mut name = group_name();
        let mut group = Self::default();
        for (controller, file, value) in settings {
            let existing = group
                .dirs
                .iter()
                .find(|d| d.starts_with(Path::new(ROOT).join(controller)))
                .cloned();
            let dir = if let Some(dir) = existing {
                dir
            } else {
                let base = v1_base(controller).ok_or_else(|| {
                    io::Error::other(format!(
                        "the {controller} cgroup controller is not available (cgroup v1 not mounted at {ROOT}/{controller})"
                    ))
                })?;
                sweep(&base);
                let mut dir = base.join(&name);
                let mut tries = 0;
                loop {
                    match fs::create_dir(&dir) {
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 8 => {
                            tries += 1;
                            // Only the first group may take another name: the rest follow it.
                            if group.dirs.is_empty() {
                                name = group_name();
                                dir = base.join(&name);
                            } else {
                                return Err(io::Error::new(
                                    e.kind(),
                                    format!("creating {}: {e}", dir.display()),
                                ));
                            }
                        }
                        Err(e) => {
                            return Err(io::Error::new(
                                e.kind(),
                                format!("creating {}: {e}", dir.display()),
                            ));
                        }
                        Ok(()) => break,
                    }
                }
                group.dirs.push(dir.clone());
                dir
            };
            fs::write(dir.join(file), &value).map_err(|e| {
                io::Error::new(e.kind(), format!("{}: {e}", dir.join(file).display()))
            })?;
            if !group.holds.contains(&controller) {
                group.holds.push(controller);
            }
        }
        Ok(group)
    }

    /// The `cgroup.procs` files the helper writes `0` to, joining every group before it forks.
    pub(crate) fn procs(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for dir in &self.dirs {
            // The processes are gone by now; the kernel may take a moment to notice (what is
            // still left is swept by a later command).
            for attempt in 0..40u64 {
                if fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2 + attempt / 2));
            }
        }
    }
}

/// Removes the empty groups that warden processes no longer running left in `base` (their
/// processes took longer to go than the process waited).
fn sweep(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("warden-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let gone = pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists();
        let empty = fs::read_to_string(entry.path().join("cgroup.procs"))
            .is_ok_and(|procs| procs.trim().is_empty());
        if gone && empty {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

/// The directory of this process's group in a v1 controller's hierarchy.
fn v1_base(controller: &str) -> Option<PathBuf> {
    let mount = Path::new(ROOT).join(controller);
    if !mount.join("cgroup.procs").exists() {
        return None;
    }
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
        names
            .split(',')
            .any(|n| n == controller)
            .then(|| path.to_owned())
    })?;
    Some(mount.join(path.trim_start_matches('/')))
}

/// A name for this process's next group: its id, the time, and a count.
fn group_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("warden-{}-{nanos:08x}-{}", std::process::id(), unique())
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
