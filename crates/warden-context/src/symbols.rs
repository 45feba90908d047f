//! The symbols a session learns from its tools' results (SPEC S1, the working set's
//! `relevantSymbols`): the names the files it read define, and the names it searched for and
//! found. Compaction keeps each one wherever the compacted part mentions it.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::identifiers::re;

/// The most symbols one result adds.
const PER_RESULT: usize = 200;

/// A definition of a function, type or table.
static DEFINED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)^(?:\s*\d+\t)?\s*(?:(?:pub(?:\([^)]*\))?|export|default|async|static|public|private|protected|abstract|final|sealed|data|open|internal|unsafe|extern|const|inline|virtual|override)\s+)*(?:(?i:create\s+(?:temp(?:orary)?\s+)?(?:table|view)\s+(?:if\s+not\s+exists\s+)?)[`\x22\[]?([A-Za-z_][\w.]*)|(?:fn|def|function\*?|func|fun|class|struct|enum|trait|interface|record|union|protocol)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)|type\s+([A-Z]\w*))",
    )
});

/// A search for a name, as grep patterns spell one: `parse_port`, `\bparse_port\b`,
/// `fn parse_port`, `parse_port\(`.
static SEARCHED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:\\b)?(?:(?:fn|def|function|class|struct|func|type|interface|enum|trait)\s+|CREATE TABLE\s+)?([A-Za-z_][\w]*(?:(?:::|\.)[A-Za-z_]\w*)*)(?:\\b|\\\(|\()?$",
    )
});

/// Words a definition pattern catches that are not names.
const NOT_NAMES: &[&str] = &[
    "if", "not", "exists", "for", "in", "of", "the", "a", "an", "is",
];

/// The names `text` defines.
pub fn defined(text: &str) -> Vec<String> {
    DEFINED
        .captures_iter(text)
        .filter_map(|c| (1..=3).find_map(|i| c.get(i)))
        .map(|m| m.as_str())
        .filter(|name| name.len() >= 3 && !NOT_NAMES.contains(&name.to_ascii_lowercase().as_str()))
        .map(str::to_owned)
        .collect()
}

/// The symbols a tool's result teaches: for `readFile`, what the page and its outline define; for
/// `grep`, the name searched for when it was found, and what the matched lines define.
pub fn symbols_of(tool: &str, output: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match tool {
        "readFile" => {
            if let Some(content) = output.get("content").and_then(Value::as_str) {
                out.extend(defined(content));
            }
            if let Some(outline) = output.get("outline") {
                for line in outline
                    .get("enclosing")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.extend(defined(
                        line.get("text").and_then(Value::as_str).unwrap_or(""),
                    ));
                }
                for ty in outline
                    .get("types")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.extend(ty.get("name").and_then(Value::as_str).map(str::to_owned));
                }
            }
        }
        "grep" => {
            let found = output
                .get("totalMatches")
                .and_then(Value::as_u64)
                .is_some_and(|n| n > 0);
            if found
                && let Some(query) = output.get("query").and_then(Value::as_str)
                && let Some(name) = SEARCHED.captures(query.trim()).and_then(|c| c.get(1))
                && name.as_str().len() >= 3
            {
                out.push(name.as_str().to_owned());
            }
            for file in output
                .get("files")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                for hit in file
                    .get("matches")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let text = hit
                        .get("text")
                        .or_else(|| hit.get("line").and_then(|l| l.get("text")))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    out.extend(defined(text));
                }
            }
        }
        _ => {}
    }
    out.truncate(PER_RESULT);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_page_read_and_a_search_found_teach_their_names() {
        let page = json!({
            "content": "1\tpub fn parse_port(raw: &str) -> u16 {\n2\tclass BillingRun:\n3\tCREATE TABLE IF NOT EXISTS invoice_lines (\n",
            "outline": {"types": [{"name": "Settings", "line": 40, "text": "struct Settings {"}]},
        });
        assert_eq!(
            symbols_of("readFile", &page),
            ["parse_port", "BillingRun", "invoice_lines", "Settings"]
        );
        let found = json!({"query": "\\bload_ledger\\b", "totalMatches": 2, "files": []});
        assert_eq!(symbols_of("grep", &found), ["load_ledger"]);
        let none = json!({"query": "load_ledger", "totalMatches": 0, "files": []});
        assert!(symbols_of("grep", &none).is_empty());
        let pattern = json!({"query": "TODO|FIXME", "totalMatches": 9, "files": []});
        assert!(symbols_of("grep", &pattern).is_empty());
    }
}
