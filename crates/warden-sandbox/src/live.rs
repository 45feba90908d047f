//! Walks kept for a session. A long-lived process (`warden run`) walks each root a command can
//! read once, watching every directory with inotify as it reads it, and before each later
//! command reads again only the directories whose entries changed since: a new file, a removed
//! one, a rename, a new hard link (its link count changes), new content. What the walk found,
//! directory by directory, is kept in memory, so a command on an unchanged 50,000-file tree
//! pays one `read` of the event queue and the copy of what the plan needs.
//!
//! Each directory is opened once, without following a link, and checked to be the directory
//! its parent's entry named, at its path (else the root is left to the plain walk); the watch
//! is added and its entries and files' heads read through that descriptor, so the watch is on
//! the very directory that was read. A directory's entries carry their inodes: one renamed
//! over another of the same name is read anew. What the walk cannot keep it leaves to the plain walk of every command: a root on a
//! file system whose changes another machine may make unseen (NFS, 9p, FUSE), a root with more
//! than [`MAX_WATCHES`] directories or when the kernel's watch limit is reached, the same
//! directory reached twice (a bind mount inside the root). When the event queue overflows the
//! root is walked again whole, and when the mount table changes (a file system mounted over a
//! directory of a root changes what is there without an event in it), every root is.
//!
//! One change is not reported to a directory's watch: a new name made *outside* the roots for
//! a file inside them (`ln ws/notes.txt ~/notes`), which changes only the file's link count.
//! Such a file is not masked until its directory changes again. What it holds is the
//! workspace's own, readable and writable to the command before the link was made; a name
//! made inside the roots for a file outside (`ln ~/.ssh/id_rsa ws/x`, the way a secret gets
//! in) is a new entry, reported and masked on the next command.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::links::{DirScan, Identity, RealRoot, Seen, scan_dir};
use crate::masking::{Kept, Masking};
use crate::sys::inotify;

/// The most directories one root's walk watches (each watch costs the kernel about 1 KiB).
pub(crate) const MAX_WATCHES: usize = 65_536;

/// The most roots a session keeps walks of.
const MAX_ROOTS: usize = 16;

/// How many times a refresh reads the queue again for changes made while it read.
const ROUNDS: usize = 3;

/// File systems whose every change inotify reports, whoever makes it: local ones.
const LOCAL: [i64; 9] = [
    0xEF53,      // ext2, ext3, ext4
    0x5846_5342, // xfs
    0x9123_683E, // btrfs
    0x0102_1994, // tmpfs
    0x8584_58F6, // ramfs
    0xF2F5_2010, // f2fs
    0x794C_7630, // overlay
    0x2FC1_2FC1, // zfs
    0xCA45_1A4E, // bcachefs
];

fn local(path: &Path) -> bool {
    crate::sys::fs_magic(path).is_some_and(|magic| LOCAL.contains(&magic))
}

/// The kept walks of a session's roots.
#[derive(Default)]
pub(crate) struct Live {
    /// By root: its walk, or `None` when it cannot be kept.
    roots: HashMap<PathBuf, Option<LiveRoot>>,
    /// This process's mount table, open since the walks were made: a file system mounted or
    /// unmounted in a root changes what is there without an event in its directory.
    mounts: Option<std::fs::File>,
}

impl Live {
    /// Adds the walk of `root` to `seen` and `found`, from what is kept brought up to date;
    /// `false` when it cannot be kept and the caller walks it.
    pub(crate) fn walk(
        &mut self,
        root: &Path,
        rule: Option<&dyn Masking>,
        seen: &mut Seen,
        found: &mut Kept,
    ) -> bool {
        let changed = self.mounts.as_ref().is_none_or(inotify::mounts_changed);
        if changed {
            // Every walk is made again, from a table opened before them.
            self.roots.clear();
            match std::fs::File::open("/proc/self/mountinfo") {
                Ok(table) => self.mounts = Some(table),
                Err(_) => return false,
            }
        }
        if !self.roots.contains_key(root) {
            if self.roots.len() >= MAX_ROOTS {
                return false;
            }
            self.roots
                .insert(root.to_path_buf(), LiveRoot::new(root, rule));
        }
        let Some(Some(live)) = self.roots.get_mut(root) else {
            return false;
        };
        if live.refresh(rule).is_err() {
            self.roots.insert(root.to_path_buf(), None);
            return false;
        }
        for dir in live.dirs.values() {
            dir.scan.add_to(seen, found);
        }
        true
    }

