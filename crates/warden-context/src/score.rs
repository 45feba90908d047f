//! Scoring for trimming (SPEC C2): which items of the conversation are cut first. An item's
//! score adds six signals — recency, relevance to the goal, source, pinned, unresolved and risk —
//! and the lowest scores are cut first (ties: the older first), so the result is the same for
//! the same state. Items that may never be cut are not scored here: the builder protects them.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use warden_model::Item;

/// How much of a tool result's start is read for its terms (the path, the command, the first
/// lines): enough to tell what it is about, cheap on a long session.
const HEAD_BYTES: usize = 600;

/// Words too common to say what an item is about, and the keys of tool arguments.
const STOPWORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "that",
    "this",
    "from",
    "into",
    "not",
    "are",
    "was",
    "but",
    "all",
    "any",
    "can",
    "should",
    "would",
    "could",
    "will",
    "have",
    "has",
    "had",
    "its",
    "it's",
    "then",
    "than",
    "them",
    "they",
    "there",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "why",
    "how",
    "you",
    "your",
    "our",
    "out",
    "use",
    "using",
    "make",
    "sure",
    "also",
    "just",
    "fix",
    "add",
    "get",
    "set",
    "now",
    "see",
    "give",
    "gives",
    "please",
    "need",
    "needs",
    "want",
    "path",
    "command",
    "pattern",
    "startline",
    "endline",
    "description",
    "timeoutseconds",
    "true",
    "false",
    "null",
    "output",
    "data",
    "instructions",
    "nothing",
    "change",
    "rules",
    "permissions",
    "result",
    "content",
    "range",
    "truncated",
    "totallines",
    "src",
    "lib",
    "tests",
];

/// What the session is about, and what the policy said about its calls.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    /// Terms of the goal, the plan and the latest user messages.
    focus: HashSet<String>,
    /// Terms of the user's pinned constraints.
    pinned: HashSet<String>,
    /// The risk level (0–5) the policy gave each call, by call id.
    risk: HashMap<String, u8>,
    /// For each first byte, the lengths (up to 31) of the focus and pinned terms that start
    /// with it: most words need no lookup.
    sieve: Vec<u32>,
}

impl Signals {
    /// Signals from what the session is about (`focus`: the goal, the plan, the latest user
    /// messages, the files edited), the constraints the user pinned, and each call's risk.
    pub fn new<'a>(
        focus: impl IntoIterator<Item = &'a str>,
        pinned: impl IntoIterator<Item = &'a str>,
        risk: HashMap<String, u8>,
    ) -> Self {
        let mut focus_terms = HashSet::new();
        for text in focus {
            terms(text, &mut focus_terms);
        }
        let mut pinned_terms = HashSet::new();
        for text in pinned {
            terms(text, &mut pinned_terms);
        }
        let mut sieve = vec![0u32; 256];
        for term in focus_terms.iter().chain(&pinned_terms) {
            sieve[usize::from(term.as_bytes()[0])] |= 1 << term.len().min(31);
        }
        Self {
            focus: focus_terms,
            pinned: pinned_terms,
            risk,
            sieve,
        }
    }

    /// Whether a word may be a term once lowercased (no false negatives for ASCII).
    fn may_be_term(&self, word: &str) -> bool {
        self.sieve
            .get(usize::from(word.as_bytes()[0].to_ascii_lowercase()))
            .is_some_and(|lengths| lengths & (1 << word.len().min(31)) != 0)
    }
}

/// One item's score, signal by signal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Score {
    /// 0 for the oldest item, 1 for the newest.
    pub recency: f64,
    /// How many of the terms of the goal, plan and latest messages the item uses (0–1; five
    /// or more is 1).
    pub relevance: f64,
    /// What kind of item it is: what the user said and what changed files weigh most; what can
    /// be read or searched again least.
    pub source: f64,
    /// It touches a constraint the user pinned.
    pub pinned: f64,
    /// A failure nothing later has fixed (a resolved one weighs less).
    pub unresolved: f64,
    /// The risk the policy gave the call (0–5, scaled to 0–1).
    pub risk: f64,
}

