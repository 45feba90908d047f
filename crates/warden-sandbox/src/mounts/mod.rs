//! Building the sandbox's file system, inside the new mount namespace: a tmpfs becomes the root,
//! the host is reachable at `/oldroot` only while the plan's mounts are made, then it is gone.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::plan::{Mount, Overlay, Plan};
use crate::sys;

mod beneath;

const OLD: &str = "/oldroot";

pub(super) fn step(
    what: impl std::fmt::Display,
    result: std::io::Result<()>,
) -> Result<(), String> {
    result.map_err(|e| format!("{what}: {e}"))
}

/// Which part of the plan's file system a build makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// All of it, for one command; the host is detached at the end.
    Whole,
    /// What a warm sandbox keeps for all its commands: everything but the `.git` overlays and
    /// `/proc`. The host stays reachable at `/oldroot`. Each command completes its own copy
    /// ([`complete`]).
    Kept,
}

/// Makes the mount namespace's file system what the plan says, or the `part` of it. `trees`
/// holds, by mount index, the idmapped trees made for the writable binds when warden runs as
/// root.
pub(crate) fn build(plan: &Plan, trees: &[Option<OwnedFd>], part: Part) -> Result<(), String> {
    new_root()?;
    let with_overlays = part == Part::Whole;
    let positions = plan.overlay_positions();
    let at = |index: usize| {
        positions
            .iter()
            .enumerate()
            .filter(move |(_, p)| with_overlays && **p == index)
    };
    // Per overlay: whether it stands (else `.git` is read-only), and the mount itself.
    let mut overlays: Vec<(bool, OwnedFd)> = Vec::with_capacity(positions.len());
    // Per mount inside a writable root: the mount itself, for sealing it (not its name).
    let mut pinned: Vec<Option<OwnedFd>> = Vec::with_capacity(plan.mounts.len());
    for index in 0..=plan.mounts.len() {
        for (k, _) in at(index) {
            overlays.push(git_overlay(plan, k)?);
        }
        let Some(mount) = plan.mounts.get(index) else {
            continue;
        };
        let tree = trees.get(index).and_then(Option::as_ref);
        let made = if let Some(root) = plan.writable_root_above(crate::plan::target(mount)) {
            Some(beneath::make(mount, plan, tree, root)?)
        } else {
            make(mount, plan, tree)?;
            None
        };
        let made = match (mount, plan.overlay_at(crate::plan::target(mount))) {
            (Mount::Bind { writable: true, .. }, Some(layers)) => Some(overlay(layers)?),
            _ => made,
        };
        pinned.push(made);
    }
    dev()?;
    if part == Part::Whole {
        proc()?;
    } else {
        step("/proc", fs::create_dir_all("/proc"))?;
    }
    // Read-only and nosuid everywhere the plan says, shallow mounts first so that a writable
    // mount inside a read-only one stays writable.
    let seal_overlays = |index: usize| -> Result<(), String> {
        for (k, _) in at(index) {
            let (stands, mount) = &overlays[k];
            step(
                format_args!("sealing {}", plan.git_overlays[k].display()),
                sys::seal_at(mount, !stands, !stands),
            )?;
        }
        Ok(())
    };
    for (index, mount) in plan.mounts.iter().enumerate() {
        seal_overlays(index)?;
        let how = match mount {
            Mount::Bind { writable, .. } => Some((!writable, true)),
            Mount::MaskFile { .. }
            | Mount::Tmpfs {
                writable: false, ..
            } => Some((true, false)),
            Mount::Tmpfs { writable: true, .. } => None,
        };
        let Some((read_only, recursive)) = how else {
            continue;
        };
        let target = crate::plan::target(mount);
        let sealed = match &pinned[index] {
            Some(fd) => sys::seal_at(fd, read_only, recursive),
            None => sys::seal_tree(target, read_only, recursive),
        };
        step(format_args!("sealing {}", target.display()), sealed)?;
    }
    seal_overlays(plan.mounts.len())?;
    if part == Part::Whole {
        step("detaching the host", sys::umount_detach(Path::new(OLD)))?;
        step("removing the host's mount point", fs::remove_dir(OLD))?;
    }
    step(
        "sealing the root",
        sys::seal_tree(Path::new("/"), true, false),
    )
}

