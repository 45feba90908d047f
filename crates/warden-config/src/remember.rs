//! Remembered approvals: an "always" answer becomes a rule in warden's own file in the user's
//! data directory (`remembered.toml`), kept per project root. A repository can ship any file
//! of its own, but not this one, so it cannot forge the user's answers.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::raw::{RawPermissions, RawSettings};
use crate::state::{self, REMEMBERED_FILE};

const HEADER: &str = "# Rules remembered from \"always\" answers, by project. `warden config show` \
lists them,\n# `warden config forget RULE` removes one.";

/// The list a remembered rule joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleList {
    Allow,
    Ask,
    Deny,
}

/// The rules remembered for one project.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RememberedRules {
    /// The project root, canonical.
    pub root: PathBuf,
    /// Rules that allow.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules that ask.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Rules that deny.
    #[serde(default)]
    pub deny: Vec<String>,
}

impl RememberedRules {
    fn list(&mut self, list: RuleList) -> &mut Vec<String> {
        match list {
            RuleList::Allow => &mut self.allow,
            RuleList::Ask => &mut self.ask,
            RuleList::Deny => &mut self.deny,
        }
    }

    /// As a settings layer.
    pub(crate) fn layer(&self) -> RawSettings {
        let some = |rules: &Vec<String>| (!rules.is_empty()).then(|| rules.clone());
        RawSettings {
            permissions: Some(RawPermissions {
                allow: some(&self.allow),
                ask: some(&self.ask),
                deny: some(&self.deny),
                ..RawPermissions::default()
            }),
            ..RawSettings::default()
        }
    }

    /// Whether no rule is remembered.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct RememberedFile {
    #[serde(default, rename = "project")]
    projects: Vec<RememberedRules>,
}

/// The rules remembered for `project_root` in `data_dir` (empty when none are).
pub fn remembered(data_dir: &Path, project_root: &Path) -> Result<RememberedRules, ConfigError> {
    let file: RememberedFile = state::read(data_dir, REMEMBERED_FILE)?;
    Ok(file
        .projects
        .into_iter()
        .find(|p| p.root == project_root)
        .unwrap_or_else(|| RememberedRules {
            root: project_root.to_path_buf(),
            ..RememberedRules::default()
        }))
}

/// Where the remembered rules live in `data_dir`.
pub fn remembered_path(data_dir: &Path) -> PathBuf {
    data_dir.join(REMEMBERED_FILE)
}

/// Remembers `rule` in `list` for `project_root`, in `data_dir` (once: a rule already there is
/// not added twice). Returns the file written.
pub fn remember_rule(
    data_dir: &Path,
    project_root: &Path,
    list: RuleList,
    rule: &str,
) -> Result<PathBuf, ConfigError> {
    let (path, ()) = state::update(
        data_dir,
        REMEMBERED_FILE,
        HEADER,
        |file: &mut RememberedFile| {
            let index =
                if let Some(index) = file.projects.iter().position(|p| p.root == project_root) {
                    index
                } else {
                    file.projects.push(RememberedRules {
                        root: project_root.to_path_buf(),
                        ..RememberedRules::default()
                    });
                    file.projects.len() - 1
                };
            let rules = file.projects[index].list(list);
            if !rules.iter().any(|r| r == rule) {
                rules.push(rule.to_owned());
            }
        },
    )?;
    Ok(path)
}

impl crate::Settings {
    /// Remembers `rule` for this project in the user's data directory: an "always" answer.
    pub fn remember(&self, list: RuleList, rule: &str) -> Result<PathBuf, ConfigError> {
        let data_dir = self.dirs.data_dir.as_ref().ok_or(ConfigError::NoDataDir)?;
        remember_rule(data_dir, &self.project_root, list, rule)
    }
}

/// Removes `rule` from every list remembered for `project_root`; whether it was there.
pub fn forget_rule(data_dir: &Path, project_root: &Path, rule: &str) -> Result<bool, ConfigError> {
    let (_, removed) = state::update(
        data_dir,
        REMEMBERED_FILE,
        HEADER,
        |file: &mut RememberedFile| {
            let mut removed = false;
            for project in file.projects.iter_mut().filter(|p| p.root == project_root) {
                for list in [RuleList::Allow, RuleList::Ask, RuleList::Deny] {
                    let rules = project.list(list);
                    let before = rules.len();
                    rules.retain(|r| r != rule);
                    removed |= rules.len() != before;
                }
            }
            file.projects.retain(|p| !p.is_empty());
            removed
        },
    )?;
    Ok(removed)
}

/// The rules a project's own `.warden/settings.local.toml` holds (a file that, in a cloned
/// repository, may be the repository's), which `warden trust` offers to move here.
pub fn local_rules(project_root: &Path) -> Result<Vec<(RuleList, String)>, ConfigError> {
    let path = project_root.join(".warden/settings.local.toml");
    let Some(text) = state::read_settings_file(&path)? else {
        return Ok(Vec::new());
    };
    let permissions = crate::parse::parse_str(&text, &path)?
        .permissions
        .unwrap_or_default();
    let mut rules = Vec::new();
    for (list, entries) in [
        (RuleList::Allow, permissions.allow),
        (RuleList::Ask, permissions.ask),
        (RuleList::Deny, permissions.deny),
    ] {
        rules.extend(entries.into_iter().flatten().map(|rule| (list, rule)));
    }
    Ok(rules)
}

