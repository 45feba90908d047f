//! Reading a manifest: YAML into the schema's types, every unknown field and wrong type an
//! error with its line and column; and the line of a document path (`network.allow[1].host`),
//! so that later problems can say where they are.

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::schema::Manifest;

/// A problem with a manifest: where in the document, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The document path, like `filesystem.mounts[0].mode` (empty for the whole document).
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    pub reason: String,
}

/// A manifest as read, with the text it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub manifest: Manifest,
    pub text: String,
    /// SHA-256 of the file's bytes.
    pub sha256: String,
}

/// Reads a manifest; the one problem that stops it, when it does not parse.
pub fn parse(text: &str) -> Result<Parsed, Problem> {
    let manifest: Manifest = yaml_serde::from_str(text).map_err(|e| {
        let (line, column) = e
            .location()
            .map_or((None, None), |l| (Some(l.line()), Some(l.column())));
        let message = e.to_string();
        // yaml_serde says `field: message at line L column C`: the path before the colon.
        let path = message
            .split_once(": ")
            .map(|(p, _)| p)
            .filter(|p| !p.contains(' '))
            .unwrap_or("")
            .to_owned();
        let reason = message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_owned();
        Problem {
            path,
            line,
            column,
            reason,
        }
    })?;
    Ok(Parsed {
        manifest,
        text: text.to_owned(),
        sha256: hex(&Sha256::digest(text.as_bytes())),
    })
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

impl Parsed {
    /// The digest an approval is bound to: the manifest's content with its `approval_ref`s
    /// left out (an approval cannot name itself), as canonical JSON.
    pub fn approval_digest(&self) -> String {
        let mut manifest = self.manifest.clone();
        for capability in &mut manifest.identity.capabilities {
            capability.approval_ref = None;
        }
        let json = serde_json::to_string(&manifest).unwrap_or_default();
        hex(&Sha256::digest(json.as_bytes()))
    }

    /// A problem at document path `path`, its line found in the text.
    pub fn problem(&self, path: &str, reason: impl Into<String>) -> Problem {
        Problem {
            path: path.to_owned(),
            line: locate(&self.text, path),
            column: None,
            reason: reason.into(),
        }
    }
}

/// The line (1-based) of document path `path` in block-style YAML: each key is found below its
/// parent by indentation, each `[i]` as the i-th `- ` item. The nearest ancestor's line when
/// the path goes deeper than the text (a flow-style list).
pub fn locate(text: &str, path: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0usize;
    let mut end = lines.len();
    let mut indent: Option<usize> = None;
    let mut found = None;
    for step in steps(path) {
        let hit = match step {
            Step::Key(key) => (from..end).find(|&i| {
                let line = lines[i];
                let trimmed = line.trim_start();
                let here = line.len() - trimmed.len();
                let bare = trimmed.strip_prefix("- ").unwrap_or(trimmed);
                let here = if trimmed.starts_with("- ") {
                    here + 2
                } else {
                    here
                };
                indent.is_none_or(|parent| here > parent)
                    && bare
                        .strip_prefix(key.as_str())
                        .is_some_and(|rest| rest.trim_start().starts_with(':'))
            }),
            Step::Index(n) => {
                let items: Vec<usize> = (from..end)
                    .filter(|&i| {
                        let trimmed = lines[i].trim_start();
                        let here = lines[i].len() - trimmed.len();
                        trimmed.starts_with('-') && indent.is_none_or(|parent| here >= parent)
                    })
                    .collect();
                // Items of this list only: those at the first item's indentation.
                let first_indent = items
                    .first()
                    .map(|&i| lines[i].len() - lines[i].trim_start().len());
                items
                    .into_iter()
                    .filter(|&i| Some(lines[i].len() - lines[i].trim_start().len()) == first_indent)
                    .nth(n)
            }
        };
        let Some(at) = hit else {
            return found.map(|l: usize| l + 1);
        };
        let here = lines[at].len() - lines[at].trim_start().len();
        // The block of this step ends where a line is indented no deeper.
        let block_end = (at + 1..end)
            .find(|&i| {
                let t = lines[i].trim_start();
                !t.is_empty() && !t.starts_with('#') && lines[i].len() - t.len() <= here
            })
            .unwrap_or(end);
        let item = lines[at].trim_start().starts_with("- ");
        indent = Some(here);
        from = if item { at } else { at + 1 };
        end = block_end;
        found = Some(at);
    }
    found.map(|l| l + 1)
}

enum Step {
    Key(String),
    Index(usize),
}

fn steps(path: &str) -> Vec<Step> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            out.push(Step::Key(key.to_owned()));
        }
        for index in rest.split('[') {
            if let Ok(n) = index.trim_end_matches(']').parse() {
                out.push(Step::Index(n));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
version: 1
run:
  purpose: \"x\"
  resources:
    cpu: 2
filesystem:
  mounts:
    - source: repo
      target: /workspace
      mode: read_only
    - source: run-scratch
      target: /scratch
      mode: read_write
network:
  allow:
    - host: registry.npmjs.org
      ports: [443]
";

    #[test]
    fn document_paths_have_lines() {
        assert_eq!(locate(TEXT, "run.resources.cpu"), Some(5));
        assert_eq!(locate(TEXT, "filesystem.mounts[0].source"), Some(8));
        assert_eq!(locate(TEXT, "filesystem.mounts[1].mode"), Some(13));
        assert_eq!(locate(TEXT, "filesystem.mounts[1]"), Some(11));
        assert_eq!(
            locate(TEXT, "network.allow[0].ports[0]"),
            Some(17),
            "a flow list: its key's line"
        );
        assert_eq!(locate(TEXT, "identity"), None);
    }

    #[test]
    fn unknown_fields_and_wrong_types_name_their_line() {
        let unknown = parse("version: 1\nrun:\n  purpos: x\n").unwrap_err();
        assert_eq!(unknown.line, Some(3), "{unknown:?}");
        assert!(
            unknown.reason.contains("unknown field `purpos`"),
            "{unknown:?}"
        );
        let wrong = parse("version: 1\nrun:\n  max_duration_seconds: soon\n").unwrap_err();
        assert_eq!(wrong.line, Some(3));
        assert!(wrong.reason.contains("invalid type"), "{wrong:?}");
    }
}