    /// How many directories are watched, over every root.
    #[cfg(test)]
    pub(crate) fn watched(&self) -> usize {
        self.roots.values().flatten().map(|r| r.wds.len()).sum()
    }
}

/// The walk cannot be kept: the caller walks the root every time.
#[derive(Debug)]
struct Unkept;

/// One directory as last read.
struct Dir {
    path: Arc<Path>,
    /// Its watch; `None` when it could not be read (it counts as unreadable).
    wd: Option<i32>,
    /// The inode its parent's entry names.
    entry_ino: u64,
    scan: DirScan,
}

struct LiveRoot {
    root: PathBuf,
    inotify: OwnedFd,
    /// The directory each watch is on.
    wds: HashMap<i32, PathBuf>,
    dirs: BTreeMap<PathBuf, Dir>,
    /// For each file's identity, the directories that hold a name of it: a new name made for a
    /// file, or one removed, changes its link count, which only the directory of that name
    /// reports; the others are read again.
    names: HashMap<Identity, Vec<Arc<Path>>>,
    /// Files whose names changed in this round: their other directories are read again.
    touched: Vec<Identity>,
    dev: u64,
}

impl LiveRoot {
    fn new(root: &Path, rule: Option<&dyn Masking>) -> Option<Self> {
        let meta = std::fs::symlink_metadata(root).ok()?;
        if !meta.is_dir() || !local(root) {
            return None;
        }
        let mut live = LiveRoot {
            root: root.to_path_buf(),
            inotify: inotify::init().ok()?,
            wds: HashMap::new(),
            dirs: BTreeMap::new(),
            names: HashMap::new(),
            touched: Vec::new(),
            dev: meta.dev(),
        };
        let real = RealRoot::of(root);
        live.add_tree(root.to_path_buf(), meta.ino(), &real, rule)
            .ok()?;
        Some(live)
    }

    /// Reads again what changed since the last time.
    fn refresh(&mut self, rule: Option<&dyn Masking>) -> Result<(), Unkept> {
        for _ in 0..ROUNDS {
            let events = inotify::drain(&self.inotify).map_err(|_| Unkept)?;
            if events.is_empty() {
                return Ok(());
            }
            let mut stale = BTreeSet::new();
            let mut whole = false;
            for event in events {
                if event.wd == -1 || event.mask & libc::IN_Q_OVERFLOW != 0 {
                    whole = true;
                    break;
                }
                let Some(dir) = self.wds.get(&event.wd).cloned() else {
                    // A watch ended by us, or a directory already let go.
                    continue;
                };
                let gone = libc::IN_IGNORED | libc::IN_UNMOUNT;
                let moved = libc::IN_DELETE_SELF | libc::IN_MOVE_SELF;
                if event.mask & (gone | moved) != 0 {
                    if dir == self.root {
                        whole = true;
                        break;
                    }
                    if event.mask & gone != 0 {
                        // The watch ended without us (a file system unmounted from under it):
                        // what is there now is read with its parent.
                        self.wds.remove(&event.wd);
                        self.drop_tree(&dir);
                    }
                    if let Some(parent) = dir.parent() {
                        stale.insert(parent.to_path_buf());
                    }
                } else {
                    stale.insert(dir);
                }
            }
            if whole {
                *self = LiveRoot::new(&self.root, rule).ok_or(Unkept)?;
                continue;
            }
            let root = self.root.clone();
            let real = RealRoot::of(&root);
            let mut read_now = HashSet::new();
            for dir in stale {
                self.reread(&dir, &real, rule)?;
                read_now.insert(dir);
            }
            // The other directories of files whose link counts changed.
            let mut done = HashSet::new();
            while let Some(id) = self.touched.pop() {
                if !done.insert(id) {
                    continue;
                }
                let others: Vec<PathBuf> = self
                    .names
                    .get(&id)
                    .into_iter()
                    .flatten()
                    .map(|d| d.to_path_buf())
                    .filter(|d| !read_now.contains(d))
                    .collect();
                for dir in others {
                    self.reread(&dir, &real, rule)?;
                    read_now.insert(dir);
                }
            }
        }
        // Still changing after every round (a writer busy in the root): what the command gets
        // is a walk of the root as it is now, as when nothing is kept.
        if !inotify::pending(&self.inotify) {
            return Ok(());
        }
        *self = LiveRoot::new(&self.root, rule).ok_or(Unkept)?;
        Ok(())
    }

