//! Remembered approvals: an "always" answer becomes a rule in the project-local settings file.

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, Item, Table, value};

use crate::error::ConfigError;
use crate::load::parse_str;

/// The list a remembered rule joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleList {
    Allow,
    Ask,
    Deny,
}

impl RuleList {
    fn key(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

/// Appends `rule` to `[permissions] <list>` of `<project_root>/.warden/settings.local.toml`,
/// keeping the rest of the file (comments and layout included). A rule already there is not
/// added twice. The file is written whole to a temporary name and renamed into place, and only
/// after the new text has been checked to load, so a failure never leaves a broken file.
pub fn remember_rule(
    project_root: &Path,
    list: RuleList,
    rule: &str,
) -> Result<PathBuf, ConfigError> {
    let dir = project_root.join(".warden");
    let path = dir.join("settings.local.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(ConfigError::Read { path, source }),
    };
    // The file must load as it is before it is changed.
    parse_str(&text, &path)?;
    let mut doc: DocumentMut =
        text.parse()
            .map_err(|err: toml_edit::TomlError| ConfigError::Syntax {
                path: path.clone(),
                line: None,
                column: None,
                message: err.to_string(),
            })?;
    let permissions = doc
        .entry("permissions")
        .or_insert_with(|| Item::Table(Table::new()));
    let Some(permissions) = permissions.as_table_like_mut() else {
        return Err(key_error(&path, "permissions", "is not a table"));
    };
    let entry = permissions.entry(list.key()).or_insert(value(Array::new()));
    let Some(array) = entry.as_array_mut() else {
        return Err(key_error(
            &path,
            &format!("permissions.{}", list.key()),
            "is not an array",
        ));
    };
    if !array.iter().any(|v| v.as_str() == Some(rule)) {
        array.push(rule);
    }
    let new_text = doc.to_string();
    parse_str(&new_text, &path)?;
    std::fs::create_dir_all(&dir).map_err(|source| ConfigError::Write {
        path: dir.clone(),
        source,
    })?;
    let temp = dir.join(format!(".settings.local.toml.{}.tmp", std::process::id()));
    let write = |target: &Path| std::fs::write(target, &new_text);
    write(&temp).map_err(|source| ConfigError::Write {
        path: temp.clone(),
        source,
    })?;
    std::fs::rename(&temp, &path).map_err(|source| ConfigError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

fn key_error(path: &Path, key: &str, message: &str) -> ConfigError {
    ConfigError::Key {
        path: path.to_path_buf(),
        line: None,
        column: None,
        key: key.to_owned(),
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_is_appended_keeping_comments_and_not_twice() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join(".warden/settings.local.toml");
        std::fs::create_dir_all(local.parent().unwrap()).unwrap();
        std::fs::write(
            &local,
            "# mine\n[permissions]\nallow = [\"Bash(ls *)\"]  # keep\n",
        )
        .unwrap();
        remember_rule(dir.path(), RuleList::Allow, "Bash(npm test *)").unwrap();
        remember_rule(dir.path(), RuleList::Allow, "Bash(npm test *)").unwrap();
        let text = std::fs::read_to_string(&local).unwrap();
        assert!(text.starts_with("# mine\n"), "{text}");
        assert!(text.contains("# keep"), "{text}");
        assert_eq!(text.matches("Bash(npm test *)").count(), 1, "{text}");
        let raw = parse_str(&text, &local).unwrap();
        let allow = raw.permissions.unwrap().allow.unwrap();
        assert_eq!(allow, ["Bash(ls *)", "Bash(npm test *)"]);
    }

    #[test]
    fn a_missing_file_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = remember_rule(dir.path(), RuleList::Deny, "Bash(git push *)").unwrap();
        let raw = parse_str(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
        assert_eq!(raw.permissions.unwrap().deny.unwrap(), ["Bash(git push *)"]);
    }

    #[test]
    fn a_malformed_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join(".warden/settings.local.toml");
        std::fs::create_dir_all(local.parent().unwrap()).unwrap();
        std::fs::write(&local, "[permissions\nallow = 1\n").unwrap();
        assert!(remember_rule(dir.path(), RuleList::Allow, "Bash(ls *)").is_err());
        assert_eq!(
            std::fs::read_to_string(&local).unwrap(),
            "[permissions\nallow = 1\n"
        );
        std::fs::write(&local, "[permissions]\nallow = \"not a list\"\n").unwrap();
        assert!(remember_rule(dir.path(), RuleList::Allow, "Bash(ls *)").is_err());
    }
}
