//! The pinned commit's checkout, made once and shared: read-only by every run of the commit,
//! as `repo` and as the lower layer of `workspace` (an overlay whose upper layer is the run's
//! own). Made beside the runs, in a directory of its own that appears whole or not at all;
//! held (a shared lock) by each run that shows it, and removed only when no run holds it.

use std::fs::File;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest as _, Sha256};

use super::git::{Repo, remove_tree};
use super::layout::links_leaving;
use crate::parse::hex;

/// How many checkouts no run holds are kept, newest used first.
const KEPT: usize = 4;

/// What the `.git` file of a checkout says: git inside finds its directory at `/.warden/worktree`
/// (the run's own, with the repository's objects at `/.warden/git`).
pub(crate) const GIT_FILE: &str = "gitdir: /.warden/worktree\n";

/// A commit's checkout, held while the run shows it.
#[derive(Debug)]
pub(crate) struct Checkout {
    /// The files of the commit (and the `.git` file above).
    pub(crate) tree: PathBuf,
    /// git's index of `tree`, its files' status as made: a run's git starts from a copy.
    pub(crate) index: PathBuf,
    /// The shared lock: while it is held the checkout is not removed.
    _held: File,
}

/// The checkouts' directory for runs under `runs`.
pub(crate) fn checkouts_dir(runs: &Path) -> PathBuf {
    runs.join(".checkouts")
}

/// The checkout of `commit` of `repo` under `dir`, made if there is none (checked for links
/// leading out, as a worktree is), and held. Kept per repository too: what a checkout holds
/// depends on the repository's settings (line endings, attributes) as well as on the commit.
pub(crate) fn checkout(repo: &Repo, dir: &Path, commit: &str) -> Result<Checkout, String> {
    if commit.len() < 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{commit}: not a commit's full name"));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let of_repo = Sha256::digest(repo.common.as_os_str().as_encoded_bytes());
    let home = dir.join(format!("{commit}-{}", &hex(&of_repo)[..16]));
    // Another run may make it, or remove it, meanwhile: a few tries.
    for _ in 0..4 {
        let held = if home.join("ready").exists() {
            take(&home)?
        } else {
            make(repo, dir, &home, commit)?
        };
        if let Some(held) = held {
            used(&home);
            evict(dir, &home);
            return Ok(Checkout {
                tree: home.join("tree"),
                index: home.join("index"),
                _held: held,
            });
        }
    }
    Err(format!(
        "{}: made and removed by other runs meanwhile, again and again",
        home.display()
    ))
}

/// The checkout at `home` held (a shared lock), if it is still there: the lock taken on the
/// lock file that is there now, and the checkout still ready.
fn take(home: &Path) -> Result<Option<File>, String> {
    let lock = home.join("lock");
    let file = match File::open(&lock) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", lock.display())),
    };
    file.lock_shared()
        .map_err(|e| format!("{}: {e}", lock.display()))?;
    let same = file
        .metadata()
        .ok()
        .zip(std::fs::metadata(&lock).ok())
        .is_some_and(|(held, now)| held.ino() == now.ino() && held.dev() == now.dev());
    Ok((same && home.join("ready").exists()).then_some(file))
}

