//! The runner's repository work on the host, with the sandbox's hardened git
//! ([`warden_sandbox::git`]): the commit, worktrees made and removed, the patch.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use warden_sandbox::git::{HardenedGit, output, plain as base};

/// A repository the runner works on.
#[derive(Debug, Clone)]
pub(crate) struct Repo {
    /// The working tree's top.
    pub(crate) top: PathBuf,
    /// The common git directory (`.git`, or the main repository's when `top` is a worktree).
    pub(crate) common: PathBuf,
    /// git with what the configuration would run neutralised.
    git: HardenedGit,
    /// The settings that were neutralised, by name (`core.fsmonitor`, `filter.lfs.smudge`).
    pub(crate) neutralised: Vec<String>,
}

impl Repo {
    /// The repository holding `dir`, its configuration read (never run) to find what to
    /// neutralise.
    pub(crate) fn open(dir: &Path) -> Result<Self, String> {
        let mut probe = base(dir);
        probe.args([
            "-c",
            "core.fsmonitor=false",
            "rev-parse",
            "--show-toplevel",
            "--git-common-dir",
        ]);
        let text = output(probe, "rev-parse").map_err(|e| {
            format!(
                "{} is not a git repository, and `repo` and `workspace` are its commit: {e}",
                dir.display()
            )
        })?;
        let mut lines = text.lines();
        let top = PathBuf::from(lines.next().unwrap_or_default());
        let common = PathBuf::from(lines.next().unwrap_or_default());
        let common = if common.is_absolute() {
            common
        } else {
            top.join(common)
        };
        let common = common.canonicalize().unwrap_or(common);
        let git = HardenedGit::for_worktree(&top);
        let neutralised = git.neutralised.clone();
        Ok(Self {
            top,
            common,
            git,
            neutralised,
        })
    }

    /// A hardened git command in `dir`.
    pub(crate) fn git(&self, dir: &Path) -> Command {
        self.git.command(dir)
    }

    fn run(&self, dir: &Path, args: &[&str]) -> Result<String, String> {
        let mut cmd = self.git(dir);
        cmd.args(args);
        Ok(output(cmd, args.first().copied().unwrap_or(""))?)
    }

    /// The commit `HEAD` names.
    pub(crate) fn head(&self) -> Result<String, String> {
        Ok(self
            .run(&self.top, &["rev-parse", "--verify", "HEAD^{commit}"])?
            .trim()
            .to_owned())
    }

    /// Whether the working copy has changes the commit does not (they are not part of the run).
    pub(crate) fn dirty(&self) -> bool {
        self.run(
            &self.top,
            &["status", "--porcelain", "--untracked-files=no"],
        )
        .is_ok_and(|s| !s.trim().is_empty())
    }

    /// Checks `commit` out, detached, as a new worktree at `path`; its private git directory
    /// is returned.
    pub(crate) fn add_worktree(&self, path: &Path, commit: &str) -> Result<PathBuf, String> {
        let target = path.to_string_lossy().into_owned();
        self.run(
            &self.top,
            &["worktree", "add", "--quiet", "--detach", &target, commit],
        )?;
        let git_dir = self.run(path, &["rev-parse", "--absolute-git-dir"])?;
        Ok(PathBuf::from(git_dir.trim()))
    }

    /// Checks `commit` out into the empty directory `tree`, with git's index of it at `index`
    /// (no worktree is registered: the repository is not changed).
    pub(crate) fn check_out(&self, commit: &str, tree: &Path, index: &Path) -> Result<(), String> {
        let with_index = |args: &[&str]| {
            let mut cmd = self.git(&self.top);
            cmd.env("GIT_INDEX_FILE", index)
                .arg(format!("--work-tree={}", tree.display()))
                .args(args);
            cmd
        };
        output(with_index(&["read-tree", commit]), "read-tree")?;
        output(
            with_index(&["checkout-index", "--all", "--force", "--index"]),
            "checkout-index",
        )?;
        Ok(())
    }

    /// The repository's configuration as a command inside the sandbox may see it: the format
    /// and its extensions, nothing else (no remotes' credentials, no programs).
    pub(crate) fn sanitised_config(&self) -> String {
        let get = |args: &[&str]| self.run(&self.top, args).unwrap_or_default();
        let version = get(&["config", "--local", "--get", "core.repositoryformatversion"]);
        let mut out = format!(
            "[core]\n\trepositoryformatversion = {}\n\tbare = false\n",
            version.trim().parse::<u32>().unwrap_or(0)
        );
        let extensions = get(&["config", "--local", "--get-regexp", "^extensions\\."]);
        let safe: Vec<(String, String)> = extensions
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(k, v)| {
                k.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
            })
            .map(|(k, v)| (k.trim_start_matches("extensions.").to_owned(), v.to_owned()))
            .collect();
        if !safe.is_empty() {
            out.push_str("[extensions]\n");
            for (k, v) in safe {
                let _ = writeln!(out, "\t{k} = {v}");
            }
        }
        out
    }

    /// The patch from `commit` to the worktree at `path` as it is now, new files included
    /// (the ignored ones not), binary changes in git's binary form. Its private index is the
    /// one only this side writes.
    pub(crate) fn patch(
        &self,
        path: &Path,
        git_dir: &Path,
        commit: &str,
    ) -> Result<Vec<u8>, String> {
        let with_dir = |args: &[&str]| {
            let mut cmd = self.git(path);
            cmd.arg(format!("--git-dir={}", git_dir.display()))
                .arg(format!("--work-tree={}", path.display()))
                .args(args);
            cmd
        };
        output(with_dir(&["add", "--all", "--intent-to-add"]), "add -N")?;
        let out = with_dir(&[
            "diff",
            "--binary",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            commit,
            "--",
        ])
        .output()
        .map_err(|e| format!("git diff: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "git diff: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(out.stdout)
    }

    /// Removes the worktree at `path` and its private git directory, then has git forget it.
    /// Errors are reported, not returned: cleanup goes on, and is verified afterwards.
    pub(crate) fn remove_worktree(&self, path: &Path, git_dir: Option<&Path>) -> Vec<String> {
        let mut errors = Vec::new();
        if let Err(e) = remove_tree(path) {
            errors.push(e);
        }
        if let Some(dir) = git_dir.filter(|d| d.starts_with(&self.common))
            && let Err(e) = remove_tree(dir)
        {
            errors.push(e);
        }
        if let Err(e) = self.run(&self.top, &["worktree", "prune"]) {
            errors.push(e);
        }
        errors
    }

    /// Whether git still lists a worktree at `path`.
    pub(crate) fn lists_worktree(&self, path: &Path) -> bool {
        self.run(&self.top, &["worktree", "list", "--porcelain"])
            .is_ok_and(|list| {
                list.lines()
                    .filter_map(|l| l.strip_prefix("worktree "))
                    .any(|p| Path::new(p) == path)
            })
    }
}

/// Removes `path` and everything under it; gone already is fine.
pub(crate) fn remove_tree(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", path.display())),
        Ok(m) if m.is_dir() => {
            std::fs::remove_dir_all(path).map_err(|e| format!("removing {}: {e}", path.display()))
        }
        Ok(_) => {
            std::fs::remove_file(path).map_err(|e| format!("removing {}: {e}", path.display()))
        }
    }
}
