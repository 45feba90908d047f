//! Where settings are found: the user's configuration directory and a project's root.

use std::env;
use std::path::{Path, PathBuf};

/// `$XDG_CONFIG_HOME/warden`, falling back to `$HOME/.config/warden` when `XDG_CONFIG_HOME`
/// is unset, empty or relative (which the XDG spec says to ignore).
pub fn user_config_dir() -> Option<PathBuf> {
    let non_empty = |name: &str| env::var_os(name).filter(|value| !value.is_empty());
    let xdg = non_empty("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute());
    xdg.or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".config")))
        .map(|dir| dir.join("warden"))
}

/// The nearest ancestor of `cwd` (itself included) holding a `.warden/` directory or a `.git`
/// entry (directory or worktree file); `cwd` itself when there is none.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".warden").is_dir() || dir.join(".git").symlink_metadata().is_ok())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Whether `path` is `dir` or below it, as [`Path::starts_with`] says (whole components), but
/// by comparing bytes where `dir` is absolute and clean (no `//`, no `.` or `..` component, no
/// trailing `/`) and `path` is clean up to where they differ: the check a plan makes for every
/// masked file against every bind and hidden directory.
pub fn within(path: &Path, dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let (p, d) = (path.as_os_str().as_bytes(), dir.as_os_str().as_bytes());
    if !clean(d, d.len()) || p.first() != Some(&b'/') {
        return path.starts_with(dir);
    }
    let same = p.iter().zip(d).take_while(|(a, b)| a == b).count();
    if same == d.len() && (p.len() == same || d == b"/" || p[same] == b'/') {
        return true;
    }
    // They differ at `same`: by components too, unless `path` is spelled otherwise before it.
    if clean(p, (same + 2).min(p.len())) {
        return false;
    }
    path.starts_with(dir)
}

/// Whether the first `upto` bytes of `path` are absolute and hold no `//` and no `.` or `..`
/// component (nor `.`-names, to be brief), and, when they are all of it, no trailing `/`.
fn clean(path: &[u8], upto: usize) -> bool {
    if path.first() != Some(&b'/') || (upto == path.len() && upto > 1 && path[upto - 1] == b'/') {
        return false;
    }
    (0..upto).all(|i| {
        path[i] != b'/'
            || match path.get(i + 1) {
                Some(b'/') => false,
                Some(b'.') => !matches!(path.get(i + 2), None | Some(b'/' | b'.')),
                _ => true,
            }
    })
}

#[cfg(test)]
mod tests {
    use super::within;
    use std::path::Path;

    #[test]
    fn within_says_what_starts_with_says() {
        let paths = [
            "/",
            "/a",
            "/a/b",
            "/a/bc",
            "/ab",
            "/a/b/",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/a/.b",
            "/a/..b",
            "a/b",
            "a",
            "",
            "/a/b/c",
            "/a/.",
            "/.",
            "/a/b/../c",
            "/a/b//c",
            "//a",
            "/a/b/./c",
            "/b",
            "/a/b/c/",
            "./a",
            "/a/c",
            "/a/b.c",
        ];
        for p in paths {
            for d in paths {
                assert_eq!(
                    within(Path::new(p), Path::new(d)),
                    Path::new(p).starts_with(d),
                    "{p} within {d}"
                );
            }
        }
    }
}
