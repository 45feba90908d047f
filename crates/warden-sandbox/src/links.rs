//! Hard links that lead out of the sandbox's roots. A file in the workspace may share its inode
//! with a file elsewhere (made by `ln`, `cp -al`, a package store); through the workspace's bind
//! the command could read or write that other file. Every non-directory whose link count is
//! higher than the number of its links found under the roots has a link outside, and is masked.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::masking::{Kept, MaskDecision, MaskRule, Masking};

/// Per (device, inode): the link count, and the names found under the roots.
pub(crate) type Seen = HashMap<(u64, u64), (u64, Vec<PathBuf>)>;

/// A file's identity: (device, inode).
pub(crate) type Identity = (u64, u64);

/// What the walk found: files with a link outside the roots, files sharing their inode with
/// one of the `hidden` or `read_only` identities (another name for a protected file), files the
/// masking rule masks, and files it would have masked but for the user's `unmask`.
#[derive(Debug, Default)]
pub(crate) struct Linked {
    pub(crate) outside: Vec<PathBuf>,
    pub(crate) hidden: Vec<PathBuf>,
    pub(crate) read_only: Vec<PathBuf>,
    pub(crate) masked: Vec<PathBuf>,
    pub(crate) unmasked: Vec<PathBuf>,
    /// Directories the walk could not read: what they hold is unknown, so they are hidden.
    pub(crate) unreadable: Vec<PathBuf>,
    /// The roots kept changing while they were walked: nothing may run.
    pub(crate) changed: bool,
}

/// How many times the walk starts over when the roots change under it.
const WALK_TRIES: usize = 3;

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

/// One walk of `roots`: the files with a link outside all of them, the other names of the
/// `hidden` and `read_only` files, and what `rule` masks (or the user unmasked). The walks of
/// `kept_roots` (read-only ones a command cannot change) come from `mask` when an earlier
/// command made them.
pub(crate) fn linked(
    roots: &Roots<'_>,
    hidden: &HashSet<Identity>,
    read_only: &HashSet<Identity>,
    mask: &MaskRule,
) -> Linked {
    let rule = mask.rule().map(|r| &**r);
    let full = outermost(roots.writable);
    let (seen, mut seen_read, mut found) = walk_roots(roots, &full, rule, mask);
    if !hidden.is_empty() {
        // A hidden file has other names (`ln ~/.ssh/id_rsa …`): one could sit in a toolchain
        // directory too, so those are walked whole, like any readable root.
        for root in outermost(roots.kept) {
            if !full.iter().any(|r| root.starts_with(r)) {
                walk(root, &mut seen_read, rule, &mut found);
            }
        }
    } else if let Some(rule) = rule {
        kept_roots(roots.kept, &full, mask, rule, &mut found);
    }
    let mut linked = Linked {
        masked: found.masked,
        unmasked: found.unmasked,
        unreadable: found.unreadable,
        changed: found.changed,
        ..Linked::default()
    };
    // Another name of a masked file is masked too: `ln .env notes.txt` made before the run.
    // The walks recorded every multiply-linked file they met; only what a kept root masked
    // needs a look of its own.
    let masked_set: HashSet<&PathBuf> = linked.masked.iter().collect();
    let walked = |p: &Path| {
        full.iter().any(|r| p.starts_with(r)) || roots.readable.iter().any(|r| p.starts_with(r))
    };
    let mut masked_ids: HashSet<Identity> = seen
        .iter()
        .chain(&seen_read)
        .filter(|(_, (_, paths))| paths.iter().any(|p| masked_set.contains(p)))
        .map(|(id, _)| *id)
        .collect();
    masked_ids.extend(
        linked
            .masked
            .iter()
            .filter(|p| !walked(p))
            .filter_map(|p| std::fs::symlink_metadata(p).ok())
            .filter(|m| m.nlink() > 1)
            .map(|m| (m.dev(), m.ino())),
    );
    for ((dev, ino), (nlink, paths)) in seen_read {
        if hidden.contains(&(dev, ino)) {
            linked.hidden.extend(paths);
        } else if masked_ids.contains(&(dev, ino)) {
            linked.masked.extend(paths);
        } else if let Some(rule) = rule
            && u64::try_from(paths.len()).unwrap_or(u64::MAX) < nlink
        {
            // Another name of a file elsewhere (`ln ~/.ssh/id_rsa notes`): masked when what it
            // holds is a private key, whatever its name here.
            for path in paths {
                let head = &mut || crate::masking::head_of(&path, LINK_SNIFF);
                if rule.decide(&path, true, head) == MaskDecision::Masked {
                    linked.masked.push(path);
                }
            }
        }
    }
    for (id, (_, paths)) in &seen {
        if masked_ids.contains(id) {
            linked.masked.extend(paths.iter().cloned());
        }
    }
    for ((dev, ino), (nlink, paths)) in seen {
        let id = (dev, ino);
        if hidden.contains(&id) {
            linked.hidden.extend(paths);
        } else if u64::try_from(paths.len()).unwrap_or(u64::MAX) < nlink {
            linked.outside.extend(paths);
        } else if read_only.contains(&id) {
            linked.read_only.extend(paths);
        }
    }
    for list in [
        &mut linked.outside,
        &mut linked.hidden,
        &mut linked.read_only,
        &mut linked.masked,
        &mut linked.unmasked,
        &mut linked.unreadable,
    ] {
        list.sort();
        list.dedup();
    }
    linked
}

