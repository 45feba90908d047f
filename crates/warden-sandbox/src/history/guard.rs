//! What a layer may not bring back even as history: a change to the files that run code on the
//! host later ([`warden_config::AUTO_RUN`], and the hooks directory the repository names). The
//! command cannot write them in the working tree, and it must not get them there another way:
//! through a branch the user then checks out or resets to, a stash the user pops, or an index
//! whose entries a `git checkout -- .` writes. Such a ref is held under `refs/warden/held/`
//! for the user to look at; such an index stays out.

use std::path::Path;

use super::git::{HardenedGit, output};

/// The protected paths of one repository's working tree, as literal pathspecs.
pub(super) struct Protected {
    specs: Vec<String>,
}

impl Protected {
    /// For the repository whose git directory is `git_dir` (its working tree the directory
    /// above).
    pub(super) fn of(git_dir: &Path) -> Self {
        let Some(parent) = git_dir.parent() else {
            return Self { specs: Vec::new() };
        };
        // A submodule's repository (`.git/modules/x`) names its working tree in its
        // configuration.
        let mut top = super::git::plain(parent);
        top.arg(format!("--git-dir={}", git_dir.display()))
            .args(["rev-parse", "--show-toplevel"]);
        let root = output(top, "rev-parse")
            .ok()
            .map(|t| std::path::PathBuf::from(t.trim()))
            .filter(|t| t.is_dir())
            .unwrap_or_else(|| parent.to_path_buf());
        let root = root.as_path();
        let mut specs: Vec<String> = warden_config::AUTO_RUN
            .iter()
            .map(|s| (*s).to_owned())
            .chain(
                warden_config::repository_auto_run(root)
                    .iter()
                    .filter_map(|p| p.strip_prefix(root).ok())
                    .map(|p| p.to_string_lossy().into_owned()),
            )
            .filter(|rel| !rel.is_empty() && !rel.starts_with(".git/") && rel != ".git")
            .map(|rel| format!(":(literal){rel}"))
            .collect();
        specs.sort();
        specs.dedup();
        Self { specs }
    }

    /// The protected paths whose content differs between the trees of `from` and `to`, or that
    /// any commit new to the repository on the way to `to` changes (a commit that adds a hook
    /// and the next that takes it out again is reached by a checkout of the first, a bisect, a
    /// rebase); an error (counted as a change) where git cannot tell. Commits only warden's own
    /// refs reach count as new.
    pub(super) fn changed(
        &self,
        git: &HardenedGit,
        git_dir: &Path,
        from: &str,
        to: &str,
    ) -> Result<Vec<String>, String> {
        if self.specs.is_empty() {
            return Ok(Vec::new());
        }
        let mut diff = git.command(git_dir);
        diff.args([
            "diff-tree",
            "-r",
            "--no-renames",
            "--name-only",
            "-z",
            from,
            to,
            "--",
        ])
        .args(&self.specs);
        let mut paths: Vec<String> = names(&output(diff, "diff-tree")?);
        let mut new = git.command(git_dir);
        new.args(["rev-list", to, "--not", "--exclude=refs/warden/*", "--all"]);
        let commits = output(new, "rev-list")?;
        if !commits.trim().is_empty() {
            let mut each = git.command(git_dir);
            each.args([
                "diff-tree",
                "--stdin",
                "--root",
                "-m",
                "-r",
                "--no-renames",
                "--no-commit-id",
                "--name-only",
                "-z",
                "--",
            ])
            .args(&self.specs);
            paths.extend(names(&super::layer::with_input(
                each,
                commits.into_bytes(),
                "diff-tree",
            )?));
        }
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// The entries of the index at `index` (the repository's own when `None`) at protected
    /// paths, as `ls-files --stage` lists them.
    pub(super) fn entries(
        &self,
        git: &HardenedGit,
        git_dir: &Path,
        index: Option<&Path>,
    ) -> Result<String, String> {
        if self.specs.is_empty() {
            return Ok(String::new());
        }
        let mut list = git.command(git_dir);
        if let Some(index) = index {
            list.env("GIT_INDEX_FILE", index);
        }
        list.args(["ls-files", "--stage", "-z", "--"])
            .args(&self.specs);
        Ok(output(list, "ls-files")?)
    }
}

/// The names of a `-z` list.
fn names(listed: &str) -> Vec<String> {
    listed
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The commit a new ref is measured against: `HEAD` when the command started, or the empty
/// tree of this repository's hash where there is none.
pub(super) fn base(git: &HardenedGit, git_dir: &Path) -> String {
    let mut head = git.command(git_dir);
    head.args(["rev-parse", "-q", "--verify", "HEAD^{commit}"]);
    if let Ok(id) = output(head, "rev-parse") {
        return id.trim().to_owned();
    }
    let mut empty = git.command(git_dir);
    empty.args(["hash-object", "-t", "tree", "/dev/null"]);
    output(empty, "hash-object")
        .map(|id| id.trim().to_owned())
        .unwrap_or_default()
}

/// What every ref, `HEAD` and the index are measured against.
pub(super) struct Guard {
    pub(super) protected: Protected,
    /// The commit `HEAD` was at when the command started (or the empty tree).
    pub(super) base: String,
}
