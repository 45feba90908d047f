//! Opaque identifiers: the strings a summary must keep exactly — paths and `path:line`, URLs,
//! commit hashes, issue and trace ids, error codes, function, type, table and column names (SPEC
//! C6). A summary that paraphrases them loses the ability to act on them, so after compaction the
//! code checks that every one of the compacted range is still there.

mod code;
mod sql;

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
    Type,
    Table,
    Column,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 11] = [
        Self::Url,
        Self::PathLine,
        Self::Path,
        Self::TraceId,
        Self::Commit,
        Self::Issue,
        Self::ErrorCode,
        Self::Function,
        Self::Type,
        Self::Table,
        Self::Column,
    ];

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
            Self::Type => "type",
            Self::Table => "table",
            Self::Column => "column",
        }
    }
}

/// One identifier found in a text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Identifier {
    pub kind: Kind,
    pub text: String,
}

/// Compiles one of the patterns here with ASCII words: `\w`, `\d` and `\b` as in code, which
/// names its things in ASCII. A Unicode `\b` would make every text holding a `‘` or a `…` (gcc's
/// quotes, a cut line) take the slow path through the whole pattern.
pub(crate) fn re(pattern: &str) -> Regex {
    let ascii = ascii_words(pattern);
    Regex::new(&ascii).unwrap_or_else(|e| unreachable!("identifier pattern {pattern}: {e}"))
}

/// `pattern` with `\w`, `\d` and `\b` spelled out in ASCII, inside classes and out.
fn ascii_words(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 32);
    let (mut in_class, mut chars) = (false, pattern.chars());
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('w') if in_class => out.push_str("0-9A-Za-z_"),
                Some('w') => out.push_str("[0-9A-Za-z_]"),
                Some('d') if in_class => out.push_str("0-9"),
                Some('d') => out.push_str("[0-9]"),
                Some('b') if !in_class => out.push_str("(?-u:\\b)"),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // A `]` or `^]` right after the opening is a member, not the end.
                let rest = chars.as_str();
                for lead in ["^]", "]", "^"] {
                    if let Some(after) = rest.strip_prefix(lead) {
                        out.push_str(lead);
                        chars = after.chars();
                        break;
                    }
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// One piece of a path: a name, or a route's parameter (`<int:id>`, `{id}`, `:id`).
const SEGMENT: &str = r"(?:[\w.@+-]*\*[\w.@+*-]*[\w.]|\$\(\w+\)[\w.@+-]*|\$\{?\w+\}?[\w.@+-]*|[\w.@+-]+|<[\w:]+>|\{[\w:]+\})";

/// File extensions that make a bare name a path.
const EXTENSIONS: &str = "a|o|rs|toml|lock|js|mjs|cjs|ts|tsx|jsx|json|jsonl|ndjson|py|pyi|go|mod|rb|java|kt|c|h|cc|cpp|hpp|cs|swift|php|sh|bash|zsh|sql|md|txt|yaml|yml|html|css|scss|xml|ini|cfg|conf|env|log|proto|graphql|vue|svelte|lua|ex|exs|erl|hs|ml|scala|gradle|dockerfile|csv|ipynb|db|sqlite|gguf|wasm|so|dylib|dll|exe|patch|diff|out|bin|tar|gz|tgz|zip|whl|jar|class|pyc|pem|crt|svg|png|jpg|pdf|lockb|mk|cmake|tf|nix|bzl|service";

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
    "his/her",
    "him/her",
    "s/he",
    "get/set",
    "on/off",
    "open/close",
    "start/stop",
    "success/failure",
    "pass/fail",
    "before/after",
    "min/max",
    "add/remove",
    "show/hide",
    "request/response",
    "upload/download",
    "import/export",
    "push/pull",
    "sync/async",
    "key/value",
    "src/dst",
];