/// Makes the checkout in a new directory of its own, held from the start, then puts it in
/// place; `None` when another run put one there meanwhile (ours is removed).
fn make(repo: &Repo, dir: &Path, home: &Path, commit: &str) -> Result<Option<File>, String> {
    let new = dir.join(unique(".new"));
    std::fs::create_dir(&new).map_err(|e| format!("{}: {e}", new.display()))?;
    let made = (|| {
        // Locked before it has its name: a remover never finds it unheld.
        let lock = new.join("lock.new");
        let held = File::create(&lock).map_err(|e| format!("{}: {e}", lock.display()))?;
        held.lock_shared()
            .map_err(|e| format!("{}: {e}", lock.display()))?;
        std::fs::rename(&lock, new.join("lock")).map_err(|e| format!("{}: {e}", lock.display()))?;
        let tree = new.join("tree");
        std::fs::create_dir(&tree).map_err(|e| format!("{}: {e}", tree.display()))?;
        repo.check_out(commit, &tree, &new.join("index"))?;
        let leaving = links_leaving(&tree);
        if !leaving.is_empty() {
            return Err(format!(
                "the checkout has links that lead out of it, refused: {}",
                leaving.join("; ")
            ));
        }
        std::fs::write(tree.join(".git"), GIT_FILE)
            .map_err(|e| format!("{}: {e}", tree.display()))?;
        used(&new);
        File::create(new.join("ready")).map_err(|e| format!("{}: {e}", new.display()))?;
        Ok(held)
    })();
    let placed = made.and_then(|held| match std::fs::rename(&new, home) {
        // The lock moved with its directory: still held.
        Ok(()) => Ok(Some(held)),
        // Made by another run meanwhile: that one is taken.
        Err(_) if home.join("ready").exists() => Ok(None),
        Err(e) => Err(format!("{}: {e}", home.display())),
    });
    let _ = remove_tree(&new);
    placed
}

/// A name no other directory of this process, nor of another, has: `prefix`, the process, a
/// count of this process's, the time.
fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}-{:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        nanos()
    )
}

