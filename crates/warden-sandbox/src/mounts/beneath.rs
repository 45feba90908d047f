//! Mounts inside a writable root, where the command (or another sandbox of the same root, still
//! running) decides what the names mean: each mount point is reached and made from the root's
//! own mount without following a link, each source below a root likewise, and every mount is
//! made, and later sealed, through descriptors rather than names.

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};

use super::{host, mask_opened, step, tmpfs_data};
use crate::plan::{Mount, Plan};
use crate::sys::{self, Make};

/// The name by which the mount API reaches the file `fd` holds (the host's `/proc` is still
/// there while the mounts are made).
pub(super) fn by_fd(fd: &OwnedFd) -> PathBuf {
    host(Path::new(&format!("/proc/self/fd/{}", fd.as_raw_fd())))
}

/// `path` inside the sandbox's tree, below the writable root that holds it, without a link.
pub(super) fn open_inside(plan: &Plan, path: &Path) -> std::io::Result<OwnedFd> {
    let Some((root, _)) = plan.writable_root_above(path) else {
        return sys::open_path(path);
    };
    let top = sys::open_path(root)?;
    sys::open_beneath(&top, path.strip_prefix(root).unwrap_or(path), Make::Nothing)
}

/// Makes `mount`, whose target is below the writable root `root` (its target and source);
/// returns the mount made.
pub(super) fn make(
    mount: &Mount,
    plan: &Plan,
    tree: Option<&OwnedFd>,
    root: (&Path, &Path),
) -> Result<OwnedFd, String> {
    let target = crate::plan::target(mount);
    // Below an overlay, that overlay is the root: what its lower layer holds is reached there.
    let overlay = plan.overlay_above(target);
    let (root_target, root_source) = overlay.unwrap_or(root);
    let rest = target.strip_prefix(root_target).unwrap_or(target);
    let changed = |e: std::io::Error| {
        format!(
            "{}: {e} (a link on the way, or it changed while the sandbox was being built)",
            target.display()
        )
    };
    let top = sys::open_path(root_target).map_err(changed)?;
    let point = |make: Make| sys::open_beneath(&top, rest, make).map_err(changed);
    match mount {
        Mount::Bind { source, .. } => {
            // Below an overlay's root, from what the overlay shows: its lower layer is never
            // the command's to write. A directory on the way to a protected name not there yet
            // is made there (in the upper layer), as a placeholder is on the host elsewhere.
            let from = match source.strip_prefix(root_source) {
                Ok(below) if overlay.is_some() => {
                    match sys::open_beneath(&top, below, Make::Nothing) {
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                            sys::open_beneath(&top, below, Make::Dir)
                        }
                        other => other,
                    }
                }
                Ok(below) => sys::open_path(&host(root_source))
                    .and_then(|t| sys::open_beneath(&t, below, Make::Nothing)),
                Err(_) => sys::open_path(&host(source)),
            }
            .map_err(|e| format!("{}: {e}", source.display()))?;
            let dir = sys::is_dir(&from);
            let at = point(if dir { Make::Dir } else { Make::File })?;
            match tree {
                Some(tree) => step(
                    format_args!("the idmapped tree at {}", target.display()),
                    sys::move_tree_to(tree, &at),
                )?,
                None => step(
                    format_args!("binding {}", target.display()),
                    sys::mount(
                        Some(&by_fd(&from)),
                        &by_fd(&at),
                        None,
                        libc::MS_BIND | libc::MS_REC,
                        None,
                    ),
                )?,
            }
        }
        Mount::Tmpfs {
            writable, size_mb, ..
        } => {
            let at = point(Make::Dir)?;
            let data = tmpfs_data(plan, target, *writable, *size_mb);
            step(
                format_args!("tmpfs at {}", target.display()),
                sys::mount(
                    Some(Path::new("tmpfs")),
                    &by_fd(&at),
                    Some("tmpfs"),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    Some(&data),
                ),
            )?;
        }
        Mount::MaskFile { .. } => {
            let at = std::fs::File::from(point(Make::Nothing)?);
            mask_opened(&at, target, plan)?;
        }
    }
    // A lookup now lands on the mount just made.
    point(Make::Nothing)
}
