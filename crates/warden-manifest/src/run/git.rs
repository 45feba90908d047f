//! git on the host, hardened: the repository's own configuration may name programs (hooks, a
//! file-system monitor, filter and diff drivers, credential helpers) that git would run as the
//! user, outside any sandbox. Every invocation here runs with only the repository's own
//! configuration (no system or global file), and with every such setting found there overridden
//! to nothing. Worktrees are made and removed with it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A repository the runner works on.
#[derive(Debug, Clone)]
pub(crate) struct Repo {
    /// The working tree's top.
    pub(crate) top: PathBuf,
    /// The common git directory (`.git`, or the main repository's when `top` is a worktree).
    pub(crate) common: PathBuf,
    /// `-c` overrides that neutralise what the configuration would run.
    overrides: Vec<String>,
    /// The settings that were neutralised, by name (`core.fsmonitor`, `filter.lfs.smudge`).
    pub(crate) neutralised: Vec<String>,
}

/// Settings whose value is a program (or a hook directory) git runs; overridden to nothing.
const RUNS_CODE: &[&str] = &[
    "core.fsmonitor",
    "core.hookspath",
    "core.sshcommand",
    "core.askpass",
    "core.editor",
    "core.pager",
    "core.gitproxy",
    "credential.helper",
    "diff.external",
    "gpg.program",
    "sequence.editor",
    "uploadpack.packobjectshook",
];

/// Per-name settings that run programs: `filter.<name>.clean`, `diff.<name>.textconv`, …
const RUNS_CODE_NAMED: &[(&str, &[&str])] = &[
    ("filter.", &["clean", "smudge", "process"]),
    ("diff.", &["textconv", "command"]),
    ("merge.", &["driver"]),
    ("credential.", &["helper"]),
];

fn base(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .stdin(std::process::Stdio::null());
    cmd
}

/// Runs `cmd`, its stdout when it succeeds, else its stderr as the error.
fn output(mut cmd: Command, what: &str) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("git {what}: cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "git {what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
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
        let mut list = base(&top);
        list.args([
            "-c",
            "core.fsmonitor=false",
            "config",
            "--local",
            "--includes",
            "--list",
            "--name-only",
            "-z",
        ]);
        let names = output(list, "config --list").unwrap_or_default();
        let mut overrides = vec![
            "core.hooksPath=/dev/null".to_owned(),
            "core.fsmonitor=false".to_owned(),
            "core.pager=cat".to_owned(),
            "credential.helper=".to_owned(),
            "diff.external=".to_owned(),
            "protocol.allow=never".to_owned(),
        ];
        let mut neutralised = Vec::new();
        for name in names.split('\0').filter(|n| !n.is_empty()) {
            let lower = name.to_ascii_lowercase();
            let per_name = RUNS_CODE_NAMED.iter().find_map(|(prefix, keys)| {
                let rest = lower.strip_prefix(prefix)?;
                let (middle, key) = rest.rsplit_once('.')?;
                keys.contains(&key)
                    .then(|| (prefix, middle.to_owned(), key))
            });
            if RUNS_CODE.contains(&lower.as_str()) {
                if !neutralised.contains(&lower) {
                    neutralised.push(lower.clone());
                }
                if !overrides
                    .iter()
                    .any(|o| o.to_ascii_lowercase().starts_with(&lower))
                {
                    overrides.push(format!("{name}="));
                }
            } else if let Some((prefix, middle, _)) = per_name {
                // Override the section's name exactly as written (subsections are
                // case-sensitive).
                let section = &name[..prefix.len() + middle.len()];
                let keys: &[&str] = match *prefix {
                    "filter." => &["clean", "smudge", "process"],
                    "diff." => &["textconv", "command"],
                    "merge." => &["driver"],
                    _ => &["helper"],
                };
                for key in keys {
                    let o = format!("{section}.{key}=");
                    if !overrides.contains(&o) {
                        overrides.push(o);
                    }
                }
                if *prefix == "filter." {
                    overrides.push(format!("{section}.required=false"));
                }
                if !neutralised.contains(&lower) {
                    neutralised.push(lower);
                }
            }
        }
        Ok(Self {
            top,
            common,
            overrides,
            neutralised,
        })
    }

    /// A hardened git command in `dir`.
    pub(crate) fn git(&self, dir: &Path) -> Command {
        let mut cmd = base(dir);
        for o in &self.overrides {
            cmd.arg("-c").arg(o);
        }
        cmd
    }

    fn run(&self, dir: &Path, args: &[&str]) -> Result<String, String> {
        let mut cmd = self.git(dir);
        cmd.args(args);
        output(cmd, args.first().copied().unwrap_or(""))
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
