//! The walk of read-only roots (toolchain directories: `~/.cargo`, `~/.rustup`, `~/.pyenv`, …),
//! kept across processes: an index of each root's tree as last seen — every directory's times
//! and inode, its subdirectories, and the files whose name the secret list may mask, each with
//! the rule's verdict and the file's own times and size when it was decided.
//!
//! A directory whose times are unchanged has the same entries (adding, removing or renaming one
//! changes them), so only the directories that changed are read again; a candidate whose inode,
//! times and size are unchanged has the same content (a write changes its change time, which no
//! one can set back), so only the candidates that changed are decided again. A 260,000-entry
//! toolchain costs a `stat` per directory and per candidate instead of a read of every entry and
//! of every candidate's first bytes.
//!
//! The index is a compact binary file: each root's tree as arrays (the names in one buffer, each
//! directory's subdirectories a contiguous range after it), read whole and checked before use.
//! One that does not hold together, or was made by another warden binary or under another rule,
//! is an empty index: everything is walked and decided again.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::masking::{MaskDecision, Masking};

/// What a file of this format starts with; another is an empty index.
const MAGIC: &[u8; 8] = b"WTCIDX\x00\x04";

/// The file of the index's earlier, JSON form, beside it: removed once this one is written.
const LEGACY: &str = "toolchains.json";

/// How old a directory's or a file's times must be for what was read of it to be kept: coarse
/// clocks tick in milliseconds to seconds, and a change in the same tick could go unseen.
const SETTLED: i64 = 2;

/// A range of one of a tree's arrays.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + self.len as usize
    }
}

