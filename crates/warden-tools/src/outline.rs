//! What a page of a source file needs around it to be understood (SPEC C3): the file's imports,
//! the headers of the functions, classes and blocks the page sits in, and the definitions of the
//! types it names that lie outside it. Language-agnostic: definitions are found by their
//! keywords (Rust, Python, JavaScript and TypeScript, Go, Java, Kotlin, C#, Swift, Ruby, PHP),
//! nesting by indentation.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

/// The most lines of each kind given.
const MAX_IMPORTS: usize = 40;
const MAX_TYPES: usize = 20;
/// Characters kept of one line.
const LINE_CHARS: usize = 200;

/// One line of the file, numbered from 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Line {
    pub(crate) line: u64,
    pub(crate) text: String,
}

/// A type the page uses and where the file defines it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct TypeDef {
    pub(crate) name: String,
    pub(crate) line: u64,
    pub(crate) text: String,
}

/// The surroundings of a page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Outline {
    /// Import lines outside the page.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) imports: Vec<Line>,
    /// More imports than were listed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) imports_cut: bool,
    /// The headers of what the page's first line sits in, outermost first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) enclosing: Vec<Line>,
    /// Types the page names, defined elsewhere in the file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) types: Vec<TypeDef>,
}

impl Outline {
    pub(crate) fn is_empty(&self) -> bool {
        self.imports.is_empty() && self.enclosing.is_empty() && self.types.is_empty()
    }
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| unreachable!("outline pattern {pattern}: {e}"))
}

static IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"^\s*(?:use\s+[\w:{]|extern\s+crate\s|mod\s+\w+\s*;|import\s|from\s+\S+\s+import\s|#\s*include\s|package\s+[\w.]+\s*;?\s*$|using\s+[\w.]+\s*;|require(?:_once)?\s*\(?\s*['"]|(?:const|let|var)\s+[\w{}\s,]+=\s*require\s*\()"#,
    )
});

/// A line that opens a definition or a block worth naming.
static HEADER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(?:(?:pub(?:\([^)]*\))?|export|default|async|unsafe|extern|const|static|final|abstract|public|private|protected|internal|override|open|sealed|data|inline|suspend|virtual|partial)\s+)*(?:fn|def|class|struct|enum|trait|impl|mod|union|interface|function\*?|func|fun|module|namespace|object|record|type\s+\w+\s+(?:struct|interface)|describe|it|test)\b",
    )
});

/// A method-like header in languages without a keyword: `void run(int x) {`, `run() {`.
static METHOD: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(?:(?:public|private|protected|static|final|override|virtual|async|synchronized)\s+)*[\w<>\[\],.?]+\s+\w+\s*\([^;]*\)\s*(?:throws\s+[\w.,\s]+)?\{?\s*$|^\s*(?:async\s+)?\w+\s*\([^;]*\)\s*\{\s*$",
    )
});

static DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(?:(?:pub(?:\([^)]*\))?|export|default|abstract|sealed|final|public|private|protected|internal|data|open|declare)\s+)*(?:struct|enum|trait|type|class|interface|union|record|protocol)\s+([A-Za-z_]\w*)",
    )
});

/// Words that open a block but are control flow, not definitions.
const CONTROL: &[&str] = &[
    "if", "else", "for", "while", "switch", "match", "catch", "return", "loop", "do", "try",
];

