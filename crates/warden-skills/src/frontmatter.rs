//! `SKILL.md`: YAML frontmatter between `---` lines, then the instructions in Markdown. The
//! fields of the open Agent Skills format (`name`, `description`, `license`, `compatibility`,
//! `allowed-tools`, `metadata`) and warden's own (`version`, `triggers`, `file_globs`,
//! `required_tools`, `permissions`). Errors name the line they are on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::name::SkillName;

/// The most characters of a description.
pub const MAX_DESCRIPTION: usize = 1024;
/// The most characters of `compatibility`.
pub const MAX_COMPATIBILITY: usize = 500;

/// What a skill may do while it is active, beyond its tools: each one only narrows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Permissions {
    /// Whether the skill's work needs the network (`false`: no fetch, no escalation).
    pub network: Option<bool>,
    /// Where it may write, as path patterns; writes elsewhere are refused.
    pub write_paths: Option<Vec<String>>,
    /// Whether its `scripts/` may be run (through the shell, in the sandbox).
    pub scripts: Option<bool>,
}

/// A skill's metadata.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Frontmatter {
    pub name: SkillName,
    pub description: String,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    /// The tools the skill may use, as permission rules (`Read`, `Bash(git:*)`); `None`: it
    /// does not restrict them.
    pub allowed_tools: Option<Vec<String>>,
    pub metadata: BTreeMap<String, serde_json::Value>,
    pub version: Option<String>,
    /// Phrases of a task that call for the skill.
    pub triggers: Vec<String>,
    /// Files the skill is about: a task touching them calls for it.
    pub file_globs: Vec<String>,
    /// Tools the skill needs to be of use.
    pub required_tools: Vec<String>,
    pub permissions: Permissions,
    /// Fields neither format knows, ignored (with their lines).
    #[serde(skip)]
    pub unknown: Vec<(usize, String)>,
}

/// A problem with a file, at a line (1-based) where one is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Flaw {
    pub(crate) line: Option<usize>,
    pub(crate) reason: String,
}