fn nanos() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Marks the checkout at `home` used now (the time in its `used` file: file times may be too
/// coarse to order checkouts taken one after another).
fn used(home: &Path) {
    let _ = std::fs::write(home.join("used"), nanos().to_string());
}

/// When the checkout at `home` was last used.
fn last_used(home: &Path) -> u128 {
    std::fs::read_to_string(home.join("used"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}

/// What a remover may do with a directory of checkouts.
enum Claim {
    /// Its lock, taken exclusive: no run holds it (and none takes it while this is kept).
    Held(#[expect(dead_code, reason = "kept only to hold the lock")] File),
    /// No lock file, and an hour old: what a run killed before it made one left.
    Abandoned,
    /// A run holds it, or is making it.
    Busy,
}

/// The lock of the directory `at`, taken exclusive without waiting.
fn exclusive(at: &Path) -> Claim {
    let Ok(file) = File::open(at.join("lock")) else {
        let old = std::fs::metadata(at)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 3600);
        return if old { Claim::Abandoned } else { Claim::Busy };
    };
    if file.try_lock().is_ok() {
        Claim::Held(file)
    } else {
        Claim::Busy
    }
}

/// Removes the checkouts past the [`KEPT`] newest used that no run holds, and what runs left
/// half-made or half-removed (no run holding it); never `current`.
fn evict(dir: &Path, current: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut ready: Vec<(u128, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path == current {
            continue;
        }
        if path.join("ready").exists() {
            ready.push((last_used(&path), path));
        } else if let claim @ (Claim::Held(_) | Claim::Abandoned) = exclusive(&path) {
            // Half-made by a run that is gone, or half-removed.
            let _ = remove_tree(&path);
            drop(claim);
        }
    }
    ready.sort_by_key(|(used, _)| std::cmp::Reverse(*used));
    for (_, path) in ready.into_iter().skip(KEPT.saturating_sub(1)) {
        if let claim @ Claim::Held(_) = exclusive(&path) {
            // Out of its place in one step: a run taking it now finds none, and makes it anew.
            let old = dir.join(unique(".old"));
            if std::fs::rename(&path, &old).is_ok() {
                let _ = remove_tree(&old);
            }
            drop(claim);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// A repository of `n` commits, each changing `f`; their names, oldest first.
    fn commits(dir: &Path, n: usize) -> Vec<String> {
        std::fs::create_dir(dir).unwrap();
        git(dir, &["init", "-q"]);
        (0..n)
            .map(|i| {
                std::fs::write(dir.join("f"), format!("{i}\n")).unwrap();
                git(dir, &["add", "f"]);
                git(dir, &["commit", "-q", "-m", &i.to_string()]);
                git(dir, &["rev-parse", "HEAD"])
            })
            .collect()
    }

    fn kept(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.path().join("ready").exists())
            .count()
    }

    #[test]
    fn each_commit_is_checked_out_once_and_the_oldest_unheld_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let names = commits(&dir.path().join("r"), KEPT + 3);
        let repo = Repo::open(&dir.path().join("r")).unwrap();
        let checkouts = dir.path().join("checkouts");
        // The oldest is held throughout: it stays, whatever else is made.
        let held = checkout(&repo, &checkouts, &names[0]).unwrap();
        assert_eq!(std::fs::read_to_string(held.tree.join("f")).unwrap(), "0\n");
        assert_eq!(
            std::fs::read_to_string(held.tree.join(".git")).unwrap(),
            GIT_FILE
        );
        for (i, name) in names.iter().enumerate().skip(1) {
            let c = checkout(&repo, &checkouts, name).unwrap();
            assert_eq!(
                std::fs::read_to_string(c.tree.join("f")).unwrap(),
                format!("{i}\n")
            );
        }
        assert!(held.tree.join("f").exists());
        assert_eq!(kept(&checkouts), KEPT + 1, "the held one beside the newest");
        // Taken again, a checkout is the same directory, not made again.
        let last = names.last().unwrap();
        let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let before = ino(&checkout(&repo, &checkouts, last).unwrap().tree);
        let again = checkout(&repo, &checkouts, last).unwrap();
        assert_eq!(ino(&again.tree), before);
        drop(held);
        drop(again);
        // A lock is released once no process has its descriptor: a child another thread forks
        // has it until it execs, so the removal may wait for a later take.
        for _ in 0..50 {
            let _ = checkout(&repo, &checkouts, last).unwrap();
            if kept(&checkouts) == KEPT {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(kept(&checkouts), KEPT);
        let first = std::fs::read_dir(&checkouts)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&names[0]));
        assert!(!first, "the oldest, no longer held, is removed");
    }

    #[test]
    fn runs_making_and_removing_checkouts_at_once_each_get_theirs_whole() {
        let dir = tempfile::tempdir().unwrap();
        let names = commits(&dir.path().join("r"), KEPT + 4);
        let repo = Repo::open(&dir.path().join("r")).unwrap();
        let checkouts = dir.path().join("checkouts");
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (repo, names, checkouts) = (repo.clone(), names.clone(), checkouts.clone());
                std::thread::spawn(move || {
                    for round in 0..3 {
                        for (i, name) in names.iter().enumerate().skip((t + round) % 3) {
                            let c = checkout(&repo, &checkouts, name).unwrap();
                            // Held, it is whole and stays so.
                            let f = std::fs::read_to_string(c.tree.join("f")).unwrap();
                            assert_eq!(f, format!("{i}\n"));
                            assert!(c.index.exists());
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let left: Vec<_> = std::fs::read_dir(&checkouts).unwrap().flatten().collect();
        assert!(left.len() <= KEPT + 4, "{left:?}");
        assert!(
            left.iter().all(|e| e.path().join("ready").exists()),
            "nothing half-made or half-removed is left: {left:?}"
        );
    }

    #[test]
    fn a_name_that_is_not_a_full_commit_is_refused_before_anything_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let repo_dir = dir.path().join("r");
        std::fs::create_dir(&repo_dir).unwrap();
        git(&repo_dir, &["init", "-q"]);
        let repo = Repo::open(&repo_dir).unwrap();
        let checkouts = dir.path().join("checkouts");
        for name in ["../x", "HEAD", "abc"] {
            let err = checkout(&repo, &checkouts, name).unwrap_err();
            assert!(err.contains("full name"), "{err}");
        }
        assert!(!checkouts.exists());
    }
}
