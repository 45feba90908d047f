//! Placeholders: empty host directories that give a denied path which does not exist a mount
//! point, so that the sandbox can cover it with an empty read-only file system and nothing of
//! that name can be created. They are made before the command runs and removed after it, unless
//! another sandbox still uses them: each user holds a shared `flock` on the directory while its
//! command runs, and only the last one (the one that gets the exclusive lock) removes it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The placeholders a running command uses.
#[derive(Debug, Default)]
pub(crate) struct Placeholders(Vec<Held>);

#[derive(Debug)]
struct Held {
    path: PathBuf,
    lock: File,
}

/// Directories made above placeholders by this process, which the last user of a placeholder
/// below them removes when they are empty (whichever sandbox made them).
static MADE_ABOVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn made_above() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    MADE_ABOVE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The placeholders this process holds now, with how many hold each.
static HELD_HERE: Mutex<BTreeMap<PathBuf, usize>> = Mutex::new(BTreeMap::new());

fn held_here() -> std::sync::MutexGuard<'static, BTreeMap<PathBuf, usize>> {
    HELD_HERE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `path` is a placeholder this process holds, or a directory made above one, and still
/// an empty directory: for planning, it is not there (a warm sandbox holds its placeholders
/// between commands, and the next command's plan must be the same as if they were gone).
pub(crate) fn made_here(path: &Path) -> bool {
    let ours = held_here().contains_key(path) || made_above().contains(path);
    ours && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
        && std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}

impl Placeholders {
    /// Makes (or joins) every placeholder in `paths`.
    pub(crate) fn make(paths: &[PathBuf]) -> Result<Self, String> {
        let mut held = Vec::with_capacity(paths.len());
        for path in paths {
            held.push(hold(path)?);
        }
        Ok(Self(held))
    }
}

fn hold(path: &Path) -> Result<Held, String> {
    let err = |e: std::io::Error| format!("placeholder for {}: {e}", path.display());
    // A sandbox ending at the same moment may remove the directory between our making it and
    // locking it; then the lock is on a removed directory and we start again.
    for _ in 0..8 {
        let mut missing = Vec::new();
        let mut dir = Some(path);
        while let Some(d) = dir.filter(|d| std::fs::symlink_metadata(d).is_err()) {
            missing.push(d.to_path_buf());
            dir = d.parent();
        }
        let mut raced = false;
        for d in missing.iter().rev() {
            match std::fs::create_dir(d) {
                Ok(()) if d != path => {
                    made_above().insert(d.clone());
                }
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => raced = true,
                Err(e) => return Err(err(e)),
            }
        }
        if raced {
            continue;
        }
        let lock = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(err(e)),
        };
        lock.lock_shared().map_err(err)?;
        if same(&lock, path) {
            *held_here().entry(path.to_path_buf()).or_default() += 1;
            return Ok(Held {
                path: path.to_path_buf(),
                lock,
            });
        }
    }
    Err(format!(
        "placeholder for {}: it kept disappearing while being made",
        path.display()
    ))
}

/// Whether `path` still names the directory `file` has open.
fn same(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        for held in self.0.drain(..).rev() {
            {
                let mut here = held_here();
                if let Some(count) = here.get_mut(&held.path) {
                    *count -= 1;
                    if *count == 0 {
                        here.remove(&held.path);
                    }
                }
            }
            // The exclusive lock is had only when no other sandbox holds the placeholder.
            if held.lock.try_lock().is_ok() && same(&held.lock, &held.path) {
                let _ = std::fs::remove_dir(&held.path);
                let mut made = made_above();
                let mut dir = held.path.parent();
                // Removing fails, as it should, when something else is in it by now.
                while let Some(d) = dir.filter(|d| made.contains(*d))
                    && std::fs::remove_dir(d).is_ok()
                {
                    made.remove(d);
                    dir = d.parent();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_user_removes_what_was_made() {
        let ws = tempfile::tempdir().unwrap();
        let path = ws.path().join(".git/hooks");
        let first = Placeholders::make(std::slice::from_ref(&path)).unwrap();
        assert!(path.is_dir());
        let second = Placeholders::make(std::slice::from_ref(&path)).unwrap();
        drop(first);
        assert!(path.is_dir(), "still used by the second");
        drop(second);
        assert!(!path.exists());
        // `.git` was made by the first run only for the placeholder, and it is gone too.
        assert!(!ws.path().join(".git").exists());
    }

    #[test]
    fn directories_that_hold_other_things_stay() {
        let ws = tempfile::tempdir().unwrap();
        let path = ws.path().join(".git/hooks");
        let held = Placeholders::make(std::slice::from_ref(&path)).unwrap();
        std::fs::write(ws.path().join(".git/HEAD"), "ref").unwrap();
        drop(held);
        assert!(!path.exists());
        assert!(ws.path().join(".git/HEAD").exists());
    }
}
