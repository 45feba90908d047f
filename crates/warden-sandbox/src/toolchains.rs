//! The walk of read-only roots (toolchain directories: `~/.cargo`, `~/.rustup`, `~/.pyenv`, …),
//! kept across processes: an index of each directory as last seen — its modification time, its
//! subdirectories, and the files whose name the secret list may mask. A directory whose time is
//! unchanged has the same entries (adding, removing or renaming one changes it), so only the
//! directories that changed are read again; the candidates are decided afresh every time, their
//! content included. A 260,000-entry toolchain costs a `stat` per directory instead of a read of
//! every entry.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::masking::Masking;

/// What the index format is; another is rebuilt.
const VERSION: u32 = 1;

/// One directory as the last walk saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Dir {
    /// Modification time: seconds, nanoseconds.
    mtime: (i64, i64),
    /// Its subdirectories, by name.
    dirs: Vec<String>,
    /// Its files the rule may mask: name, and whether it is extension-less beside a key.
    candidates: Vec<(String, bool)>,
}

/// Every directory of the read-only roots as last seen, for one rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Index {
    version: u32,
    /// The rule it was made for ([`Masking::fingerprint`]).
    rule: String,
    dirs: HashMap<PathBuf, Dir>,
    /// A directory was read or dropped since it was loaded.
    #[serde(skip)]
    changed: bool,
}

impl Index {
    /// The index at `path`, or an empty one (missing, unreadable, of another version or rule).
    pub(crate) fn load(path: &Path, rule: &dyn Masking) -> Index {
        let fresh = Index {
            version: VERSION,
            rule: rule.fingerprint(),
            dirs: HashMap::new(),
            changed: true,
        };
        // Only a regular file, never followed through a link.
        let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
        let loaded: Option<Index> = regular
            .then(|| std::fs::read(path).ok())
            .flatten()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        match loaded {
            Some(index) if index.version == VERSION && index.rule == fresh.rule => index,
            _ => fresh,
        }
    }

    /// Writes the index to `path`, when it changed: a new file beside it, renamed into place.
    pub(crate) fn save(&self, path: &Path) {
        if !self.changed {
            return;
        }
        let Some(dir) = path.parent() else {
            return;
        };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let Ok(bytes) = serde_json::to_vec(self) else {
            return;
        };
        let temp = dir.join(format!(".toolchains.{}.tmp", std::process::id()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
            .and_then(|()| std::fs::rename(&temp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
    }

    /// The files below `root` the rule may mask (with whether each is beside a key), reading
    /// again only the directories that changed since the index saw them.
    pub(crate) fn candidates(&mut self, root: &Path, rule: &dyn Masking) -> Vec<(PathBuf, bool)> {
        let mut found = Vec::new();
        let mut seen: HashMap<PathBuf, Dir> = HashMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(meta) = std::fs::symlink_metadata(&dir) else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            let mtime = (meta.mtime(), meta.mtime_nsec());
            let entry = match self.dirs.remove(&dir) {
                Some(known) if known.mtime == mtime => known,
                _ => {
                    self.changed = true;
                    read(&dir, mtime, rule)
                }
            };
            for name in &entry.dirs {
                stack.push(dir.join(name));
            }
            for (name, beside_key) in &entry.candidates {
                found.push((dir.join(name), *beside_key));
            }
            seen.insert(dir, entry);
        }
        // Directories of other roots stay; those under this one that are gone are dropped.
        let before = self.dirs.len();
        self.dirs.retain(|d, _| !d.starts_with(root));
        self.changed |= self.dirs.len() != before;
        self.dirs.extend(seen);
        found
    }
}

/// One directory read: its subdirectories and its candidates.
fn read(dir: &Path, mtime: (i64, i64), rule: &dyn Masking) -> Dir {
    let mut entry = Dir {
        mtime,
        dirs: Vec::new(),
        candidates: Vec::new(),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return entry;
    };
    let entries: Vec<std::fs::DirEntry> = entries.flatten().collect();
    let keys_here = entries
        .iter()
        .any(|e| crate::links::is_key_name(&e.file_name()));
    for e in entries {
        let Ok(kind) = e.file_type() else {
            continue;
        };
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        if kind.is_dir() {
            entry.dirs.push(name);
        } else if kind.is_file() {
            let beside_key = keys_here && Path::new(&name).extension().is_none();
            if rule.may_mask(&name, beside_key) {
                entry.candidates.push((name, beside_key));
            }
        }
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::masking::MaskDecision;

    /// Masks files named `secret*`.
    #[derive(Debug)]
    struct Names;

    impl Masking for Names {
        fn decide(
            &self,
            path: &Path,
            _: bool,
            _: &mut dyn FnMut() -> Option<Vec<u8>>,
        ) -> MaskDecision {
            let secret = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("secret"));
            if secret {
                MaskDecision::Masked
            } else {
                MaskDecision::Readable
            }
        }
        fn credential_paths(&self) -> Vec<(PathBuf, MaskDecision)> {
            Vec::new()
        }
        fn may_mask(&self, name: &str, _: bool) -> bool {
            name.starts_with("secret")
        }
    }

    #[test]
    fn only_changed_directories_are_read_again_and_the_index_survives_a_process() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tc");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/secret.txt"), "x").unwrap();
        std::fs::write(root.join("a/plain.txt"), "x").unwrap();
        let file = dir.path().join("index.json");
        let mut index = Index::load(&file, &Names);
        let first = index.candidates(&root, &Names);
        assert_eq!(first, [(root.join("a/b/secret.txt"), false)]);
        index.save(&file);
        // A new secret in a directory: its time changes, it is read again.
        std::fs::write(root.join("a/secret2"), "x").unwrap();
        let mut index = Index::load(&file, &Names);
        assert_eq!(index.dirs.len(), 3);
        let mut again = index.candidates(&root, &Names);
        again.sort();
        assert_eq!(
            again,
            [
                (root.join("a/b/secret.txt"), false),
                (root.join("a/secret2"), false)
            ]
        );
        // A removed directory leaves the index.
        std::fs::remove_dir_all(root.join("a/b")).unwrap();
        let gone = index.candidates(&root, &Names);
        assert_eq!(gone, [(root.join("a/secret2"), false)]);
        assert!(!index.dirs.contains_key(&root.join("a/b")));
    }
}
