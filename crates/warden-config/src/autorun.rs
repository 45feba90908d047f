//! Files that run code on the host later: the shell's start-up files, direnv's `.envrc`, git's
//! hooks and configuration (a submodule's too, and the directory `core.hooksPath` names), the
//! editors' project settings, warden's own and Claude Code's (whose hook scripts run as the user). No tool may write them and no command may change or
//! create them, in any root it can write: one list, for the policy and the sandbox alike.

use std::path::{Path, PathBuf};

/// Below every writable root (and, for the tools, anywhere): read-only, and uncreatable where
/// absent.
pub const AUTO_RUN: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".config/fish/config.fish",
    ".envrc",
    ".git/hooks",
    ".git/config",
    ".vscode",
    ".idea",
    ".husky",
    ".warden",
    // Claude Code's settings and the hook scripts they name, which warden's hooks run too.
    ".claude",
];

/// How many directories of `.git/modules` are looked into for submodules' git directories.
const MODULE_LIMIT: usize = 10_000;

/// What below `root` runs code later beyond [`AUTO_RUN`]: each submodule's `hooks` and
/// `config` (in `.git/modules`, at any depth), and the directory the repository's
/// `core.hooksPath` names.
pub fn repository_auto_run(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut budget = MODULE_LIMIT;
    let mut dirs = vec![root.join(".git/modules")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if budget == 0 {
                return found;
            }
            budget -= 1;
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            if path.join("HEAD").is_file() {
                // A submodule's git directory: its own hooks and config, and its submodules.
                found.push(path.join("hooks"));
                found.push(path.join("config"));
                // Its working tree, where its relative hooks path is taken from.
                let config = path.join("config");
                let tree = core_value(&config, "worktree")
                    .map_or_else(|| root.to_path_buf(), |w| path.join(w));
                found.extend(hooks_path(&config, &tree));
                dirs.push(path.join("modules"));
            } else {
                // A submodule named with a slash (`libs/a`) nests its git directory.
                dirs.push(path);
            }
        }
    }
    found.extend(hooks_path(&root.join(".git/config"), root));
    found.iter().map(|p| lexical(p)).collect()
}

/// `path` with `.` and `..` taken away by the letter (a hooks path names a place, links or not).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The directory `core.hooksPath` names in the git configuration file `config`, relative ones
/// taken from `tree` (the working tree, where git runs hooks).
fn hooks_path(config: &Path, tree: &Path) -> Option<PathBuf> {
    let value = core_value(config, "hookspath")?;
    match value.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(rest)),
        None => Some(tree.join(&value)),
    }
}

/// The last value of `core.<key>` (any case) in the git configuration file `config`.
fn core_value(config: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(config).ok()?;
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let section = line.trim_start_matches('[').split([']', ' ', '"']).next();
            in_core = section.is_some_and(|s| s.eq_ignore_ascii_case("core"));
            continue;
        }
        let Some((name, value)) = line.split_once('=').filter(|_| in_core) else {
            continue;
        };
        let value = value.trim().trim_matches('"');
        if name.trim().eq_ignore_ascii_case(key) && !value.is_empty() {
            // The last one wins, as in git.
            found = Some(value.to_owned());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submodules_at_any_depth_and_the_hooks_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let a = root.join(".git/modules/a");
        let deep = a.join("modules/libs/b");
        for git in [&a, &deep] {
            std::fs::create_dir_all(git).unwrap();
            std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        }
        std::fs::write(
            a.join("config"),
            "[core]\n\tworktree = ../../../a\n\thooksPath = hooks-a\n",
        )
        .unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\tbare = false\n[Core]\n\tHooksPath = \".githooks\"\n[user]\n\thooksPath = x\n",
        )
        .unwrap();
        let mut found = repository_auto_run(root);
        found.sort();
        let mut want = vec![
            a.join("config"),
            a.join("hooks"),
            deep.join("config"),
            deep.join("hooks"),
            root.join("a/hooks-a"),
            root.join(".githooks"),
        ];
        want.sort();
        assert_eq!(found, want);
    }
}
