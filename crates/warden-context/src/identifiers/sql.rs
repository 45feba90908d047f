//! Table and column names: from SQL statements (in any case, once a line reads as SQL) and from
//! the errors databases print.

use std::sync::LazyLock;

use regex::Regex;

use super::{Finder, Kind, re};

/// Words without which no rule here can match.
static SQLISH: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)select|insert|create|update|delete|join|alter|drop|table|column|relation|constraint|\?|\n--",
    )
});

/// Where a statement starts.
static STATEMENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:select\s|insert\s+(?:or\s+\w+\s+)?into\s|update\s+[\w.`\x22]+\s+set\s|delete\s+from\s|create\s+(?:temp(?:orary)?\s+|virtual\s+)?(?:table|view)\s|create\s+(?:unique\s+)?index\s|alter\s+table\s|drop\s+(?:table|view|index)\s|join\s+[\w.]+(?:\s+(?:as\s+)?\w+)?\s+on\s)",
    )
});

/// An identifier as SQL writes it: bare, quoted or bracketed, schema-qualified.
const NAME: &str = r#"[`"\[]?[A-Za-z_][\w$]*[`"\]]?(?:\.[`"\[]?[A-Za-z_][\w$]*[`"\]]?)?"#;

static TABLE_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:from|join|into|update|table(?:\s+if\s+(?:not\s+)?exists)?|view(?:\s+if\s+(?:not\s+)?exists)?|references|on)\s+({NAME})"
    ))
});

/// A column compared, assigned or sorted by: `x =`, `t.x IN`, `ORDER BY x`.
static COLUMN_COMPARED: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:where|and|or|on|set|having|when|not)\s+(?:\(\s*)?({NAME})\s*(?:=|<>|!=|<=|>=|<|>|\bin\b|\bis\b|\blike\b|\bglob\b|\bbetween\b)|,\s*({NAME})\s*=\s*[^=]|\(\s*({NAME})\s*=\s*\?|\bAND\s+({NAME})\s*=\s*\?|\bas\s+({NAME})"
    ))
});

/// `alias.column` anywhere in a statement: `SUM(o.total * r.rate)`, `c.col || c.row_no`.
static QUALIFIED_COLUMN: LazyLock<Regex> = LazyLock::new(|| re(r"\b[a-z_]\w*\.[a-z_]\w*\b"));

/// The column on the right of a comparison: `ON c.id = o.customer_id`.
static COMPARED_WITH: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?:=|<>|!=|<=|>=|<|>)\s*({NAME})(?:\s|$|\)|;|,|\x22|\.\s|\.$)"
    ))
});

static ORDER_BY: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(?:order|group)\s+by\s+([^;)\n]+)"));

/// Database errors that name a table or a column.
static TABLE_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?i)no such table:\s*([\w.]+)|relation "([\w.]+)"|Table '([\w.]+)' doesn't exist|table ([\w.]+) has no column|on table "([\w.]+)"|table "([\w.]+)""#,
    )
});
static COLUMN_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?i)no such column:\s*([\w.]+)|column "([\w.]+)"|Unknown column '([\w.]+)'|has no column named ([\w.]+)|constraint failed:\s*([\w.]+(?:,\s*[\w.]+)*)|column ([\w.]+) is not unique|ambiguous column name:\s*([\w.]+)"#,
    )
});

