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

/// The overlays of `request`, checked: each one the target of a writable mount, its layers
/// directories with names overlayfs's options can carry.
pub(super) fn checked(request: &Request) -> Result<Vec<Overlay>, String> {
    for overlay in &request.overlays {
        let mounted = request
            .mounts
            .iter()
            .any(|(_, target, rw)| *rw && *target == overlay.target);
        if !mounted {
            return Err(format!(
                "{}: an overlay needs a writable mount of its own there",
                overlay.target.display()
            ));
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

    /// Whether `path` is below an overlay's root (not the root itself): a mount there is made
    /// from what the overlay shows, never from its lower layer on the host, which is never
    /// written.
    pub(crate) fn below_overlay(&self, path: &Path) -> bool {
        self.overlays
            .iter()
            .any(|o| path.starts_with(&o.target) && path != o.target)
    }
}

/// Whether an overlay of [`Request::overlays`] can have its layers under `dir`: Linux 5.11 or
/// newer (overlayfs in a user namespace), and `dir` on a file system that can hold an upper
/// layer (not an overlayfs itself, as a container's root often is).
pub fn overlay_can_hold(dir: &Path) -> bool {
    const OVERLAYFS_MAGIC: i64 = 0x794c_7630;
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    let kernel = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    kernel >= (5, 11) && crate::sys::fs_magic(dir).is_some_and(|m| m != OVERLAYFS_MAGIC)
}

/// Whether the directory `path` of an upper layer replaced the lower layer's whole (opaque).
pub fn overlay_opaque(path: &Path) -> bool {
    crate::sys::overlay_opaque(path)
}
