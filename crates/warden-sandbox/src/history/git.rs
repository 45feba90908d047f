//! git on the host, hardened: a repository's own configuration may name programs (hooks, a
//! file-system monitor, filter and diff drivers, credential helpers) that git would run as the
//! user, outside any sandbox. Every command made here runs with only the repository's own
//! configuration (no system or global file), and with every such setting found there overridden
//! to nothing.

use std::path::Path;
use std::process::Command;

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

/// The overrides every hardened command gets, whatever the configuration holds.
const ALWAYS: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "credential.helper=",
    "diff.external=",
    "protocol.allow=never",
];

/// `git` in `dir` with no system or global configuration, no prompt, no standard input, and
/// none of the variables that would point it at another repository or configuration.
pub fn plain(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        // A replace ref shows one commit as another: history as it is, here.
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .stdin(std::process::Stdio::null());
    cmd
}

/// Why a git command gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git {what}: cannot run git: {source}")]
    Spawn {
        what: String,
        source: std::io::Error,
    },
    /// It ran and failed: what it said on standard error.
    #[error("git {what}: {stderr}")]
    Failed { what: String, stderr: String },
}

impl From<GitError> for String {
    fn from(err: GitError) -> Self {
        err.to_string()
    }
}

/// Runs `cmd`: its stdout when it succeeds, else its stderr as the error.
pub fn output(mut cmd: Command, what: &str) -> Result<String, GitError> {
    let out = cmd.output().map_err(|source| GitError::Spawn {
        what: what.to_owned(),
        source,
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(GitError::Failed {
            what: what.to_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// What an ended git said: its stdout when it succeeded, else its stderr as the error.
pub(crate) fn answer(out: &std::process::Output, what: &str) -> Result<String, String> {
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "git {what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// git for one repository, every setting of its configuration that names a program overridden.
#[derive(Debug, Clone)]
pub struct HardenedGit {
    /// `-c` overrides, and `--git-dir` when the repository was named by its git directory.
    args: Vec<String>,
    /// The settings that were neutralised, by name (`core.fsmonitor`, `filter.lfs.smudge`).
    pub neutralised: Vec<String>,
}

impl HardenedGit {
    /// For the repository whose working tree holds `dir`: its configuration is read (never
    /// run) to find what to neutralise.
    pub fn for_worktree(dir: &Path) -> Self {
        Self::reading(dir, Vec::new())
    }

    /// For the repository whose git directory is `git_dir` (no working tree).
    pub fn for_git_dir(git_dir: &Path) -> Self {
        Self::reading(git_dir, vec![format!("--git-dir={}", git_dir.display())])
    }

    fn reading(dir: &Path, mut args: Vec<String>) -> Self {
        let mut list = plain(dir);
        list.args(&args).args([
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
        let mut overrides: Vec<String> = ALWAYS.iter().map(|s| (*s).to_owned()).collect();
        let mut neutralised = Vec::new();
        for name in names.split('\0').filter(|n| !n.is_empty()) {
            neutralise(name, &mut overrides, &mut neutralised);
        }
        for o in overrides {
            args.push("-c".to_owned());
            args.push(o);
        }
        Self { args, neutralised }
    }

    /// A hardened git command in `dir`.
    pub fn command(&self, dir: &Path) -> Command {
        let mut cmd = plain(dir);
        cmd.args(&self.args);
        cmd
    }
}

/// Adds the overrides that neutralise the setting `name`, if it names a program.
fn neutralise(name: &str, overrides: &mut Vec<String>, neutralised: &mut Vec<String>) {
    let lower = name.to_ascii_lowercase();
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
        return;
    }
    let Some((prefix, keys, middle)) = RUNS_CODE_NAMED.iter().find_map(|(prefix, keys)| {
        let rest = lower.strip_prefix(prefix)?;
        let (middle, key) = rest.rsplit_once('.')?;
        keys.contains(&key)
            .then_some((*prefix, *keys, middle.len()))
    }) else {
        return;
    };
    // The section's name exactly as written (subsections are case-sensitive).
    let section = &name[..prefix.len() + middle];
    for key in keys {
        let o = format!("{section}.{key}=");
        if !overrides.contains(&o) {
            overrides.push(o);
        }
    }
    if prefix == "filter." {
        overrides.push(format!("{section}.required=false"));
    }
    if !neutralised.contains(&lower) {
        neutralised.push(lower);
    }
}
