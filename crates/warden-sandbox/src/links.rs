//! Hard links that lead out of the sandbox's roots. A file in the workspace may share its inode
//! with a file elsewhere (made by `ln`, `cp -al`, a package store); through the workspace's bind
//! the command could read or write that other file. Every non-directory whose link count is
//! higher than the number of its links found under the roots has a link outside, and is masked.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// Per (device, inode): the link count, and the names found under the roots.
type Seen = HashMap<(u64, u64), (u64, Vec<PathBuf>)>;

/// A file's identity: (device, inode).
pub(crate) type Identity = (u64, u64);

/// What the walk found: files with a link outside the roots, and files sharing their inode with
/// one of the `hidden` or `read_only` identities (another name for a protected file).
#[derive(Debug, Default)]
pub(crate) struct Linked {
    pub(crate) outside: Vec<PathBuf>,
    pub(crate) hidden: Vec<PathBuf>,
    pub(crate) read_only: Vec<PathBuf>,
}

/// The identities of the multiply-linked files at or below `paths`: only those can have
/// another name somewhere else. A directory is walked up to `limit` entries.
pub(crate) fn identities(paths: &[PathBuf], limit: usize) -> HashSet<Identity> {
    let mut found = HashSet::new();
    let mut budget = limit;
    for path in paths {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        if meta.is_file() {
            if meta.nlink() > 1 {
                found.insert((meta.dev(), meta.ino()));
            }
            continue;
        }
        if !meta.is_dir() {
            continue;
        }
        let mut dirs = vec![path.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if budget == 0 {
                    return found;
                }
                budget -= 1;
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if kind.is_file()
                    && let Ok(meta) = entry.metadata()
                    && meta.nlink() > 1
                {
                    found.insert((meta.dev(), meta.ino()));
                }
            }
        }
    }
    found
}

/// One walk of `roots`: the files with a link outside all of them, and the other names of the
/// `hidden` and `read_only` files.
pub(crate) fn linked(
    roots: &[PathBuf],
    hidden: &HashSet<Identity>,
    read_only: &HashSet<Identity>,
) -> Linked {
    let mut outer: Vec<&PathBuf> = Vec::new();
    let mut sorted: Vec<&PathBuf> = roots.iter().collect();
    sorted.sort_by_key(|p| p.components().count());
    for root in sorted {
        if !outer.iter().any(|o| root.starts_with(o)) {
            outer.push(root);
        }
    }
    let mut seen = Seen::new();
    for root in outer {
        walk(root, &mut seen);
    }
    let mut found = Linked::default();
    for ((dev, ino), (nlink, paths)) in seen {
        let id = (dev, ino);
        if hidden.contains(&id) {
            found.hidden.extend(paths);
        } else if u64::try_from(paths.len()).unwrap_or(u64::MAX) < nlink {
            found.outside.extend(paths);
        } else if read_only.contains(&id) {
            found.read_only.extend(paths);
        }
    }
    found.outside.sort();
    found.hidden.sort();
    found.read_only.sort();
    found
}

/// The files under `roots` that share their inode with a file outside all of them.
#[cfg(test)]
pub(crate) fn leading_outside(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut outer: Vec<&PathBuf> = Vec::new();
    let mut sorted: Vec<&PathBuf> = roots.iter().collect();
    sorted.sort_by_key(|p| p.components().count());
    for root in sorted {
        if !outer.iter().any(|o| root.starts_with(o)) {
            outer.push(root);
        }
    }
    let mut seen = Seen::new();
    for root in outer {
        walk(root, &mut seen);
    }
    let mut found: Vec<PathBuf> = seen
        .into_values()
        .filter(|(nlink, paths)| u64::try_from(paths.len()).unwrap_or(u64::MAX) < *nlink)
        .flat_map(|(_, paths)| paths)
        .collect();
    found.sort();
    found
}

/// Records every multiply-linked non-directory under `root`. Directory entries carry their type,
/// so only non-directories are `stat`ed.
fn walk(root: &Path, seen: &mut Seen) {
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                dirs.push(entry.path());
            } else if !kind.is_symlink()
                && let Ok(meta) = entry.metadata()
                && meta.nlink() > 1
            {
                seen.entry((meta.dev(), meta.ino()))
                    .or_insert_with(|| (meta.nlink(), Vec::new()))
                    .1
                    .push(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_inside_are_kept_and_links_outside_found() {
        let base = tempfile::tempdir().unwrap();
        let ws = base.path().join("ws");
        let outside = base.path().join("outside");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(ws.join("a"), "a").unwrap();
        std::fs::hard_link(ws.join("a"), ws.join("sub/a2")).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        std::fs::hard_link(outside.join("secret"), ws.join("sub/leak")).unwrap();
        std::fs::write(ws.join("plain"), "p").unwrap();
        assert_eq!(
            leading_outside(std::slice::from_ref(&ws)),
            vec![ws.join("sub/leak")]
        );
        // A second root holding the other link accounts for it.
        assert!(leading_outside(&[ws.clone(), outside.clone()]).is_empty());
        // A root inside another is walked once.
        assert_eq!(
            leading_outside(&[ws.join("sub"), ws.clone()]),
            vec![ws.join("sub/leak")]
        );
    }
}
