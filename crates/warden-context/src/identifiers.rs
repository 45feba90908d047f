//! Opaque identifiers: the strings a summary must keep exactly — paths and `path:line`, URLs,
//! commit hashes, issue and trace ids, error codes, function and table names (SPEC C6). A
//! summary that paraphrases them loses the ability to act on them, so after compaction the code
//! checks that every one of the compacted range is still there.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

/// What kind of identifier a string is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Url,
    PathLine,
    Path,
    TraceId,
    Commit,
    Issue,
    ErrorCode,
    Function,
    Table,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Url => "url",
            Self::PathLine => "path_line",
            Self::Path => "path",
            Self::TraceId => "trace_id",
            Self::Commit => "commit",
            Self::Issue => "issue",
            Self::ErrorCode => "error_code",
            Self::Function => "function",
            Self::Table => "table",
        }
    }
}

/// One identifier found in a text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Identifier {
    pub kind: Kind,
    pub text: String,
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| unreachable!("identifier pattern {pattern}: {e}"))
}

/// File extensions that make a bare name a path.
const EXTENSIONS: &str = "a|o|rs|toml|lock|js|mjs|cjs|ts|tsx|jsx|json|jsonl|ndjson|py|pyi|go|mod|rb|java|kt|c|h|cc|cpp|hpp|cs|swift|php|sh|bash|zsh|sql|md|txt|yaml|yml|html|css|scss|xml|ini|cfg|conf|env|log|proto|graphql|vue|svelte|lua|ex|exs|erl|hs|ml|scala|gradle|dockerfile|csv|ipynb|db|sqlite|gguf|wasm|so|dylib|dll|exe|patch|diff";

/// Pairs like `and/or` that are words, not paths.
const NOT_PATHS: &[&str] = &[
    "and/or",
    "i/o",
    "I/O",
    "yes/no",
    "on/off",
    "true/false",
    "read/write",
    "input/output",
    "tcp/ip",
    "TCP/IP",
    "client/server",
    "either/or",
    "he/she",
    "w/o",
    "n/a",
    "N/A",
    "km/h",
];

/// Words before `(` that are prose, not calls.
const NOT_FUNCTIONS: &[&str] = &[
    "if", "for", "while", "match", "return", "switch", "catch", "and", "or", "not", "see", "e.g",
    "i.e", "Some", "Ok", "Err", "None", "vec", "format", "println", "print", "assert",
];

/// A backslash ends a URL: in JSON-escaped text (tool results) `\n` follows it.
static URL: LazyLock<Regex> = LazyLock::new(|| re(r#"\bhttps?://[^\s<>"'`\]}\\]+"#));
static PATH_LINE: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?:[~.]{{0,2}}/)?(?:[\w.@+-]+/)*[\w.@+-]+\.(?:{EXTENSIONS}):\d+(?::\d+)?\b"
    ))
});
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?:~|\.{{1,2}})?/[\w.@+-]+(?:/[\w.@+-]+)*/?|[\w.@+-]+(?:/[\w.@+-]+)+/?|\b[\w.+-]+\.(?:{EXTENSIONS})\b"
    ))
});
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
});
static PREFIXED_ID: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(?:req|msg|call|toolu|run|sess|trace|span|evt|job)_[A-Za-z0-9][A-Za-z0-9_-]{5,}\b|\bchatcmpl-[A-Za-z0-9]{6,}\b",
    )
});
/// W3C `traceparent`: version, trace id, span id, flags.
static TRACEPARENT: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}\b"));
/// A hash at the start of a line, as `git log --oneline` prints it (digits only included).
static COMMIT_LINE: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^([0-9a-f]{7,40})\s"));
static COMMIT: LazyLock<Regex> = LazyLock::new(|| re(r"\b[0-9a-f]{7,40}\b"));
static ISSUE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:\b[\w.-]+/[\w.-]+)?#\d+\b|\b[A-Z][A-Z0-9]{1,9}-\d+(?:-\d+)?\b"));
static ERROR_CODE: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"\bE\d{{3,5}}\b|\b(?:{ERRNO})\b|\b(?:ERR|ERROR|SQLITE|HTTP|NS|WSA)_[A-Z0-9_]+\b|\b(?:TS|CS|PY|SC)\d{{3,5}}\b|\b[A-Z]\d{{4}}\b"
    ))
});

