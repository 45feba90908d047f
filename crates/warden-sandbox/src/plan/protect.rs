//! What every writable root keeps read-only, and what stops a plan from keeping it.

use std::fs;
use std::path::{Path, PathBuf};

use super::{Profile, Request, real};

/// `request` with the files that run code on the host later protected in each of its writable
/// roots (the workspace, `allow_write`, writable mounts), whoever built it: the list of
/// [`warden_config::AUTO_RUN`] and what the repository there names, at the root's target.
pub(super) fn with_protections(request: &Request) -> Request {
    let mut request = request.clone();
    let mut roots: Vec<(PathBuf, PathBuf)> = Vec::new();
    if request.profile != Profile::ReadOnly {
        if !request.workspace.as_os_str().is_empty() {
            roots.push((request.workspace.clone(), real(&request.workspace)));
        }
        roots.extend(request.allow_write.iter().map(|d| (d.clone(), real(d))));
        roots.extend(
            request
                .mounts
                .iter()
                .filter(|(_, _, rw)| *rw)
                .map(|(source, target, _)| (target.clone(), real(source))),
        );
    }
    // Sized scratch space is a tmpfs of the sandbox's own, gone with it: nothing there runs later.
    let scratch = |s: &Path| request.sized.iter().any(|(dir, _)| s.starts_with(dir));
    for (target, source) in roots.iter().filter(|(_, s)| s.is_dir() && !scratch(s)) {
        let mut protect: Vec<PathBuf> = warden_config::AUTO_RUN
            .iter()
            .map(|rel| target.join(rel))
            .collect();
        // What the repository names (a hooks directory) wherever a writable root shows it, this
        // one or another.
        for named in warden_config::repository_auto_run(source) {
            for (other_target, other_source) in &roots {
                if let Ok(rel) = named.strip_prefix(other_source) {
                    protect.push(other_target.join(rel));
                }
            }
        }
        for path in protect {
            if !request.deny_write.contains(&path) {
                request.deny_write.push(path);
            }
        }
    }
    request
}

/// The first directory strictly between `root` and `path` that is a symbolic link, if any.
pub(super) fn link_below(root: &Path, path: &Path) -> Option<PathBuf> {
    let rest = path.strip_prefix(root).ok()?;
    let mut at = root.to_path_buf();
    let mut parts = rest.components().peekable();
    while let Some(part) = parts.next() {
        parts.peek()?;
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Some(at),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}
