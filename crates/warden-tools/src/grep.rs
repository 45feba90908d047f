//! `grep`: ripgrep's engine in-process — regex or fixed string, context lines, results by file.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::WalkState;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use warden_protocol::{ToolError, ToolErrorKind};

use crate::walk::{base_dir, collect, path_glob, walker};
use crate::{Tool, ToolContext};

/// The most context lines either side a call may ask for.
const MAX_CONTEXT: u32 = 20;

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrepArgs {
    /// Regular expression (Rust regex syntax), or a literal string with fixedStrings.
    pub pattern: String,
    /// File or directory to search, inside the workspace. Default: the working directory.
    pub path: Option<String>,
    /// Only search files whose path matches this glob ("*.rs", "src/**/*.ts").
    pub glob: Option<String>,
    /// Treat the pattern as a literal string. Default false.
    pub fixed_strings: Option<bool>,
    /// Match case-insensitively. Default false.
    pub case_insensitive: Option<bool>,
    /// Lines of context before and after each match (0-20). Default 0.
    #[schemars(range(max = 20))]
    pub context: Option<u32>,
    /// At most this many matches (default and ceiling: the configured cap, 200).
    #[schemars(range(min = 1))]
    pub max_hits: Option<u64>,
}

/// The `grep` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep;

/// One line of a result, numbered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Excerpt {
    line: u64,
    text: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    cut: bool,
}

/// A match with its context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Hit {
    #[serde(flatten)]
    line: Excerpt,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    before: Vec<Excerpt>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    after: Vec<Excerpt>,
}

struct FileHits {
    path: std::path::PathBuf,
    hits: Vec<Hit>,
}

impl Tool for Grep {
    type Args = GrepArgs;
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str = "Search file contents in the workspace with ripgrep's engine (regex, or literal \
        with fixedStrings). Honours .gitignore, skips binary files and node_modules/.git/dist/build/target/vendor. \
        Results are grouped by file with line numbers; a line matched in many files is shown twice, then listed \
        by place in `repeated`; hits and line length are capped, and a truncated result says so: narrow the \
        pattern, path or glob.";
    const READ_ONLY: bool = true;

    fn run(&self, ctx: &ToolContext, args: GrepArgs) -> Result<Value, ToolError> {
        let caps = &ctx.caps.grep;
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(args.case_insensitive.unwrap_or(false))
            .fixed_strings(args.fixed_strings.unwrap_or(false))
            .line_terminator(Some(b'\n'))
            .build(&args.pattern)
            .map_err(|err| {
                ToolError::new(
                    ToolErrorKind::InvalidPattern,
                    format!("invalid regex {:?}: {err}", args.pattern),
                )
                .with_field("/pattern")
                .with_expected("a Rust regex, or fixedStrings: true for a literal")
            })?;
        let filter = args
            .glob
            .as_deref()
            .map(|g| path_glob(g, "/glob"))
            .transpose()?;
        let base = base_dir(&ctx.paths, &ctx.cwd, args.path.as_deref())?;
        let context = args.context.unwrap_or(0).min(MAX_CONTEXT) as usize;
        let limit = args.max_hits.map_or(caps.max_hits, |l| {
            usize::try_from(l).unwrap_or(usize::MAX).min(caps.max_hits)
        });
        let search = Search {
            matcher,
            context,
            limit,
            max_line_chars: caps.max_line_chars,
            total: AtomicUsize::new(0),
            capped: AtomicBool::new(false),
        };

        let root = &base.real;
        let walk_cache = warden_policy::WalkCache::default();
        let unmasked = std::sync::Mutex::new(Vec::new());
        let mut files = collect(
            walker(root, &caps.exclude, &ctx.paths),
            || {
                SearcherBuilder::new()
                    .binary_detection(BinaryDetection::quit(0))
                    .line_number(true)
                    .before_context(context)
                    .after_context(context)
                    .build()
            },
            |searcher, entry, out| {
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                // A secret's content is no search's to show (its name stays listable).
                if ctx.paths.is_secret_in_walk(entry.path(), &walk_cache) {
                    return WalkState::Continue;
                }
                // A secret the user unmasked is searched, and said so, for the trace.
                if ctx.paths.unmasked(entry.path()).is_some()
                    && let Ok(mut list) = unmasked.lock()
                {
                    list.push(entry.path().to_path_buf());
                }
                if let Some(filter) = &filter {
                    let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
                    let rel = if rel.as_os_str().is_empty() {
                        entry.path()
                    } else {
                        rel
                    };
                    if !filter.is_match(rel)
                        && !entry.path().file_name().is_some_and(|n| filter.is_match(n))
                    {
                        return WalkState::Continue;
                    }
                }
                search.file(searcher, entry.into_path(), out)
            },
        );
        files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        let mut result = search.result(ctx, &args.pattern, &base.display, files);
        let mut unmasked = unmasked.into_inner().unwrap_or_default();
        if !unmasked.is_empty() {
            unmasked.sort();
            let shown: Vec<String> = unmasked.iter().map(|p| ctx.paths.display(p)).collect();
            result["unmaskedSecrets"] = json!(shown);
        }
        Ok(result)
    }
}

struct Search {
    matcher: RegexMatcher,
    context: usize,
    limit: usize,
    max_line_chars: usize,
    total: AtomicUsize,
    capped: AtomicBool,
}