/// Words that stand where a name would and are not one.
const SQL_WORDS: &[&str] = &[
    "select",
    "from",
    "where",
    "and",
    "or",
    "not",
    "null",
    "true",
    "false",
    "as",
    "on",
    "in",
    "is",
    "if",
    "exists",
    "set",
    "values",
    "distinct",
    "all",
    "case",
    "when",
    "then",
    "else",
    "end",
    "asc",
    "desc",
    "limit",
    "offset",
    "primary",
    "foreign",
    "key",
    "unique",
    "check",
    "constraint",
    "default",
    "references",
    "index",
    "table",
    "view",
    "only",
    "lateral",
    "current_timestamp",
    "current_date",
    "new",
    "old",
    "excluded",
    "select_list",
    "like",
    "between",
    "conflict",
    "do",
    "nothing",
    "returning",
    "the",
    "a",
    "an",
    "this",
    "that",
    "to",
    "by",
    "with",
    "using",
    "natural",
    "inner",
    "left",
    "right",
    "outer",
    "cross",
    "full",
    "join",
    "group",
    "order",
    "having",
    "union",
    "except",
    "intersect",
    "into",
    "update",
    "delete",
    "insert",
    "replace",
    "ignore",
    "abort",
    "rollback",
    "fail",
    "integer",
    "int",
    "text",
    "real",
    "blob",
    "numeric",
    "varchar",
    "boolean",
    "date",
    "timestamp",
    "autoincrement",
    "collate",
    "nocase",
    "cascade",
    "restrict",
    "action",
    "no",
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "coalesce",
    "ifnull",
    "nullif",
    "lower",
    "upper",
    "length",
    "substr",
    "round",
    "abs",
    "cast",
    "strftime",
    "datetime",
    "julianday",
    "total",
    "group_concat",
    "of",
    "before",
    "after",
    "instead",
    "each",
    "row",
    "begin",
    "temp",
    "temporary",
    "trigger",
    "recursive",
    "window",
    "over",
    "partition",
];

/// Constraint clauses among a table's column definitions.
const CONSTRAINTS: &[&str] = &["primary", "foreign", "unique", "check", "constraint"];

pub(super) fn is_sql_word(word: &str) -> bool {
    SQL_WORDS.iter().any(|w| w.eq_ignore_ascii_case(word))
}

/// The bytes of `text` from `at` to the end of its statement (a `;`, a blank line or 2,000
/// characters on).
fn statement_end(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    let mut end = rest.len().min(2_000);
    while !rest.is_char_boundary(end) {
        end -= 1;
    }
    // A statement in a program's string ends with the string (`")`, `",`, `"""`; SQL's own
    // strings are in single quotes).
    for stop in [";", "\n\n", "\")", "\",", "\"\"\"", "'''"] {
        if let Some(i) = rest[..end].find(stop) {
            end = end.min(i);
        }
    }
    at + end
}

/// The top-level comma-separated pieces of `s`, each with its offset.
fn pieces(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push((start, &s[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push((start, &s[start..]));
    out
}

/// The text inside the parentheses opening at `open` (a byte offset of `(`), if they close.
fn parenthesised(s: &str, open: usize) -> Option<&str> {
    let mut depth = 0;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&s[open + 1..open + i]);
                }
            }
            _ => {}
        }
    }
    None
}

static LEADING_NAME: LazyLock<Regex> =
    LazyLock::new(|| re(&format!(r"^[\s+]*(?:\d+\t\s*)?({NAME})")));
static TABLE_ALIASED: LazyLock<Regex> =
    LazyLock::new(|| re(&format!(r"(?i)\b(?:from|join|into|update)\s+{NAME}\s*$")));
/// A column an index is on, as prose says it: `an index on route_id`.
static INDEX_ON: LazyLock<Regex> =
    LazyLock::new(|| re(r"\bindex (?:on|over) ([a-z_]\w*(?:\.[a-z_]\w*)?)\b"));
/// A trigger's row: `NEW.salary_pence`, `OLD.emp_no`.
static PSEUDO_ROW: LazyLock<Regex> = LazyLock::new(|| re(r"\b(?:NEW|OLD|new|old)\.[A-Za-z_]\w*\b"));
/// A query plan's columns: `USING INDEX idx (member_id=? AND returned_at>?)`.
static PLAN_COLUMN: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:\(|\bAND\s+)([A-Za-z_]\w*)\s*(?:=|>|<|>=|<=)\?"));
/// A result's header as `sqlite3 -header -column` prints it: names over a rule of dashes.
static HEADER_RULED: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?m)^([A-Za-z_]\w*(?:[ \t]+[A-Za-z_]\w*)*)[ \t]*\n-{2,}(?:[ \t]+-{2,})*[ \t]*$")
});
/// A result's header in `sqlite3`'s list mode, right after the query: `id|name|price`.
static HEADER_PIPED: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?im)^[^\n]*\bselect\b[^\n]*;[ \t]*\n([A-Za-z_]\w*(?:\|[A-Za-z_]\w*)+)[ \t]*$")
});
static COLUMN_CHANGED: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:add|drop|alter|modify|rename)\s+column\s+(?:if\s+(?:not\s+)?exists\s+)?({NAME})"
    ))
});
static RENAMED: LazyLock<Regex> =
    LazyLock::new(|| re(&format!(r"(?i)\brename\s+column\s+{NAME}\s+to\s+({NAME})")));
