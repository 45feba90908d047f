//! The helper: a fresh, single-threaded warden process that builds the sandbox and runs the
//! command in it. It enters new user, mount, PID, IPC, UTS (and network) namespaces, forks the
//! command as PID 1 of the new PID namespace, and waits for it — killing the whole namespace at
//! the timeout. It reads its plan from file descriptor 4 and writes its status to descriptor 3,
//! as one JSON line.

use std::fs;
use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::plan::INSIDE_ID;
use crate::plan::{Mount, Plan};
use crate::{seccomp, sys};

/// The layers every sandboxed command runs under.
pub const LAYERS: &[&str] = &[
    "user-namespace",
    "mount-namespace",
    "pid-namespace",
    "ipc-namespace",
    "uts-namespace",
    "capabilities-dropped",
    "no-new-privs",
    "seccomp",
    "clean-environment",
    "closed-descriptors",
];

/// What the helper reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Status {
    pub exit_code: i32,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub layers: Vec<String>,
    /// Why the sandbox could not be built; nothing ran.
    pub error: Option<String>,
    /// The warm sandbox it was to run in no longer matches the host (see
    /// [`crate::mounts::unchanged`]); nothing ran, and a new sandbox may run it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// What became of each file to collect, in the plan's order.
    #[serde(default)]
    pub collected: Vec<Collected>,
    #[serde(default)]
    pub usage: Usage,
}

/// One file copied out of a sized directory, or why not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Collected {
    pub source: PathBuf,
    pub bytes: u64,
    /// Why it was not copied: missing, a link, not a regular file.
    pub error: Option<String>,
}

/// What the command used.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// CPU time, user and system, of the processes waited for.
    pub cpu_ms: u64,
    /// The largest resident set of one of them, in KiB.
    pub max_rss_kb: u64,
    /// Bytes in each sized directory when the command ended, in the plan's order.
    pub sized_bytes: Vec<u64>,
    /// What the command's cgroups counted.
    #[serde(default, flatten)]
    pub counted: crate::cgroup::Usage,
}

/// The helper's whole life. Never returns.
pub fn main() -> ! {
    if std::env::args_os().nth(2).is_some_and(|a| a == "warm") {
        crate::warm::zygote::main();
    }
    // Take the status pipe first, before namespaces change what paths mean.
    let out = status_pipe();
    let mut plan_json = String::new();
    if sys::is_open(4) {
        let _ = fs::File::from(sys::owned_fd(4)).read_to_string(&mut plan_json);
    }
    let status = match serde_json::from_str::<Plan>(&plan_json) {
        Ok(plan) => run(&plan),
        Err(err) => Status {
            exit_code: 126,
            error: Some(format!("the sandbox plan is malformed: {err}")),
            ..Status::default()
        },
    };
    let code = if status.error.is_some() {
        126
    } else {
        status.exit_code
    };
    if let Some(mut out) = out
        && let Ok(line) = serde_json::to_string(&status)
    {
        let _ = writeln!(out, "{line}");
    }
    sys::exit(code)
}

fn status_pipe() -> Option<fs::File> {
    // The parent leaves the status pipe's write end at fd 3.
    sys::is_open(3).then(|| fs::File::from(sys::owned_fd(3)))
}

fn run(plan: &Plan) -> Status {
    let failed = |layer: &str, err: std::io::Error| Status {
        exit_code: 126,
        error: Some(format!("{layer}: {err}")),
        ..Status::default()
    };
    // The mount namespace is the child's alone (it unshares it itself), so that its pivot_root
    // leaves this process where it was.
    let trees = match enter(plan, libc::CLONE_NEWPID | libc::CLONE_NEWIPC) {
        Ok(trees) => trees,
        Err(error) => {
            return Status {
                exit_code: 126,
                error: Some(error),
                ..Status::default()
            };
        }
    };
    if !plan.network
        && let Some(port) = plan.proxy_port
        && let Err(err) = bridge(port)
    {
        return failed("the network bridge to the egress proxy", err);
    }
    if !plan.sized.is_empty()
        && let Err(err) = sized(&plan.sized, plan.run_as.is_some())
    {
        return failed("the sized scratch space", err);
    }
    let filters = match seccomp::filters() {
        Ok(f) => f,
        Err(err) => return failed("seccomp filter", err),
    };
    let status = command(plan, |error_fd| {
        child_main(plan, &filters, error_fd, &trees)
    });
    drop(trees);
    status
}