/// Whether the path-like `piece` at `at` is a git branch: decorating a commit
/// (`3fc8920 (fix/rounding) …`, `HEAD -> feature/x`), merged (`Merge branch 'fix/x'`), remote
/// (`origin/main`).
fn a_branch(text: &str, at: usize, piece: &str) -> bool {
    static DECORATED: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?:[0-9a-f]{7,40} \([^)\n]*|HEAD -> |branch '|tag: )$"));
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    DECORATED.is_match(&text[line_start..at]) || piece.starts_with("origin/")
}

/// A media type (`application/json`), a product and its version (`HTTP/1.1`, `Python/3.11.7`),
/// a date (`04/Dec/2026`): slashes that do not make a path.
fn not_a_path(piece: &str) -> bool {
    static NOT: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"^(?:(?:application|text|image|audio|video|multipart|font)/[\w.+-]+|(?:java|jdk|javafx)\.\w+/.*|[A-Z]\w*\.js|[\d/.-]+|(?:[\w.]*\.)?docs\.rs|(?:self|this|cls|request|response|req|res|resp|ctx|app|config|settings)\.\w+|[A-Za-z][\w.]*/\d[\d.]*|\d{1,2}/[A-Z][a-z]{2}/\d{4}(?::[\d:]+)?|\d{1,4}/\d{1,2}(?:/\d{1,4})?)$",
        )
    });
    NOT.is_match(piece)
}

static HAS_EXTENSION: LazyLock<Regex> = LazyLock::new(|| re(&format!(r"\.(?:{EXTENSIONS})$")));

/// A method's definition in languages without a keyword for it: `public void persist(Path p) {`,
/// `load(env) {`.
static METHOD_DEFINED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)^[ \t]*(?:\d+\t)?[ \t]*(?:(?:public|private|protected|static|final|async|synchronized|override|abstract|virtual|get|set)[ \t]+)*(?:[\w<>\[\],.?]+[ \t]+)?([A-Za-z_$][\w$]*)[ \t]*\([^;{}()\n]*\)[ \t]*(?:throws [\w., ]+)?\{",
    )
});

