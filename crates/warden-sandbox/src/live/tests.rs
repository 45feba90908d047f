//! A kept walk against a fresh walk of the same tree, after each kind of change a command or a
//! person makes between two commands.

use std::path::{Path, PathBuf};

use super::*;
use crate::masking::MaskDecision;

/// Masks `.env` files and files that hold a private key.
#[derive(Debug)]
struct Secrets;

impl Masking for Secrets {
    fn decide(
        &self,
        path: &Path,
        _: bool,
        head: &mut dyn FnMut() -> Option<Vec<u8>>,
    ) -> MaskDecision {
        let mut key = || head().is_some_and(|h| h.starts_with(b"-----BEGIN PRIVATE KEY"));
        if path.file_name().is_some_and(|n| n == ".env") || key() {
            MaskDecision::Masked
        } else {
            MaskDecision::Readable
        }
    }

    fn credential_paths(&self) -> Vec<(PathBuf, MaskDecision)> {
        Vec::new()
    }
}

/// What a walk found, in an order to compare.
#[derive(Debug, PartialEq, Eq)]
struct Findings {
    linked: Vec<((u64, u64), u64, Vec<PathBuf>)>,
    masked: Vec<PathBuf>,
    unreadable: Vec<PathBuf>,
}

fn findings(seen: Seen, found: Kept) -> Findings {
    let mut linked: Vec<_> = seen
        .into_iter()
        .map(|(id, (nlink, mut paths))| {
            paths.sort();
            (id, nlink, paths)
        })
        .collect();
    linked.sort();
    let (mut masked, mut unreadable) = (found.masked, found.unreadable);
    masked.sort();
    unreadable.sort();
    Findings {
        linked,
        masked,
        unreadable,
    }
}

fn fresh(root: &Path) -> Findings {
    let (mut seen, mut found) = (Seen::new(), Kept::default());
    crate::links::walk(root, &mut seen, Some(&Secrets), &mut found);
    findings(seen, found)
}

fn kept(live: &mut Live, root: &Path) -> Findings {
    let (mut seen, mut found) = (Seen::new(), Kept::default());
    assert!(
        live.walk(root, Some(&Secrets), &mut seen, &mut found),
        "kept"
    );
    findings(seen, found)
}

/// A change between two commands: what it is, and what it does to the workspace and the
/// directory beside it.
type Change = Box<dyn Fn(&Path, &Path)>;