/// Moves `rules` (as [`local_rules`] listed them, and shown to the user) from the project's
/// `.warden/settings.local.toml` into warden's remembered rules in `data_dir`, keeping the rest
/// of that file (comments included). A rule no longer in the file is not moved; a rule the file
/// holds now but `rules` does not name stays where it is. Returns the rules moved.
pub fn move_local_rules(
    data_dir: &Path,
    project_root: &Path,
    rules: &[(RuleList, String)],
) -> Result<Vec<String>, ConfigError> {
    let present = local_rules(project_root)?;
    let moving: Vec<&(RuleList, String)> = rules.iter().filter(|r| present.contains(r)).collect();
    if moving.is_empty() {
        return Ok(Vec::new());
    }
    for (list, rule) in &moving {
        remember_rule(data_dir, project_root, *list, rule)?;
    }
    let path = project_root.join(".warden/settings.local.toml");
    let text = state::read_settings_file(&path)?.unwrap_or_default();
    let mut doc: toml_edit::DocumentMut =
        text.parse()
            .map_err(|err: toml_edit::TomlError| ConfigError::Syntax {
                path: path.clone(),
                line: None,
                column: None,
                message: err.to_string(),
            })?;
    if let Some(permissions) = doc
        .get_mut("permissions")
        .and_then(toml_edit::Item::as_table_like_mut)
    {
        // The table itself stays, with the comments before it.
        for (list, key) in [
            (RuleList::Allow, "allow"),
            (RuleList::Ask, "ask"),
            (RuleList::Deny, "deny"),
        ] {
            let Some(array) = permissions
                .get_mut(key)
                .and_then(toml_edit::Item::as_array_mut)
            else {
                continue;
            };
            array.retain(|v| {
                !v.as_str()
                    .is_some_and(|rule| moving.iter().any(|(l, r)| *l == list && r == rule))
            });
            if array.is_empty() {
                permissions.remove(key);
            }
        }
    }
    state::replace_file(&path, doc.to_string().as_bytes()).map_err(|source| {
        ConfigError::Write {
            path: path.clone(),
            source,
        }
    })?;
    Ok(moving.into_iter().map(|(_, rule)| rule.clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_kept_per_project_once_and_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (Path::new("/src/a"), Path::new("/src/b"));
        remember_rule(dir.path(), a, RuleList::Allow, "Bash(npm test *)").unwrap();
        remember_rule(dir.path(), a, RuleList::Allow, "Bash(npm test *)").unwrap();
        remember_rule(dir.path(), b, RuleList::Deny, "Bash(git push *)").unwrap();
        let ra = remembered(dir.path(), a).unwrap();
        assert_eq!(ra.allow, ["Bash(npm test *)"]);
        assert!(ra.deny.is_empty());
        assert_eq!(
            remembered(dir.path(), b).unwrap().deny,
            ["Bash(git push *)"]
        );
        assert!(forget_rule(dir.path(), a, "Bash(npm test *)").unwrap());
        assert!(!forget_rule(dir.path(), a, "Bash(npm test *)").unwrap());
        assert!(remembered(dir.path(), a).unwrap().is_empty());
        let text = std::fs::read_to_string(remembered_path(dir.path())).unwrap();
        assert!(text.starts_with("# Rules remembered"), "{text}");
        assert!(!text.contains("/src/a"), "{text}");
    }

    #[test]
    fn a_local_files_rules_move_out_and_the_rest_stays() {
        let dir = tempfile::tempdir().unwrap();
        let (data, root) = (dir.path().join("data"), dir.path().join("p"));
        std::fs::create_dir_all(root.join(".warden")).unwrap();
        let local = root.join(".warden/settings.local.toml");
        std::fs::write(
            &local,
            "# mine\n[permissions]\nallow = [\"Bash(make *)\"]\ndeny = [\"Bash(rm *)\"]\n\
             [context]\ntool_output_tokens = 10\n",
        )
        .unwrap();
        let listed = local_rules(&root).unwrap();
        // A rule added after the listing stays where it is.
        let text = std::fs::read_to_string(&local).unwrap();
        std::fs::write(
            &local,
            text.replace("\"Bash(make *)\"]", "\"Bash(make *)\", \"Bash(*)\"]"),
        )
        .unwrap();
        let moved = move_local_rules(&data, &root, &listed).unwrap();
        assert_eq!(moved, ["Bash(make *)", "Bash(rm *)"]);
        let rules = remembered(&data, &root).unwrap();
        assert_eq!((rules.allow.len(), rules.deny.len()), (1, 1));
        let text = std::fs::read_to_string(&local).unwrap();
        assert!(text.starts_with("# mine"), "{text}");
        assert!(
            !text.contains("Bash(make") && !text.contains("Bash(rm"),
            "{text}"
        );
        assert!(text.contains("\"Bash(*)\""), "{text}");
        assert!(text.contains("tool_output_tokens = 10"), "{text}");
        assert!(move_local_rules(&data, &root, &listed).unwrap().is_empty());
        assert!(
            !remembered(&data, &root)
                .unwrap()
                .allow
                .contains(&"Bash(*)".to_owned())
        );
    }

    #[test]
    fn a_malformed_file_is_an_error_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = remembered_path(dir.path());
        std::fs::write(&path, "[[project]\n").unwrap();
        let err = remember_rule(dir.path(), Path::new("/p"), RuleList::Allow, "Bash(ls)")
            .unwrap_err()
            .to_string();
        assert!(err.contains("remembered.toml:1"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[[project]\n");
    }
}