/// Completes a command's own copy of a warm sandbox's kept tree (see [`Part::Kept`]), in its
/// new mount namespace: checks that the kept mounts still show what they showed ([`unchanged`]),
/// puts each `.git` overlay in place with the kept mounts inside it back on top (copies of
/// them, taken before the overlay covers them: idmapped and sealed as they were made), mounts
/// the command's `/proc`, and detaches the host.
pub(crate) fn complete(plan: &Plan, marks: &[Mark], stale: &str) -> Result<(), String> {
    unchanged(marks).map_err(|why| format!("{stale}{why}"))?;
    let inside: Vec<&Path> = plan
        .mounts
        .iter()
        .map(crate::plan::target)
        .filter(|t| plan.git_overlays.iter().any(|git| t.starts_with(git)))
        .collect();
    // The outermost of them: a copy of each brings the ones below with it.
    let mut copies: Vec<(&Path, OwnedFd)> = Vec::new();
    for target in &inside {
        let below = inside
            .iter()
            .any(|other| other != target && target.starts_with(other));
        if below || copies.iter().any(|(t, _)| t == target) {
            continue;
        }
        let copy =
            sys::clone_path(target).map_err(|e| format!("{stale}{}: {e}", target.display()))?;
        let shows = sys::fstat_id(&copy).ok();
        let mark = marks.iter().rev().find(|m| m.target == *target);
        if mark.is_none_or(|m| shows != Some((m.dev, m.ino))) {
            return Err(format!(
                "{stale}{} is no longer the mount that was made there",
                target.display()
            ));
        }
        copies.push((target, copy));
    }
    for (k, git) in plan.git_overlays.iter().enumerate() {
        let (stands, mount) = git_overlay(plan, k)?;
        step(
            format_args!("sealing {}", git.display()),
            sys::seal_at(&mount, !stands, !stands),
        )?;
        for (target, copy) in copies.iter().filter(|(t, _)| t.starts_with(git)) {
            step(
                format_args!("{} on its overlay", target.display()),
                sys::move_tree(copy, target),
            )?;
        }
    }
    proc()?;
    step("detaching the host", sys::umount_detach(Path::new(OLD)))
}

/// A tmpfs becomes the root, the host's at `/oldroot`.
fn new_root() -> Result<(), String> {
    step("making mounts private", sys::make_mounts_private())?;
    step(
        "the new root",
        sys::mount(
            Some(Path::new("tmpfs")),
            Path::new("/tmp"),
            Some("tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some("mode=0755,size=16m"),
        ),
    )?;
    step("the old root's mount point", fs::create_dir("/tmp/oldroot"))?;
    step(
        "pivot_root",
        sys::pivot_root(Path::new("/tmp"), Path::new("/tmp/oldroot")),
    )?;
    step("entering the new root", std::env::set_current_dir("/"))
}

/// What each mount a warm sandbox keeps showed when it was made: its target, device and inode.
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    target: PathBuf,
    dev: u64,
    ino: u64,
}

/// The marks of the mounts of `plan` a warm sandbox keeps, as they are now.
pub(crate) fn marks(plan: &Plan) -> Result<Vec<Mark>, String> {
    plan.mounts
        .iter()
        .map(|mount| {
            let target = crate::plan::target(mount).to_path_buf();
            let (dev, ino, _) =
                sys::statx_at_path(&target).map_err(|e| format!("{}: {e}", target.display()))?;
            Ok(Mark { target, dev, ino })
        })
        .collect()
}

/// Whether every kept mount still shows what it showed when it was made, and is still a mount:
/// one whose mount point was removed or replaced on the host is gone from every namespace
/// (the kernel detaches it), and what it covered would show. Says which one changed. A kernel
/// that does not say whether a path is a mount's root (before 5.8) cannot be checked: a
/// directory made again under a reused inode number would pass, so nothing passes there.
pub(crate) fn unchanged(marks: &[Mark]) -> Result<(), String> {
    for mark in marks {
        let shown = sys::statx_at_path(&mark.target);
        let same = shown.as_ref().is_ok_and(|(dev, ino, root)| {
            (*dev, *ino) == (mark.dev, mark.ino) && *root == Some(true)
        });
        if !same {
            return Err(format!(
                "{} changed on the host since the warm sandbox was made",
                mark.target.display()
            ));
        }
    }
    Ok(())
}

pub(super) fn host(path: &Path) -> PathBuf {
    Path::new(OLD).join(path.strip_prefix("/").unwrap_or(path))
}