static CHAINED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?m)(?:\)|^\s*(?:\d+\t)?\s*)\.([A-Za-z_$][\w$]*)\s*(?:\(|::<)"));

/// Methods of a language's basic types (strings, lists, options, iterators): called
/// everywhere, never the project's own.
const BASIC_METHODS: &[&str] = &[
    "unwrap",
    "expect",
    "clone",
    "iter",
    "iter_mut",
    "into_iter",
    "into",
    "to_string",
    "to_owned",
    "as_str",
    "as_ref",
    "as_mut",
    "map_err",
    "and_then",
    "unwrap_or",
    "unwrap_or_else",
    "unwrap_or_default",
    "is_some",
    "is_none",
    "is_ok",
    "is_err",
    "len",
    "is_empty",
    "push",
    "push_str",
    "pop",
    "chars",
    "bytes",
    "lines",
    "trim",
    "strip",
    "lower",
    "upper",
    "split",
    "join",
    "append",
    "extend",
    "format",
    "replace",
    "startswith",
    "endswith",
    "starts_with",
    "ends_with",
    "contains",
    "toLowerCase",
    "toUpperCase",
    "toString",
    "forEach",
    "then",
    "catch",
    "finally",
    "ok",
    "err",
    "encode",
    "decode",
    "log",
    "enumerate",
    "zip",
    "rev",
];

/// Methods of strings and arrays in Java and JavaScript, besides [`BASIC_METHODS`].
const MORE_BASIC_METHODS: &[&str] = &[
    "equals",
    "split_once",
    "length",
    "isEmpty",
    "charAt",
    "substring",
    "indexOf",
    "includes",
    "slice",
    "hashCode",
    "toFixed",
    "padStart",
    "padEnd",
    "trimEnd",
    "trimStart",
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
        r"(?:file://)?(?:[~.]{{0,2}}/)?(?:[\w.@+-]+/)*[\w.@+-]+\.(?:{EXTENSIONS}):\d+(?::\d+|-\d+)?\b|\bnode:[\w/.-]+:\d+(?::\d+)?\b|\b(?:[\w.-]+/)*(?:Makefile|GNUmakefile|Dockerfile|Containerfile|Jenkinsfile|Rakefile|Gemfile|Procfile|Vagrantfile|Justfile|Caddyfile|BUILD|WORKSPACE):\d+(?::\d+)?\b"
    ))
});
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?:file://)?(?:~|\.{{1,2}}|\$\(\w+\)|\$\{{?\w+\}}?)?/{SEGMENT}(?:/{SEGMENT})*/?(?:\?[\w=&%.+-]+)?|[\w.@+-]+(?:/{SEGMENT})+/?|\b[\w.+-]+\.(?:{EXTENSIONS})(?:\.(?:orig|bak|before|after|old|new|tmp|swp|rej|backup))?\b"
    ))
});
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
});
static PREFIXED_ID: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(?:req|msg|call|toolu|run|sess|trace|span|evt|job|pi|sub|ord|cus|ch|acct|txn|tok|usr|inv|pay|batch|task|ses|corr)_[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*\b|\bchatcmpl-[A-Za-z0-9]{6,}\b|\b[a-z]{2,8}_(?:[A-Za-z]*[0-9]|[0-9]*[A-Z])[A-Za-z0-9]{7,}\b",
    )
});
/// A line of `ls -l`: mode, links, owner, group, size, date, then the name.
static LS_LINE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)^[dlcbps-][rwxsStT-]{9}[.@+]?\s+\d+\s+\S+\s+\S+\s+[\d,]+\s+\w{3}\s+\d+\s+[\d:]+\s+([^\s/][^\s]*?)(?: -> \S+)?$",
    )
});
/// A directory written with its slash alone: `COPY src/ src/`, `\tconfig/`.
static BARE_DIR: LazyLock<Regex> =
    LazyLock::new(|| re(r#"(?m)(?:^|[\s"'(=])([A-Za-z_][\w.-]*/)(?:$|[\s"')])"#));
/// A test's id as pytest prints it: `tests/test_api.py::TestCart::test_total[case-1]`.
static PYTEST_ID: LazyLock<Regex> = LazyLock::new(|| re(r"[\w./-]*\.py::[\w:]+(?:\[[^\]\s]*\])?"));
/// W3C `traceparent`: version, trace id, span id, flags.
static TRACEPARENT: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}\b"));
/// A hash at the start of a line, as `git log --oneline` prints it (digits only included).
static COMMIT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)^[*|\\/ ]*\^?([0-9a-f]{7,40})\s|\bMerge:\s+([0-9a-f]{7,40})\s+([0-9a-f]{7,40})|\bindex ([0-9a-f]{7,40})(?:,([0-9a-f]{7,40}))?\.\.([0-9a-f]{7,40})",
    )
});
static COMMIT: LazyLock<Regex> = LazyLock::new(|| re(r"\b[0-9a-f]{7,40}\b"));
static ISSUE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(?:CVE|RUSTSEC|PYSEC|GO|GHSA)-\d{4}-[\w-]+\b|(?:\b[\w.-]+/[\w.-]+)?#\d+\b|\b[A-Z][A-Z0-9]{1,9}-\d+\b",
    )
});
static ERROR_CODE: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"\bE\d{{3,5}}\b|\b(?:{ERRNO})\b|\b(?:ERR|ERROR|SQLITE|HTTP|NS|WSA|EAI)_[A-Z0-9_]+\b|\b(?:TS|CS|PY|SC)\d{{3,5}}\b|\b[A-Z]\d{{4}}\b|\[(-W[\w=-]+)\]|\bclippy::[a-z_]+\b|\bE_[A-Z][A-Z0-9_]+\b|(?:noqa|disable)[:=]\s*([A-Z]+\d+)"
    ))
});

