//! The unified hierarchy (cgroup v2). Each command gets a group of its own in a base: a group
//! warden may write whose `cgroup.subtree_control` gives its children the controllers the
//! limits need. The base is, in this order, the first that works:
//!
//! 1. warden's own group when it is the hierarchy's root (the root may hold processes and have
//!    children with controllers);
//! 2. warden's own group when warden is the only process in it (a systemd service or scope
//!    with `Delegate=yes`, a container's cgroup): warden first moves itself into a leaf of it
//!    (`warden-<pid>-self`), since a group with processes cannot give its children controllers;
//! 3. the parent of warden's own group, when it already gives its children the controllers and
//!    warden may write it: a subtree delegated to the user (systemd's `user@UID.service`). As
//!    root on a systemd host, only a parent systemd delegated (`trusted.delegate`), never
//!    systemd's own slices.
//!
//! The command is started inside its group by the helper (`CLONE_INTO_CGROUP`), so nothing it
//! forks is ever outside; the helper itself stays out, so that a group-wide OOM kill
//! (`memory.oom.group`) leaves it to report. When the command is over, `cgroup.kill` ends
//! whatever is left and the group is removed.

use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::{CPU_PERIOD_US, ROOT, Setting, Usage, field, group_name, sweep};
use crate::sys;

const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// Whether `/sys/fs/cgroup` is the unified hierarchy.
pub(crate) fn unified() -> bool {
    sys::fs_magic(Path::new(ROOT)) == Some(CGROUP2_SUPER_MAGIC)
}

/// Where the commands' groups go.
#[derive(Debug, Clone)]
pub(super) struct Base {
    pub(super) dir: PathBuf,
    /// The controllers its children have.
    pub(super) controllers: Vec<&'static str>,
    /// Which of the ways in the module's list it is.
    pub(super) how: &'static str,
    /// warden's own (the hierarchy's root or its own group): it may enable controllers there.
    /// A delegated parent is another's to manage.
    owned: bool,
}

/// The base found, for the rest of this process's life (warden moves itself at most once).
static BASE: Mutex<Option<Base>> = Mutex::new(None);

/// The base for groups with `controllers`; an error says why there is none.
pub(super) fn base(controllers: &[&'static str]) -> Result<Base, String> {
    let mut found = BASE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(base) = found.as_mut() {
        // A controller not asked for the first time may be enabled now, where warden may; in
        // another's base, whatever it gives its children now.
        if base.owned {
            enable(&base.dir, controllers, &mut base.controllers);
        } else {
            base.controllers = given(&base.dir);
        }
        return Ok(base.clone());
    }
    let base = find(controllers)?;
    *found = Some(base.clone());
    Ok(base)
}

/// The bases in use by this process, for sweeping.
pub(super) fn bases_in_use() -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = BASE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|b| b.dir.clone())
        .collect();
    if bases.is_empty()
        && let Ok(base) = find(&[])
    {
        bases.push(base.dir);
    }
    bases
}

/// This process's group, as a directory.
fn own() -> Result<PathBuf, String> {
    let text =
        fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("/proc/self/cgroup names no group of the unified hierarchy")?;
    Ok(Path::new(ROOT).join(path.trim().trim_start_matches('/')))
}