fn make(mount: &Mount, plan: &Plan, tree: Option<&OwnedFd>) -> Result<(), String> {
    match mount {
        Mount::Bind { source, target, .. } => {
            let original = source;
            let source = host(source);
            if source.is_dir() {
                step(
                    format_args!("mount point {}", target.display()),
                    fs::create_dir_all(target),
                )?;
            } else {
                touch(target)?;
            }
            if let Some(tree) = tree {
                return idmapped(tree, original, target, plan);
            }
            step(
                format_args!("binding {}", target.display()),
                sys::mount(
                    Some(&source),
                    target,
                    None,
                    libc::MS_BIND | libc::MS_REC,
                    None,
                ),
            )
        }
        Mount::Tmpfs {
            target,
            size_mb,
            writable,
        } => {
            step(
                format_args!("mount point {}", target.display()),
                fs::create_dir_all(target),
            )?;
            let data = tmpfs_data(plan, target, *writable, *size_mb);
            step(
                format_args!("tmpfs at {}", target.display()),
                sys::mount(
                    Some(Path::new("tmpfs")),
                    target,
                    Some("tmpfs"),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    Some(&data),
                ),
            )
        }
        Mount::MaskFile { target } => mask(target, plan),
    }
}

/// Shows the plan's `k`th `.git` through an overlay: its lower layer the directory as the root's
/// mount shows it (reached without a link, and mounted on through its descriptor), its upper
/// layer the one made for this command. Where the kernel refuses (overlayfs in a user namespace
/// needs Linux 5.11), the directory is bound over itself, read-only: history is kept all the
/// same, and git cannot write. Returns whether the overlay stands, and the mount.
fn git_overlay(plan: &Plan, k: usize) -> Result<(bool, OwnedFd), String> {
    let git = &plan.git_overlays[k];
    let Some((upper, work)) = plan.git_layers.get(k) else {
        return Err(format!(
            "{}: no layer was made for its history",
            git.display()
        ));
    };
    let changed = |e: std::io::Error| {
        format!(
            "{}: {e} (it changed while the sandbox was being built)",
            git.display()
        )
    };
    let reopen = || beneath::open_inside(plan, git).map_err(changed);
    let lower = reopen()?;
    let layer = |p: &Path| {
        let text = host(p).display().to_string();
        (!text.contains([',', ':', '\\'])).then_some(text)
    };
    let by_fd = beneath::by_fd(&lower);
    let data = layer(upper).zip(layer(work)).map(|(upper, work)| {
        format!(
            "lowerdir={},upperdir={upper},workdir={work},userxattr",
            by_fd.display()
        )
    });
    let mounted = data.is_some_and(|data| mount_overlay(&by_fd, &data).is_ok());
    if !mounted {
        step(
            format_args!("keeping {} read-only", git.display()),
            sys::mount(
                Some(&by_fd),
                &by_fd,
                None,
                libc::MS_BIND | libc::MS_REC,
                None,
            ),
        )?;
    }
    Ok((mounted, reopen()?))
}

/// Mounts `layers`' overlay over its root, just bound from the lower layer, which is made
/// read-only first: it stays unwritten even if the overlay were lifted. Returns the overlay.
fn overlay(layers: &Overlay) -> Result<OwnedFd, String> {
    let target = &layers.target;
    step(
        format_args!("keeping {} read-only below its overlay", target.display()),
        sys::seal_tree(target, true, true),
    )?;
    let changed = |e: std::io::Error| format!("the overlay at {}: {e}", target.display());
    let lower = sys::open_path(target).map_err(changed)?;
    let by_fd = beneath::by_fd(&lower);
    let data = format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        by_fd.display(),
        host(&layers.upper).display(),
        host(&layers.work).display()
    );
    step(
        format_args!(
            "the overlay at {} (overlayfs in a user namespace needs Linux 5.11, over an idmapped \
             layer 5.19)",
            target.display()
        ),
        mount_overlay(&by_fd, &data),
    )?;
    sys::open_path(target).map_err(changed)
}

/// An overlayfs at `at` (a path or a descriptor's), with its layers in `data`.
fn mount_overlay(at: &Path, data: &str) -> std::io::Result<()> {
    sys::mount(
        Some(Path::new("overlay")),
        at,
        Some("overlay"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(data),
    )
}

/// Puts the idmapped tree of the writable root `source` at `target`; the sized scratch space
/// below it (a tmpfs of the helper's, made after the tree was copied) goes back on top.
fn idmapped(tree: &OwnedFd, source: &Path, target: &Path, plan: &Plan) -> Result<(), String> {
    step(
        format_args!("the idmapped tree at {}", target.display()),
        sys::move_tree(tree, target),
    )?;
    for (dir, _) in &plan.sized {
        let Ok(rest) = dir.strip_prefix(source) else {
            continue;
        };
        step(
            format_args!("the scratch space at {}", dir.display()),
            sys::mount(
                Some(&host(dir)),
                &target.join(rest),
                None,
                libc::MS_BIND | libc::MS_REC,
                None,
            ),
        )?;
    }
    Ok(())
}

/// The options of the tmpfs at `target`.
pub(super) fn tmpfs_data(plan: &Plan, target: &Path, writable: bool, size_mb: u64) -> String {
    let mode = if writable && target == Path::new("/tmp") {
        "1777"
    } else {
        "0755"
    };
    // Made by root inside when warden runs as root: owned by the command's id then.
    let id = crate::plan::INSIDE_ID;
    if writable && plan.run_as.is_some() {
        format!("mode={mode},size={size_mb}m,uid={id},gid={id}")
    } else {
        format!("mode={mode},size={size_mb}m")
    }
}

/// Mounts the mask file over `target`: over the very file opened (through its descriptor,
/// never a path a rename could change in between), and, where the plan knows which file that
/// was, only if it is still that one. A target gone or swapped stops the command.
fn mask(target: &Path, plan: &Plan) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let opened = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(target)
        .map_err(|e| {
            format!(
                "masking {}: {e} (it changed while the sandbox was being built)",
                target.display()
            )
        })?;
    mask_opened(&opened, target, plan)
}

