//! Control groups: the limits that bind a whole sandbox, every process in it together, where
//! rlimits bind one process (memory) or one user (processes) and cannot hold a CPU quota.
//!
//! The order a limit is bound in, the first that can hold it:
//! 1. the unified hierarchy (cgroup v2), in a group of its own under a base warden may write
//!    (see [`v2::base`]); the command is started inside it (`CLONE_INTO_CGROUP`);
//! 2. a version 1 hierarchy of the controller (v1 and hybrid hosts);
//! 3. with `[sandbox.limits] fallback = "rlimits"` only, a per-process rlimit (memory, per
//!    user for processes; a CPU quota has none and goes unenforced), said on every command and
//!    in the receipt. Without it, a limit no group can hold means nothing runs.
//!
//! Groups are created by the parent before the helper starts and removed when the command is
//! over, whatever is still in them killed first. Groups left by a warden that was killed are
//! removed by the next command that uses the same base (or by `warden manifest reap`).

mod scope;
mod v1;
mod v2;

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::plan::Limits;

pub(crate) use v1::available as v1_available;
pub(crate) use v2::describe as describe_v2;

const ROOT: &str = "/sys/fs/cgroup";

/// One limit a group is to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setting {
    Pids(u64),
    MemoryBytes(u64),
    /// Microseconds of CPU time per 100 ms period.
    CpuQuota(u64),
}

impl Setting {
    fn controller(self) -> &'static str {
        match self {
            Self::Pids(_) => "pids",
            Self::MemoryBytes(_) => "memory",
            Self::CpuQuota(_) => "cpu",
        }
    }
}

/// The length of a CPU quota's period, in microseconds.
const CPU_PERIOD_US: u64 = 100_000;

/// What bound a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// A group of the unified hierarchy: the whole sandbox together.
    CgroupV2,
    /// A group of a version 1 hierarchy: the whole sandbox together.
    CgroupV1,
    /// A resource limit of each process (per user, for the process count).
    Rlimit,
    /// Nothing could hold it (a CPU quota without a cgroup, with the fallback chosen).
    Unenforced,
}

impl Mechanism {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CgroupV2 => "cgroup-v2",
            Self::CgroupV1 => "cgroup-v1",
            Self::Rlimit => "rlimit",
            Self::Unenforced => "unenforced",
        }
    }
}

/// How one of a command's resource limits was bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bound {
    /// `memory`, `processes`, `cpu`, `cpu-time` or `file-size`.
    pub limit: String,
    /// The limit as set: `128 MiB`, `32`, `0.5 CPUs`, `60 s`.
    pub value: String,
    pub by: Mechanism,
}

/// What a command's groups counted, read when it was over.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// The most memory the sandbox used at once, all its processes together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_peak_kb: Option<u64>,
    /// Processes the kernel killed for going over the memory limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oom_kills: Option<u64>,
    /// Scheduling periods in which the CPU quota held the sandbox back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_periods: Option<u64>,
    /// Forks refused for going over the process limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forks_refused: Option<u64>,
}

/// The groups of one command, and how each of its limits was bound.
#[derive(Debug, Default)]
pub(crate) struct Cgroup {
    /// Its group in the unified hierarchy, and a descriptor of its directory.
    v2: Option<(PathBuf, OwnedFd)>,
    /// Its groups in version 1 hierarchies.
    v1: Vec<PathBuf>,
    /// The controllers holding a limit: `pids`, `memory`, `cpu`.
    pub(crate) holds: Vec<&'static str>,
    pub(crate) bound: Vec<Bound>,
    /// What to say on the command: limits that bind less than the whole sandbox.
    pub(crate) warning: Option<String>,
}