/// The walks of the writable roots `full` (whole) and the other readable ones: what they
/// found, and the multiply-linked files of each kind. A directory or file listed and then gone
/// was moved while the walk went on (another command's `mv`): what it holds may sit where the
/// walk had already been. The walk starts over, and after a few tries, says so.
fn walk_roots(
    roots: &Roots<'_>,
    full: &[&PathBuf],
    rule: Option<&dyn Masking>,
    mask: &MaskRule,
) -> (Seen, Seen, Kept) {
    let mut tries = 0;
    loop {
        let mut seen = Seen::new();
        let mut found = Kept::default();
        for root in full {
            if !mask.kept_walk(root, rule, &mut seen, &mut found) {
                walk(root, &mut seen, rule, &mut found);
            }
        }
        // Read-only roots: their links outside are what the user let be read, but another name
        // of a hidden file is hidden there too.
        let mut seen_read = Seen::new();
        for root in outermost(roots.readable) {
            if !full.iter().any(|r| root.starts_with(r))
                && !mask.kept_walk(root, rule, &mut seen_read, &mut found)
            {
                walk(root, &mut seen_read, rule, &mut found);
            }
        }
        tries += 1;
        if !found.changed || tries == WALK_TRIES {
            return (seen, seen_read, found);
        }
    }
}

/// How much of a readable root's file with a link elsewhere is read to tell a private key:
/// keys are small, and such files may be many (a package store's).
const LINK_SNIFF: u64 = 16 * 1024;

/// The read-only roots no command can change (toolchain directories): what an earlier command
/// under this rule found there, else the index of earlier processes, else a walk.
fn kept_roots(
    kept: &[PathBuf],
    full: &[&PathBuf],
    mask: &MaskRule,
    rule: &dyn Masking,
    found: &mut Kept,
) {
    // The index of earlier processes, loaded only when a root is walked at all.
    let mut index: Option<crate::toolchains::Index> = None;
    for root in outermost(kept) {
        if full.iter().any(|r| root.starts_with(r)) {
            continue;
        }
        let kept = mask.read_only_root(root, || {
            let Some(at) = mask.index() else {
                return names_walk(root, rule);
            };
            let index = index.get_or_insert_with(|| crate::toolchains::Index::load(at, rule));
            decide_all(root, index, rule)
        });
        // What was masked then and is gone now has no mount point left.
        found
            .masked
            .extend(kept.masked.into_iter().filter(|p| p.is_file()));
        found
            .unmasked
            .extend(kept.unmasked.into_iter().filter(|p| p.is_file()));
        found.unreadable.extend(kept.unreadable);
    }
    if let (Some(index), Some(at)) = (&index, mask.index()) {
        index.save(at);
    }
}

/// The roots of one command, by how the walk treats them.
pub(crate) struct Roots<'a> {
    /// Writable roots and the workspace: walked every time, links outside masked.
    pub(crate) writable: &'a [PathBuf],
    /// Other readable roots: walked every time.
    pub(crate) readable: &'a [PathBuf],
    /// Read-only roots no command can change (toolchain directories): walked once per rule.
    pub(crate) kept: &'a [PathBuf],
}

/// `roots` without those inside another.
fn outermost(roots: &[PathBuf]) -> Vec<&PathBuf> {
    let mut outer: Vec<&PathBuf> = Vec::new();
    let mut sorted: Vec<&PathBuf> = roots.iter().collect();
    sorted.sort_by_key(|p| p.components().count());
    for root in sorted {
        if !outer.iter().any(|o| root.starts_with(o)) {
            outer.push(root);
        }
    }
    outer
}

/// The files under `roots` that share their inode with a file outside all of them.
#[cfg(test)]
pub(crate) fn leading_outside(roots: &[PathBuf]) -> Vec<PathBuf> {
    let none = HashSet::new();
    let roots = Roots {
        writable: roots,
        readable: &[],
        kept: &[],
    };
    linked(&roots, &none, &none, &MaskRule::default()).outside
}