/// Enters the sandbox's user namespace (with the command's id mapped), its UTS namespace, its
/// network namespace unless the plan has the network, and those in `flags`. Returns the
/// idmapped trees of the writable binds when warden runs as root (see [`enter_as_root`]).
pub(crate) fn enter(plan: &Plan, flags: libc::c_int) -> Result<Vec<Option<OwnedFd>>, String> {
    let failed = |layer: &str, err: std::io::Error| format!("{layer}: {err}");
    sys::set_parent_death_signal().map_err(|err| failed("parent-death signal", err))?;
    let (uid, gid) = sys::ids();
    let mut flags = flags | libc::CLONE_NEWUTS;
    if !plan.network {
        flags |= libc::CLONE_NEWNET;
    }
    let trees = if let Some(id) = plan.run_as {
        enter_as_root(plan, uid, gid, id)?
    } else {
        // Its own user namespace, the user's id mapped as the command's.
        flags |= libc::CLONE_NEWUSER;
        Vec::new()
    };
    sys::unshare(flags).map_err(|err| {
        failed(
            "user, mount, PID and network namespaces (unshare failed; user namespaces may be \
             disabled: check /proc/sys/user/max_user_namespaces and \
             kernel.unprivileged_userns_clone)",
            err,
        )
    })?;
    if plan.run_as.is_none() {
        let maps = [
            ("/proc/self/setgroups", "deny".to_owned()),
            ("/proc/self/uid_map", format!("{INSIDE_ID} {uid} 1")),
            ("/proc/self/gid_map", format!("{INSIDE_ID} {gid} 1")),
        ];
        for (file, content) in maps {
            fs::write(file, content)
                .map_err(|err| failed(&format!("user namespace id map ({file})"), err))?;
        }
    }
    Ok(trees)
}

/// Forks the command's process, has it run `body` (which becomes the command, or returns why it
/// could not) with the write end of the error pipe, waits for it and reports.
pub(crate) fn command(plan: &Plan, body: impl FnOnce(i32) -> String) -> Status {
    let failed = |layer: &str, err: std::io::Error| Status {
        exit_code: 126,
        error: Some(format!("{layer}: {err}")),
        ..Status::default()
    };
    let (error_read, error_write) = match sys::pipe() {
        Ok(p) => p,
        Err(err) => return failed("error pipe", err),
    };
    let child = match fork_command(plan) {
        Ok(pid) => pid,
        Err(err) => return failed("fork", err),
    };
    if child == 0 {
        drop(error_read);
        let err = body(error_write.as_raw_fd());
        let mut pipe = fs::File::from(error_write);
        let _ = pipe.write_all(err.as_bytes());
        sys::exit(126);
    }
    drop(error_write);
    let mut status = wait(plan, child, error_read);
    if status.error.is_none() {
        // Every process of the sandbox is gone with its PID 1: nothing can change these now.
        status.collected = plan
            .collect
            .iter()
            .map(|(source, destination)| collect(&plan.sized, source, destination))
            .collect();
        let (cpu_ms, max_rss_kb) = sys::children_usage();
        status.usage = Usage {
            cpu_ms,
            max_rss_kb,
            sized_bytes: plan.sized.iter().map(|(dir, _)| tree_bytes(dir)).collect(),
            counted: crate::cgroup::Usage::default(),
        };
    }
    status
}

/// Forks what becomes the command: into its cgroup, where the parent made one in the unified
/// hierarchy (its directory open at descriptor 6).
fn fork_command(plan: &Plan) -> std::io::Result<libc::pid_t> {
    if !plan.into_cgroup {
        return sys::fork();
    }
    if !sys::is_open(6) {
        return Err(std::io::Error::other(
            "the command's cgroup: no descriptor of it",
        ));
    }
    sys::fork_into_cgroup(6)
}