static NAME_WORD: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z_]\w*"));
/// What a `SELECT` lists, up to its `FROM`.
static SELECT_LIST: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?is)\bselect\s+(?:distinct\s+)?(.+?)\s+from\b"));
/// The tables `sqlite3`'s `.tables` prints.
static TABLES_LISTED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?m)^(?:sqlite> )?\.tables\s*\n((?:[\w \t]+\n)+)"));
static SIMPLE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"^(?:[\s+]|\d+\t)*(?:distinct\s+)?({NAME})\s*(?:(?i:as)\s+\w+|\w+)?(?:[\s+]|\d+\t?)*$"
    ))
});
static NAMES_IN_CALL: LazyLock<Regex> = LazyLock::new(|| re(&format!(r"\(\s*({NAME})\s*[),]")));

impl Finder<'_> {
    /// Adds a name SQL wrote at `s..e`, its quotes left out, unless it is a keyword.
    fn add_sql(&mut self, kind: Kind, s: usize, e: usize) {
        let raw = &self.text[s..e];
        let trimmed = raw.trim_start_matches(['`', '"', '[']);
        let s = s + (raw.len() - trimmed.len());
        let trimmed = trimmed.trim_end_matches(['`', '"', ']']);
        let e = s + trimmed.len();
        if trimmed.is_empty()
            || is_sql_word(trimmed)
            || trimmed.chars().next().is_some_and(|c| c.is_ascii_digit())
        {
            return;
        }
        self.add(kind, s, e);
    }

    pub(super) fn sql(&mut self) {
        let text = self.text;
        if !SQLISH.is_match(text) {
            return;
        }
        for c in TABLE_ERROR.captures_iter(text) {
            if let Some(m) = (1..=5).find_map(|i| c.get(i)) {
                self.add_sql(Kind::Table, m.start(), m.end());
            }
        }
        for c in COLUMN_ERROR.captures_iter(text) {
            if let Some(m) = (1..=7).find_map(|i| c.get(i)) {
                for (at, piece) in pieces(m.as_str()) {
                    let name = piece.trim();
                    let from = m.start() + at + (piece.len() - piece.trim_start().len());
                    self.add_sql(Kind::Column, from, from + name.len());
                }
            }
        }
        for c in INDEX_ON.captures_iter(text) {
            if let Some(m) = c.get(1) {
                self.add_sql(Kind::Column, m.start(), m.end());
            }
        }
        for m in PSEUDO_ROW.find_iter(text) {
            self.add_sql(Kind::Column, m.start(), m.end());
        }
        for c in PLAN_COLUMN.captures_iter(text) {
            if let Some(m) = c.get(1) {
                self.add_sql(Kind::Column, m.start(), m.end());
            }
        }
        // Result headers are columns; what `.tables` lists are tables.
        for (pattern, kind) in [
            (&*HEADER_RULED, Kind::Column),
            (&*HEADER_PIPED, Kind::Column),
            (&*TABLES_LISTED, Kind::Table),
        ] {
            for c in pattern.captures_iter(text) {
                let Some(names) = c.get(1) else { continue };
                for m in NAME_WORD.find_iter(names.as_str()) {
                    self.add_sql(kind, names.start() + m.start(), names.start() + m.end());
                }
            }
        }
        let mut at = 0;
        while let Some(m) = STATEMENT.find_at(text, at) {
            let end = statement_end(text, m.start());
            self.statement(m.start(), end);
            at = end.max(m.end());
        }
    }

    /// The tables and columns of one statement at `s..e`.
    fn statement(&mut self, s: usize, e: usize) {
        let stmt = &self.text[s..e];
        let lower = stmt.to_ascii_lowercase();
        for c in TABLE_AFTER.captures_iter(stmt) {
            let Some(name) = c.get(1) else { continue };
            let keyword = c.get(0).map_or("", |m| m.as_str()).to_ascii_lowercase();
            // `ON` names a table only in `CREATE INDEX … ON t`.
            if keyword.starts_with("on") && !lower.starts_with("create") {
                continue;
            }
            self.add_sql(Kind::Table, s + name.start(), s + name.end());
            // `t (a, b)`: the columns of an insert, an index or a reference.
            let after = name.end();
            let rest = &stmt[after..];
            let gap = rest.len() - rest.trim_start().len();
            if rest.trim_start().starts_with('(')
                && !keyword.starts_with("table")
                && let Some(inside) = parenthesised(stmt, after + gap)
            {
                self.column_list(s + after + gap + 1, inside);
            } else if keyword.starts_with("table")
                && rest.trim_start().starts_with('(')
                && let Some(inside) = parenthesised(stmt, after + gap)
            {
                self.column_definitions(s + after + gap + 1, inside);
            }
        }
        for select in SELECT_LIST.captures_iter(stmt) {
            let Some(list) = select.get(1) else { continue };
            for (at, piece) in pieces(list.as_str()) {
                let base = s + list.start() + at;
                if let Some(c) = SIMPLE_NAME.captures(piece)
                    && let Some(m) = c.get(1)
                {
                    self.add_sql(Kind::Column, base + m.start(), base + m.end());
                } else {
                    for c in NAMES_IN_CALL.captures_iter(piece) {
                        if let Some(m) = c.get(1) {
                            self.add_sql(Kind::Column, base + m.start(), base + m.end());
                        }
                    }
                }
            }
        }
        for c in COLUMN_COMPARED.captures_iter(stmt) {
            if let Some(m) = (1..=6).find_map(|i| c.get(i)) {
                // `FROM t AS x`: the table's alias, not a column.
                if c.get(5).is_some()
                    && TABLE_ALIASED.is_match(&stmt[..c.get(0).map_or(0, |w| w.start())])
                {
                    continue;
                }
                self.add_sql(Kind::Column, s + m.start(), s + m.end());
            }
        }
        for m in QUALIFIED_COLUMN.find_iter(stmt) {
            // Not a call, nor part of an address or a domain (`j.tanaka@example.com`).
            let after = &stmt[m.end()..];
            if !after.starts_with(['(', '@', '.']) && !stmt[..m.start()].ends_with(['@', '.']) {
                self.add_sql(Kind::Column, s + m.start(), s + m.end());
            }
        }
        for c in COMPARED_WITH.captures_iter(stmt) {
            if let Some(m) = c.get(1) {
                self.add_sql(Kind::Column, s + m.start(), s + m.end());
            }
        }
        for c in ORDER_BY.captures_iter(stmt) {
            let Some(list) = c.get(1) else { continue };
            for (at, piece) in pieces(list.as_str()) {
                if let Some(n) = LEADING_NAME.captures(piece).and_then(|n| n.get(1)) {
                    let from = s + list.start() + at;
                    self.add_sql(Kind::Column, from + n.start(), from + n.end());
                }
            }
        }
        if let Some(c) = RENAMED.captures(stmt)
            && let Some(m) = c.get(1)
        {
            self.add_sql(Kind::Column, s + m.start(), s + m.end());
        }
        for c in COLUMN_CHANGED.captures_iter(stmt) {
            if let Some(m) = c.get(1) {
                self.add_sql(Kind::Column, s + m.start(), s + m.end());
            }
        }
    }

    /// `(a, b, c)` after a table: its columns.
    fn column_list(&mut self, at: usize, inside: &str) {
        for (off, piece) in pieces(inside) {
            if let Some(n) = SIMPLE_NAME.captures(piece).and_then(|n| n.get(1)) {
                self.add_sql(Kind::Column, at + off + n.start(), at + off + n.end());
            }
        }
    }

    /// The column definitions of a `CREATE TABLE`: each one's first word, constraints left out
    /// (their columns are named among the definitions).
    fn column_definitions(&mut self, at: usize, inside: &str) {
        for (off, piece) in pieces(inside) {
            let Some(n) = LEADING_NAME.captures(piece).and_then(|n| n.get(1)) else {
                continue;
            };
            let word = n.as_str().trim_matches(['`', '"', '[', ']']);
            if CONSTRAINTS.iter().any(|c| c.eq_ignore_ascii_case(word)) {
                continue;
            }
            self.add_sql(Kind::Column, at + off + n.start(), at + off + n.end());
        }
    }
}
