//! The pinned commit's checkout, made once and shared: read-only by every run of the commit,
//! as `repo` and as the lower layer of `workspace` (an overlay whose upper layer is the run's
//! own). Made beside the runs, in a directory of its own that appears whole or not at all;
//! held (a shared lock) by each run that shows it, and removed only when no run holds it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::git::{Repo, remove_tree};
use super::layout::links_leaving;

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

/// The checkout of `commit` under `dir`, made if there is none (checked for links leading out,
/// as a worktree is), and held.
pub(crate) fn checkout(repo: &Repo, dir: &Path, commit: &str) -> Result<Checkout, String> {
    if commit.len() < 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{commit}: not a commit's full name"));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let home = dir.join(commit);
    if !home.join("ready").exists() {
        make(repo, dir, &home, commit)?;
    }
    let held =
        hold(&home, false)?.ok_or_else(|| format!("{}: could not be held", home.display()))?;
    // Held, it is still there (a remover takes the lock before it removes).
    if !home.join("ready").exists() {
        return Err(format!(
            "{}: removed while it was being taken",
            home.display()
        ));
    }
    let _ = File::create(home.join("used"));
    evict(dir, &home);
    Ok(Checkout {
        tree: home.join("tree"),
        index: home.join("index"),
        _held: held,
    })
}

/// Makes the checkout in a new directory of its own, then puts it in place: another run making
/// the same one at once is left with its own, removed.
fn make(repo: &Repo, dir: &Path, home: &Path, commit: &str) -> Result<(), String> {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let new = dir.join(format!(".new-{}-{nanos:x}", std::process::id()));
    let made = (|| {
        let tree = new.join("tree");
        std::fs::create_dir_all(&tree).map_err(|e| format!("{}: {e}", tree.display()))?;
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
        File::create(new.join("lock")).map_err(|e| format!("{}: {e}", new.display()))?;
        File::create(new.join("ready")).map_err(|e| format!("{}: {e}", new.display()))?;
        Ok(())
    })();
    let placed = made.and_then(|()| match std::fs::rename(&new, home) {
        Ok(()) => Ok(()),
        // Made by another run meanwhile: that one is the checkout.
        Err(_) if home.join("ready").exists() => Ok(()),
        Err(e) => Err(format!("{}: {e}", home.display())),
    });
    let _ = remove_tree(&new);
    placed
}

/// The lock of the checkout at `home`: shared (waiting for a remover), or exclusive without
/// waiting (`None` when a run holds it).
fn hold(home: &Path, exclusive: bool) -> Result<Option<File>, String> {
    let file = File::open(home.join("lock")).map_err(|e| format!("{}: {e}", home.display()))?;
    if exclusive {
        return Ok(file.try_lock().is_ok().then_some(file));
    }
    file.lock_shared()
        .map_err(|e| format!("{}: {e}", home.display()))?;
    Ok(Some(file))
}

/// Removes the checkouts past the [`KEPT`] newest used that no run holds, and what a run that
/// was killed while making one left; never `current`.
fn evict(dir: &Path, current: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut ready: Vec<(SystemTime, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(rest) = name.strip_prefix(".new-") {
            let pid = rest.split('-').next().and_then(|p| p.parse::<i32>().ok());
            // SAFETY: kill with signal 0 only asks whether the process exists.
            let gone = pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists());
            if gone {
                let _ = remove_tree(&path);
            }
            continue;
        }
        if path == current {
            continue;
        }
        let used = std::fs::metadata(path.join("used"))
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        if path.join("ready").exists() {
            ready.push((used, path));
        }
    }
    ready.sort_by_key(|(used, _)| std::cmp::Reverse(*used));
    for (_, path) in ready.into_iter().skip(KEPT.saturating_sub(1)) {
        if let Ok(Some(_held)) = hold(&path, true) {
            // Not ready first: a run taking it now sees it going.
            let _ = std::fs::remove_file(path.join("ready"));
            let _ = remove_tree(&path);
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
        let before = ino(&checkouts.join(last).join("tree"));
        let again = checkout(&repo, &checkouts, last).unwrap();
        assert_eq!(ino(&again.tree), before);
        drop(held);
        drop(again);
        let _ = checkout(&repo, &checkouts, last).unwrap();
        assert_eq!(kept(&checkouts), KEPT);
        assert!(!checkouts.join(&names[0]).exists());
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