fn find(controllers: &[&'static str]) -> Result<Base, String> {
    let mut tried = Vec::new();
    if let Some(base) = find_from(&own()?, controllers, false, &mut tried) {
        return Ok(base);
    }
    // 4. A scope systemd delegates, warden alone in it.
    if systemd_host() {
        match super::scope::enter_delegated_scope() {
            Ok(unit) => {
                let mut in_scope = Vec::new();
                if let Some(base) = find_from(&own()?, controllers, true, &mut in_scope) {
                    return Ok(Base {
                        how: "a transient scope systemd delegated (warden moved into a leaf of it)",
                        ..base
                    });
                }
                tried.push(format!("in {unit}: {}", in_scope.join("; ")));
            }
            Err(why) => tried.push(why),
        }
    }
    Err(format!(
        "no cgroup v2 subtree is delegated to warden: {}",
        tried.join("; ")
    ))
}

/// Steps 1 to 3 from warden's own group `own` (`in_scope`: the scope warden just asked systemd
/// to delegate); what failed is added to `tried`.
fn find_from(
    own: &Path,
    controllers: &[&'static str],
    in_scope: bool,
    tried: &mut Vec<String>,
) -> Option<Base> {
    let own = own.to_path_buf();
    // On a systemd host, a group systemd did not hand over is systemd's: it may switch off the
    // controllers of its children at any time (a daemon-reload, a unit's properties changed).
    let handed_over = |dir: &Path| in_scope || !systemd_host() || delegated(dir);
    // The hierarchy's root alone has no cgroup.type.
    let root = !own.join("cgroup.type").exists();
    if !handed_over(&own) {
        tried.push(format!(
            "{} is systemd's, not delegated to warden",
            own.display()
        ));
    } else if root {
        // 1. The hierarchy's root.
        if sys::writable(&own.join("cgroup.subtree_control")) {
            return Some(made(own, controllers, "the root of the cgroup hierarchy"));
        }
        tried.push(format!(
            "{} is the hierarchy's root, but not writable (a read-only /sys/fs/cgroup)",
            own.display()
        ));
    } else if sys::writable(&own.join("cgroup.procs")) && sys::writable(&own) {
        // 2. Warden's own group, with nothing else in it.
        let procs = fs::read_to_string(own.join("cgroup.procs")).unwrap_or_default();
        let me = std::process::id().to_string();
        if procs.lines().any(|p| p.trim() == me) && procs.lines().all(|p| p.trim() == me) {
            match into_leaf(&own) {
                Ok(()) => {
                    return Some(made(
                        own,
                        controllers,
                        "warden's own cgroup (warden moved into a leaf of it)",
                    ));
                }
                Err(e) => tried.push(format!(
                    "moving warden into a leaf of {}: {e}",
                    own.display()
                )),
            }
        } else {
            tried.push(format!(
                "{} has processes other than warden, so its children cannot have controllers",
                own.display()
            ));
        }
    } else {
        tried.push(format!("{} is not writable by warden", own.display()));
    }
    // 3. The parent, delegated.
    if let Some(parent) = own.parent().filter(|p| p.starts_with(ROOT)) {
        if !handed_over(parent) {
            tried.push(format!(
                "its parent {} is systemd's, not delegated (run warden in a unit or scope with \
                 Delegate=yes: systemd-run --scope -p Delegate=yes warden …)",
                parent.display()
            ));
            return None;
        }
        match parent_base(parent, controllers) {
            Ok(base) => return Some(base),
            Err(why) => tried.push(why),
        }
    }
    None
}

fn parent_base(parent: &Path, controllers: &[&'static str]) -> Result<Base, String> {
    if !(sys::writable(parent) && sys::writable(&parent.join("cgroup.procs"))) {
        return Err(format!(
            "its parent {} is not writable by warden",
            parent.display()
        ));
    }
    let have = given(parent);
    if controllers.iter().any(|c| !have.contains(c)) {
        return Err(format!(
            "its parent {} gives its children only {:?}",
            parent.display(),
            have
        ));
    }
    Ok(Base {
        dir: parent.to_path_buf(),
        controllers: have,
        how: "the delegated parent of warden's own cgroup",
        owned: false,
    })
}

fn made(dir: PathBuf, controllers: &[&'static str], how: &'static str) -> Base {
    let mut enabled = Vec::new();
    enable(&dir, controllers, &mut enabled);
    Base {
        dir,
        controllers: enabled,
        how,
        owned: true,
    }
}

/// Enables each of `controllers` the group has for its children, noting those that are.
fn enable(dir: &Path, controllers: &[&'static str], enabled: &mut Vec<&'static str>) {
    let subtree = dir.join("cgroup.subtree_control");
    let on = list(&subtree);
    for controller in controllers {
        if enabled.contains(controller) {
            continue;
        }
        if on.iter().any(|c| c == controller)
            || fs::write(&subtree, format!("+{controller}")).is_ok()
        {
            enabled.push(controller);
        }
    }
}

/// Moves this process into a new leaf of `dir`, its own group.
fn into_leaf(dir: &Path) -> io::Result<()> {
    let leaf = dir.join(format!("warden-{}-self", std::process::id()));
    match fs::create_dir(&leaf) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    fs::write(leaf.join("cgroup.procs"), std::process::id().to_string())
}

/// Whether systemd manages this host's cgroups.
fn systemd_host() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// Whether systemd delegated `dir` itself (a group below a delegated one is its owner's to
/// manage, and another user's when root is warden).
fn delegated(dir: &Path) -> bool {
    ["trusted.delegate", "user.delegate"]
        .iter()
        .any(|name| sys::xattr(dir, name).is_some_and(|v| v == b"1"))
}

/// The controllers limits need that `dir` gives its children.
fn given(dir: &Path) -> Vec<&'static str> {
    let enabled = list(&dir.join("cgroup.subtree_control"));
    ["memory", "pids", "cpu"]
        .into_iter()
        .filter(|c| enabled.iter().any(|e| e == c))
        .collect()
}

fn list(file: &Path) -> Vec<String> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Makes a group in `base` holding `settings`, and opens its directory.
pub(super) fn create(base: &Path, settings: &[Setting]) -> Result<(PathBuf, OwnedFd), String> {
    sweep(base);
    let mut dir = base.join(group_name());
    let mut tries = 0;
    loop {
        match fs::create_dir(&dir) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 8 => {
                tries += 1;
                dir = base.join(group_name());
            }
            Err(e) => return Err(format!("creating the cgroup {}: {e}", dir.display())),
            Ok(()) => break,
        }
    }
    let set = || -> Result<OwnedFd, String> {
        for setting in settings {
            for (file, value, needed) in files(*setting) {
                let path = dir.join(file);
                // Swap accounting may be off (no memory.swap.max): memory.max still holds.
                if !needed && !path.exists() {
                    continue;
                }
                fs::write(&path, value).map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        let opened = fs::File::open(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(OwnedFd::from(opened))
    };
    match set() {
        Ok(fd) => Ok((dir, fd)),
        Err(e) => {
            let _ = fs::remove_dir(&dir);
            Err(e)
        }
    }
}

/// The files of a v2 group that hold `setting`, and whether each must be there.
fn files(setting: Setting) -> Vec<(&'static str, String, bool)> {
    match setting {
        Setting::Pids(n) => vec![("pids.max", n.to_string(), true)],
        Setting::MemoryBytes(b) => vec![
            ("memory.max", b.to_string(), true),
            ("memory.swap.max", "0".to_owned(), false),
            // An OOM kill takes the whole sandbox, not one process of it.
            ("memory.oom.group", "1".to_owned(), false),
        ],
        Setting::CpuQuota(q) => vec![("cpu.max", format!("{q} {CPU_PERIOD_US}"), true)],
    }
}

/// Kills every process in the group and waits (briefly) until it is empty.
pub(super) fn kill(dir: &Path) {
    if fs::write(dir.join("cgroup.kill"), "1").is_err() {
        // Before Linux 5.14: one by one.
        super::kill_listed(dir);
        return;
    }
    for _ in 0..200 {
        let events = fs::read_to_string(dir.join("cgroup.events")).unwrap_or_default();
        if field(&events, "populated") != Some(1) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// What the group counted.
pub(super) fn usage(dir: &Path) -> Usage {
    let read = |file: &str| fs::read_to_string(dir.join(file)).ok();
    Usage {
        memory_peak_kb: read("memory.peak")
            .and_then(|t| t.trim().parse::<u64>().ok())
            .map(|b| b / 1024),
        oom_kills: read("memory.events").and_then(|t| field(&t, "oom_kill")),
        throttled_periods: read("cpu.stat").and_then(|t| field(&t, "nr_throttled")),
        forks_refused: read("pids.events").and_then(|t| field(&t, "max")),
    }
}

/// What `warden sandbox doctor` says of the unified hierarchy here: where groups would go and
/// with which controllers, or why none can be made.
pub(crate) fn describe() -> Option<Result<String, String>> {
    if !unified() {
        return None;
    }
    let wanted = ["memory", "pids", "cpu"];
    Some(base(&wanted).map(|b| {
        let missing: Vec<&str> = wanted
            .iter()
            .copied()
            .filter(|c| !b.controllers.contains(c))
            .collect();
        let mut text = format!(
            "cgroup v2: groups under {} ({}), controllers {}",
            b.dir.display(),
            b.how,
            b.controllers.join(" ")
        );
        if !missing.is_empty() {
            text.push_str("; missing: ");
            text.push_str(&missing.join(" "));
        }
        text
    }))
}
