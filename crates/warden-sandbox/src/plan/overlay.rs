//! Writable roots whose source is never written: the command's writes go to an upper layer of
//! the caller's (a manifest run's workspace over the pinned commit's shared checkout).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Plan, Request};

/// A writable mount of [`Request::mounts`] shown through an overlay: its source is the lower
/// layer, bound read-only, and what the command writes goes to `upper` (on the host, kept after
/// the command for the caller to read). `work` is overlayfs's own, on the file system of `upper`.
/// The overlay is mounted inside the sandbox's user namespace, never on the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overlay {
    /// The mount's target, inside the sandbox.
    pub target: PathBuf,
    pub upper: PathBuf,
    pub work: PathBuf,
}

/// The overlays of `request`, checked: each one the target of a writable mount, with no other
/// writable root inside it or around it and no other writable mount of its lower layer (which
/// would write it), its layers directories of its own with names overlayfs's options can carry.
pub(super) fn checked(request: &Request) -> Result<Vec<Overlay>, String> {
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let writable: Vec<(PathBuf, PathBuf)> = request
        .mounts
        .iter()
        .filter(|(_, _, rw)| *rw)
        .map(|(source, target, _)| (real(source), target.clone()))
        .chain(
            std::iter::once(&request.workspace)
                .filter(|w| !w.as_os_str().is_empty())
                .chain(&request.allow_write)
                .map(|d| (real(d), d.clone())),
        )
        .collect();
    for (k, overlay) in request.overlays.iter().enumerate() {
        let at = |what: &str| format!("{}: {what}", overlay.target.display());
        let lower = request
            .mounts
            .iter()
            .find(|(_, target, rw)| *rw && *target == overlay.target)
            .map(|(source, _, _)| real(source))
            .ok_or_else(|| at("an overlay needs a writable mount of its own there"))?;
        for (source, target) in writable.iter().filter(|(_, t)| *t != overlay.target) {
            if target.starts_with(&overlay.target) || overlay.target.starts_with(target) {
                return Err(at(&format!(
                    "an overlay cannot hold or be held by another writable root ({})",
                    target.display()
                )));
            }
            if source.starts_with(&lower) || lower.starts_with(source) {
                return Err(at(&format!(
                    "{} would make the overlay's lower layer writable",
                    target.display()
                )));
            }
        }
        let others = &request.overlays[k + 1..];
        if others.iter().any(|o| {
            o.target == overlay.target
                || [&o.upper, &o.work].contains(&&overlay.upper)
                || [&o.upper, &o.work].contains(&&overlay.work)
        }) {
            return Err(at("two overlays there, or sharing a layer"));
        }
        for layer in [&overlay.upper, &overlay.work] {
            if !layer.is_absolute() || !layer.is_dir() {
                return Err(format!(
                    "{}: an overlay's layer must be an existing directory",
                    layer.display()
                ));
            }
            if layer.to_string_lossy().contains([',', ':', '\\']) {
                return Err(format!(
                    "{}: an overlay's layer may not have `,`, `:` or `\\` in its path",
                    layer.display()
                ));
            }
        }
    }
    Ok(request.overlays.clone())
}

impl Plan {
    /// The overlay mounted at `target`, if one is.
    pub(crate) fn overlay_at(&self, target: &Path) -> Option<&Overlay> {
        self.overlays.iter().find(|o| o.target == target)
    }

    /// Whether `path` is shown through an overlay (at its root or below).
    pub(crate) fn overlaid(&self, path: &Path) -> bool {
        self.overlays.iter().any(|o| path.starts_with(&o.target))
    }

    /// The overlay holding `path` below its root (not the root itself), and its lower layer
    /// (the source of the root's bind): a mount there whose source is in the lower layer is
    /// made from what the overlay shows, never from the lower layer on the host, never written.
    pub(crate) fn overlay_above(&self, path: &Path) -> Option<(&Path, &Path)> {
        self.overlays
            .iter()
            .filter(|o| path.starts_with(&o.target) && path != o.target)
            .find_map(|o| {
                self.mounts.iter().find_map(|m| match m {
                    super::Mount::Bind {
                        source,
                        target,
                        writable: true,
                    } if *target == o.target => Some((o.target.as_path(), source.as_path())),
                    _ => None,
                })
            })
    }

    /// Whether the bind of `source` at `target` shows part of an overlay's lower layer below
    /// the overlay's root.
    pub(crate) fn shows_lower(&self, source: &Path, target: &Path) -> bool {
        self.overlay_above(target)
            .is_some_and(|(_, lower)| source.starts_with(lower))
    }
}

/// Whether an overlay of [`Request::overlays`] can have its layers under `dir`: Linux 5.19 or
/// newer (overlayfs in a user namespace, over an idmapped lower layer when warden runs as
/// root), and `dir` on a file system known to hold an upper layer there: ext4, XFS, Btrfs or
/// F2FS, and a tmpfs from Linux 6.6 (its user extended attributes). Not an overlayfs (as a
/// container's root often is), nor a network or FUSE file system.
pub fn overlay_can_hold(dir: &Path) -> bool {
    const EXT4: i64 = 0xef53;
    const XFS: i64 = 0x5846_5342;
    const BTRFS: i64 = 0x9123_683e;
    const F2FS: i64 = 0xf2f5_2010;
    const TMPFS: i64 = 0x0102_1994;
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    let kernel = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    match crate::sys::fs_magic(dir) {
        Some(TMPFS) => kernel >= (6, 6),
        Some(EXT4 | XFS | BTRFS | F2FS) => kernel >= (5, 19),
        _ => false,
    }
}

/// Whether the directory `path` of an upper layer replaced the lower layer's whole (opaque).
pub fn overlay_opaque(path: &Path) -> bool {
    crate::sys::overlay_opaque(path)
}