impl Flaw {
    fn at(line: usize, reason: impl Into<String>) -> Self {
        Self {
            line: Some(line),
            reason: reason.into(),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ToolList {
    Text(String),
    List(Vec<String>),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Words {
    One(String),
    Many(Vec<String>),
}

impl Words {
    fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(one) => vec![one],
            Self::Many(many) => many,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct RawPermissions {
    network: Option<bool>,
    #[serde(alias = "write_paths")]
    write_paths: Option<Words>,
    scripts: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Raw {
    name: Option<String>,
    description: Option<String>,
    license: Option<String>,
    compatibility: Option<String>,
    #[serde(alias = "allowed_tools")]
    allowed_tools: Option<ToolList>,
    metadata: Option<BTreeMap<String, yaml_serde::Value>>,
    version: Option<yaml_serde::Value>,
    triggers: Option<Words>,
    #[serde(alias = "file_globs")]
    file_globs: Option<Words>,
    #[serde(alias = "required_tools")]
    required_tools: Option<Words>,
    permissions: Option<RawPermissions>,
    #[serde(flatten)]
    other: BTreeMap<String, yaml_serde::Value>,
}

/// The frontmatter and where the body starts (its first line), or every flaw found.
// Long because every field is checked in one place and every flaw collected, not only the
// first; one arm per field.
#[allow(clippy::too_many_lines)]
pub(crate) fn parse(text: &str) -> Result<(Frontmatter, usize), Vec<Flaw>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(vec![Flaw::at(
            1,
            "no frontmatter: SKILL.md must start with a `---` line, the YAML fields, and \
             another `---`",
        )]);
    }
    let yaml_lines: Vec<&str> = lines
        .by_ref()
        .take_while(|l| !matches!(l.trim_end(), "---" | "..."))
        .collect();
    // The closing line is 1 (opening) + the YAML lines + 1.
    let closing = yaml_lines.len() + 2;
    if text.lines().nth(closing - 1).is_none() {
        return Err(vec![Flaw::at(
            1,
            "the frontmatter is not closed: no `---` line after the YAML fields",
        )]);
    }
    let yaml = yaml_lines.join("\n");
    let raw: Raw = yaml_serde::from_str(&yaml).map_err(|e| {
        // Lines in the error count from the first YAML line, which is line 2 of the file.
        let line = e.location().map_or(2, |l| l.line() + 1);
        vec![Flaw::at(
            line,
            format!("invalid YAML: {}", first_line(&e.to_string())),
        )]
    })?;
    let line_of = |key: &str| key_line(&yaml_lines, key).map_or(2, |l| l + 2);
    let mut flaws = Vec::new();
    let name = match raw.name.as_deref().map(str::trim) {
        None | Some("") => {
            flaws.push(Flaw::at(2, "missing required field `name`"));
            None
        }
        Some(name) => match name.parse::<SkillName>() {
            Ok(name) => Some(name),
            Err(e) => {
                flaws.push(Flaw::at(line_of("name"), e.to_string()));
                None
            }
        },
    };
    let description = raw.description.as_deref().map_or("", str::trim);
    if description.is_empty() {
        flaws.push(Flaw::at(
            line_of("description"),
            "missing required field `description`: say what the skill does and when to use it",
        ));
    } else if description.chars().count() > MAX_DESCRIPTION {
        flaws.push(Flaw::at(
            line_of("description"),
            format!(
                "the description has {} characters; at most {MAX_DESCRIPTION}",
                description.chars().count()
            ),
        ));
    }
    if let Some(c) = &raw.compatibility
        && c.chars().count() > MAX_COMPATIBILITY
    {
        flaws.push(Flaw::at(
            line_of("compatibility"),
            format!(
                "compatibility has {} characters; at most {MAX_COMPATIBILITY}",
                c.chars().count()
            ),
        ));
    }
    let allowed_tools = raw.allowed_tools.map(|list| match list {
        ToolList::Text(text) => split_tools(&text),
        ToolList::List(list) => list.iter().flat_map(|t| split_tools(t)).collect(),
    });
    if let Some(tools) = &allowed_tools {
        for tool in tools {
            if tool.matches('(').count() != tool.matches(')').count() {
                flaws.push(Flaw::at(
                    line_of("allowed-tools"),
                    format!("allowed-tools: {tool:?} has unbalanced parentheses"),
                ));
            }
        }
    }
    let version = raw.version.map(|v| match v {
        yaml_serde::Value::String(s) => s,
        other => yaml_serde::to_string(&other)
            .map(|s| s.trim().to_owned())
            .unwrap_or_default(),
    });
    let metadata = raw
        .metadata
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| {
            (
                k,
                serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
            )
        })
        .collect();
    let unknown = raw
        .other
        .keys()
        .map(|key| (line_of(key), key.clone()))
        .collect();
    let permissions = raw
        .permissions
        .map_or_else(Permissions::default, |p| Permissions {
            network: p.network,
            write_paths: p.write_paths.map(Words::into_vec),
            scripts: p.scripts,
        });
    match name {
        Some(name) if flaws.is_empty() => Ok((
            Frontmatter {
                name,
                description: description.to_owned(),
                license: raw.license,
                compatibility: raw.compatibility,
                allowed_tools,
                metadata,
                version,
                triggers: raw.triggers.map(Words::into_vec).unwrap_or_default(),
                file_globs: raw.file_globs.map(Words::into_vec).unwrap_or_default(),
                required_tools: raw.required_tools.map(Words::into_vec).unwrap_or_default(),
                permissions,
                unknown,
            },
            closing + 1,
        )),
        _ => Err(flaws),
    }
}

/// The body of a `SKILL.md` whose body starts at line `from`.
pub(crate) fn body(text: &str, from: usize) -> String {
    text.lines().skip(from - 1).collect::<Vec<_>>().join("\n")
}

/// `allowed-tools` as the format writes it: entries separated by spaces or commas, except
/// inside parentheses (`Bash(git add:*) Read`).
fn split_tools(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if (c.is_whitespace() || c == ',') && depth == 0 => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The 0-based index of the line holding top-level `key:`.
fn key_line(lines: &[&str], key: &str) -> Option<usize> {
    lines.iter().position(|l| {
        l.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with(':'))
    })
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_read() {
        let text = "---\nname: git-release\ndescription: Cut a release. Use when asked to tag.\n\
                    license: MIT\nallowed-tools: Bash(git add:*) Bash(git tag:*), Read\n\
                    version: 1.2\ntriggers: [release, tag a version]\nfile_globs: CHANGELOG.md\n\
                    permissions:\n  network: false\n  write_paths: [CHANGELOG.md]\n\
                    metadata:\n  author: ada\nmodel: fast\n---\n# Releasing\nSteps.\n";
        let (fm, body_line) = parse(text).unwrap();
        assert_eq!(fm.name.as_str(), "git-release");
        assert_eq!(
            fm.allowed_tools.as_deref().unwrap(),
            ["Bash(git add:*)", "Bash(git tag:*)", "Read"]
        );
        assert_eq!(fm.version.as_deref(), Some("1.2"));
        assert_eq!(fm.triggers, ["release", "tag a version"]);
        assert_eq!(fm.file_globs, ["CHANGELOG.md"]);
        assert_eq!(fm.permissions.network, Some(false));
        assert_eq!(
            fm.permissions.write_paths.as_deref().unwrap(),
            ["CHANGELOG.md"]
        );
        assert_eq!(fm.metadata["author"], "ada");
        assert_eq!(fm.unknown, [(14, "model".to_owned())]);
        assert_eq!(body(text, body_line), "# Releasing\nSteps.");
        // A YAML list of tools is the same.
        let listed =
            "---\nname: a\ndescription: d\nallowed-tools:\n  - Read\n  - Bash(git:*)\n---\n";
        assert_eq!(
            parse(listed).unwrap().0.allowed_tools.unwrap(),
            ["Read", "Bash(git:*)"]
        );
    }

    #[test]
    fn flaws_name_their_line() {
        let missing = parse("---\nname: a\n---\nbody").unwrap_err();
        assert_eq!(
            missing[0].reason.split(':').next(),
            Some("missing required field `description`")
        );
        let bad_name = parse("---\ndescription: d\nname: Bad_Name\n---\n").unwrap_err();
        assert_eq!(bad_name[0].line, Some(3), "{bad_name:?}");
        let long = format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(1025));
        assert!(
            parse(&long).unwrap_err()[0]
                .reason
                .contains("1025 characters")
        );
        let yaml = parse("---\nname: a\ndescription: [unclosed\n---\n").unwrap_err();
        assert!(yaml[0].reason.starts_with("invalid YAML"), "{yaml:?}");
        assert!(yaml[0].line.is_some_and(|l| l >= 3), "{yaml:?}");
        assert!(
            parse("no frontmatter").unwrap_err()[0]
                .reason
                .starts_with("no frontmatter")
        );
        assert!(
            parse("---\nname: a\n").unwrap_err()[0]
                .reason
                .contains("not closed")
        );
        let wrong_type =
            parse("---\nname: a\ndescription: d\npermissions:\n  network: maybe\n---\n")
                .unwrap_err();
        assert!(
            wrong_type[0].reason.starts_with("invalid YAML"),
            "{wrong_type:?}"
        );
    }
}
