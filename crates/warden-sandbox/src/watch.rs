//! Which files of a writable root commands change: every directory of the root watched with
//! inotify once, then, around each command, the events it caused read off the queue — one
//! `read` however large the tree. Changes are seen whoever makes them on this machine, inside a
//! sandbox's mounts of the root too (a mount of a directory is the same directory). `.git` is
//! left out (a commit is said by git's own history).

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::sys::inotify;

/// The most directories one watch follows (each costs the kernel about 1 KiB).
const MAX_DIRS: usize = 65_536;

/// The most names one command's changes list; past it, the count alone.
const MAX_NAMES: usize = 1_000;

/// What a command changed under the watched root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changed {
    /// Paths relative to the root, sorted (at most [`MAX_NAMES`]), and how many there were.
    Paths(Vec<String>, usize),
    /// Too much to say: the kernel's queue overflowed.
    Unknown,
}

/// The watch of one root.
#[derive(Debug)]
pub struct ChangeWatch {
    inotify: OwnedFd,
    root: PathBuf,
    dirs: HashMap<i32, PathBuf>,
}

impl ChangeWatch {
    /// Watches every directory below `root` (not following links, `.git` left out).
    pub fn new(root: &Path) -> io::Result<Self> {
        let mut watch = Self {
            inotify: inotify::init()?,
            root: root.to_path_buf(),
            dirs: HashMap::new(),
        };
        watch.add_tree(root)?;
        Ok(watch)
    }

    /// How many directories are watched.
    pub fn watched(&self) -> usize {
        self.dirs.len()
    }

    fn add_tree(&mut self, top: &Path) -> io::Result<()> {
        let mut stack = vec![top.to_path_buf()];
        while let Some(dir) = stack.pop() {
            if self.dirs.len() >= MAX_DIRS {
                return Err(io::Error::other("too many directories to watch"));
            }
            let Ok(wd) = inotify::add_watch(&self.inotify, &dir, inotify::WATCHED) else {
                continue;
            };
            self.dirs.insert(wd, dir.clone());
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if is_dir && entry.file_name() != ".git" {
                    stack.push(entry.path());
                }
            }
        }
        Ok(())
    }

    /// Forgets what happened so far (the changes of the tools between commands).
    pub fn skip(&mut self) {
        let _ = self.take();
    }

    /// What changed since the last look.
    pub fn take(&mut self) -> Changed {
        let Ok(events) = inotify::drain_named(&self.inotify) else {
            return Changed::Unknown;
        };
        let mut paths: BTreeSet<PathBuf> = BTreeSet::new();
        let mut new_dirs = Vec::new();
        for event in events {
            if event.mask & libc::IN_Q_OVERFLOW != 0 {
                return Changed::Unknown;
            }
            if event.mask & libc::IN_IGNORED != 0 {
                self.dirs.remove(&event.wd);
                continue;
            }
            let Some(dir) = self.dirs.get(&event.wd) else {
                continue;
            };
            if event.name.is_empty() || event.name == ".git" {
                continue;
            }
            let path = dir.join(&event.name);
            let made_dir = event.mask & libc::IN_ISDIR != 0
                && event.mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0;
            if made_dir {
                new_dirs.push(path.clone());
            }
            if event.mask & libc::IN_ISDIR == 0 {
                paths.insert(path);
            }
        }
        // A directory made (or moved in) during the command: watched from now on, and what it
        // holds already counted as made.
        for dir in new_dirs {
            let before = self.dirs.len();
            let _ = self.add_tree(&dir);
            if self.dirs.len() > before {
                list_files(&dir, &mut paths);
            }
        }
        let relative: Vec<String> = paths
            .iter()
            .filter_map(|p| p.strip_prefix(&self.root).ok())
            .map(|p| p.display().to_string())
            .collect();
        let count = relative.len();
        Changed::Paths(relative.into_iter().take(MAX_NAMES).collect(), count)
    }
}

/// Every file below `dir`, not following links.
fn list_files(dir: &Path, out: &mut BTreeSet<PathBuf>) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            } else {
                out.insert(entry.path());
            }
            if out.len() > MAX_NAMES * 2 {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_command_made_changed_and_removed_is_named_and_nothing_else() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::write(r.join("kept.txt"), "same").unwrap();
        std::fs::write(r.join("old.txt"), "gone soon").unwrap();
        std::fs::write(r.join("edited.txt"), "before").unwrap();
        std::fs::create_dir_all(r.join(".git")).unwrap();
        let mut watch = ChangeWatch::new(r).unwrap();
        assert_eq!(watch.take(), Changed::Paths(Vec::new(), 0));
        std::fs::write(r.join("edited.txt"), "after").unwrap();
        std::fs::remove_file(r.join("old.txt")).unwrap();
        std::fs::create_dir_all(r.join("new/deeper")).unwrap();
        std::fs::write(r.join("new/deeper/made.txt"), "x").unwrap();
        std::fs::write(r.join(".git/index"), "git's own").unwrap();
        let Changed::Paths(paths, count) = watch.take() else {
            panic!("overflow");
        };
        assert_eq!(paths, ["edited.txt", "new/deeper/made.txt", "old.txt"]);
        assert_eq!(count, 3);
        // The new directory is watched from then on.
        std::fs::write(r.join("new/deeper/second.txt"), "y").unwrap();
        assert_eq!(
            watch.take(),
            Changed::Paths(vec!["new/deeper/second.txt".to_owned()], 1)
        );
        // What happened before a look that is skipped is not a command's.
        std::fs::write(r.join("kept.txt"), "by a tool").unwrap();
        watch.skip();
        assert_eq!(watch.take(), Changed::Paths(Vec::new(), 0));
    }
}