    /// Keeps `dir` as read: its watch, its files' identities, and the files whose names are
    /// new to it.
    fn insert_dir(&mut self, dir: Dir, before: Option<&DirScan>) {
        for id in &dir.scan.files {
            self.names
                .entry(*id)
                .or_default()
                .push(Arc::clone(&dir.path));
        }
        self.touch(&dir.scan, before);
        self.dirs.insert(dir.path.to_path_buf(), dir);
    }

    /// Lets go of what is kept of `dir` (not of its watch).
    fn remove_dir(&mut self, path: &Path) -> Option<Dir> {
        let dir = self.dirs.remove(path)?;
        for id in &dir.scan.files {
            if let Some(names) = self.names.get_mut(id) {
                names.retain(|d| !Arc::ptr_eq(d, &dir.path));
                if names.is_empty() {
                    self.names.remove(id);
                }
            }
        }
        Some(dir)
    }

    /// Notes the multiply-linked files of `now` that `before` did not hold as they are now,
    /// and those of `before` that `now` does not.
    fn touch(&mut self, now: &DirScan, before: Option<&DirScan>) {
        let key = |(id, nlink, _): &(Identity, u64, PathBuf)| (*id, *nlink);
        let before_keys: HashSet<(Identity, u64)> = before
            .into_iter()
            .flat_map(|b| b.linked.iter().map(key))
            .collect();
        let now_keys: HashSet<(Identity, u64)> = now.linked.iter().map(key).collect();
        self.touched.extend(
            now_keys
                .symmetric_difference(&before_keys)
                .map(|(id, _)| *id),
        );
    }

    /// Reads `dir` again, lets go of the subdirectories gone from it and walks those new to it
    /// (or renamed over one of the same name).
    fn reread(
        &mut self,
        dir: &Path,
        real: &RealRoot<'_>,
        rule: Option<&dyn Masking>,
    ) -> Result<(), Unkept> {
        let Some(entry_ino) = self.dirs.get(dir).map(|d| d.entry_ino) else {
            // Let go of while its events were read: its parent is read again.
            return Ok(());
        };
        let Some(new) = self.read(dir, entry_ino, real, rule)? else {
            // Gone, and its parent's event says so.
            self.drop_tree(dir);
            return Ok(());
        };
        let old = self.remove_dir(dir).ok_or(Unkept)?;
        for (sub, _) in &old.scan.subdirs {
            if !new.scan.subdirs.iter().any(|(s, _)| s == sub) {
                self.drop_tree(sub);
            }
        }
        if let Some(wd) = old.wd
            && new.wd != Some(wd)
            && self.wds.get(&wd).is_some_and(|p| p == dir)
        {
            self.wds.remove(&wd);
            inotify::rm_watch(&self.inotify, wd);
        }
        let subdirs = new.scan.subdirs.clone();
        self.insert_dir(new, Some(&old.scan));
        for (sub, ino) in subdirs {
            let same = self
                .dirs
                .get(&sub)
                .is_some_and(|d| d.entry_ino == ino && d.wd.is_some());
            if !same {
                self.drop_tree(&sub);
                self.add_tree(sub, ino, real, rule)?;
            }
        }
        Ok(())
    }

