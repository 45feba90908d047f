//! History a command cannot destroy. A writable root's `.git` is shown to the command through
//! an overlay: the real directory is its lower layer, never written, and everything the command
//! changes there goes to an upper layer of its own, made here when the command starts. When it
//! has ended (nothing of it runs any more), [`publish`] brings back what a repository's history
//! may gain: new objects (each one hashed again by git), new refs and fast-forwards (a ref moved
//! otherwise keeps its old value under `refs/warden/kept/`), `HEAD`, the index, git's state of a
//! merge or rebase in progress, and reflog lines. Nothing is ever removed: not an object, not a
//! ref, not a reflog. The configuration and hooks are never brought back.

pub mod git;
mod guard;
mod layer;
mod objects;
mod publish;
mod refs;

use std::path::{Path, PathBuf};

pub(crate) use publish::publish;

/// The layers of a running command's overlays, removed when dropped.
#[derive(Debug, Default)]
pub(crate) struct Layers {
    /// Per overlay: the real `.git`, and the directory holding its `upper` and `work`.
    made: Vec<(PathBuf, PathBuf)>,
}

impl Layers {
    /// A new layer for each of `git_dirs`, owned by `owner` (the unprivileged id commands run as
    /// when warden runs as root) or by this process's user.
    pub(crate) fn make(git_dirs: &[PathBuf], owner: Option<u32>) -> Result<Self, String> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(sweep);
        let mut layers = Self::default();
        for git_dir in git_dirs {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let dir = std::env::temp_dir().join(format!(
                "warden-history-{}-{}-{n}-{nanos:08x}",
                pid_namespace(),
                std::process::id()
            ));
            let made = make_layer(&dir, owner);
            // Recorded before any error, so that drop removes what was made.
            layers.made.push((git_dir.clone(), dir.clone()));
            made.map_err(|e| format!("a layer for {}: {}: {e}", git_dir.display(), dir.display()))?;
        }
        Ok(layers)
    }

    /// The upper and work directories, in the order of the plan's overlays.
    pub(crate) fn paths(&self) -> Vec<(PathBuf, PathBuf)> {
        self.made
            .iter()
            .map(|(_, dir)| (dir.join("upper"), dir.join("work")))
            .collect()
    }

    /// Brings back what each command's layer may add to its repository; what was kept or left
    /// out, said.
    pub(crate) fn publish(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for (git_dir, dir) in &self.made {
            notes.extend(publish(&dir.join("upper"), git_dir));
        }
        notes
    }
}

/// Removes the layers of warden processes that are gone without removing theirs (killed).
fn sweep() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        // Made in this PID namespace (a process id means something only there), by a process
        // that is gone.
        let mut parts = name
            .to_str()
            .and_then(|n| n.strip_prefix("warden-history-"))
            .unwrap_or_default()
            .split('-');
        let (Some(ns), Some(pid)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if ns != pid_namespace() {
            continue;
        }
        let own = std::fs::symlink_metadata(entry.path())
            .is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == crate::sys::effective_uid());
        if own && !Path::new(&format!("/proc/{pid}")).exists() {
            remove(&entry.path());
        }
    }
}

/// This process's PID namespace, by its inode number.
fn pid_namespace() -> String {
    std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .and_then(|l| {
            let text = l.to_string_lossy().into_owned();
            text.strip_prefix("pid:[")
                .and_then(|t| t.strip_suffix(']'))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "0".to_owned())
}

fn make_layer(dir: &Path, owner: Option<u32>) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new().mode(0o700).create(dir)?;
    for part in ["upper", "work"] {
        let path = dir.join(part);
        std::fs::DirBuilder::new().mode(0o755).create(&path)?;
        if let Some(id) = owner {
            std::os::unix::fs::chown(&path, Some(id), Some(id)).map_err(|e| {
                if e.raw_os_error() == Some(libc::EINVAL) {
                    std::io::Error::other(format!(
                        "the unprivileged id {id} does not exist here: warden runs as root of a \
                         user namespace that maps no such id (user namespaces of a rootless \
                         container, say); set [sandbox] unprivileged_id to an id mapped here, \
                         or root_identity = \"host\""
                    ))
                } else {
                    e
                }
            })?;
        }
    }
    Ok(())
}

impl Drop for Layers {
    fn drop(&mut self) {
        for (_, dir) in &self.made {
            remove(dir);
        }
    }
}

/// Removes `dir` whole, the overlay's own work directory (mode 000) included: each directory
/// opened without following a link, and made readable through its descriptor.
fn remove(dir: &Path) {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&d);
        let Ok(opened) = opened else { continue };
        let by_fd = format!("/proc/self/fd/{}", opened.as_raw_fd());
        let _ = std::fs::set_permissions(&by_fd, std::fs::Permissions::from_mode(0o700));
        if let Ok(entries) = std::fs::read_dir(&by_fd) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(d.join(entry.file_name()));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}