impl Cgroup {
    /// Binds `limits`. A limit no group can hold is an error naming what is missing, unless
    /// the limits allow the per-process fallback.
    pub(crate) fn create(limits: &Limits) -> Result<Self, String> {
        let mut left = wanted(limits);
        let mut group = Self::default();
        let mut missing: Vec<(&'static str, String)> = Vec::new();
        // The unified hierarchy first: on a host with it at /sys/fs/cgroup there is no other.
        if v2::unified() && !left.is_empty() {
            let controllers = dedup(left.iter().map(|s| s.controller()));
            match v2::base(&controllers) {
                Ok(base) => {
                    let (held, lacking): (Vec<Setting>, Vec<Setting>) = left
                        .drain(..)
                        .partition(|s| base.controllers.contains(&s.controller()));
                    for setting in lacking {
                        missing.push((
                            setting.controller(),
                            format!(
                                "the {} controller is not enabled for {}",
                                setting.controller(),
                                base.dir.display()
                            ),
                        ));
                    }
                    if !held.is_empty() {
                        group.v2 = Some(v2::create(&base.dir, &held)?);
                        group
                            .holds
                            .extend(dedup(held.iter().map(|s| s.controller())));
                    }
                }
                Err(why) => {
                    missing.extend(left.drain(..).map(|s| (s.controller(), why.clone())));
                }
            }
        }
        let (able, unable): (Vec<Setting>, Vec<Setting>) = left
            .into_iter()
            .partition(|s| v1::available(s.controller()));
        for setting in unable {
            missing.push((
                setting.controller(),
                format!(
                    "no cgroup hierarchy with the {} controller is mounted at {ROOT}",
                    setting.controller()
                ),
            ));
        }
        if !able.is_empty() {
            match v1::create(&able, &mut group.v1) {
                Ok(()) => group
                    .holds
                    .extend(dedup(able.iter().map(|s| s.controller()))),
                Err(e) => {
                    // None of them holds: a group whose limit could not be written is no bound.
                    for dir in group.v1.drain(..) {
                        remove(&dir);
                    }
                    missing.extend(able.iter().map(|s| (s.controller(), e.to_string())));
                }
            }
        }
        group.bind(limits, &missing)?;
        if group.holds.contains(&"memory") && swap_uncounted(&group) {
            group.note(
                "memory: this host has swap the cgroup does not count (no memory.swap.max or \
                 memsw): the sandbox may use swap beyond the memory limit",
            );
        }
        Ok(group)
    }

    /// Says how each limit is bound; with a limit unbound, refuses or (with the fallback)
    /// warns.
    fn bind(&mut self, limits: &Limits, missing: &[(&'static str, String)]) -> Result<(), String> {
        let in_v1 = |controller: &str| {
            self.v1
                .iter()
                .any(|d| d.starts_with(Path::new(ROOT).join(controller)))
        };
        let by_group = |controller: &str| {
            if in_v1(controller) {
                Some(Mechanism::CgroupV1)
            } else if self.v2.is_some() && self.holds.contains(&controller) {
                Some(Mechanism::CgroupV2)
            } else {
                None
            }
        };
        let mut bound = Vec::new();
        for (controller, value, fallback) in [
            (
                "memory",
                limits.memory_mb.map(|m| format!("{m} MiB")),
                Mechanism::Rlimit,
            ),
            (
                "pids",
                limits.pids.map(|p| p.to_string()),
                Mechanism::Rlimit,
            ),
            (
                "cpu",
                limits.cpus.map(|c| format!("{c} CPUs")),
                Mechanism::Unenforced,
            ),
        ] {
            if let Some(value) = value {
                let by = by_group(controller).unwrap_or(fallback);
                bound.push(Bound {
                    limit: names(controller).0.to_owned(),
                    value,
                    by,
                });
            }
        }
        if let Some(seconds) = limits.cpu_seconds {
            bound.push(Bound {
                limit: "cpu-time".to_owned(),
                value: format!("{seconds} s"),
                by: Mechanism::Rlimit,
            });
        }
        if let Some(mb) = limits.disk_mb {
            bound.push(Bound {
                limit: "file-size".to_owned(),
                value: format!("{mb} MiB"),
                by: Mechanism::Rlimit,
            });
        }
        self.bound = bound;
        if missing.is_empty() {
            return Ok(());
        }
        let reasons = missing
            .iter()
            .map(|(controller, why)| format!("{controller}: {why}"))
            .collect::<Vec<_>>()
            .join("; ");
        let names = missing
            .iter()
            .map(|(controller, _)| names(controller).1)
            .collect::<Vec<_>>()
            .join(", ");
        if limits.fallback == crate::plan::Fallback::None {
            return Err(format!(
                "the {names} limit cannot be bound to the whole sandbox ({reasons}); nothing ran. \
                 Run warden where it may make cgroups (a cgroup v2 subtree delegated to it), or \
                 set [sandbox.limits] fallback = \"rlimits\" to accept per-process limits"
            ));
        }
        self.warning = Some(format!(
            "limits: the {names} limit binds each process, not the sandbox \
             ([sandbox.limits] fallback = \"rlimits\"; {reasons})"
        ));
        Ok(())
    }

    /// The `cgroup.procs` files to join, between fork and exec, of the process that is to be
    /// in the groups: the version 1 groups, and the unified one unless the helper starts the
    /// command in it itself (`into_by_clone`).
    pub(crate) fn join_files(&self, into_by_clone: bool) -> Vec<std::ffi::CString> {
        let v2 = self
            .v2
            .iter()
            .filter(|_| !into_by_clone)
            .map(|(dir, _)| dir);
        self.v1
            .iter()
            .chain(v2)
            .filter_map(|d| {
                std::ffi::CString::new(d.join("cgroup.procs").into_os_string().into_encoded_bytes())
                    .ok()
            })
            .collect()
    }

    /// The descriptor of the unified group's directory, for `CLONE_INTO_CGROUP`.
    pub(crate) fn v2_dir(&self) -> Option<&OwnedFd> {
        self.v2.as_ref().map(|(_, fd)| fd)
    }

    /// Kills whatever is still in the groups, reads what they counted and removes them.
    pub(crate) fn finish(&mut self) -> Usage {
        let mut usage = Usage::default();
        self.check_still_held();
        if let Some((dir, _)) = &self.v2 {
            v2::kill(dir);
            usage = v2::usage(dir);
        }
        if !self.v1.is_empty() {
            v1::kill(&self.v1);
            let counted = v1::usage(&self.v1);
            usage.memory_peak_kb = usage.memory_peak_kb.or(counted.memory_peak_kb);
            usage.oom_kills = usage.oom_kills.or(counted.oom_kills);
            usage.throttled_periods = usage.throttled_periods.or(counted.throttled_periods);
            usage.forks_refused = usage.forks_refused.or(counted.forks_refused);
        }
        self.remove();
        usage
    }

    /// Adds `text` to what the command is told.
    fn note(&mut self, text: &str) {
        self.warning = Some(match self.warning.take() {
            Some(before) => format!("{before}; {text}"),
            None => text.to_owned(),
        });
    }

    /// A unified group's controllers can be switched off from above while the command runs
    /// (by whoever manages the base): a limit lifted so did not bind, and is said so.
    fn check_still_held(&mut self) {
        let Some((dir, _)) = &self.v2 else {
            return;
        };
        let still = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
        let lifted: Vec<&'static str> = self
            .holds
            .iter()
            .copied()
            .filter(|c| {
                !self
                    .v1
                    .iter()
                    .any(|d| d.starts_with(Path::new(ROOT).join(c)))
            })
            .filter(|c| !still.split_whitespace().any(|s| s == *c))
            .collect();
        for controller in lifted {
            let (limit, _) = names(controller);
            for bound in self.bound.iter_mut().filter(|b| b.limit == limit) {
                bound.by = Mechanism::Unenforced;
            }
            self.note(&format!(
                "the {controller} controller was switched off for the command's cgroup while it \
                 ran: its limit did not bind"
            ));
        }
    }

    /// Ends the groups: what they counted, how each limit was bound, what to say.
    pub(crate) fn report(mut self) -> (Usage, Vec<Bound>, Vec<String>) {
        let usage = self.finish();
        let bound = std::mem::take(&mut self.bound);
        (usage, bound, self.warning.take().into_iter().collect())
    }

    fn remove(&mut self) {
        let dirs: Vec<PathBuf> = self
            .v2
            .take()
            .map(|(d, _)| d)
            .into_iter()
            .chain(self.v1.drain(..))
            .collect();
        for dir in dirs {
            remove(&dir);
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if let Some((dir, _)) = &self.v2 {
            v2::kill(dir);
        }
        v1::kill(&self.v1);
        self.remove();
    }
}

/// Whether this host swaps and the memory group has no swap limit.
fn swap_uncounted(group: &Cgroup) -> bool {
    let swapping = fs::read_to_string("/proc/swaps").is_ok_and(|s| s.lines().count() > 1);
    let counted = group.v2.as_ref().map_or_else(
        || {
            group
                .v1
                .iter()
                .any(|d| d.join("memory.memsw.limit_in_bytes").exists())
        },
        |(dir, _)| dir.join("memory.swap.max").exists(),
    );
    swapping && !counted
}

/// The limit `controller` holds: its name in [`Bound`], and in what the user is told.
fn names(controller: &str) -> (&'static str, &'static str) {
    match controller {
        "memory" => ("memory", "memory"),
        "pids" => ("processes", "process"),
        _ => ("cpu", "CPU"),
    }
}

/// The settings `limits` need from groups.
fn wanted(limits: &Limits) -> Vec<Setting> {
    let mut settings = Vec::new();
    if let Some(pids) = limits.pids {
        settings.push(Setting::Pids(pids));
    }
    if let Some(mb) = limits.memory_mb {
        settings.push(Setting::MemoryBytes(mb.saturating_mul(1024 * 1024)));
    }
    if let Some(cpus) = limits.cpus {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let quota = (cpus * 100_000.0).round().max(1000.0) as u64;
        settings.push(Setting::CpuQuota(quota));
    }
    settings
}

fn dedup(items: impl Iterator<Item = &'static str>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// Removes a group whose processes are gone; the kernel may take a moment to let go of it
/// (what is still left is swept by a later command).
fn remove(dir: &Path) {
    for attempt in 0..40u64 {
        if fs::remove_dir(dir).is_ok() || !dir.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2 + attempt / 2));
    }
}

/// Kills every process `dir`'s `cgroup.procs` lists, until it lists none (for a while).
fn kill_listed(dir: &Path) {
    for _ in 0..50 {
        let Ok(procs) = fs::read_to_string(dir.join("cgroup.procs")) else {
            return;
        };
        // 0 stands for a process outside this process's PID namespace: never a kill of 0.
        let pids: Vec<libc::pid_t> = procs
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .filter(|pid| *pid > 0)
            .collect();
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            crate::sys::kill(pid, libc::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Removes the groups that warden processes no longer running left in `base`: whatever is
/// still in them is killed first. Only groups named as warden names them are touched.
pub(crate) fn sweep(base: &Path) -> usize {
    let Ok(entries) = fs::read_dir(base) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix("warden-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let dir = entry.path();
        if dir.join("cgroup.kill").exists() {
            v2::kill(&dir);
        } else {
            kill_listed(&dir);
        }
        if fs::remove_dir(&dir).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The number after `name` on its line of a flat-keyed cgroup file (`name value`).
fn field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok()).flatten()
    })
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

/// Removes what killed wardens left in the bases this host's warden uses. For
/// `warden manifest reap`; returns how many groups went.
pub fn reap() -> usize {
    let mut removed = 0;
    if v2::unified() {
        removed += v2::bases_in_use().iter().map(|b| sweep(b)).sum::<usize>();
    }
    for controller in ["pids", "memory", "cpu"] {
        if let Some(base) = v1::base(controller) {
            removed += sweep(&base);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process id no process has now (the highest ids are rarely given out).
    fn gone_pid() -> u32 {
        (4_000_000..4_194_304)
            .rev()
            .find(|pid| !Path::new(&format!("/proc/{pid}")).exists())
            .unwrap()
    }

    #[test]
    fn a_sweep_takes_only_the_groups_of_wardens_that_are_gone() {
        let base = tempfile::tempdir().unwrap();
        let gone = gone_pid();
        let names = [
            format!("warden-{gone}-0a1b-0"),
            format!("warden-{gone}-self"),
            format!("warden-{}-0a1b-1", std::process::id()),
            "warden-1-0a1b-0".to_owned(),
            "system.slice".to_owned(),
            "warden-notapid".to_owned(),
        ];
        for name in &names {
            fs::create_dir(base.path().join(name)).unwrap();
        }
        assert_eq!(sweep(base.path()), 2);
        let mut left: Vec<String> = fs::read_dir(base.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        // Its own, a live process's (pid 1), and what warden never names so.
        assert_eq!(
            left,
            [
                "system.slice".to_owned(),
                "warden-1-0a1b-0".to_owned(),
                format!("warden-{}-0a1b-1", std::process::id()),
                "warden-notapid".to_owned(),
            ]
        );
    }
}