/// Root's way in. First, in the initial user namespace (the only one that may make them), a
/// tree of each writable bind whose files of the user's id look owned by `id`, and are stored as
/// the user's when `id` makes them; then a user namespace where this process stays root (inside
/// 0 is the user) and the command's id ([`INSIDE_ID`]) is `id` on the host. Returns the trees
/// by the plan's mount index. Refuses to go on, naming the root, where a tree cannot be made.
fn enter_as_root(plan: &Plan, uid: u32, gid: u32, id: u32) -> Result<Vec<Option<OwnedFd>>, String> {
    let shown = sys::user_namespace(&format!("{uid} {id} 1"), &format!("{gid} {id} 1"), false)
        .map_err(|e| {
            format!(
                "the user namespace of the idmapped mounts: {e} (user namespaces may be disabled: \
                 check /proc/sys/user/max_user_namespaces)"
            )
        })?;
    let mut trees = Vec::with_capacity(plan.mounts.len());
    for mount in &plan.mounts {
        let tree = match mount {
            Mount::Bind {
                source,
                target,
                writable,
            } if (*writable
                || plan.shown_as_owner.contains(target)
                || within_root(plan, source, target))
                && !plan.sized.iter().any(|(dir, _)| source.starts_with(dir))
                && !plan.shows_lower(source, target) =>
            {
                Some(
                    tree_of(plan, source, target, &shown)
                        .map_err(|e| refused_root(source, id, &e))?,
                )
            }
            _ => None,
        };
        trees.push(tree);
    }
    let own = sys::user_namespace(
        &format!("0 {uid} 1\n{INSIDE_ID} {id} 1"),
        &format!("0 {gid} 1\n{INSIDE_ID} {id} 1"),
        true,
    )
    .map_err(|e| format!("the user namespace of the unprivileged id {id}: {e}"))?;
    sys::enter_user_namespace(&own)
        .map_err(|e| format!("entering the user namespace of the unprivileged id {id}: {e}"))?;
    Ok(trees)
}

/// Whether the bind of `source` at `target` shows part of a writable root's own tree (a file
/// kept read-only there): shown as the root is, so that its owner is the same (git checks who
/// owns a worktree's `.git` file).
fn within_root(plan: &Plan, source: &Path, target: &Path) -> bool {
    plan.writable_root_above(target)
        .is_some_and(|(_, root)| source.starts_with(root))
}

/// The idmapped tree of the bind of `source` at `target`. Below a writable root, the source is
/// reached from the root without a link (the command may have put one there since the plan).
fn tree_of(plan: &Plan, source: &Path, target: &Path, shown: &OwnedFd) -> std::io::Result<OwnedFd> {
    let at = match plan.writable_root_above(target) {
        Some((_, root)) if source.starts_with(root) => {
            let top = sys::open_path(root)?;
            sys::open_beneath(
                &top,
                source.strip_prefix(root).unwrap_or(source),
                sys::Make::Nothing,
            )?
        }
        _ => sys::open_path(source)?,
    };
    let tree = sys::clone_tree(&at)?;
    sys::idmap(&tree, shown)?;
    Ok(tree)
}

fn refused_root(root: &Path, id: u32, err: &std::io::Error) -> String {
    format!(
        "{}: this writable root cannot be given to the unprivileged user {id} that commands run \
         as when warden runs as root: the kernel refuses an idmapped mount of it ({err}; \
         idmapped mounts need Linux 5.12 or newer, tmpfs 6.3, and a file system that supports \
         them). Nothing ran. To run commands as root on the host instead, knowingly, set \
         [sandbox] root_identity = \"host\" in your user settings",
        root.display()
    )
}

/// Covers each directory with a tmpfs of its size, in a mount namespace of this process's own
/// (the command's is made from it): the host's view never changes, and what is written there
/// goes when this process does.
fn sized(dirs: &[(PathBuf, u64)], for_inside: bool) -> std::io::Result<()> {
    // As root, this process is root inside too: the command's own id must own the space.
    let owner = if for_inside {
        format!(",uid={INSIDE_ID},gid={INSIDE_ID}")
    } else {
        String::new()
    };
    sys::unshare(libc::CLONE_NEWNS)?;
    sys::make_mounts_private()?;
    for (dir, mb) in dirs {
        sys::mount(
            Some(Path::new("tmpfs")),
            dir,
            Some("tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(&format!("mode=0755,size={}m{owner}", (*mb).max(1))),
        )
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    }
    Ok(())
}

/// Copies `source`, a regular file under one of the sized directories reached without
/// following a link, to `destination`.
fn collect(sized: &[(PathBuf, u64)], source: &Path, destination: &Path) -> Collected {
    let mut out = Collected {
        source: source.to_path_buf(),
        ..Collected::default()
    };
    let Some((root, _)) = sized.iter().find(|(dir, _)| source.starts_with(dir)) else {
        out.error = Some("not under a scratch directory".to_owned());
        return out;
    };
    let mut at = root.clone();
    let rest = source.strip_prefix(root).unwrap_or(source);
    for part in rest.components() {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                out.error = Some("not there".to_owned());
                return out;
            }
            Err(e) => {
                out.error = Some(e.to_string());
                return out;
            }
            Ok(m) if m.file_type().is_symlink() => {
                out.error = Some(format!(
                    "{} is a symbolic link: links are not followed",
                    at.display()
                ));
                return out;
            }
            Ok(m) if at.as_path() == source && !m.is_file() => {
                out.error = Some("not a regular file".to_owned());
                return out;
            }
            Ok(_) => {}
        }
    }
    match fs::copy(source, destination) {
        Ok(bytes) => out.bytes = bytes,
        Err(e) => out.error = Some(format!("copying to {}: {e}", destination.display())),
    }
    out
}