impl Score {
    pub fn total(&self) -> f64 {
        self.recency
            + 1.5 * self.relevance
            + self.source
            + self.pinned
            + self.unresolved
            + self.risk
    }
}

/// Lowercased words of three or more letters, digits or `_`, without the stopwords.
pub(crate) fn terms(text: &str, out: &mut HashSet<String>) {
    for word in words(text) {
        let word = word.to_lowercase();
        if !STOPWORDS.contains(&word.as_str()) {
            out.insert(word);
        }
    }
}

/// The words of a text that can be terms: three or more letters, digits or `_`, not a number.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.len() >= 3 && !w.bytes().all(|b| b.is_ascii_digit()))
}

/// The number of the goal's terms an item must touch to be wholly relevant.
const FOCUS_TERMS: usize = 5;

/// Looks an item's words up in the focus and pinned terms without keeping them.
struct Scan<'a> {
    signals: &'a Signals,
    /// The focus terms seen in this item.
    focus_hits: Vec<&'a str>,
    pinned: bool,
    lower: String,
}

impl<'a> Scan<'a> {
    fn new(signals: &'a Signals) -> Self {
        Self {
            signals,
            focus_hits: Vec::new(),
            pinned: false,
            lower: String::new(),
        }
    }

    fn reset(&mut self) {
        self.focus_hits.clear();
        self.pinned = false;
    }

    fn text(&mut self, text: &str) {
        if self.signals.focus.is_empty() && self.signals.pinned.is_empty() {
            return;
        }
        for word in words(text) {
            // Most words are ruled out by their first letter and length alone.
            if word.as_bytes()[0].is_ascii() && !self.signals.may_be_term(word) {
                continue;
            }
            self.lower.clear();
            if word.is_ascii() {
                self.lower
                    .extend(word.chars().map(|c| c.to_ascii_lowercase()));
            } else {
                self.lower.extend(word.chars().flat_map(char::to_lowercase));
            }
            if !self.signals.may_be_term(&self.lower) {
                continue;
            }
            if let Some(term) = self.signals.focus.get(self.lower.as_str())
                && !self.focus_hits.contains(&term.as_str())
            {
                self.focus_hits.push(term.as_str());
            }
            if !self.pinned && self.signals.pinned.contains(self.lower.as_str()) {
                self.pinned = true;
            }
        }
    }
}

/// Whether a result reports a failure: a tool error, or a command that exited non-zero.
pub fn failed(item: &Item) -> bool {
    match item {
        Item::ToolResult { is_error: true, .. } => true,
        Item::ToolResult { name, content, .. } if name == "bash" => {
            exit_code(content).is_some_and(|code| code != 0)
        }
        _ => false,
    }
}