/// A directory's or a file's times and inode, as the index compares them: the modification
/// time, the change time (which no one can set back) and the inode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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

    /// Whether both times are older than [`SETTLED`].
    fn settled(&self) -> bool {
        self.mtime.0.max(self.ctime.0) < now() - SETTLED
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// One directory as the last walk saw it.
#[derive(Debug, Clone, Copy, Default)]
struct Node {
    /// Its name, in the tree's names (the root's is empty).
    name: Span,
    stamp: Stamp,
    /// It was read whole, and its times had settled: unchanged times mean unchanged entries.
    /// Not so for a directory that was gone or could not be read.
    settled: bool,
    /// Its subdirectories, in the tree's nodes (always after it).
    kids: Span,
    /// Its candidates, in the tree's candidates.
    cands: Span,
}

/// A file of a directory the rule may mask.
#[derive(Debug, Clone, Copy)]
struct Cand {
    name: Span,
    /// It has no extension and its directory holds a `*.pem`, `*.key` or `*.crt` file.
    beside_key: bool,
    /// The rule's verdict, and the file it was made on; only once its times had settled.
    verdict: Option<Verdict>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verdict {
    stamp: Stamp,
    size: u64,
    decision: MaskDecision,
}

/// One root's tree: its directories (the root first), their names and their candidates.
#[derive(Debug, Default)]
struct Tree {
    root: Vec<u8>,
    nodes: Vec<Node>,
    names: Vec<u8>,
    cands: Vec<Cand>,
}

impl Tree {
    fn name(&self, span: Span) -> &[u8] {
        &self.names[span.range()]
    }

    fn add_name(&mut self, name: &[u8]) -> Span {
        let start = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.extend_from_slice(name);
        Span {
            start,
            len: u32::try_from(name.len()).unwrap_or(0),
        }
    }
}

/// Every root walked under one rule, as last seen.
#[derive(Debug)]
pub(crate) struct Index {
    /// What it was made under: the rule's fingerprint and warden's binary.
    key: Vec<u8>,
    trees: Vec<Tree>,
    /// A directory was read or a candidate decided since it was loaded.
    changed: bool,
}

/// A file the rule may mask, found by [`Index::candidates`]: its verdict is asked of
/// [`Index::verdict`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Candidate {
    pub(crate) path: PathBuf,
    pub(crate) beside_key: bool,
    /// Where its verdict is kept: the tree and the candidate.
    slot: (usize, usize),
}

impl Index {
    /// The index at `path`, or an empty one (missing, unreadable, malformed, or made by another
    /// binary or under another rule).
    pub(crate) fn load(path: &Path, rule: &dyn Masking) -> Index {
        let key = key(rule);
        // Only a regular file, never followed through a link.
        let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
        let trees = regular
            .then(|| std::fs::read(path).ok())
            .flatten()
            .and_then(|bytes| decode(&bytes, &key));
        Index {
            changed: trees.is_none(),
            trees: trees.unwrap_or_default(),
            key,
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
        let bytes = encode(&self.key, &self.trees);
        let temp = dir.join(format!(".toolchains.{}.tmp", std::process::id()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
            .and_then(|()| std::fs::rename(&temp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
            return;
        }
        // The index of earlier versions (JSON, keyed by path), read by none since.
        let _ = std::fs::remove_file(dir.join(LEGACY));
    }

    /// The files below `root` the rule may mask, reading again only the directories that
    /// changed since the index saw them.
    pub(crate) fn candidates(&mut self, root: &Path, rule: &dyn Masking) -> Vec<Candidate> {
        let key = root.as_os_str().as_bytes();
        let at = self
            .trees
            .iter()
            .position(|t| t.root == key)
            .unwrap_or_else(|| {
                self.trees.push(Tree::default());
                self.trees.len() - 1
            });
        let old = std::mem::take(&mut self.trees[at]);
        let mut walk = Walk {
            old: &old,
            new: Tree {
                root: key.to_vec(),
                nodes: vec![Node::default()],
                ..Tree::default()
            },
            found: Vec::new(),
            tree: at,
            changed: false,
        };
        let known = (!old.nodes.is_empty()).then_some(0);
        walk.run(root, known, rule);
        self.changed |= walk.changed;
        let found = walk.found;
        self.trees[at] = walk.new;
        found
    }

    /// The rule's verdict on `candidate`: the index's when the file is the one it was made on
    /// (same inode, times and size), else `decide`'s, kept for next time once the file's times
    /// have settled. `None` when it is not a file any more. A link in its place is followed and
    /// decided every time.
    pub(crate) fn verdict(
        &mut self,
        candidate: &Candidate,
        decide: impl FnOnce() -> MaskDecision,
    ) -> Option<MaskDecision> {
        let meta = std::fs::symlink_metadata(&candidate.path).ok()?;
        if !meta.file_type().is_file() {
            return candidate.path.is_file().then(decide);
        }
        let (stamp, size) = (Stamp::of(&meta), meta.len());
        let (tree, slot) = candidate.slot;
        let Some(cand) = self.trees.get_mut(tree).and_then(|t| t.cands.get_mut(slot)) else {
            return Some(decide());
        };
        if let Some(kept) = cand.verdict
            && kept.stamp == stamp
            && kept.size == size
        {
            return Some(kept.decision);
        }
        let decision = decide();
        let verdict = stamp.settled().then_some(Verdict {
            stamp,
            size,
            decision,
        });
        if cand.verdict != verdict {
            cand.verdict = verdict;
            self.changed = true;
        }
        Some(decision)
    }
}

/// What an index is made under: the rule's fingerprint, and warden's binary as it is on disk
/// (the built-in names and the content checks are its code: another build decides anew).
fn key(rule: &dyn Masking) -> Vec<u8> {
    let binary = std::fs::metadata("/proc/self/exe")
        .map(|m| format!("{} {} {} {}", m.dev(), m.ino(), m.mtime(), m.size()))
        .unwrap_or_default();
    format!("{binary}\n{}", rule.fingerprint()).into_bytes()
}

/// One root's walk: the new tree made from the old one and the file system.
struct Walk<'a> {
    old: &'a Tree,
    new: Tree,
    found: Vec<Candidate>,
    tree: usize,
    changed: bool,
}

/// A directory to look at: its node in the new tree, its node in the old one (if it had one),
/// its parent's descriptor (it is looked up by name there, not by its whole path), its path.
type Pending = (usize, Option<usize>, Option<Rc<OwnedFd>>, PathBuf);

impl Walk<'_> {
    fn run(&mut self, root: &Path, known: Option<usize>, rule: &dyn Masking) {
        let mut stack: Vec<Pending> = vec![(0, known, None, root.to_path_buf())];
        while let Some((at, was, parent, dir)) = stack.pop() {
            let Some(stamp) = Stamp::of_dir(parent.as_deref(), &dir) else {
                // Gone, or not a directory: nothing below it, looked at again next time.
                self.changed |= was.is_some_and(|w| self.old.nodes[w].settled);
                continue;
            };
            let old = was.map(|w| self.old.nodes[w]);
            let (kids, cands, settled) = match old {
                Some(old) if old.settled && old.stamp == stamp => self.as_before(&old),
                _ => {
                    self.changed = true;
                    self.read(&dir, &stamp, old.as_ref(), rule)
                }
            };
            let kids_at = self.new.nodes.len();
            for (name, _) in &kids {
                let name = self.new.add_name(name);
                self.new.nodes.push(Node {
                    name,
                    ..Node::default()
                });
            }
            let cands_at = self.new.cands.len();
            for (name, beside_key, verdict) in &cands {
                let span = self.new.add_name(name);
                self.found.push(Candidate {
                    path: dir.join(OsStr::from_bytes(name)),
                    beside_key: *beside_key,
                    slot: (self.tree, self.new.cands.len()),
                });
                self.new.cands.push(Cand {
                    name: span,
                    beside_key: *beside_key,
                    verdict: *verdict,
                });
            }
            let node = &mut self.new.nodes[at];
            node.stamp = stamp;
            node.settled = settled;
            node.kids = span(kids_at, kids.len());
            node.cands = span(cands_at, cands.len());
            let here = (!kids.is_empty())
                .then(|| match (&parent, dir.file_name()) {
                    (Some(parent), Some(name)) => crate::sys::open_dir_at(parent, name),
                    _ => crate::sys::open_path(&dir),
                })
                .and_then(Result::ok)
                .map(Rc::new);
            for (i, (name, was)) in kids.into_iter().enumerate() {
                let path = dir.join(OsStr::from_bytes(&name));
                stack.push((kids_at + i, was, here.clone(), path));
            }
        }
    }

    /// A directory unchanged since the old tree saw it: its subdirectories and candidates as
    /// they were.
    fn as_before(&self, old: &Node) -> (Vec<Kid>, Vec<Found>, bool) {
        let kids = old
            .kids
            .range()
            .map(|k| (self.old.name(self.old.nodes[k].name).to_vec(), Some(k)))
            .collect();
        let cands = self.old.cands[old.cands.range()]
            .iter()
            .map(|c| (self.old.name(c.name).to_vec(), c.beside_key, c.verdict))
            .collect();
        (kids, cands, true)
    }

    /// A directory read: its subdirectories (with their old nodes, so that what is below them
    /// is read again only where it changed) and its candidates (with the verdicts the old tree
    /// kept, which are checked against each file before use).
    fn read(
        &self,
        dir: &Path,
        stamp: &Stamp,
        old: Option<&Node>,
        rule: &dyn Masking,
    ) -> (Vec<Kid>, Vec<Found>, bool) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            // Read again next time.
            return (Vec::new(), Vec::new(), false);
        };
        let entries: Vec<std::fs::DirEntry> = entries.flatten().collect();
        let keys_here = entries
            .iter()
            .any(|e| crate::masking::is_key_name(&e.file_name()));
        let old_kids: HashMap<&[u8], usize> = old
            .map(|o| o.kids.range())
            .unwrap_or_default()
            .map(|k| (self.old.name(self.old.nodes[k].name), k))
            .collect();
        let old_cands: HashMap<(&[u8], bool), Option<Verdict>> = old
            .map(|o| &self.old.cands[o.cands.range()])
            .unwrap_or_default()
            .iter()
            .map(|c| ((self.old.name(c.name), c.beside_key), c.verdict))
            .collect();
        let (mut kids, mut cands) = (Vec::new(), Vec::new());
        for e in entries {
            let Ok(kind) = e.file_type() else {
                continue;
            };
            let os_name = e.file_name();
            let name = os_name.as_bytes();
            if kind.is_dir() {
                kids.push((name.to_vec(), old_kids.get(name).copied()));
                continue;
            }
            // A name that is not UTF-8 is matched as its lossy text (`clé.pem` in Latin-1 is
            // still a `.pem`).
            let text = os_name.to_string_lossy();
            let beside_key = keys_here && Path::new(&os_name).extension().is_none();
            if kind.is_file() && rule.may_mask(&text, beside_key) {
                let verdict = old_cands.get(&(name, beside_key)).copied().flatten();
                cands.push((name.to_vec(), beside_key, verdict));
            }
        }
        (kids, cands, stamp.settled())
    }
}

/// A subdirectory's name, and its node in the old tree.
type Kid = (Vec<u8>, Option<usize>);
/// A candidate's name, whether it is beside a key, and the verdict kept on it.
type Found = (Vec<u8>, bool, Option<Verdict>);

fn span(start: usize, len: usize) -> Span {
    Span {
        start: u32::try_from(start).unwrap_or(u32::MAX),
        len: u32::try_from(len).unwrap_or(0),
    }
}

fn encode(key: &[u8], trees: &[Tree]) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        64 + trees
            .iter()
            .map(|t| t.names.len() + t.nodes.len() * 72 + t.cands.len() * 64)
            .sum::<usize>(),
    );
    out.extend_from_slice(MAGIC);
    bytes(&mut out, key);
    len(&mut out, trees.len());
    for tree in trees {
        bytes(&mut out, &tree.root);
        bytes(&mut out, &tree.names);
        len(&mut out, tree.nodes.len());
        for node in &tree.nodes {
            put_span(&mut out, node.name);
            put_stamp(&mut out, &node.stamp);
            out.push(u8::from(node.settled));
            put_span(&mut out, node.kids);
            put_span(&mut out, node.cands);
        }
        len(&mut out, tree.cands.len());
        for cand in &tree.cands {
            put_span(&mut out, cand.name);
            out.push(u8::from(cand.beside_key));
            match cand.verdict {
                None => out.push(0),
                Some(v) => {
                    out.push(match v.decision {
                        MaskDecision::Masked => 1,
                        MaskDecision::Unmasked => 2,
                        MaskDecision::Readable => 3,
                    });
                    put_stamp(&mut out, &v.stamp);
                    out.extend_from_slice(&v.size.to_le_bytes());
                }
            }
        }
    }
    out
}