/// The POSIX and Linux `errno` names.
const ERRNO: &str = "EPERM|ENOENT|ESRCH|EINTR|EIO|ENXIO|E2BIG|ENOEXEC|EBADF|ECHILD|EAGAIN|ENOMEM|EACCES|EFAULT|EBUSY|EEXIST|EXDEV|ENODEV|ENOTDIR|EISDIR|EINVAL|ENFILE|EMFILE|ENOTTY|ETXTBSY|EFBIG|ENOSPC|ESPIPE|EROFS|EMLINK|EPIPE|EDOM|ERANGE|EDEADLK|ENAMETOOLONG|ENOLCK|ENOSYS|ENOTEMPTY|ELOOP|EWOULDBLOCK|ENOMSG|EIDRM|ENOSTR|ENODATA|ETIME|ENOSR|ENOLINK|EPROTO|EBADMSG|EOVERFLOW|EILSEQ|EUSERS|ENOTSOCK|EDESTADDRREQ|EMSGSIZE|EPROTOTYPE|ENOPROTOOPT|EPROTONOSUPPORT|ESOCKTNOSUPPORT|EOPNOTSUPP|ENOTSUP|EPFNOSUPPORT|EAFNOSUPPORT|EADDRINUSE|EADDRNOTAVAIL|ENETDOWN|ENETUNREACH|ENETRESET|ECONNABORTED|ECONNRESET|ENOBUFS|EISCONN|ENOTCONN|ESHUTDOWN|ETOOMANYREFS|ETIMEDOUT|ECONNREFUSED|EHOSTDOWN|EHOSTUNREACH|EALREADY|EINPROGRESS|ESTALE|EDQUOT|ECANCELED|EOWNERDEAD|ENOTRECOVERABLE";
static FUNCTION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(?:fn|def|function|func|async fn|pub fn)\s+([A-Za-z_]\w*)|\b([A-Za-z_]\w*(?:(?:::|\.)[A-Za-z_]\w*)*)\(",
    )
});
/// Names that are functions by where they stand: a stack frame (`at Object.openSync (`), a test
/// id (`tests/test_api.py::test_create`), a linker's symbol (`undefined symbol: x`,
/// `lib.a(x.o):(symbol)`), `Type::method`.
static FUNCTION_PLACED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\bat\s+([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\s+\(|\.py::([A-Za-z_]\w*)|(?:undefined symbol:|undefined reference to)\s+`?([A-Za-z_]\w*)|\b([A-Z]\w*::[a-z_]\w*)\b|\.o\):\(([A-Za-z_]\w*)\)",
    )
});
static TABLE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(?:FROM|INTO|UPDATE|TABLE|JOIN|EXISTS)\s+([A-Za-z_][\w.]*)|`([A-Za-z_]\w*)` table\b|\btable `([A-Za-z_]\w*)`",
    )
});

/// Identifiers found so far, and the spans of text they took.
struct Finder<'t> {
    text: &'t str,
    taken: Vec<(usize, usize)>,
    hits: Vec<(usize, Identifier)>,
}

impl Finder<'_> {
    /// Takes `text[s..e]` (trailing punctuation left out) as a `kind`, unless an earlier,
    /// longer form took part of it.
    fn add(&mut self, kind: Kind, s: usize, e: usize) {
        let piece = self.text[s..e].trim_end_matches(['.', ',', ';', ':', '!', '?']);
        let end = s + piece.len();
        if piece.is_empty() || !self.taken.iter().all(|&(a, b)| end <= a || s >= b) {
            return;
        }
        self.taken.push((s, end));
        self.hits.push((
            s,
            Identifier {
                kind,
                text: piece.to_owned(),
            },
        ));
    }

    fn urls_and_ids(&mut self) {
        let text = self.text;
        for m in URL.find_iter(text) {
            // A closing parenthesis belongs to the URL only when it opened one.
            let piece = m.as_str().trim_end_matches(['.', ',', ';', ':', '!', '?']);
            let mut end = m.start() + piece.len();
            if piece.ends_with(')') && piece.matches('(').count() < piece.matches(')').count() {
                end -= 1;
            }
            self.add(Kind::Url, m.start(), end);
        }
        for c in TRACEPARENT.captures_iter(text) {
            for group in [c.get(1), c.get(2)].into_iter().flatten() {
                self.add(Kind::TraceId, group.start(), group.end());
            }
        }
        for m in UUID.find_iter(text).chain(PREFIXED_ID.find_iter(text)) {
            self.add(Kind::TraceId, m.start(), m.end());
        }
    }

    fn paths(&mut self) {
        let text = self.text;
        for m in PATH_LINE.find_iter(text) {
            self.add(Kind::PathLine, m.start(), m.end());
        }
        for m in PATH.find_iter(text) {
            let piece = m.as_str();
            let plain_pair = !piece.starts_with(['/', '.', '~'])
                && piece.matches('/').count() == 1
                && !piece.contains('.')
                && piece.split('/').all(|w| w.chars().all(char::is_alphabetic));
            if NOT_PATHS.contains(&piece) || plain_pair && piece.len() <= 12 || piece == "/" {
                continue;
            }
            // `owner/repo#12` is an issue.
            if text[m.end()..].starts_with('#') {
                continue;
            }
            self.add(Kind::Path, m.start(), m.end());
        }
    }

    fn codes(&mut self) {
        let text = self.text;
        for c in COMMIT_LINE.captures_iter(text) {
            if let Some(hash) = c.get(1) {
                self.add(Kind::Commit, hash.start(), hash.end());
            }
        }
        for m in COMMIT.find_iter(text) {
            let piece = m.as_str();
            let digit = piece.bytes().any(|b| b.is_ascii_digit());
            if digit && piece.bytes().any(|b| b.is_ascii_alphabetic()) {
                self.add(Kind::Commit, m.start(), m.end());
            }
        }
        for m in ISSUE.find_iter(text) {
            // `&#34;` is a character reference, not issue 34.
            if text[..m.start()].ends_with('&') && text[m.end()..].starts_with(';') {
                continue;
            }
            self.add(Kind::Issue, m.start(), m.end());
        }
        for m in ERROR_CODE.find_iter(text) {
            self.add(Kind::ErrorCode, m.start(), m.end());
        }
    }

    fn names(&mut self) {
        let text = self.text;
        for c in FUNCTION_PLACED.captures_iter(text) {
            let name = (1..=5).find_map(|i| c.get(i));
            if let Some(name) = name.filter(|n| !NOT_FUNCTIONS.contains(&n.as_str())) {
                self.add(Kind::Function, name.start(), name.end());
            }
        }
        for c in FUNCTION.captures_iter(text) {
            let Some(name) = c.get(1).or_else(|| c.get(2)) else {
                continue;
            };
            let plain = name.as_str();
            let last = plain.rsplit(['.', ':']).next().unwrap_or(plain);
            let codeish = plain.contains(['_', '.', ':'])
                || last.chars().skip(1).any(char::is_uppercase)
                || c.get(1).is_some()
                || text[name.end()..].starts_with("()");
            if NOT_FUNCTIONS.contains(&plain) || !codeish {
                continue;
            }
            self.add(Kind::Function, name.start(), name.end());
        }
        for c in TABLE.captures_iter(text) {
            if let Some(name) = c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3))
                && !matches!(name.as_str(), "IF" | "NOT" | "EXISTS" | "ONLY" | "SET")
            {
                self.add(Kind::Table, name.start(), name.end());
            }
        }
    }
}