/// The bytes of the regular files under `dir`, links not followed.
fn tree_bytes(dir: &Path) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(t) if t.is_file() => {
                    total += entry.metadata().map_or(0, |m| m.len());
                }
                _ => {}
            }
        }
    }
    total
}

/// The only way out of an allowlist sandbox: a socket listening on `port` of the namespace's
/// own loopback, handed to the parent over descriptor 5. The parent's proxy accepts on it; the
/// connections it accepts belong to this namespace, the ones it makes to the host's.
fn bridge(port: u16) -> std::io::Result<()> {
    sys::loopback_up()?;
    if !sys::is_open(5) {
        return Err(std::io::Error::other(
            "no socket to hand the listener over on",
        ));
    }
    let socket = sys::owned_fd(5);
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port))?;
    sys::listen(listener.as_raw_fd(), 4096)?;
    sys::send_fd(socket.as_raw_fd(), listener.as_raw_fd())
}

fn wait(plan: &Plan, child: libc::pid_t, error_read: OwnedFd) -> Status {
    let mut status = Status {
        layers: layers(plan),
        ..Status::default()
    };
    // PID 1 of the namespace: killing it at the timeout kills every process in it.
    let timed_out = sys::wait_or_kill(child, plan.limits.timeout_ms);
    let raw = sys::waitpid(child).unwrap_or(0);
    let mut message = String::new();
    let _ = fs::File::from(error_read).read_to_string(&mut message);
    if !message.is_empty() {
        status.exit_code = 126;
        status.error = Some(message);
        status.layers.clear();
        return status;
    }
    status.timed_out = timed_out;
    if libc::WIFEXITED(raw) {
        status.exit_code = libc::WEXITSTATUS(raw);
    } else if libc::WIFSIGNALED(raw) {
        let signal = libc::WTERMSIG(raw);
        status.signal = Some(signal);
        status.exit_code = 128 + signal;
    }
    if timed_out {
        status.exit_code = 124;
    }
    status
}

fn layers(plan: &Plan) -> Vec<String> {
    let mut layers: Vec<String> = LAYERS.iter().map(|s| (*s).to_owned()).collect();
    if !plan.network {
        layers.push("network-namespace".to_owned());
    }
    if !plan.network && plan.proxy_port.is_some() {
        layers.push("egress-proxy".to_owned());
    }
    if plan.run_as.is_some() {
        layers.push("unprivileged-identity".to_owned());
    }
    if !plan.git_overlays.is_empty() {
        layers.push("git-history".to_owned());
    }
    if !plan.overlays.is_empty() {
        layers.push("overlay-workspace".to_owned());
    }
    if let Some(abi) = crate::landlock::kernel_abi() {
        layers.push(format!("landlock-abi-{abi}"));
    }
    let limits = &plan.limits;
    for (name, set) in [
        ("timeout", limits.timeout_ms.is_some()),
        ("memory-limit", limits.memory_mb.is_some()),
        ("process-limit", limits.pids.is_some()),
        ("cpu-time-limit", limits.cpu_seconds.is_some()),
        ("file-size-limit", limits.disk_mb.is_some()),
    ] {
        if set {
            layers.push(name.to_owned());
        }
    }
    layers
}

/// PID 1 of the sandbox: builds the file system, seals itself, and becomes the command.
/// Returns only the reason it could not.
fn child_main(
    plan: &Plan,
    filters: &[seccompiler::BpfProgram],
    error_fd: i32,
    trees: &[Option<OwnedFd>],
) -> String {
    let step = |what: &str, result: std::io::Result<()>| result.map_err(|e| format!("{what}: {e}"));
    let result = (|| -> Result<String, String> {
        step("parent-death signal", sys::set_parent_death_signal())?;
        step("mount namespace", sys::unshare(libc::CLONE_NEWNS))?;
        crate::mounts::build(plan, trees, crate::mounts::Part::Whole)?;
        step("hostname", sys::sethostname("warden"))?;
        if !plan.network {
            step("loopback in the network namespace", sys::loopback_up())?;
        }
        crate::last_steps::become_command(plan, filters, error_fd)
    })();
    match result {
        Ok(never) | Err(never) => never,
    }
}