impl Search {
    fn file(
        &self,
        searcher: &mut Searcher,
        path: std::path::PathBuf,
        out: &mut Vec<FileHits>,
    ) -> WalkState {
        let mut sink = FileSink {
            search: self,
            hits: Vec::new(),
            pending: Vec::new(),
        };
        // An unreadable file is skipped like an unreadable entry; the search goes on.
        let _ = searcher.search_path(&self.matcher, &path, &mut sink);
        if !sink.hits.is_empty() {
            out.push(FileHits {
                path,
                hits: sink.hits,
            });
        }
        if self.capped.load(Ordering::Relaxed) {
            WalkState::Quit
        } else {
            WalkState::Continue
        }
    }

    fn line(&self, number: Option<u64>, bytes: &[u8]) -> Excerpt {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let text = String::from_utf8_lossy(bytes);
        let (text, cut) = match text.char_indices().nth(self.max_line_chars) {
            Some((at, _)) => (format!("{}…", &text[..at]), true),
            None => (text.into_owned(), false),
        };
        Excerpt {
            line: number.unwrap_or(0),
            text,
            cut,
        }
    }

    fn result(&self, ctx: &ToolContext, query: &str, base: &str, files: Vec<FileHits>) -> Value {
        let total: usize = files.iter().map(|f| f.hits.len()).sum();
        let file_count = files.len();
        let capped = self.capped.load(Ordering::Relaxed);
        let cut = files.iter().flat_map(|f| &f.hits).any(|h| h.line.cut);
        let (files, repeated) = fold_repeats(ctx, files);
        let folded: usize = repeated.iter().map(|r| r.count).sum();
        let files_json: Vec<Value> = files
            .into_iter()
            .filter(|f| !f.hits.is_empty())
            .map(|f| json!({ "path": ctx.paths.display(&f.path), "matches": f.hits }))
            .collect();
        let mut result = json!({
            "query": query,
            "path": base,
            "files": files_json,
            "totalMatches": total,
            "truncated": capped || cut || folded > 0,
        });
        let mut summary = format!("{total} matches in {file_count} files");
        if folded > 0 {
            result["repeated"] = json!(repeated);
            let _ = write!(
                summary,
                "; {folded} matches of a line already shown are listed in `repeated` by place only"
            );
        }
        if capped {
            result["truncationReason"] = json!("too_many_matches");
            result["hint"] = json!(format!(
                "stopped at {} matches; narrow the pattern, the path or the glob to see the rest",
                self.limit
            ));
            let _ = write!(summary, "; stopped at {} matches", self.limit);
        } else if folded > 0 {
            result["truncationReason"] = json!("duplicate_hits");
        } else if cut {
            result["truncationReason"] = json!("long_lines");
        }
        if cut {
            summary.push_str("; long lines cut");
        }
        if capped || cut || folded > 0 {
            result["summary"] = json!(summary);
        }
        result
    }
}

/// The same line matched in many files (a vendored copy, a generated file, a licence header):
/// shown in full this many times, then listed by place only.
const SHOWN_REPEATS: usize = 2;
/// The most places listed for one repeated line.
const MAX_PLACES: usize = 50;

/// A line matched again and again, and where.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Repeated {
    text: String,
    /// Where it matched after it had been shown: `path:line`.
    places: Vec<String>,
    /// How many matches were folded (more than the places listed when there were many).
    count: usize,
}

/// Folds matches whose line (trimmed) was already shown in [`SHOWN_REPEATS`] other files, in
/// path order. Within one file every match stays.
fn fold_repeats(ctx: &ToolContext, mut files: Vec<FileHits>) -> (Vec<FileHits>, Vec<Repeated>) {
    // Per line: the files it was shown in, and the last of them.
    let mut shown: std::collections::HashMap<String, (usize, usize)> =
        std::collections::HashMap::new();
    let mut repeated: Vec<Repeated> = Vec::new();
    let mut index_of: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (n, file) in files.iter_mut().enumerate() {
        let path = ctx.paths.display(&file.path);
        file.hits.retain(|hit| {
            let key = hit.line.text.trim();
            if key.is_empty() {
                return true;
            }
            let (count, last) = shown.entry(key.to_owned()).or_insert((0, usize::MAX));
            if *last != n {
                *count += 1;
                *last = n;
            }
            if *count <= SHOWN_REPEATS {
                return true;
            }
            let at = *index_of.entry(key.to_owned()).or_insert_with(|| {
                repeated.push(Repeated {
                    text: hit.line.text.clone(),
                    places: Vec::new(),
                    count: 0,
                });
                repeated.len() - 1
            });
            let entry = &mut repeated[at];
            entry.count += 1;
            if entry.places.len() < MAX_PLACES {
                entry.places.push(format!("{path}:{}", hit.line.line));
            }
            false
        });
    }
    (files, repeated)
}

struct FileSink<'a> {
    search: &'a Search,
    hits: Vec<Hit>,
    pending: Vec<Excerpt>,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        // Claim a slot under the global cap; once the cap is reached every thread stops.
        let taken = self.search.total.fetch_add(1, Ordering::Relaxed);
        if taken >= self.search.limit {
            self.search.capped.store(true, Ordering::Relaxed);
            return Ok(false);
        }
        let line = self.search.line(mat.line_number(), mat.bytes());
        self.hits.push(Hit {
            line,
            before: std::mem::take(&mut self.pending),
            after: Vec::new(),
        });
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.search.context == 0 {
            return Ok(true);
        }
        let line = self.search.line(ctx.line_number(), ctx.bytes());
        match ctx.kind() {
            SinkContextKind::After => match self.hits.last_mut() {
                Some(hit) => hit.after.push(line),
                None => self.pending.push(line),
            },
            SinkContextKind::Before | SinkContextKind::Other => self.pending.push(line),
        }
        Ok(true)
    }
}