/// What the rule says of each candidate of `root` (what the index kept of a file unchanged
/// since, else decided now).
fn decide_all(root: &Path, index: &mut crate::toolchains::Index, rule: &dyn Masking) -> Kept {
    let mut found = Kept::default();
    let real = RealRoot::of(root);
    for candidate in index.candidates(root, rule) {
        let path = &candidate.path;
        let decided = index.verdict(&candidate, || {
            rule.decide(&real.at(path), candidate.beside_key, &mut || {
                crate::masking::head(path)
            })
        });
        if let Some(decision) = decided {
            found.record(candidate.path, decision);
        }
    }
    found
}

/// A root's real path, for the rule: a root reached through a link (a home directory that
/// is one) is decided where it really is, and masked where the command sees it.
pub(crate) struct RealRoot<'a> {
    root: &'a Path,
    real: Option<PathBuf>,
}

impl<'a> RealRoot<'a> {
    pub(crate) fn of(root: &'a Path) -> Self {
        let real = root.canonicalize().ok().filter(|r| r != root);
        RealRoot { root, real }
    }

    /// `path` (below the root) at the root's real place.
    pub(crate) fn at(&self, path: &Path) -> PathBuf {
        match (&self.real, path.strip_prefix(self.root)) {
            (Some(real), Ok(rest)) if !rest.as_os_str().is_empty() => real.join(rest),
            (Some(real), Ok(_)) => real.clone(),
            _ => path.to_path_buf(),
        }
    }
}

/// Whether a directory's entries hold a `*.pem`, `*.key` or `*.crt` file.
fn holds_keys(entries: &[std::fs::DirEntry]) -> bool {
    entries
        .iter()
        .any(|e| crate::masking::is_key_name(&e.file_name()))
}

/// The entries of `dir`, or `None` when it cannot be read (and is not simply gone): what it
/// holds is unknown, and it is recorded as unreadable.
fn entries_of(
    read_at: &Path,
    dir: &Path,
    found: &mut Kept,
    root: &Path,
) -> Option<Vec<std::fs::DirEntry>> {
    let read = std::fs::read_dir(read_at).and_then(Iterator::collect::<std::io::Result<Vec<_>>>);
    match read {
        Ok(entries) => Some(entries),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A root that is not there has nothing in it; a directory listed and gone moved.
            found.changed |= dir != root;
            None
        }
        Err(_) => {
            found.unreadable.push(dir.to_path_buf());
            None
        }
    }
}

/// The walk of a read-only root for masking only: names from the directory entries, a `stat`
/// or a read only for files whose name the rule may mask.
fn names_walk(root: &Path, rule: &dyn Masking) -> Kept {
    let mut found = Kept::default();
    let real = RealRoot::of(root);
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Some(entries) = entries_of(&dir, &dir, &mut found, root) else {
            continue;
        };
        let keys_here = holds_keys(&entries);
        for entry in entries {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                dirs.push(entry.path());
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            // A name that is not UTF-8 is matched as its lossy text (`clé.pem` in Latin-1 is
            // still a `.pem`).
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let beside_key = keys_here && Path::new(&*name).extension().is_none();
            if !rule.may_mask(&name, beside_key) {
                continue;
            }
            let path = entry.path();
            let decision = rule.decide(&real.at(&path), beside_key, &mut || {
                crate::masking::head(&path)
            });
            found.record(path, decision);
        }
    }
    found
}

/// Records every multiply-linked non-directory under `root` (a directory, or a single file),
/// and asks `rule` about every regular file: what it masks, and what the user unmasked.
/// Directory entries carry their type, so only non-directories are `stat`ed.
pub(crate) fn walk(root: &Path, seen: &mut Seen, rule: Option<&dyn Masking>, found: &mut Kept) {
    let real = RealRoot::of(root);
    let Ok(top) = std::fs::symlink_metadata(root) else {
        return;
    };
    if top.is_file() {
        // A root of one file: decided as such, what sits beside it read from its directory.
        if let Some(rule) = rule {
            let beside_key = Path::new(root.file_name().unwrap_or_default())
                .extension()
                .is_none()
                && root.parent().is_some_and(|dir| {
                    std::fs::read_dir(dir)
                        .into_iter()
                        .flatten()
                        .flatten()
                        .any(|e| crate::masking::is_key_name(&e.file_name()))
                });
            let head = &mut || crate::masking::head(root);
            let decision = rule.decide(&real.at(root), beside_key, head);
            found.record(root.to_path_buf(), decision);
        }
        note_links(seen, &top, root.to_path_buf());
        return;
    }
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let scan = scan_dir(&dir, &dir, root, &real, rule);
        scan.add_to(seen, found);
        dirs.extend(scan.subdirs.into_iter().map(|(d, _)| d));
    }
}