fn indent(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

fn shown(number: usize, text: &str) -> Line {
    let text = text.trim_end();
    let text = match text.char_indices().nth(LINE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    };
    Line {
        line: number as u64 + 1,
        text,
    }
}

fn is_header(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or("");
    let word = first.trim_end_matches(|c: char| !c.is_alphanumeric());
    if CONTROL.contains(&word) {
        return false;
    }
    HEADER.is_match(line) || METHOD.is_match(line)
}

/// The outline of `lines[start..=end]` (0-based, inclusive) within the whole file.
pub(crate) fn outline(lines: &[&str], start: usize, end: usize) -> Outline {
    let end = end.min(lines.len().saturating_sub(1));
    if lines.is_empty() || start > end {
        return Outline::default();
    }
    let mut out = Outline::default();
    // Imports: the top of a file, outside the page.
    for (n, line) in lines.iter().enumerate() {
        if (start..=end).contains(&n) || !IMPORT.is_match(line) {
            continue;
        }
        if out.imports.len() == MAX_IMPORTS {
            out.imports_cut = true;
            break;
        }
        out.imports.push(shown(n, line));
    }
    // Enclosing headers: upwards from the page's first non-blank line, each one indented less
    // than the last.
    let first = (start..=end).find(|&n| !lines[n].trim().is_empty());
    if let Some(first) = first {
        let mut level = indent(lines[first]);
        let mut n = first;
        while n > 0 && level > 0 {
            n -= 1;
            let line = lines[n];
            if line.trim().is_empty() {
                continue;
            }
            let here = indent(line);
            if here < level {
                if is_header(line) {
                    out.enclosing.push(shown(n, line));
                }
                level = here;
            }
        }
        // Where the page starts at the top level inside a definition that began above it.
        if out.enclosing.is_empty() && !is_header(lines[first]) {
            for n in (0..first).rev() {
                let line = lines[n];
                if indent(line) == 0 && !line.trim().is_empty() {
                    if is_header(line) && !line.trim_end().ends_with(['}', ';']) {
                        out.enclosing.push(shown(n, line));
                    }
                    break;
                }
            }
        }
        out.enclosing.reverse();
    }
    // Types named in the page and defined outside it.
    let mut defined: BTreeMap<&str, usize> = BTreeMap::new();
    for (n, line) in lines.iter().enumerate() {
        if let Some(name) = DEFINITION.captures(line).and_then(|c| c.get(1)) {
            defined.entry(name.as_str()).or_insert(n);
        }
    }
    if !defined.is_empty() {
        let mut used: Vec<&str> = Vec::new();
        for line in &lines[start..=end] {
            for word in line.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                if word.starts_with(|c: char| c.is_ascii_uppercase()) && !used.contains(&word) {
                    used.push(word);
                }
            }
        }
        for name in used {
            if let Some(&at) = defined.get(name)
                && !(start..=end).contains(&at)
                && out.types.len() < MAX_TYPES
            {
                let line = shown(at, lines[at]);
                out.types.push(TypeDef {
                    name: name.to_owned(),
                    line: line.line,
                    text: line.text,
                });
            }
        }
        out.types.sort_by_key(|t| t.line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    const RUST: &str = "\
use std::collections::HashMap;
use crate::error::{Error, Result};

/// A parsed document.
pub enum Node {
    Text(String),
    List(Vec<Node>),
}

pub(crate) struct Parser {
    depth: usize,
}

impl Parser {
    pub fn new() -> Self {
        Self { depth: 0 }
    }

    pub fn parse(&mut self, input: &str) -> Result<Node> {
        let mut seen = HashMap::new();
        for word in input.split(' ') {
            if word.is_empty() {
                continue;
            }
            seen.insert(word, self.depth);
        }
        Ok(Node::Text(input.to_owned()))
    }
}
";

    #[test]
    fn a_rust_page_gets_its_imports_its_impl_and_fn_and_its_types() {
        let all = lines(RUST);
        // Lines 24-25 (0-based 23..=24): inside the for loop of `parse`.
        let o = outline(&all, 23, 24);
        let texts: Vec<&str> = o.imports.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "use std::collections::HashMap;",
                "use crate::error::{Error, Result};"
            ]
        );
        let enclosing: Vec<(u64, &str)> = o
            .enclosing
            .iter()
            .map(|l| (l.line, l.text.as_str()))
            .collect();
        assert_eq!(
            enclosing,
            [
                (14, "impl Parser {"),
                (
                    19,
                    "    pub fn parse(&mut self, input: &str) -> Result<Node> {"
                ),
            ],
            "the for loop and the if are not definitions"
        );
        // The last line of `parse` names Node: defined at line 5.
        let o = outline(&all, 26, 26);
        assert_eq!(o.types.len(), 1, "{o:?}");
        assert_eq!((o.types[0].name.as_str(), o.types[0].line), ("Node", 5));
    }

    #[test]
    fn python_classes_and_methods_enclose_by_indentation() {
        let py = "\
import os
from typing import Optional

class Config:
    pass

class Loader:
    def __init__(self, root):
        self.root = root

    def load(self, name) -> Optional[Config]:
        path = os.path.join(self.root, name)
        if not os.path.exists(path):
            return None
        return Config()
";
        let all = lines(py);
        let o = outline(&all, 13, 14);
        let enclosing: Vec<&str> = o.enclosing.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            enclosing,
            [
                "class Loader:",
                "    def load(self, name) -> Optional[Config]:"
            ]
        );
        assert_eq!(o.imports.len(), 2);
        assert_eq!(o.types[0].name, "Config");
        assert_eq!(o.types[0].line, 4);
    }

    #[test]
    fn javascript_requires_and_functions() {
        let js = "\
const fs = require('fs');
import { slug } from './slug.js';

export function slugify(name) {
  return name
    .trim()
    .toLowerCase()
    .replace(/\\s/g, '-');
}
";
        let all = lines(js);
        let o = outline(&all, 7, 7);
        assert_eq!(o.imports.len(), 2, "{o:?}");
        let enclosing: Vec<&str> = o.enclosing.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(enclosing, ["export function slugify(name) {"]);
    }

    #[test]
    fn a_page_at_the_top_level_has_no_enclosing_block() {
        let all = lines(RUST);
        let o = outline(&all, 9, 11);
        assert!(o.enclosing.is_empty(), "{o:?}");
        let o = outline(&all, 0, all.len() - 1);
        assert!(
            o.imports.is_empty() && o.types.is_empty(),
            "the page holds them: {o:?}"
        );
    }
}
