//! The walk of read-only roots (toolchain directories: `~/.cargo`, `~/.rustup`, `~/.pyenv`, …),
//! kept across processes: an index of each directory as last seen — its modification time, its
//! subdirectories, and the files whose name the secret list may mask. A directory whose time is
//! unchanged has the same entries (adding, removing or renaming one changes it), so only the
//! directories that changed are read again; the candidates are decided afresh every time, their
//! content included. A 260,000-entry toolchain costs a `stat` per directory instead of a read of
//! every entry.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::masking::Masking;

/// What the index format is; another is rebuilt.
const VERSION: u32 = 2;

/// One directory as the last walk saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Dir {
    /// Modification time: seconds, nanoseconds.
    mtime: (i64, i64),
    /// Change time (which no one can set back, unlike the modification time) and inode.
    ctime: (i64, i64),
    ino: u64,
    /// Its times were older than [`SETTLED`] when it was read: a change in the same tick of a
    /// coarse clock cannot have gone unseen.
    settled: bool,
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
    /// By path (written as text: hashed and compared as bytes, not component by component).
    dirs: HashMap<String, Dir>,
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
        let mut seen: Vec<(String, Dir)> = Vec::new();
        // Each directory with the descriptor of its parent, where one could be opened: looked
        // up by its name there, not by its whole path.
        let mut stack: Vec<(Option<Rc<OwnedFd>>, PathBuf)> = vec![(None, root.to_path_buf())];
        while let Some((parent, dir)) = stack.pop() {
            let Some(stamp) = Stamp::of_dir(parent.as_deref(), &dir) else {
                continue;
            };
            let known = dir.to_str().and_then(|d| self.dirs.remove(d));
            let (entry, odd) = match known {
                Some(known) if known.settled && stamp.is(&known) => (known, Odd::default()),
                _ => {
                    self.changed = true;
                    read(&dir, &stamp, rule)
                }
            };
            let here = (!entry.dirs.is_empty() || !odd.dirs.is_empty())
                .then(|| match (&parent, dir.file_name()) {
                    (Some(parent), Some(name)) => crate::sys::open_dir_at(parent, name),
                    _ => crate::sys::open_path(&dir),
                })
                .and_then(Result::ok)
                .map(Rc::new);
            for name in &entry.dirs {
                stack.push((here.clone(), dir.join(name)));
            }
            for (name, beside_key) in &entry.candidates {
                found.push((dir.join(name), *beside_key));
            }
            // What the index cannot write down (a name that is not UTF-8) is read every time.
            let keep = odd.dirs.is_empty() && odd.candidates.is_empty();
            stack.extend(odd.dirs.into_iter().map(|d| (here.clone(), d)));
            found.extend(odd.candidates);
            if let Some(text) = dir.to_str().filter(|_| keep) {
                seen.push((text.to_owned(), entry));
            }
        }
        // Directories of other roots stay; those under this one that are gone are dropped.
        if let Some(root) = root.to_str() {
            let before = self.dirs.len();
            self.dirs.retain(|d, _| !below(d, root));
            self.changed |= self.dirs.len() != before;
        }
        self.dirs.extend(seen);
        found
    }
}

/// Whether the path `path` is `root` or below it, compared as text (both as the walk wrote
/// them: no `.` or doubled `/`).
fn below(path: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    path.strip_prefix(root)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/') || root.is_empty())
}

/// How old a directory's times must be for its read to be kept: coarse clocks tick in
/// milliseconds to seconds.
const SETTLED: i64 = 2;

/// A directory's times and inode, as the index compares them.
struct Stamp {
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
}

impl Stamp {
    /// The directory `dir`'s, looked up by name in `parent` where there is one, by path
    /// otherwise; `None` when it is not a directory (a link, gone).
    fn of_dir(parent: Option<&OwnedFd>, dir: &Path) -> Option<Self> {
        let (Some(parent), Some(name)) = (parent, dir.file_name()) else {
            let meta = std::fs::symlink_metadata(dir).ok()?;
            return meta.is_dir().then(|| Self::of(&meta));
        };
        let st = crate::sys::stat_at(parent, name).ok()?;
        (st.st_mode & libc::S_IFMT == libc::S_IFDIR).then_some(Stamp {
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
            ino: st.st_ino,
        })
    }