/// The `exitCode` of a command's result, read without parsing the whole of it.
fn exit_code(content: &str) -> Option<i64> {
    let at = content.find("\"exitCode\":")? + "\"exitCode\":".len();
    let rest = content[at..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The start of a text, cut at a character boundary.
fn head(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn source(item: &Item) -> f64 {
    match item {
        Item::User { .. } => 1.0,
        Item::Assistant { .. } => 0.5,
        Item::ToolResult { name, .. } => match name.as_str() {
            // The record of what changed.
            "editFile" | "writeFile" | "apply_patch" => 0.9,
            "bash" => 0.6,
            // Can be read or searched again.
            "readFile" => 0.4,
            "grep" | "glob" => 0.2,
            _ => 0.5,
        },
    }
}

/// Scores every item of `items`.
pub(crate) fn score(items: &[Item], signals: &Signals) -> Vec<Score> {
    // Calls by id: a result is scored with its call's arguments.
    let mut calls: HashMap<&str, (&str, &str)> = HashMap::new();
    for item in items {
        if let Item::Assistant { calls: list, .. } = item {
            for call in list {
                calls.insert(
                    call.id.as_str(),
                    (call.name.as_str(), call.arguments.as_str()),
                );
            }
        }
    }
    // A failure is resolved when the same call (tool and arguments) later succeeded.
    let mut succeeded: HashSet<(&str, &str)> = HashSet::new();
    let mut resolved = vec![false; items.len()];
    for (i, item) in items.iter().enumerate().rev() {
        if let Item::ToolResult { call_id, .. } = item
            && let Some(&key) = calls.get(call_id.as_str())
        {
            if failed(item) {
                resolved[i] = succeeded.contains(&key);
            } else {
                succeeded.insert(key);
            }
        }
    }
    let newest = items.len().saturating_sub(1).max(1);
    #[allow(clippy::cast_precision_loss)]
    let recency = |i: usize| i as f64 / newest as f64;
    let mut scan = Scan::new(signals);
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            scan.reset();
            let mut risk = 0u8;
            match item {
                Item::User { text } => scan.text(head(text, HEAD_BYTES)),
                Item::Assistant { text, calls: list } => {
                    scan.text(head(text, HEAD_BYTES));
                    for call in list {
                        scan.text(&call.arguments);
                        risk = risk.max(signals.risk.get(&call.id).copied().unwrap_or(0));
                    }
                }
                Item::ToolResult {
                    call_id, content, ..
                } => {
                    if let Some((_, arguments)) = calls.get(call_id.as_str()) {
                        scan.text(arguments);
                    }
                    scan.text(head(skip_label(content), HEAD_BYTES));
                    risk = signals.risk.get(call_id).copied().unwrap_or(0);
                }
            }
            #[allow(clippy::cast_precision_loss)]
            let relevance = if signals.focus.is_empty() {
                0.0
            } else {
                (scan.focus_hits.len() as f64 / signals.focus.len().min(FOCUS_TERMS) as f64)
                    .min(1.0)
            };
            let pinned = if scan.pinned { 2.0 } else { 0.0 };
            let unresolved = match (failed(item), resolved[i]) {
                (true, false) => 1.5,
                (true, true) => 0.3,
                (false, _) => 0.0,
            };
            Score {
                recency: recency(i),
                relevance,
                source: source(item),
                pinned,
                unresolved,
                risk: f64::from(risk.min(5)) / 5.0,
            }
        })
        .collect()
}

/// A tool result without the label warden puts before it (the label names the source, which
/// the call's arguments already give).
fn skip_label(content: &str) -> &str {
    if content.starts_with("[output of ")
        && let Some(end) = content.find("]\n")
    {
        return &content[end + 2..];
    }
    content
}

#[cfg(test)]
mod tests {
    use warden_model::ToolCall;

    use super::*;

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn result(id: &str, name: &str, content: &str, is_error: bool) -> Item {
        Item::ToolResult {
            call_id: id.into(),
            name: name.into(),
            content: content.into(),
            is_error,
        }
    }

    /// The task, then one turn per call, each with its result.
    fn session(turns: &[(&str, &str, &str, bool)]) -> Vec<Item> {
        let mut items = vec![Item::User {
            text: "slugify turns runs of spaces into several dashes".into(),
        }];
        for (n, (name, arguments, content, is_error)) in turns.iter().enumerate() {
            let id = format!("c{n}");
            items.push(Item::Assistant {
                text: String::new(),
                calls: vec![call(&id, name, arguments)],
            });
            items.push(result(&id, name, content, *is_error));
        }
        items
    }

    #[test]
    fn recency_grows_with_position() {
        let items = session(&[
            ("readFile", r#"{"path":"a.md"}"#, "text", false),
            ("readFile", r#"{"path":"b.md"}"#, "text", false),
        ]);
        let s = score(&items, &Signals::default());
        assert!(s[2].recency < s[4].recency);
        assert!((s[0].recency - 0.0).abs() < f64::EPSILON && (s[4].recency - 1.0).abs() < 1e-9);
    }

    #[test]
    fn relevance_is_overlap_with_the_goal() {
        let items = session(&[
            (
                "readFile",
                r#"{"path":"src/slugify.js"}"#,
                "function slugify(name)",
                false,
            ),
            (
                "readFile",
                r#"{"path":"src/billing.js"}"#,
                "function invoice(total)",
                false,
            ),
        ]);
        let signals = Signals::new(["fix slugify for runs of spaces"], [], HashMap::new());
        let s = score(&items, &signals);
        assert!(s[2].relevance > 0.0, "{:?}", s[2]);
        assert!((s[4].relevance - 0.0).abs() < f64::EPSILON, "{:?}", s[4]);
        assert!(s[2].total() > s[4].total() - s[4].recency + s[2].recency);
    }

    #[test]
    fn source_ranks_edits_over_commands_over_reads_over_searches() {
        let items = session(&[
            ("grep", r#"{"pattern":"x"}"#, "{}", false),
            ("readFile", r#"{"path":"x"}"#, "{}", false),
            ("bash", r#"{"command":"ls"}"#, r#"{"exitCode":0}"#, false),
            ("editFile", r#"{"path":"x"}"#, "{}", false),
        ]);
        let s = score(&items, &Signals::default());
        assert!(
            s[2].source < s[4].source && s[4].source < s[6].source && s[6].source < s[8].source
        );
        assert!(s[0].source > s[8].source, "the user's words weigh most");
    }

    #[test]
    fn pinned_constraints_lift_what_touches_them() {
        let items = session(&[
            (
                "readFile",
                r#"{"path":"migrations/001_init.sql"}"#,
                "create table",
                false,
            ),
            ("readFile", r#"{"path":"docs/readme.md"}"#, "words", false),
        ]);
        let signals = Signals::new([], ["never edit migrations"], HashMap::new());
        let s = score(&items, &signals);
        assert!((s[2].pinned - 2.0).abs() < f64::EPSILON);
        assert!((s[4].pinned - 0.0).abs() < f64::EPSILON);
    }

    #[test]
    fn an_unresolved_failure_outweighs_a_resolved_one() {
        let test = r#"{"command":"npm test"}"#;
        let build = r#"{"command":"npm run build"}"#;
        let items = session(&[
            ("bash", test, r#"{"cmd":"npm test","exitCode":1}"#, false),
            (
                "bash",
                build,
                r#"{"cmd":"npm run build","exitCode":2}"#,
                false,
            ),
            ("bash", test, r#"{"cmd":"npm test","exitCode":0}"#, false),
        ]);
        let s = score(&items, &Signals::default());
        assert!(
            (s[2].unresolved - 0.3).abs() < f64::EPSILON,
            "fixed later: {:?}",
            s[2]
        );
        assert!((s[4].unresolved - 1.5).abs() < f64::EPSILON, "{:?}", s[4]);
        assert!((s[6].unresolved - 0.0).abs() < f64::EPSILON);
        assert!(failed(&items[2]) && failed(&items[4]) && !failed(&items[6]));
    }

    #[test]
    fn risk_comes_from_the_policy() {
        let items = session(&[
            (
                "bash",
                r#"{"command":"git push"}"#,
                r#"{"exitCode":0}"#,
                false,
            ),
            ("bash", r#"{"command":"ls"}"#, r#"{"exitCode":0}"#, false),
        ]);
        let risk = HashMap::from([("c0".to_owned(), 4u8), ("c1".to_owned(), 0u8)]);
        let s = score(&items, &Signals::new([], [], risk));
        assert!((s[2].risk - 0.8).abs() < 1e-9);
        assert!((s[1].risk - 0.8).abs() < 1e-9, "the call carries it too");
        assert!((s[4].risk - 0.0).abs() < f64::EPSILON);
    }

    #[test]
    fn exit_codes_are_read_where_they_stand() {
        assert_eq!(exit_code(r#"{"cmd":"x","exitCode":127,"y":1}"#), Some(127));
        assert_eq!(exit_code(r#"{"exitCode": -1}"#), Some(-1));
        assert_eq!(exit_code(r#"{"running":true}"#), None);
    }
}
