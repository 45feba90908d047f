//! The one resolved path policy: what may be read and written, for the in-process tools, the
//! shell analysis and the sandbox's mount plan alike (SPEC P7, X10).
//!
//! [`PathPolicy`] answers for the tools (roots and denied patterns); [`Protection`] holds the
//! protected paths every layer refuses, whoever asks.

pub(crate) mod protect;
mod roots;

use std::path::{Component, Path, PathBuf};

pub use protect::Protection;
pub use roots::{PathPolicy, PatternError, ResolvedPath, WalkCache, normalize};

/// A path as the engine sees it: its spelling made absolute, and where it really leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Absolute and normalised, symlinks not followed.
    pub lexical: PathBuf,
    /// The real location: the nearest existing ancestor's real path with the rest re-appended.
    pub real: PathBuf,
}

impl Target {
    /// Both spellings, for matching: a deny that matches either denies.
    pub fn both(&self) -> [&Path; 2] {
        [&self.lexical, &self.real]
    }
}

/// Resolves `raw` (relative to `cwd`, `~` to `home`) without requiring it to exist.
pub(crate) fn resolve(raw: &str, cwd: &Path, home: &Path) -> Target {
    resolve_under(raw, cwd, home, &[])
}

/// As [`resolve`], knowing that `canonical` directories have no symlink on their own path: below
/// one of them only the remaining components need checking, one `lstat` each.
pub(crate) fn resolve_under(raw: &str, cwd: &Path, home: &Path, canonical: &[&Path]) -> Target {
    let joined = if raw == "~" {
        home.to_path_buf()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        home.join(rest)
    } else {
        cwd.join(raw)
    };
    let lexical = normalize(&joined);
    let real = match canonical
        .iter()
        .filter(|c| lexical.starts_with(c))
        .max_by_key(|c| c.as_os_str().len())
    {
        Some(base) => real_below(&lexical, base),
        None => real_path(&lexical),
    };
    Target { lexical, real }
}

/// The real path of `path`, which lies below the canonical directory `base`.
fn real_below(path: &Path, base: &Path) -> PathBuf {
    let Ok(rest) = path.strip_prefix(base) else {
        return real_path(path);
    };
    let mut current = base.to_path_buf();
    for part in rest.components() {
        current.push(part);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => return real_path(path),
            Ok(_) => {}
            // Nothing below a missing component exists, so nothing there can be a link.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return path.to_path_buf(),
            Err(_) => return real_path(path),
        }
    }
    path.to_path_buf()
}

/// The real path of `path`: the nearest existing ancestor canonicalised, the rest re-appended.
pub fn real_path(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
        match (
            existing.file_name().map(std::ffi::OsStr::to_os_string),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Devices every command may write: discarding output is not a write.
pub(crate) fn is_harmless_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "/dev/zero"
    ) || path.starts_with("/dev/fd/")
}

/// Whether `path` is `root` or inside it.
pub(crate) fn within(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

/// Whether `path` is `/`, a top-level directory, the home directory, or an ancestor of `root`.
pub(crate) fn is_critical(path: &Path, home: &Path, root: &Path) -> bool {
    let depth = path
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    depth <= 1 || path == home || root.starts_with(path) || home.starts_with(path)
}
