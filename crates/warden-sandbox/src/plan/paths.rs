//! Paths of a plan's mounts: which is a writable root, which holds a path, how deep it is.

use std::fs;
use std::path::{Path, PathBuf};

use super::Mount;

/// The deepest writable bind that holds `path`, if one does: its target and its source.
pub(super) fn writable_bind(path: &Path, mounts: &[Mount]) -> Option<(PathBuf, PathBuf)> {
    writable_binds(mounts)
        .filter(|(target, _)| path.starts_with(target))
        .max_by_key(|(target, _)| depth(target))
        .map(|(target, source)| (target.to_path_buf(), source.to_path_buf()))
}

/// The writable binds among `mounts`: their targets and sources.
pub(super) fn writable_binds(mounts: &[Mount]) -> impl Iterator<Item = (&Path, &Path)> {
    mounts.iter().filter_map(|m| match m {
        Mount::Bind {
            source,
            target,
            writable: true,
        } => Some((target.as_path(), source.as_path())),
        _ => None,
    })
}

/// `path` with every link on the way resolved: the sandbox reaches a bind's source through the
/// host's root, where a link to an absolute path would lead elsewhere.
pub(super) fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// The account or group of this host (`/etc/passwd`, `/etc/group`) whose id is `id`, if any.
pub(super) fn named_id(id: u32) -> Option<String> {
    let id = id.to_string();
    [("/etc/passwd", "the account"), ("/etc/group", "the group")]
        .iter()
        .find_map(|(file, what)| {
            let text = fs::read_to_string(file).ok()?;
            text.lines().find_map(|line| {
                let mut fields = line.split(':');
                let name = fields.next()?;
                (fields.nth(1)? == id).then(|| format!("{what} {name}"))
            })
        })
}

/// Where `path` (inside the sandbox) is on the host: through the deepest bind holding it, else
/// itself.
pub(super) fn on_host(path: &Path, mounts: &[Mount]) -> PathBuf {
    mounts
        .iter()
        .filter_map(|m| match m {
            Mount::Bind { source, target, .. } if path.starts_with(target) => {
                Some((target, source))
            }
            _ => None,
        })
        .max_by_key(|(target, _)| depth(target))
        .map_or_else(
            || path.to_path_buf(),
            |(target, source)| source.join(path.strip_prefix(target).unwrap_or(path)),
        )
}

/// Whether `path` would be visible through one of the mounts made so far.
pub(super) fn visible(path: &Path, mounts: &[Mount]) -> bool {
    mounts.iter().any(|m| match m {
        Mount::Bind { target, .. } => path.starts_with(target),
        Mount::Tmpfs { .. } | Mount::MaskFile { .. } => false,
    })
}

pub(crate) fn target(mount: &Mount) -> &Path {
    match mount {
        Mount::Bind { target, .. } | Mount::Tmpfs { target, .. } | Mount::MaskFile { target } => {
            target
        }
    }
}

pub(super) fn depth(path: &Path) -> usize {
    path.components().count()
}
