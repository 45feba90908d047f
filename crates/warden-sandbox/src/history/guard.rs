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
        let Some(root) = git_dir.parent() else {
            return Self { specs: Vec::new() };
        };
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

    /// The protected paths whose content differs between the trees of `from` and `to`; an error
    /// (counted as a change) where git cannot tell.
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
        Ok(output(diff, "diff-tree")?
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect())
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
        output(list, "ls-files")
    }
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
