//! Protected paths: built in, from settings, never allowed without an organisation rule.

use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::PatternError;

/// Read-and-write protection, built in: secrets and credentials.
const READ_WRITE: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gh",
    "~/.netrc",
    "~/.docker/config.json",
    "~/.kube/config",
    "//etc/shadow",
    "//etc/gshadow",
    "//etc/sudoers",
    "//var/run/docker.sock",
    "//run/docker.sock",
    "**/docker.sock",
    "**/.ssh",
    "**/.aws/credentials",
];

/// Write protection, built in: what changes how code runs later (besides
/// [`warden_config::AUTO_RUN`], anywhere).
const WRITE_ONLY: &[&str] = &[
    "**/.git/modules/**/hooks",
    "**/.git/modules/**/config",
    "~/.bashrc",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.bash_logout",
    "~/.profile",
    "~/.zshrc",
    "~/.zprofile",
    "~/.zshenv",
    "~/.zlogin",
    "~/.config/fish",
    "~/.gitconfig",
    "~/.config/git",
    "//etc",
    "//usr",
    "//bin",
    "//sbin",
    "//lib",
    "//boot",
];

/// The protected paths: for reads, and (a superset) for writes.
#[derive(Debug, Clone)]
pub struct Protection {
    read: Set,
    write: Set,
}

/// Gitignore-style patterns anchored at the project root (`~/` at the home directory, `//` at
/// `/`), each matching a path and what is below it, matched against absolute paths.
#[derive(Debug, Clone)]
pub(crate) struct Set {
    globs: GlobSet,
    pub(crate) patterns: Vec<String>,
    owner: Vec<usize>,
}

impl Protection {
    /// The built-in lists plus `read` (reads and writes: `protected_paths`, `deny_read`, the read
    /// tool's denies) and `write` (writes only: `deny_write`). Relative patterns are anchored at
    /// `root` the gitignore way; `~/` at `home`; `//` at `/`.
    pub fn new(
        root: &Path,
        home: &Path,
        read: &[String],
        write: &[String],
    ) -> Result<Self, PatternError> {
        let builtin_rw = READ_WRITE.iter().map(|s| (*s).to_owned());
        let read_all: Vec<String> = builtin_rw.chain(read.iter().cloned()).collect();
        let mut write_all = read_all.clone();
        write_all.extend(WRITE_ONLY.iter().map(|s| (*s).to_owned()));
        write_all.extend(warden_config::AUTO_RUN.iter().map(|s| format!("**/{s}")));
        write_all.extend(write.iter().cloned());
        Ok(Self {
            read: Set::new(&read_all, root, home)?,
            write: Set::new(&write_all, root, home)?,
        })
    }

    /// The pattern protecting `path` from being read, if one does.
    pub fn read(&self, path: &Path) -> Option<&str> {
        self.read.find(path)
    }

    /// The pattern protecting `path` from being written, if one does.
    pub fn write(&self, path: &Path) -> Option<&str> {
        self.write.find(path)
    }
}

impl Set {
    pub(crate) fn new(patterns: &[String], root: &Path, home: &Path) -> Result<Self, PatternError> {
        let mut builder = GlobSetBuilder::new();
        let mut owner = Vec::new();
        for (index, pattern) in patterns.iter().enumerate() {
            let base = anchor(pattern, root, home);
            for glob in [base.clone(), format!("{base}/**")] {
                let compiled = GlobBuilder::new(&glob)
                    .literal_separator(true)
                    .build()
                    .map_err(|source| PatternError::new(pattern, source))?;
                builder.add(compiled);
                owner.push(index);
            }
        }
        let globs = builder
            .build()
            .map_err(|source| PatternError::new(&patterns.join(", "), source))?;
        Ok(Self {
            globs,
            patterns: patterns.to_vec(),
            owner,
        })
    }

    /// The pattern that matches `path`, if one does.
    pub(crate) fn find(&self, path: &Path) -> Option<&str> {
        let hits = self.globs.matches(path);
        hits.first().map(|i| self.patterns[self.owner[*i]].as_str())
    }
}

/// An absolute glob for a gitignore-style pattern.
pub(crate) fn anchor(pattern: &str, root: &Path, home: &Path) -> String {
    let trimmed = pattern.trim_end_matches('/');
    if let Some(rest) = trimmed.strip_prefix("~/") {
        return format!("{}/{rest}", home.display());
    }
    if let Some(rest) = trimmed.strip_prefix("//") {
        return format!("/{rest}");
    }
    if trimmed.starts_with("**/") {
        return trimmed.to_owned();
    }
    let anchored = trimmed.strip_prefix('/').unwrap_or(trimmed);
    if trimmed.starts_with('/') || anchored.contains('/') {
        format!("{}/{anchored}", root.display())
    } else {
        format!("**/{anchored}")
    }
}
