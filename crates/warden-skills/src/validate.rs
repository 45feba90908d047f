//! `warden skills validate DIR`: a skill linted before it is shared. Its frontmatter, its name
//! against its directory, the files its instructions point to, its scripts (executable, with
//! an interpreter line), its globs, and fields neither format knows.

use std::path::Path;

use crate::frontmatter;
use crate::registry::{Problem, Root, Severity, read_skill};

/// Every problem of the skill in `dir` (none: it is valid).
pub fn validate(dir: &Path) -> Vec<Problem> {
    let file = dir.join("SKILL.md");
    let problem = |line: Option<usize>, reason: String, severity| Problem {
        file: file.clone(),
        line,
        reason,
        severity,
    };
    if !file.is_file() {
        return vec![problem(
            None,
            format!("no SKILL.md in {}", dir.display()),
            Severity::Error,
        )];
    }
    let root = Root::new(dir.parent().unwrap_or(dir), "validated", false);
    let skill = match read_skill(dir, &root) {
        Ok(skill) => skill,
        Err(problems) => return problems,
    };
    let mut out = Vec::new();
    for (line, field) in &skill.meta.unknown {
        out.push(problem(
            Some(*line),
            format!("unknown field `{field}`, ignored"),
            Severity::Warning,
        ));
    }
    for pattern in &skill.meta.file_globs {
        if let Err(e) = globset::Glob::new(pattern) {
            out.push(problem(
                None,
                format!("file_globs: {pattern:?} is not a glob: {e}"),
                Severity::Error,
            ));
        }
    }
    // Files the instructions point to: references/, scripts/, assets/.
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let body = frontmatter::body(&text, skill.body_line);
    for (n, line) in body.lines().enumerate() {
        for reference in referenced(line) {
            if !dir.join(reference).exists() {
                out.push(problem(
                    Some(skill.body_line + n),
                    format!("{reference} is referenced but does not exist"),
                    Severity::Error,
                ));
            }
        }
    }
    let scripts = dir.join("scripts");
    if let Ok(entries) = std::fs::read_dir(&scripts) {
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries.into_iter().filter(|p| p.is_file()) {
            let script = Problem {
                file: path.clone(),
                line: None,
                reason: String::new(),
                severity: Severity::Error,
            };
            if !executable(&path) {
                out.push(Problem {
                    reason: "not executable: chmod +x it (it runs through the shell, in the \
                             sandbox)"
                        .to_owned(),
                    ..script.clone()
                });
            }
            let head = std::fs::read(&path).unwrap_or_default();
            if !head.starts_with(b"#!") && !head.starts_with(b"\x7fELF") {
                out.push(Problem {
                    line: Some(1),
                    reason: "no interpreter line (#!/usr/bin/env bash, #!/usr/bin/env python3)"
                        .to_owned(),
                    severity: Severity::Warning,
                    ..script
                });
            }
        }
    }
    out
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// Relative paths under `references/`, `scripts/` or `assets/` a line of Markdown names.
fn referenced(line: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for prefix in ["references/", "scripts/", "assets/"] {
        let mut from = 0;
        while let Some(at) = line[from..].find(prefix) {
            let start = from + at;
            // Part of a longer path (`my-scripts/`, `../scripts/`): not the skill's own.
            let before = line[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '-' | '_')) {
                from = start + prefix.len();
                continue;
            }
            let end = line[start..]
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, ')' | '`' | '"' | '\'' | '>' | ']' | ',' | ';')
                })
                .map_or(line.len(), |n| start + n);
            let path = line[start..end].trim_end_matches(['.', ':']);
            if path.len() > prefix.len() {
                found.push(path);
            }
            from = end;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_found_in_links_and_code() {
        assert_eq!(
            referenced("See [the API](references/api.md) and run `scripts/build.sh`."),
            ["references/api.md", "scripts/build.sh"]
        );
        assert!(referenced("the my-scripts/x and ../scripts/y are not ours").is_empty());
        assert!(referenced("a bare scripts/ folder").is_empty());
    }
}