/// A hexadecimal id called a trace, span or request id; a `SHOUTING_NAME` called a code or an
/// error (`code AUTH_TOKEN_EXPIRED`, `error: QUOTA_EXCEEDED`).
static NAMED_CODE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?i:\b(?:trace|span|request|correlation)(?:[ _-]?id)?)[\s:=#"']+([0-9a-fA-F]{16,64})\b|(?i:\b(?:code|error|errno|status|reason|err|err_code|error_code|errcode|error_kind))[\s:=("'`]+([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b|\b([A-Z][A-Z0-9]*_(?:ERR|ERROR|E)_[A-Z0-9_]+|[A-Z][A-Z0-9_]*_(?:ERROR|FAILED|FAILURE|DENIED|INVALID|TIMEOUT|TIMED_OUT|LOCKED|EXPIRED|NOT_FOUND|UNAVAILABLE|EXCEEDED|CONFLICT|REJECTED|MISSING|FORBIDDEN|UNAUTHORIZED))\b|\bSQLSTATE[\s:=\[]*([0-9A-Z]{5})\b"#,
    )
});

/// The POSIX and Linux `errno` names.
const ERRNO: &str = "EPERM|ENOENT|ESRCH|EINTR|EIO|ENXIO|E2BIG|ENOEXEC|EBADF|ECHILD|EAGAIN|ENOMEM|EACCES|EFAULT|EBUSY|EEXIST|EXDEV|ENODEV|ENOTDIR|EISDIR|EINVAL|ENFILE|EMFILE|ENOTTY|ETXTBSY|EFBIG|ENOSPC|ESPIPE|EROFS|EMLINK|EPIPE|EDOM|ERANGE|EDEADLK|ENAMETOOLONG|ENOLCK|ENOSYS|ENOTEMPTY|ELOOP|EWOULDBLOCK|ENOMSG|EIDRM|ENOSTR|ENODATA|ETIME|ENOSR|ENOLINK|EPROTO|EBADMSG|EOVERFLOW|EILSEQ|EUSERS|ENOTSOCK|EDESTADDRREQ|EMSGSIZE|EPROTOTYPE|ENOPROTOOPT|EPROTONOSUPPORT|ESOCKTNOSUPPORT|EOPNOTSUPP|ENOTSUP|EPFNOSUPPORT|EAFNOSUPPORT|EADDRINUSE|EADDRNOTAVAIL|ENETDOWN|ENETUNREACH|ENETRESET|ECONNABORTED|ECONNRESET|ENOBUFS|EISCONN|ENOTCONN|ESHUTDOWN|ETOOMANYREFS|ETIMEDOUT|ECONNREFUSED|EHOSTDOWN|EHOSTUNREACH|EALREADY|EINPROGRESS|ESTALE|EDQUOT|ECANCELED|EOWNERDEAD|ENOTRECOVERABLE";
static FUNCTION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(?:fn|def|function|func|async fn|pub fn)\s+([A-Za-z_$]\w*)|\b([A-Za-z_$][\w$]*(?:(?:::|\.)[A-Za-z_$#][\w$]*)*)\(",
    )
});
/// Names that are functions by where they stand: a stack frame (`at Object.openSync (`), a test
/// id (`tests/test_api.py::test_create`), a linker's symbol (`undefined symbol: x`,
/// `lib.a(x.o):(symbol)`), `Type::method`.
static FUNCTION_PLACED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\bat\s+(?:async\s+)?(?:new\s+)?(?:get\s+|set\s+)?([A-Za-z_$#][\w$#]*(?:\.[A-Za-z_$#<][\w$#<>]*)*)\s+(?:\[as ([\w$#]+)\]\s+)?\(|(?:undefined symbol:|undefined reference to)\s+[`‘']?([A-Za-z_]\w*)|\b((?:[a-z_]\w*::)*[A-Z]\w*::[a-z_]\w*)\b|\.o\):\(([A-Za-z_]\w*)\)|#\d+\s+0x[0-9a-f]+\s+in\s+([A-Za-z_][\w:~<>]*)|\bat\s+(?:[\w.]+/)?([\w$.]+)\([\w$.]*(?:\.java|\.kt|\.scala)?:?\d*\)|:in\s+`([^'\s]+)'|\bmethod ([A-Za-z_$][\w$]*)(?:\(| in )|->\w+ = &?([a-z_]\w*);|\b([A-Z][a-z]\w*[A-Z]\w*\.[a-z_]\w*)\b|\b(test_[a-z0-9_]+)\b",
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
        for m in PYTEST_ID.find_iter(text) {
            self.add(Kind::Function, m.start(), m.end());
        }
    }

    /// Names `ls -l` lists, and directories written with their slash alone (`src/`, `api/`).
    fn listed(&mut self) {
        let text = self.text;
        if has(text, &["rw", "r-"]) {
            for c in LS_LINE.captures_iter(text) {
                if let Some(m) = c.get(1)
                    && !matches!(m.as_str(), "." | "..")
                {
                    self.add(Kind::Path, m.start(), m.end());
                }
            }
        }
        for c in BARE_DIR.captures_iter(text) {
            if let Some(m) = c.get(1)
                && !NOT_PATHS.contains(&m.as_str().trim_end_matches('/'))
            {
                self.add(Kind::Path, m.start(), m.end());
            }
        }
    }

    /// Ids on their own (one inside a path or a URL goes with it).
    fn ids(&mut self) {
        let text = self.text;
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
            if NOT_PATHS.contains(&piece) || piece == "/" || a_branch(text, m.start(), piece) {
                continue;
            }
            // `owner/repo#12` is an issue; `java.base/java.lang.Long.parseLong(` a call.
            let call = text[m.end()..].starts_with('(') && !HAS_EXTENSION.is_match(piece);
            if text[m.end()..].starts_with('#') || call || not_a_path(piece) {
                continue;
            }
            self.add(Kind::Path, m.start(), m.end());
        }
    }

    fn codes(&mut self) {
        let text = self.text;
        for c in NAMED_CODE.captures_iter(text) {
            if let Some(m) = c.get(1) {
                self.add(Kind::TraceId, m.start(), m.end());
            } else if let Some(m) = (2..=4).find_map(|i| c.get(i)) {
                self.add(Kind::ErrorCode, m.start(), m.end());
            }
        }
        for c in COMMIT_LINE.captures_iter(text) {
            for hash in (1..=6).filter_map(|i| c.get(i)) {
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
            let after = &text[m.end()..];
            // `&#34;` is a character reference, not issue 34; `#0 0x7f…` a stack frame;
            // `INV-2024-0042` a document number.
            if text[..m.start()].ends_with('&') && after.starts_with(';')
                || after.starts_with(" 0x")
                || text[..m.start()].ends_with("candidate ")
                || after.starts_with('-') && after[1..].starts_with(|c: char| c.is_ascii_digit())
            {
                continue;
            }
            self.add(Kind::Issue, m.start(), m.end());
        }
        for c in ERROR_CODE.captures_iter(text) {
            if let Some(m) = c.get(1).or_else(|| c.get(2)).or_else(|| c.get(0)) {
                self.add(Kind::ErrorCode, m.start(), m.end());
            }
        }
    }

    fn placed(&mut self) {
        let text = self.text;
        for c in FUNCTION_PLACED.captures_iter(text) {
            for name in (1..=12).filter_map(|i| c.get(i)) {
                if !NOT_FUNCTIONS.contains(&name.as_str()) && !name.as_str().contains('<') {
                    self.add(Kind::Function, name.start(), name.end());
                }
            }
        }
    }

    /// Adds a function called at `s..e` as written, with the receiver it is called on
    /// (`self.cart.add`): the method's own name is in it whole.
    fn add_call(&mut self, s: usize, e: usize) {
        if !self.text[s..e].contains("<anonymous>") {
            self.add(Kind::Function, s, e);
        }
    }

    fn names(&mut self) {
        let text = self.text;
        for c in FUNCTION.captures_iter(text) {
            let Some(name) = c.get(1).or_else(|| c.get(2)) else {
                continue;
            };
            let plain = name.as_str();
            // `.name(` on what a call returned is a chained call, read below; `Name(` makes
            // a `Name` (a type, read last).
            if text[..name.start()].ends_with(['.', '#', '$'])
                || plain.starts_with(|c: char| c.is_ascii_uppercase())
                    && !plain.contains(['.', ':'])
            {
                continue;
            }
            let last = plain.rsplit(['.', ':']).next().unwrap_or(plain);
            let codeish = plain.contains(['_', '.', ':'])
                || last.chars().skip(1).any(char::is_uppercase)
                || c.get(1).is_some()
                || text[name.end()..].starts_with("()");
            if NOT_FUNCTIONS.contains(&plain) || sql::is_sql_word(plain) || !codeish {
                continue;
            }
            // A basic type's method on a variable (`line.split`, `name.equals`) is the
            // language's, not the project's.
            if let Some((receiver, method)) = plain.split_once('.')
                && !method.contains('.')
                && receiver.starts_with(|c: char| c.is_ascii_lowercase())
                && (BASIC_METHODS.contains(&method) || MORE_BASIC_METHODS.contains(&method))
            {
                continue;
            }
            self.add_call(name.start(), name.end());
        }
        if has(text, &["{"]) {
            for c in METHOD_DEFINED.captures_iter(text) {
                if let Some(m) = c.get(1)
                    && !NOT_FUNCTIONS.contains(&m.as_str())
                    && !matches!(
                        m.as_str(),
                        "function" | "else" | "do" | "try" | "synchronized"
                    )
                {
                    self.add(Kind::Function, m.start(), m.end());
                }
            }
        }
        // A method called on what a call returned, or on a line of its own in a chain.
        for c in CHAINED.captures_iter(text) {
            if let Some(m) = c.get(1)
                && !BASIC_METHODS.contains(&m.as_str())
                && m.as_str().len() >= 3
            {
                self.add(Kind::Function, m.start(), m.end());
            }
        }
        for c in TABLE.captures_iter(text) {
            if let Some(name) = c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3))
                && !sql::is_sql_word(name.as_str())
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
    found.listed();
    found.ids();
    found.codes();
    found.frames();
    found.placed();
    found.sql();
    found.code();
    found.names();
    found.code_types();
    let mut all = found.hits;
    all.sort_by_key(|(at, _)| *at);
    let mut seen = HashSet::new();
    all.into_iter()
        .map(|(_, id)| id)
        .filter(|id| seen.insert(id.clone()))
        .collect()
}

