//! A run's directory and what its aliases resolve to: `repo` and `workspace` show the pinned
//! commit's shared checkout (the workspace through an overlay, its upper layer the run's own) or
//! are worktrees of it, `run-scratch` a fresh directory (a tmpfs of `disk_mb` for the sandbox's
//! life), `cache` the run's own caches. Checks a checkout for links that lead out of it, and
//! destroys it all at the end, verifying it is gone.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::git::{Repo, remove_tree};
use crate::schema::Alias;

/// Where an alias's directory is, on the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolved {
    pub alias: Alias,
    pub path: PathBuf,
    /// A worktree's private git directory, to remove with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_dir: Option<PathBuf>,
    /// The commit's shared checkout the alias shows (read-only, or as the lower layer of an
    /// overlay whose upper layer is in `path`): never removed with the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<PathBuf>,
}

/// The paths of one run, under its own directory.
#[derive(Debug, Clone)]
pub(crate) struct RunDir {
    pub(crate) root: PathBuf,
}

impl RunDir {
    /// Makes the run's directory; it must not exist (a run's directories are never reused).
    pub(crate) fn create(runs: &Path, run_id: &str) -> Result<Self, String> {
        std::fs::create_dir_all(runs).map_err(|e| format!("{}: {e}", runs.display()))?;
        let root = runs.join(run_id);
        std::fs::create_dir(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        let root = root.canonicalize().unwrap_or(root);
        Ok(Self { root })
    }

    pub(crate) fn alias(&self, alias: Alias) -> PathBuf {
        self.root.join(alias.as_str())
    }

    pub(crate) fn artifacts(&self) -> PathBuf {
        self.root.join("artifacts")
    }

    /// Where the sandbox's helper leaves files copied out of the scratch tmpfs.
    pub(crate) fn collected(&self) -> PathBuf {
        self.root.join("collected")
    }
}

/// Every entry below `root` but directories, links not followed, the checkout's own `.git`
/// left out: its path relative to `root` and what `lstat` says of it.
pub(crate) fn entries(root: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in listing.flatten() {
            if dir == root && entry.file_name() == ".git" {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(path);
            } else {
                out.push((path.strip_prefix(root).unwrap_or(&path).to_path_buf(), meta));
            }
        }
    }
    out
}

/// Links in the checkout at `root` that lead outside it: symbolic links whose target is
/// absolute or climbs above `root`, and files with more names than the checkout holds.
pub(crate) fn links_leaving(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, meta) in entries(root) {
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(root.join(&rel)).unwrap_or_default();
            if escapes(&rel, &target) {
                found.push(format!(
                    "{} -> {} (a symbolic link out of the checkout)",
                    rel.display(),
                    target.display()
                ));
            }
        } else if meta.nlink() > 1 {
            found.push(format!(
                "{} (a hard link: {} names)",
                rel.display(),
                meta.nlink()
            ));
        }
    }
    found.sort();
    found
}

/// Whether the link at `rel` (relative to the checkout) with `target` resolves outside it.
fn escapes(rel: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return true;
    }
    let mut depth: i64 = i64::try_from(rel.components().count()).unwrap_or(0) - 1;
    for part in target.components() {
        match part {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// What destroying a run's directories found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Destroyed {
    pub destroyed: bool,
    pub errors: Vec<String>,
}

/// Removes the resolved directories (worktrees through git) and the run's other directories
/// `also` (named for messages), and checks that none is left, nor listed by git.
pub(crate) fn destroy(
    repo: Option<&Repo>,
    resolved: &[Resolved],
    also: &[(&str, PathBuf)],
) -> Destroyed {
    let mut errors = Vec::new();
    for (name, path) in also {
        if let Err(e) = remove_tree(path) {
            errors.push(e);
        }
        if std::fs::symlink_metadata(path).is_ok() {
            errors.push(format!("{} ({name}) is still there", path.display()));
        }
    }
    for r in resolved {
        if let (Some(repo), Some(git_dir)) = (repo, &r.git_dir) {
            errors.extend(repo.remove_worktree(&r.path, Some(git_dir)));
            continue;
        }
        if r.shared.is_some() {
            let _ = super::layered::removable(&r.path);
        }
        if let Err(e) = remove_tree(&r.path) {
            errors.push(e);
        }
    }
    for r in resolved {
        if std::fs::symlink_metadata(&r.path).is_ok() {
            errors.push(format!(
                "{} ({}) is still there",
                r.path.display(),
                r.alias.as_str()
            ));
        }
        if let (Some(repo), Some(_)) = (repo, &r.git_dir)
            && repo.lists_worktree(&r.path)
        {
            errors.push(format!("git still lists the worktree {}", r.path.display()));
        }
    }
    // The errors of the removal and those of the check say the same thing twice.
    errors.dedup();
    Destroyed {
        destroyed: errors.is_empty(),
        errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_escapes_when_absolute_or_climbing_above_the_checkout() {
        assert!(escapes(Path::new("a"), Path::new("/etc/passwd")));
        assert!(escapes(Path::new("a"), Path::new("../x")));
        assert!(escapes(Path::new("d/a"), Path::new("../../x")));
        assert!(!escapes(Path::new("d/a"), Path::new("../x")));
        assert!(!escapes(Path::new("a"), Path::new("b/c")));
        assert!(escapes(Path::new("a"), Path::new("b/../../c")));
    }
}