    /// Walks and watches `top` and everything below it.
    fn add_tree(
        &mut self,
        top: PathBuf,
        entry_ino: u64,
        real: &RealRoot<'_>,
        rule: Option<&dyn Masking>,
    ) -> Result<(), Unkept> {
        let mut todo = vec![(top, entry_ino)];
        while let Some((dir, entry_ino)) = todo.pop() {
            let Some(found) = self.read(&dir, entry_ino, real, rule)? else {
                continue;
            };
            todo.extend(found.scan.subdirs.iter().cloned());
            self.insert_dir(found, None);
        }
        Ok(())
    }

    /// Opens, watches and reads `dir`; `None` when it is gone.
    fn read(
        &mut self,
        dir: &Path,
        entry_ino: u64,
        real: &RealRoot<'_>,
        rule: Option<&dyn Masking>,
    ) -> Result<Option<Dir>, Unkept> {
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(dir);
        let file = match opened {
            Ok(file) => file,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)
                ) =>
            {
                return Ok(None);
            }
            Err(_) => {
                // What it holds is unknown: hidden, like any directory a walk cannot read.
                let mut scan = DirScan::default();
                scan.found.unreadable.push(dir.to_path_buf());
                return Ok(Some(Dir {
                    path: Arc::from(dir),
                    wd: None,
                    entry_ino,
                    scan,
                }));
            }
        };
        let at = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        let meta = file.metadata().map_err(|_| Unkept)?;
        // The directory opened must be the one the parent's entry named, at `dir` now: not one
        // exchanged for it in between (`renameat2` with `RENAME_EXCHANGE`), nor one reached
        // through an ancestor swapped for a link. A mount point's entry names the directory
        // under it; its own path still has to match.
        let at_dir = std::fs::read_link(&at).is_ok_and(|p| p == real.at(dir));
        let named = meta.ino() == entry_ino || meta.dev() != self.dev;
        if !at_dir || !named {
            return Err(Unkept);
        }
        if meta.dev() != self.dev && !local(&at) {
            return Err(Unkept);
        }
        if self.wds.len() >= MAX_WATCHES {
            return Err(Unkept);
        }
        let mut wd =
            inotify::add_watch(&self.inotify, &at, inotify::WATCHED).map_err(|_| Unkept)?;
        if let Some(other) = self.wds.get(&wd).cloned()
            && other != dir
            && self.dirs.contains_key(&other)
        {
            let still_there = std::fs::symlink_metadata(&other)
                .is_ok_and(|m| m.ino() == meta.ino() && m.dev() == meta.dev());
            if still_there {
                // One directory at two places of the root (a bind mount): its events could be
                // told for one of them only.
                return Err(Unkept);
            }
            // Renamed here from where it was kept, whose parent is read later in this round:
            // let go of it there, and watch it anew here.
            self.drop_tree(&other);
            wd = inotify::add_watch(&self.inotify, &at, inotify::WATCHED).map_err(|_| Unkept)?;
        }
        self.wds.insert(wd, dir.to_path_buf());
        let mut scan = scan_dir(dir, &at, &self.root, real, rule);
        // An entry gone while it was read has an event queued: the next round reads it again.
        scan.found.changed = false;
        Ok(Some(Dir {
            path: Arc::from(dir),
            wd: Some(wd),
            entry_ino,
            scan,
        }))
    }

    /// Lets go of `top` and everything kept below it.
    fn drop_tree(&mut self, top: &Path) {
        let below: Vec<PathBuf> = self
            .dirs
            .range(top.to_path_buf()..)
            .map(|(p, _)| p)
            .take_while(|p| p.starts_with(top))
            .cloned()
            .collect();
        for path in below {
            let Some(dir) = self.remove_dir(&path) else {
                continue;
            };
            self.touch(&DirScan::default(), Some(&dir.scan));
            if let Some(wd) = dir.wd
                && self.wds.get(&wd) == Some(&path)
            {
                self.wds.remove(&wd);
                inotify::rm_watch(&self.inotify, wd);
            }
        }
    }
}

#[cfg(test)]
mod tests;