fn len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    len(out, b.len());
    out.extend_from_slice(b);
}

fn put_span(out: &mut Vec<u8>, s: Span) {
    out.extend_from_slice(&s.start.to_le_bytes());
    out.extend_from_slice(&s.len.to_le_bytes());
}

fn put_stamp(out: &mut Vec<u8>, s: &Stamp) {
    for n in [s.mtime.0, s.mtime.1, s.ctime.0, s.ctime.1] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&s.ino.to_le_bytes());
}

/// The trees of an index file made under `key`; `None` for anything else or anything that does
/// not hold together: a span out of its array, a directory's subdirectories not after it or
/// claimed twice, bytes left over.
fn decode(bytes: &[u8], key: &[u8]) -> Option<Vec<Tree>> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(MAGIC.len())? != MAGIC || r.bytes()? != key {
        return None;
    }
    let count = r.u32()?;
    let mut trees = Vec::new();
    for _ in 0..count {
        let root = r.bytes()?.to_vec();
        let names = r.bytes()?.to_vec();
        let n = r.u32()? as usize;
        let mut nodes = Vec::with_capacity(n.min(bytes.len() / 64));
        for _ in 0..n {
            nodes.push(Node {
                name: r.span()?,
                stamp: r.stamp()?,
                settled: r.u8()? == 1,
                kids: r.span()?,
                cands: r.span()?,
            });
        }
        let n = r.u32()? as usize;
        let mut cands = Vec::with_capacity(n.min(bytes.len() / 16));
        for _ in 0..n {
            let name = r.span()?;
            let beside_key = r.u8()? == 1;
            let decision = match r.u8()? {
                0 => None,
                1 => Some(MaskDecision::Masked),
                2 => Some(MaskDecision::Unmasked),
                3 => Some(MaskDecision::Readable),
                _ => return None,
            };
            let verdict = match decision {
                None => None,
                Some(decision) => Some(Verdict {
                    stamp: r.stamp()?,
                    size: r.u64()?,
                    decision,
                }),
            };
            cands.push(Cand {
                name,
                beside_key,
                verdict,
            });
        }
        let tree = Tree {
            root,
            nodes,
            names,
            cands,
        };
        holds_together(&tree).then_some(())?;
        trees.push(tree);
    }
    (r.at == bytes.len()).then_some(trees)
}