/// Every identifier in `text`, each once, in the order they first appear. Longer forms win
/// over the shorter ones inside them (a URL over the path in it, `path:line` over the path).
pub fn extract(text: &str) -> Vec<Identifier> {
    let mut found = Finder {
        text,
        taken: Vec::new(),
        hits: Vec::new(),
    };
    found.urls_and_ids();
    found.paths();
    found.codes();
    found.names();
    let mut all = found.hits;
    all.sort_by_key(|(at, _)| *at);
    let mut seen = HashSet::new();
    all.into_iter()
        .map(|(_, id)| id)
        .filter(|id| seen.insert(id.clone()))
        .collect()
}

/// The identifiers of `source` that `summary` does not contain, to be put back.
pub fn missing(source: &[Identifier], summary: &str) -> Vec<Identifier> {
    source
        .iter()
        .filter(|id| !summary.contains(&id.text))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Kind, String)> {
        extract(text)
            .into_iter()
            .map(|i| (i.kind, i.text))
            .collect()
    }

    #[test]
    fn longer_forms_win_and_punctuation_is_not_kept() {
        assert_eq!(
            kinds("see https://github.com/a/b/issues/3, and src/main.rs:42:7."),
            [
                (Kind::Url, "https://github.com/a/b/issues/3".to_owned()),
                (Kind::PathLine, "src/main.rs:42:7".to_owned()),
            ]
        );
        assert!(kinds("read and/or write the I/O").is_empty());
        assert_eq!(
            kinds(r#"{"content":"see https://example.com/spec/0\nnext"}"#),
            [(Kind::Url, "https://example.com/spec/0".to_owned())],
            "an escaped newline ends it"
        );
        assert!(
            kinds("the string &#34;slug&#34;").is_empty(),
            "character references are not issues"
        );
        assert_eq!(kinds("issue #34"), [(Kind::Issue, "#34".to_owned())]);
    }

    #[test]
    fn missing_identifiers_are_listed() {
        let ids = extract("fix src/a.rs and commit 1a2b3c4d");
        let lost = missing(&ids, "fixed src/a.rs");
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].kind, Kind::Commit);
    }
}