/// Every kind of change, in an order where each applies to what the ones before left.
#[allow(
    clippy::too_many_lines,
    reason = "a list: one entry per kind of change"
)]
fn changes() -> Vec<(&'static str, Change)> {
    vec![
        (
            "a hard link out",
            Box::new(|ws, out| {
                std::fs::hard_link(out.join("secret"), ws.join("src/deep/leak")).unwrap();
            }),
        ),
        (
            "a new secret",
            Box::new(|ws, _| std::fs::write(ws.join("src/.env"), "K=1").unwrap()),
        ),
        (
            "a key written into a plain file",
            Box::new(|ws, _| {
                std::fs::write(ws.join("src/main.rs"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
            }),
        ),
        (
            "a new tree with a secret in it",
            Box::new(|ws, _| {
                std::fs::create_dir_all(ws.join("new/a/b")).unwrap();
                std::fs::write(ws.join("new/a/b/.env"), "K=1").unwrap();
            }),
        ),
        (
            "a tree renamed",
            Box::new(|ws, _| {
                std::fs::rename(ws.join("new"), ws.join("renamed")).unwrap();
            }),
        ),
        (
            "a tree moved under another",
            Box::new(|ws, _| {
                std::fs::rename(ws.join("renamed/a"), ws.join("src/deep/a")).unwrap();
            }),
        ),
        (
            "a tree moved in from outside",
            Box::new(|ws, out| {
                std::fs::create_dir_all(out.join("in/c")).unwrap();
                std::fs::write(out.join("in/c/.env"), "K=1").unwrap();
                std::fs::rename(out.join("in"), ws.join("in")).unwrap();
            }),
        ),
        (
            "a tree renamed over another of the same name",
            Box::new(|ws, _| {
                std::fs::create_dir_all(ws.join("other/er")).unwrap();
                std::fs::write(ws.join("other/er/.env"), "K=1").unwrap();
                std::fs::remove_dir_all(ws.join("src/deep/er")).unwrap();
                std::fs::rename(ws.join("other/er"), ws.join("src/deep/er")).unwrap();
            }),
        ),
        (
            "a tree moved out",
            Box::new(|ws, out| {
                std::fs::rename(ws.join("in"), out.join("in")).unwrap();
            }),
        ),
        (
            "a tree removed",
            Box::new(|ws, _| std::fs::remove_dir_all(ws.join("src/deep/a")).unwrap()),
        ),
        (
            "a secret removed",
            Box::new(|ws, _| std::fs::remove_file(ws.join("src/.env")).unwrap()),
        ),
        (
            "the link out removed",
            Box::new(|ws, _| {
                std::fs::remove_file(ws.join("src/deep/leak")).unwrap();
            }),
        ),
        (
            "a file linked inside",
            Box::new(|ws, _| {
                std::fs::hard_link(ws.join("src/deep/er/.env"), ws.join("notes.txt")).unwrap();
            }),
        ),
        (
            "one of the two names inside removed",
            Box::new(|ws, _| {
                std::fs::remove_file(ws.join("notes.txt")).unwrap();
            }),
        ),
        (
            "a tree copied as hard links",
            Box::new(|ws, _| {
                let copied = std::process::Command::new("cp")
                    .arg("-al")
                    .arg(ws.join("src"))
                    .arg(ws.join("copy"))
                    .status()
                    .unwrap();
                assert!(copied.success());
            }),
        ),
        (
            "one name of a copied file removed",
            Box::new(|ws, _| {
                std::fs::remove_file(ws.join("src/deep/er/.env")).unwrap();
            }),
        ),
        (
            "the copy removed",
            Box::new(|ws, _| std::fs::remove_dir_all(ws.join("copy")).unwrap()),
        ),
        (
            "an empty directory made and removed (a placeholder)",
            Box::new(|ws, _| {
                std::fs::create_dir(ws.join(".vscode")).unwrap();
                std::fs::remove_dir(ws.join(".vscode")).unwrap();
            }),
        ),
    ]
}

#[test]
fn a_kept_walk_matches_a_fresh_one_after_every_kind_of_change() {
    let base = tempfile::tempdir().unwrap();
    let ws = base.path().join("ws");
    let outside = base.path().join("outside");
    std::fs::create_dir_all(ws.join("src/deep/er")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(ws.join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::write(ws.join("src/deep/er/x.txt"), "x").unwrap();
    std::fs::write(outside.join("secret"), "s").unwrap();
    let mut live = Live::default();
    assert_eq!(kept(&mut live, &ws), fresh(&ws));
    assert_eq!(live.watched(), 4);

    for (what, change) in changes() {
        change(&ws, &outside);
        assert_eq!(kept(&mut live, &ws), fresh(&ws), "after {what}");
    }
    assert_eq!(
        live.watched(),
        fresh_dirs(&ws),
        "a watch for every directory, no more"
    );
}

fn fresh_dirs(root: &Path) -> usize {
    1 + std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| fresh_dirs(&e.path()))
        .sum::<usize>()
}

#[test]
fn the_walk_of_the_root_itself_moved_away_starts_over() {
    let base = tempfile::tempdir().unwrap();
    let ws = base.path().join("ws");
    std::fs::create_dir_all(ws.join("a")).unwrap();
    let mut live = Live::default();
    assert_eq!(kept(&mut live, &ws), fresh(&ws));
    std::fs::rename(&ws, base.path().join("gone")).unwrap();
    std::fs::create_dir_all(ws.join("b")).unwrap();
    std::fs::write(ws.join("b/.env"), "K=1").unwrap();
    assert_eq!(kept(&mut live, &ws), fresh(&ws));
    assert_eq!(fresh(&ws).masked, vec![ws.join("b/.env")]);
}

#[test]
fn a_root_on_a_file_system_that_cannot_be_watched_is_left_to_the_plain_walk() {
    let mut live = Live::default();
    let (mut seen, mut found) = (Seen::new(), Kept::default());
    // /proc is no local file system.
    assert!(!live.walk(Path::new("/proc/self/fdinfo"), None, &mut seen, &mut found));
    let file = tempfile::NamedTempFile::new().unwrap();
    assert!(
        !live.walk(file.path(), None, &mut seen, &mut found),
        "a root of one file"
    );
}

#[test]
fn a_file_system_mounted_in_the_root_is_walked() {
    let base = tempfile::tempdir().unwrap();
    let ws = base.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    let mut live = Live::default();
    assert_eq!(kept(&mut live, &ws), fresh(&ws));
    // A tmpfs mounted over `sub` (as root) holds a secret; nothing in `sub` itself changed.
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "none"])
        .arg(ws.join("sub"))
        .output()
        .unwrap();
    if !mounted.status.success() {
        assert!(
            std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
            "cannot mount a tmpfs: {}",
            String::from_utf8_lossy(&mounted.stderr)
        );
        return;
    }
    std::fs::write(ws.join("sub/.env"), "K=1").unwrap();
    let found = kept(&mut live, &ws);
    let fresh_found = fresh(&ws);
    let _ = std::process::Command::new("umount")
        .arg(ws.join("sub"))
        .status();
    assert_eq!(fresh_found.masked, vec![ws.join("sub/.env")], "the probe");
    assert_eq!(found, fresh_found);
}

#[test]
fn a_directory_exchanged_for_another_between_its_listing_and_its_opening_is_not_kept() {
    let base = tempfile::tempdir().unwrap();
    let ws = base.path().join("ws");
    std::fs::create_dir_all(ws.join("d")).unwrap();
    std::fs::create_dir_all(ws.join("u")).unwrap();
    std::fs::write(ws.join("u/.env"), "K=1").unwrap();
    let mut live = LiveRoot::new(&ws, Some(&Secrets)).unwrap();
    let real = RealRoot::of(&ws);
    // The probe: what the listing named at `d` reads as kept.
    let listed = live.dirs[ws.join("d").as_path()].entry_ino;
    assert!(
        live.read(&ws.join("d"), listed, &real, Some(&Secrets))
            .is_ok()
    );
    // `d` and `u` exchanged after the listing: the directory opened at `d` is not the one it
    // named, and the root is left to the plain walk.
    std::fs::rename(ws.join("d"), ws.join("t")).unwrap();
    std::fs::rename(ws.join("u"), ws.join("d")).unwrap();
    std::fs::rename(ws.join("t"), ws.join("u")).unwrap();
    assert!(
        live.read(&ws.join("d"), listed, &real, Some(&Secrets))
            .is_err()
    );
}

#[test]
fn a_files_head_is_read_where_its_directory_was_listed() {
    let base = tempfile::tempdir().unwrap();
    let (listed, named) = (base.path().join("listed"), base.path().join("named"));
    std::fs::create_dir_all(&listed).unwrap();
    std::fs::create_dir_all(&named).unwrap();
    std::fs::write(listed.join("notes"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
    std::fs::write(named.join("notes"), "harmless\n").unwrap();
    let real = RealRoot::of(base.path());
    // Listed through `listed`, named `named`: the key in the listed directory is what counts.
    let scan = scan_dir(&named, &listed, base.path(), &real, Some(&Secrets));
    assert_eq!(scan.found.masked, vec![named.join("notes")]);
    // The probe: listed and named the same, the harmless file is readable.
    let scan = scan_dir(&named, &named, base.path(), &real, Some(&Secrets));
    assert!(scan.found.masked.is_empty());
}