/// Mounts the mask file over `opened`, the file `target` names, if it is still the one the plan
/// looked at.
pub(super) fn mask_opened(opened: &fs::File, target: &Path, plan: &Plan) -> Result<(), String> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::MetadataExt as _;
    let what = format_args!("masking {}", target.display());
    let meta = opened.metadata().map_err(|e| format!("{what}: {e}"))?;
    let expected = plan
        .mask_ids
        .iter()
        .find(|(t, _)| t == target)
        .map(|(_, id)| *id);
    // Through a `.git` overlay a file shows the overlay's device: there the plan's identity
    // cannot be compared, and the lower layer is never the command's to swap.
    let overlaid =
        plan.git_overlays.iter().any(|git| target.starts_with(git)) || plan.overlaid(target);
    if !overlaid && expected.is_some_and(|id| id != (meta.dev(), meta.ino())) {
        return Err(format!(
            "{what}: it is no longer the file the plan looked at (it changed while the sandbox \
             was being built)"
        ));
    }
    if meta.file_type().is_symlink() || meta.is_dir() {
        return Err(format!("{what}: not a file"));
    }
    let by_fd = host(Path::new(&format!("/proc/self/fd/{}", opened.as_raw_fd())));
    step(
        what,
        sys::mount(
            Some(&host(&plan.mask_source)),
            &by_fd,
            None,
            libc::MS_BIND,
            None,
        ),
    )
}

fn touch(path: &Path) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        step(
            format_args!("mount point {}", parent.display()),
            fs::create_dir_all(parent),
        )?;
    }
    if !path.exists() {
        step(
            format_args!("mount point {}", path.display()),
            fs::write(path, b""),
        )?;
    }
    Ok(())
}

/// A minimal `/dev`.
fn dev() -> Result<(), String> {
    let nosuid = libc::MS_NOSUID | libc::MS_NODEV;
    step("/dev", fs::create_dir_all("/dev"))?;
    step(
        "/dev tmpfs",
        sys::mount(
            Some(Path::new("tmpfs")),
            Path::new("/dev"),
            Some("tmpfs"),
            libc::MS_NOSUID,
            Some("mode=0755,size=1m"),
        ),
    )?;
    for name in ["null", "zero", "full", "random", "urandom", "tty"] {
        let target = Path::new("/dev").join(name);
        let source = host(&target);
        if !source.exists() {
            continue;
        }
        touch(&target)?;
        step(
            format_args!("/dev/{name}"),
            sys::mount(Some(&source), &target, None, libc::MS_BIND, None),
        )?;
    }
    for (link, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        step(
            format_args!("/dev/{link}"),
            std::os::unix::fs::symlink(to, Path::new("/dev").join(link)),
        )?;
    }
    step("/dev/shm", fs::create_dir_all("/dev/shm"))?;
    step(
        "/dev/shm tmpfs",
        sys::mount(
            Some(Path::new("tmpfs")),
            Path::new("/dev/shm"),
            Some("tmpfs"),
            nosuid,
            Some("mode=1777,size=64m"),
        ),
    )?;
    // Its entries are fixed: a command must not replace `/dev/fd` or `/dev/stdout` for the
    // next (a warm sandbox keeps this `/dev`). The device binds and `/dev/shm` keep their own.
    step(
        "sealing /dev",
        sys::seal_tree(Path::new("/dev"), true, false),
    )
}

/// A `/proc` of the new PID namespace.
fn proc() -> Result<(), String> {
    let nosuid = libc::MS_NOSUID | libc::MS_NODEV;
    step("/proc", fs::create_dir_all("/proc"))?;
    step(
        "/proc of the new PID namespace",
        sys::mount(
            Some(Path::new("proc")),
            Path::new("/proc"),
            Some("proc"),
            nosuid | libc::MS_NOEXEC,
            None,
        ),
    )
}
