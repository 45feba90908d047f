//! Version 1 controllers: one hierarchy per controller, each mounted at
//! `/sys/fs/cgroup/<controller>`. The helper joins the command's groups before it runs
//! anything (v1 has no `CLONE_INTO_CGROUP`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{CPU_PERIOD_US, ROOT, Setting, Usage, group_name, sweep};

/// Whether `controller` has a v1 hierarchy here.
pub(crate) fn available(controller: &str) -> bool {
    Path::new(ROOT)
        .join(controller)
        .join("cgroup.procs")
        .exists()
}

/// Makes a group in each controller's hierarchy of `settings`, named `name` (the same in all),
/// and sets its limits. Returns the directories made, also when a later one failed (the caller
/// removes them).
pub(super) fn create(settings: &[Setting], dirs: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut name = group_name();
    for setting in settings {
        let controller = setting.controller();
        let mount = Path::new(ROOT).join(controller);
        let existing = dirs.iter().find(|d| d.starts_with(&mount)).cloned();
        let dir = if let Some(dir) = existing {
            dir
        } else {
            let base = base(controller).ok_or_else(|| {
                io::Error::other(format!(
                    "no cgroup v1 {controller} hierarchy at {}",
                    mount.display()
                ))
            })?;
            sweep(&base);
            let mut dir = base.join(&name);
            let mut tries = 0;
            loop {
                match fs::create_dir(&dir) {
                    // A name taken (a group the kernel has not let go of yet): the first group
                    // may take another; the rest follow it.
                    Err(e)
                        if e.kind() == io::ErrorKind::AlreadyExists
                            && tries < 8
                            && dirs.is_empty() =>
                    {
                        tries += 1;
                        name = group_name();
                        dir = base.join(&name);
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
            dirs.push(dir.clone());
            dir
        };
        for (file, value) in files(*setting) {
            let path = dir.join(file);
            // Memory and swap together, where the kernel counts swap (memsw) at all.
            if file == "memory.memsw.limit_in_bytes" && !path.exists() {
                continue;
            }
            fs::write(&path, value)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        }
    }
    Ok(())
}

/// The files of a v1 group that hold `setting`, in the order they are written.
fn files(setting: Setting) -> Vec<(&'static str, String)> {
    match setting {
        Setting::Pids(n) => vec![("pids.max", n.to_string())],
        Setting::MemoryBytes(b) => vec![
            ("memory.limit_in_bytes", b.to_string()),
            ("memory.memsw.limit_in_bytes", b.to_string()),
        ],
        Setting::CpuQuota(q) => vec![
            ("cpu.cfs_period_us", CPU_PERIOD_US.to_string()),
            ("cpu.cfs_quota_us", q.to_string()),
        ],
    }
}

/// The directory of this process's group in a v1 controller's hierarchy.
pub(super) fn base(controller: &str) -> Option<PathBuf> {
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

/// What the groups counted: the memory high-water mark, OOM kills, throttled periods and
/// refused forks.
pub(super) fn usage(dirs: &[PathBuf]) -> Usage {
    let mut usage = Usage::default();
    for dir in dirs {
        let read = |file: &str| fs::read_to_string(dir.join(file)).unwrap_or_default();
        if dir.starts_with(Path::new(ROOT).join("memory")) {
            usage.memory_peak_kb = read("memory.max_usage_in_bytes")
                .trim()
                .parse::<u64>()
                .ok()
                .map(|b| b / 1024);
            usage.oom_kills = super::field(&read("memory.oom_control"), "oom_kill");
        } else if dir.starts_with(Path::new(ROOT).join("pids")) {
            usage.forks_refused = super::field(&read("pids.events"), "max");
        } else if dir.starts_with(Path::new(ROOT).join("cpu")) {
            usage.throttled_periods = super::field(&read("cpu.stat"), "nr_throttled");
        }
    }
    usage
}

/// Kills what is left in the groups (a process the PID namespace has not taken yet).
pub(super) fn kill(dirs: &[PathBuf]) {
    for dir in dirs {
        super::kill_listed(dir);
    }
}