    fn of(meta: &std::fs::Metadata) -> Self {
        Stamp {
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
        }
    }

    fn is(&self, dir: &Dir) -> bool {
        self.mtime == dir.mtime && self.ctime == dir.ctime && self.ino == dir.ino
    }
}

/// The entries of a directory whose names are not UTF-8: not written down, read every time.
#[derive(Default)]
struct Odd {
    dirs: Vec<PathBuf>,
    candidates: Vec<(PathBuf, bool)>,
}

/// One directory read: its subdirectories and its candidates.
fn read(dir: &Path, stamp: &Stamp, rule: &dyn Masking) -> (Dir, Odd) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let mut entry = Dir {
        mtime: stamp.mtime,
        ctime: stamp.ctime,
        ino: stamp.ino,
        settled: stamp.mtime.0.max(stamp.ctime.0) < now - SETTLED,
        dirs: Vec::new(),
        candidates: Vec::new(),
    };
    let mut odd = Odd::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        // Read again next time.
        entry.settled = false;
        return (entry, odd);
    };
    let entries: Vec<std::fs::DirEntry> = entries.flatten().collect();
    let keys_here = entries
        .iter()
        .any(|e| crate::masking::is_key_name(&e.file_name()));
    for e in entries {
        let Ok(kind) = e.file_type() else {
            continue;
        };
        let os_name = e.file_name();
        let text = os_name.to_string_lossy().into_owned();
        let beside_key = keys_here && Path::new(&os_name).extension().is_none();
        let candidate = kind.is_file() && rule.may_mask(&text, beside_key);
        match os_name.into_string() {
            Ok(name) if kind.is_dir() => entry.dirs.push(name),
            Ok(name) if candidate => entry.candidates.push((name, beside_key)),
            Ok(_) => {}
            Err(_) if kind.is_dir() => odd.dirs.push(e.path()),
            Err(_) if candidate => odd.candidates.push((e.path(), beside_key)),
            Err(_) => {}
        }
    }
    (entry, odd)
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
        assert!(!index.dirs.contains_key(root.join("a/b").to_str().unwrap()));
        assert!(below("/a/b", "/a") && below("/a", "/a") && below("/a/b", "/"));
        assert!(!below("/ab", "/a") && !below("/a", "/a/b"));
    }

    #[test]
    fn a_modification_time_put_back_does_not_hide_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let meta = std::fs::symlink_metadata(dir.path()).unwrap();
        let known = Dir {
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            settled: true,
            dirs: Vec::new(),
            candidates: Vec::new(),
        };
        assert!(Stamp::of(&meta).is(&known));
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.path().join("secret.pem"), "x").unwrap();
        // `touch -d` puts the modification time back; the change time cannot be.
        let modified = meta.modified().unwrap();
        std::fs::File::open(dir.path())
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(modified))
            .unwrap();
        let after = std::fs::symlink_metadata(dir.path()).unwrap();
        assert_eq!(
            after.mtime_nsec(),
            meta.mtime_nsec(),
            "the time is put back"
        );
        assert!(!Stamp::of(&after).is(&known));
    }

    #[test]
    fn names_that_are_not_utf8_are_looked_into_every_time() {
        use std::os::unix::ffi::OsStrExt as _;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tc");
        let odd = root.join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
        std::fs::create_dir_all(&odd).unwrap();
        std::fs::write(odd.join("secret.txt"), "x").unwrap();
        std::fs::write(root.join(std::ffi::OsStr::from_bytes(b"secret\xff")), "x").unwrap();
        let file = dir.path().join("index.json");
        for _ in 0..2 {
            let mut index = Index::load(&file, &Names);
            let mut found = index.candidates(&root, &Names);
            found.sort();
            assert_eq!(found.len(), 2, "{found:?}");
            assert!(found.contains(&(odd.join("secret.txt"), false)));
            index.save(&file);
            assert!(file.exists());
        }
    }
}
