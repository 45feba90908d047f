//! `glob`: find files by pattern inside the workspace.

use ignore::WalkState;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use warden_protocol::{ToolError, ToolErrorKind};

use crate::walk::{base_dir, collect, path_glob, walker};
use crate::{Tool, ToolContext};

/// How matches are ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum GlobSort {
    /// By path, ascending.
    #[default]
    Path,
    /// By modification time, newest first.
    Mtime,
}

/// Arguments of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GlobArgs {
    /// Glob such as "**/*.rs" or "src/*.ts". Without '/', it matches file names at any depth.
    pub pattern: String,
    /// Directory to search from, inside the workspace. Default: the working directory.
    pub path: Option<String>,
    /// Order of the results: "path" (default) or "mtime" (newest first).
    pub sort: Option<GlobSort>,
    /// At most this many results (default and ceiling: the configured cap, 200).
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// The `glob` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Glob;

impl Tool for Glob {
    type Args = GlobArgs;
    const NAME: &'static str = "glob";
    const DESCRIPTION: &'static str = "Find files in the workspace by glob pattern (\"**/*.rs\", \"src/**/*.ts\"). \
        Honours .gitignore and skips node_modules, .git, dist, build, target and vendor. Results are capped; \
        a truncated result says so: narrow the pattern or path.";
    const READ_ONLY: bool = true;

    fn run(&self, ctx: &ToolContext, args: GlobArgs) -> Result<Value, ToolError> {
        let matcher = path_glob(&args.pattern, "/pattern")?;
        let base = base_dir(&ctx.paths, &ctx.cwd, args.path.as_deref())?;
        if !base.real.is_dir() {
            return Err(ToolError::new(
                ToolErrorKind::NotAFile,
                format!("{}: not a directory", base.display),
            )
            .with_field("/path"));
        }
        let sort = args.sort.unwrap_or_default();
        let cap = ctx.caps.glob.max_results;
        let limit = args
            .limit
            .map_or(cap, |l| usize::try_from(l).unwrap_or(usize::MAX).min(cap));

        let root = &base.real;
        let mut found = collect(
            walker(root, &ctx.caps.glob.exclude, &ctx.paths),
            || (),
            |(), entry, out| {
                if entry.file_type().is_some_and(|t| t.is_file())
                    && entry
                        .path()
                        .strip_prefix(root)
                        .is_ok_and(|rel| matcher.is_match(rel))
                {
                    let modified = match sort {
                        GlobSort::Mtime => entry.metadata().ok().and_then(|m| m.modified().ok()),
                        GlobSort::Path => None,
                    };
                    out.push((entry.into_path(), modified));
                }
                WalkState::Continue
            },
        );
        match sort {
            GlobSort::Path => found.sort_unstable_by(|a, b| a.0.cmp(&b.0)),
            GlobSort::Mtime => {
                found.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            }
        }
        let total = found.len();
        let truncated = total > limit;
        let shown: Vec<String> = found
            .iter()
            .take(limit)
            .map(|(p, _)| ctx.paths.display(p))
            .collect();
        let mut result = json!({
            "pattern": args.pattern,
            "path": base.display,
            "matches": shown,
            "totalMatches": total,
            "truncated": truncated,
        });
        if truncated {
            result["truncationReason"] = json!("too_many_results");
            result["hint"] = json!(format!(
                "{total} files match; showing {limit}. Narrow the pattern or the path to see the rest."
            ));
        }
        Ok(result)
    }
}
