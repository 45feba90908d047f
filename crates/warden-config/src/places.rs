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