/// Whether a decoded tree is one: every name within the names, every candidate range within
/// the candidates, and every directory but the root the subdirectory of exactly one directory
/// before it (so that a walk of it ends).
fn holds_together(tree: &Tree) -> bool {
    let names = tree.names.len();
    let within = |s: Span, n: usize| {
        (s.start as usize)
            .checked_add(s.len as usize)
            .is_some_and(|end| end <= n)
    };
    if tree.nodes.is_empty() || tree.cands.iter().any(|c| !within(c.name, names)) {
        return false;
    }
    let mut claimed = vec![false; tree.nodes.len()];
    for (i, node) in tree.nodes.iter().enumerate() {
        if !within(node.name, names)
            || !within(node.cands, tree.cands.len())
            || !within(node.kids, tree.nodes.len())
            || (node.kids.len > 0 && (node.kids.start as usize) <= i)
        {
            return false;
        }
        for k in node.kids.range() {
            if std::mem::replace(&mut claimed[k], true) {
                return false;
            }
        }
    }
    claimed.iter().skip(1).all(|c| *c)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(out)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn span(&mut self) -> Option<Span> {
        Some(Span {
            start: self.u32()?,
            len: self.u32()?,
        })
    }

    fn stamp(&mut self) -> Option<Stamp> {
        Some(Stamp {
            mtime: (self.i64()?, self.i64()?),
            ctime: (self.i64()?, self.i64()?),
            ino: self.u64()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Masks files named `secret*`, counting its decisions; `salt` changes its fingerprint.
    #[derive(Debug, Default)]
    struct Names {
        decided: AtomicUsize,
        salt: &'static str,
    }

    impl Masking for Names {
        fn decide(
            &self,
            path: &Path,
            _: bool,
            head: &mut dyn FnMut() -> Option<Vec<u8>>,
        ) -> MaskDecision {
            self.decided.fetch_add(1, Ordering::SeqCst);
            let named = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("secret"));
            if named && head().is_some_and(|b| b != b"harmless") {
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
        fn fingerprint(&self) -> String {
            self.salt.to_owned()
        }
    }

    impl Names {
        fn decided(&self) -> usize {
            self.decided.load(Ordering::SeqCst)
        }
    }

    /// A process's walk of `root` with the index at `file`: each candidate and its verdict.
    fn walk(file: &Path, root: &Path, rule: &Names) -> Vec<(PathBuf, MaskDecision)> {
        let mut index = Index::load(file, rule);
        let mut found: Vec<(PathBuf, MaskDecision)> = index
            .candidates(root, rule)
            .into_iter()
            .filter_map(|c| {
                let decision = index.verdict(&c, || {
                    rule.decide(&c.path, c.beside_key, &mut || crate::masking::head(&c.path))
                })?;
                Some((c.path, decision))
            })
            .collect();
        index.save(file);
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    }

    #[test]
    fn changes_are_found_and_the_index_survives_a_process() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tc");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/secret.txt"), "x").unwrap();
        std::fs::write(root.join("a/plain.txt"), "x").unwrap();
        let file = dir.path().join("toolchains.idx");
        // The earlier form's file goes once this one is written.
        std::fs::write(dir.path().join(LEGACY), "{}").unwrap();
        let rule = Names::default();
        let masked = MaskDecision::Masked;
        assert_eq!(
            walk(&file, &root, &rule),
            [(root.join("a/b/secret.txt"), masked)]
        );
        let index = Index::load(&file, &rule);
        assert!(!index.changed, "the index was saved and read back");
        assert!(!dir.path().join(LEGACY).exists());
        assert_eq!(index.trees[0].nodes.len(), 3);
        // A new secret in a directory: its time changes, it is read again.
        std::fs::write(root.join("a/secret2"), "x").unwrap();
        assert_eq!(
            walk(&file, &root, &rule),
            [
                (root.join("a/b/secret.txt"), masked),
                (root.join("a/secret2"), masked)
            ]
        );
        // A removed directory leaves the index.
        std::fs::remove_dir_all(root.join("a/b")).unwrap();
        assert_eq!(
            walk(&file, &root, &rule),
            [(root.join("a/secret2"), masked)]
        );
        assert_eq!(Index::load(&file, &rule).trees[0].nodes.len(), 2);
        // Another root is a tree of its own; the first stays.
        let other = dir.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("secret.pem"), "k").unwrap();
        assert_eq!(walk(&file, &other, &rule).len(), 1);
        assert_eq!(Index::load(&file, &rule).trees.len(), 2);
        assert_eq!(walk(&file, &root, &rule).len(), 1);
    }

    #[test]
    fn a_file_unchanged_since_it_was_decided_is_not_read_again_and_a_changed_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tc");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("a/secret.key"), "k").unwrap();
        std::fs::write(root.join("secret.env"), "harmless").unwrap();
        // Only what has settled is kept: times older than SETTLED seconds.
        std::thread::sleep(std::time::Duration::from_millis(
            u64::try_from(SETTLED).unwrap() * 1000 + 1100,
        ));
        let file = dir.path().join("toolchains.idx");
        let rule = Names::default();
        let first = walk(&file, &root, &rule);
        assert_eq!(rule.decided(), 2);
        // The probe: without an index, every process decides every candidate again.
        let _ = walk(&dir.path().join("none/x.idx"), &root, &rule);
        assert_eq!(rule.decided(), 4);
        // With the index: nothing is decided again, and the verdicts are the same.
        assert_eq!(walk(&file, &root, &rule), first);
        assert_eq!(rule.decided(), 4);
        // A file whose content changes is decided again, even with its time put back.
        let harmless = root.join("secret.env");
        let modified = std::fs::metadata(&harmless).unwrap().modified().unwrap();
        std::fs::write(&harmless, "a token!").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&harmless)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(modified))
            .unwrap();
        let again = walk(&file, &root, &rule);
        assert_eq!(rule.decided(), 5);
        assert!(
            again.contains(&(harmless.clone(), MaskDecision::Masked)),
            "{again:?}"
        );
        // A file replaced by another of the same name is decided again.
        std::fs::remove_file(root.join("a/secret.key")).unwrap();
        std::fs::write(root.join("a/secret.key"), "harmless").unwrap();
        let replaced = walk(&file, &root, &rule);
        assert_eq!(rule.decided(), 7, "{replaced:?}");
        // Under another rule, everything is decided again.
        let other = Names {
            salt: "another rule",
            ..Names::default()
        };
        let _ = walk(&file, &root, &other);
        assert_eq!(other.decided(), 2);
    }

    #[test]
    fn a_modification_time_put_back_does_not_hide_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let meta = std::fs::symlink_metadata(dir.path()).unwrap();
        let known = Stamp::of(&meta);
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
        assert_ne!(Stamp::of(&after), known);
    }

    #[test]
    fn names_that_are_not_utf8_are_indexed_as_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tc");
        let odd = root.join(OsStr::from_bytes(b"caf\xe9"));
        std::fs::create_dir_all(&odd).unwrap();
        std::fs::write(odd.join("secret.txt"), "x").unwrap();
        std::fs::write(root.join(OsStr::from_bytes(b"secret\xff")), "x").unwrap();
        let file = dir.path().join("toolchains.idx");
        let rule = Names::default();
        for _ in 0..2 {
            let found = walk(&file, &root, &rule);
            let paths: Vec<&PathBuf> = found.iter().map(|(p, _)| p).collect();
            assert_eq!(paths.len(), 2, "{found:?}");
            assert!(paths.contains(&&odd.join("secret.txt")));
            assert!(file.exists());
        }
    }

    #[test]
    fn an_index_that_does_not_hold_together_is_an_empty_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tc");
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/b/secret.txt"), "x").unwrap();
        let file = dir.path().join("toolchains.idx");
        let rule = Names::default();
        let _ = walk(&file, &root, &rule);
        let good = std::fs::read(&file).unwrap();
        let key = key(&rule);
        assert!(decode(&good, &key).is_some());
        // Every truncation, and every byte changed, is refused or decodes to a tree.
        for end in 0..good.len() {
            assert!(decode(&good[..end], &key).is_none(), "cut at {end}");
        }
        for at in 0..good.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[at] ^= flip;
                if let Some(trees) = decode(&bad, &key) {
                    assert!(trees.iter().all(holds_together));
                }
            }
        }
        // A directory made its own subdirectory (a walk that would not end) is refused.
        let mut trees = decode(&good, &key).unwrap();
        trees[0].nodes[1].kids = Span { start: 0, len: 1 };
        assert!(decode(&encode(&key, &trees), &key).is_none());
        // Another binary's or rule's index is not used.
        assert!(decode(&good, b"another").is_none());
        // Garbage in the file: the walk finds everything again.
        std::fs::write(&file, b"not an index").unwrap();
        assert_eq!(walk(&file, &root, &rule).len(), 1);
    }
}