/// What one directory's entries hold, for the walk.
#[derive(Debug, Default)]
pub(crate) struct DirScan {
    /// Its subdirectories, each with the inode its entry names.
    pub(crate) subdirs: Vec<(PathBuf, u64)>,
    /// Its multiply-linked non-directories: identity, link count and path.
    pub(crate) linked: Vec<(Identity, u64, PathBuf)>,
    /// The identity of each of its non-directories.
    pub(crate) files: Vec<Identity>,
    /// What the rule said of its files, whether it could not be read, and whether an entry
    /// was gone when looked at.
    pub(crate) found: Kept,
}

impl DirScan {
    /// Adds what the directory holds to a walk's findings.
    pub(crate) fn add_to(&self, seen: &mut Seen, found: &mut Kept) {
        for (id, nlink, path) in &self.linked {
            seen.entry(*id)
                .or_insert_with(|| (*nlink, Vec::new()))
                .1
                .push(path.clone());
        }
        found.masked.extend(self.found.masked.iter().cloned());
        found.unmasked.extend(self.found.unmasked.iter().cloned());
        found
            .unreadable
            .extend(self.found.unreadable.iter().cloned());
        found.changed |= self.found.changed;
    }
}

/// The entries of the directory `dir` of the walk of `root`, read through `read_at` (its own
/// path, or its open descriptor's): its subdirectories, its multiply-linked files and what
/// `rule` says of its files.
pub(crate) fn scan_dir(
    dir: &Path,
    read_at: &Path,
    root: &Path,
    real: &RealRoot<'_>,
    rule: Option<&dyn Masking>,
) -> DirScan {
    use std::os::unix::fs::DirEntryExt as _;
    let mut scan = DirScan::default();
    let Some(entries) = entries_of(read_at, dir, &mut scan.found, root) else {
        return scan;
    };
    // The names once, for the rule: each file's own, and whether a key sits here.
    let entries: Vec<(std::fs::DirEntry, Option<Name>)> = entries
        .into_iter()
        .map(|e| {
            let name = rule.map(|_| Name::of(&e));
            (e, name)
        })
        .collect();
    let keys_here = entries
        .iter()
        .any(|(_, n)| n.as_ref().is_some_and(|n| n.key));
    for (entry, name) in entries {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            scan.subdirs
                .push((dir.join(entry.file_name()), entry.ino()));
            continue;
        }
        if kind.is_symlink() {
            continue;
        }
        let meta = match entry.metadata() {
            Ok(meta) => meta,
            Err(e) => {
                scan.found.changed |= e.kind() == std::io::ErrorKind::NotFound;
                continue;
            }
        };
        let path = dir.join(entry.file_name());
        scan.files.push((meta.dev(), meta.ino()));
        if let Some(rule) = rule
            && let Some(name) = &name
            && meta.is_file()
        {
            let beside_key = keys_here && name.bare;
            if rule.may_mask(&name.text, beside_key) {
                // Read where the entries were listed (the descriptor's directory, whatever
                // has been renamed to `dir` since).
                let listed = read_at.join(entry.file_name());
                let decision = rule.decide(&real.at(&path), beside_key, &mut || {
                    crate::masking::head(&listed)
                });
                scan.found.record(path.clone(), decision);
            }
        }
        if meta.nlink() > 1 {
            scan.linked
                .push(((meta.dev(), meta.ino()), meta.nlink(), path));
        }
    }
    scan
}

/// Records `path` under its identity when it has more than one name.
fn note_links(seen: &mut Seen, meta: &std::fs::Metadata, path: PathBuf) {
    if meta.nlink() > 1 {
        seen.entry((meta.dev(), meta.ino()))
            .or_insert_with(|| (meta.nlink(), Vec::new()))
            .1
            .push(path);
    }
}

/// A directory entry's name as the rule asks about it.
struct Name {
    text: String,
    /// It has the extension of a key or certificate.
    key: bool,
    /// It has no extension.
    bare: bool,
}

impl Name {
    fn of(entry: &std::fs::DirEntry) -> Self {
        let name = entry.file_name();
        let extension = Path::new(&name).extension();
        Name {
            key: extension.is_some_and(crate::masking::is_key_extension),
            bare: extension.is_none(),
            text: name.to_string_lossy().into_owned(),
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