/// Whether `text` holds any of `needles`: a pattern is only run over a text that can match it.
pub(super) fn has(text: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| text.contains(n))
}

/// Whether `text` holds `name` whole: not as part of a longer name (`load` is not in
/// `loaded`, `users` is not in `users_archive`).
pub fn holds(text: &str, name: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let edge_start = word(name.chars().next());
    let edge_end = word(name.chars().next_back());
    text.match_indices(name).any(|(at, _)| {
        (!edge_start || !word(text[..at].chars().next_back()))
            && (!edge_end || !word(text[at + name.len()..].chars().next()))
    })
}

/// The identifiers of `source` that `summary` does not hold, to be put back.
pub fn missing(source: &[Identifier], summary: &str) -> Vec<Identifier> {
    source
        .iter()
        .filter(|id| !holds(summary, &id.text))
        .cloned()
        .collect()
}

/// The names among `known` (the symbols the session learned from the files it read and the
/// searches it ran: its working set's `relevantSymbols`) that `text` holds whole, as
/// identifiers: a name a file defines is one wherever it is mentioned, even in prose no
/// pattern reads as code. A capitalised name is taken for a type, any other for a function.
pub fn known_in<'k>(text: &str, known: impl IntoIterator<Item = &'k str>) -> Vec<Identifier> {
    // One pass over the text for plain names, however many the session knows.
    let words: HashSet<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| w.len() >= 3)
        .collect();
    known
        .into_iter()
        .filter(|name| name.len() >= 3)
        .filter(|name| {
            if name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
            {
                words.contains(name)
            } else {
                holds(text, name)
            }
        })
        .map(|name| Identifier {
            kind: if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                Kind::Type
            } else {
                Kind::Function
            },
            text: name.to_owned(),
        })
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
