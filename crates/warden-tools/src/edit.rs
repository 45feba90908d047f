//! `editFile`: an exact replacement (once, or everywhere when asked) or a line range, previewed
//! with `dryRun`, refused when the file changed since this session read it. Line endings, a BOM,
//! the final newline and the file mode are kept.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use similar::TextDiff;
use warden_protocol::{ToolError, ToolErrorKind};

use crate::write::{Diff, io, remember, replace_file, require_unchanged, target};
use crate::{Tool, ToolContext};

/// Arguments of `editFile`: `oldString` + `newString`, or `startLine` + `endLine` + `newText`,
/// or a unified `diff`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditFileArgs {
    /// Path of the file, inside the workspace.
    pub path: String,
    /// Text to replace, exactly as it stands in the file (whitespace included).
    pub old_string: Option<String>,
    /// Its replacement.
    pub new_string: Option<String>,
    /// Replace every occurrence instead of requiring exactly one. Default false.
    pub replace_all: Option<bool>,
    /// First line of a range to replace, counting from 1.
    #[schemars(range(min = 1))]
    pub start_line: Option<u64>,
    /// Last line of the range, inclusive.
    #[schemars(range(min = 1))]
    pub end_line: Option<u64>,
    /// The lines that replace the range.
    pub new_text: Option<String>,
    /// A unified diff of this file (`@@` hunks), instead of oldString or a line range.
    pub diff: Option<String>,
    /// Return the diff without writing. Default false.
    pub dry_run: Option<bool>,
}

/// The `editFile` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditFile;

impl Tool for EditFile {
    type Args = EditFileArgs;
    const NAME: &'static str = "editFile";
    const DESCRIPTION: &'static str = "Change part of a file: replace oldString (which must occur exactly once, unless \
        replaceAll) with newString, replace lines startLine..endLine with newText, or apply a unified diff. dryRun \
        previews the diff. \
        Refused if the file changed since you read it. Returns the changed line ranges and a unified diff.";
    const READ_ONLY: bool = false;

    fn run(&self, ctx: &ToolContext, args: EditFileArgs) -> Result<Value, ToolError> {
        let target = target(ctx, &args.path)?;
        let bytes = std::fs::read(&target.real).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::new(
                ToolErrorKind::NotFound,
                format!("{}: no such file; create it with writeFile", args.path),
            ),
            _ => io(&args.path, &e),
        })?;
        require_unchanged(ctx, &target.real, &args.path, &bytes, false)?;
        let text = String::from_utf8(bytes).map_err(|_| {
            ToolError::new(
                ToolErrorKind::BinaryFile,
                format!(
                    "{}: not UTF-8 text; editFile changes text files only",
                    args.path
                ),
            )
        })?;
        let form = Form::of(&text);
        let body = form.normalise(&text);
        let edited = match (&args.old_string, &args.start_line) {
            (None, None) if args.diff.is_some() => {
                let hunks = crate::patch::parse_unified(args.diff.as_deref().unwrap_or_default())?;
                crate::patch::apply_hunks(&body, &hunks, &args.path)?
            }
            (Some(old), None) if args.diff.is_none() => {
                let new = args
                    .new_string
                    .as_deref()
                    .ok_or_else(|| missing("/newString", "the replacement for oldString"))?;
                replace_text(
                    &body,
                    &form.lf(old),
                    &form.lf(new),
                    args.replace_all.unwrap_or(false),
                    &args.path,
                )?
            }
            (None, Some(start)) if args.diff.is_none() => {
                let end = args
                    .end_line
                    .ok_or_else(|| missing("/endLine", "the last line of the range"))?;
                let new = args
                    .new_text
                    .as_deref()
                    .ok_or_else(|| missing("/newText", "the lines that replace the range"))?;
                replace_lines(&body, *start, end, &form.lf(new), &args.path)?
            }
            _ => {
                return Err(ToolError::new(
                    ToolErrorKind::InvalidArguments,
                    "give one of: oldString and newString; startLine, endLine and newText; or diff",
                )
                .with_field("/"));
            }
        };
        // The cap is on what the model writes, not on the size of the file it edits.
        let max = ctx.caps.write.max_bytes;
        let written = args
            .new_string
            .as_ref()
            .or(args.new_text.as_ref())
            .map_or(0, String::len);
        if written > max {
            return Err(ToolError::new(
                ToolErrorKind::TooLarge,
                format!("{}: {written} bytes of new text, over {max}", args.path),
            ));
        }
        let output = form.restore(&edited);
        let diff = Diff::new(&target.display, &body, &edited);
        let dry = args.dry_run.unwrap_or(false);
        if !dry && output != text {
            replace_file(&target.real, output.as_bytes()).map_err(|e| io(&args.path, &e))?;
            remember(ctx, &target.real, output.as_bytes());
            ctx.changes.push(
                target.real.clone(),
                Some(text.clone().into_bytes()),
                Some(output.clone().into_bytes()),
            );
        }
        Ok(json!({
            "path": target.display,
            "applied": !dry,
            "changedRanges": diff.ranges,
            "diff": diff.text,
            "diffSummary": diff.summary,
        }))
    }
}

fn missing(field: &str, what: &str) -> ToolError {
    ToolError::new(
        ToolErrorKind::InvalidArguments,
        format!("{field} is missing"),
    )
    .with_field(field)
    .with_expected(what)
}

/// How a file is written: byte-order mark and line endings, so an edit keeps them.
struct Form {
    bom: bool,
    crlf: bool,
}

impl Form {
    fn of(text: &str) -> Self {
        let body = text.strip_prefix('\u{feff}').unwrap_or(text);
        Self {
            bom: body.len() != text.len(),
            crlf: body.contains("\r\n"),
        }
    }

    /// The text without BOM, with LF line endings.
    fn normalise(&self, text: &str) -> String {
        let body = text.strip_prefix('\u{feff}').unwrap_or(text);
        self.lf(body)
    }

    fn lf(&self, text: &str) -> String {
        if self.crlf {
            text.replace("\r\n", "\n")
        } else {
            text.to_owned()
        }
    }

    /// Back to the file's own form.
    fn restore(&self, text: &str) -> String {
        let body = if self.crlf {
            text.replace('\n', "\r\n")
        } else {
            text.to_owned()
        };
        if self.bom {
            format!("\u{feff}{body}")
        } else {
            body
        }
    }
}

fn replace_text(
    body: &str,
    old: &str,
    new: &str,
    all: bool,
    raw: &str,
) -> Result<String, ToolError> {
    if old.is_empty() {
        return Err(
            ToolError::new(ToolErrorKind::InvalidArguments, "oldString is empty")
                .with_field("/oldString"),
        );
    }
    let starts: Vec<usize> = body.match_indices(old).map(|(i, _)| i).collect();
    match starts.len() {
        0 => Err(ToolError::new(
            ToolErrorKind::NoMatch,
            format!("{raw}: oldString was not found{}", nearest(body, old)),
        )
        .with_field("/oldString")),
        1 => Ok(body.replacen(old, new, 1)),
        _ if all => Ok(body.replace(old, new)),
        n => {
            let lines: Vec<String> = starts
                .iter()
                .map(|i| (body[..*i].matches('\n').count() + 1).to_string())
                .collect();
            Err(ToolError::new(
                ToolErrorKind::MultipleMatches,
                format!("{raw}: oldString occurs {n} times (at lines {}); add surrounding lines to make it unique, or set replaceAll", lines.join(", ")),
            )
            .with_field("/oldString"))
        }
    }
}

/// The lines most like the first line of `old`, to help a model correct its text.
fn nearest(body: &str, old: &str) -> String {
    let first = old
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(old)
        .trim();
    let mut scored: Vec<(f32, usize, &str)> = body
        .lines()
        .enumerate()
        .map(|(i, line)| {
            (
                TextDiff::from_chars(line.trim(), first).ratio(),
                i + 1,
                line,
            )
        })
        .filter(|(score, _, _)| *score >= 0.5)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    if scored.is_empty() {
        return "; no line resembles its first line".to_owned();
    }
    let shown: Vec<String> = scored
        .iter()
        .take(3)
        .map(|(_, n, line)| format!("line {n}: {}", line.trim_end()))
        .collect();
    format!("; the closest lines are {}", shown.join(" | "))
}

fn replace_lines(
    body: &str,
    start: u64,
    end: u64,
    new: &str,
    raw: &str,
) -> Result<String, ToolError> {
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let total = lines.len() as u64;
    if start > end || end > total {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!("{raw}: lines {start}-{end} are not a range of the file's {total} lines"),
        )
        .with_field("/endLine")
        .with_expected(format!("1 <= startLine <= endLine <= {total}")));
    }
    let (from, to) = (
        usize::try_from(start - 1).unwrap_or(0),
        usize::try_from(end).unwrap_or(0),
    );
    let mut out: String = lines[..from].concat();
    out.push_str(new);
    let ended = lines[to - 1].ends_with('\n');
    if ended && !new.is_empty() && !new.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&lines[to..].concat());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_and_bom_survive_an_edit() {
        let text = "\u{feff}a\r\nb\r\nc";
        let form = Form::of(text);
        let body = form.normalise(text);
        assert_eq!(body, "a\nb\nc");
        let edited = replace_text(&body, "b\n", "B\nB2\n", false, "f").unwrap();
        assert_eq!(form.restore(&edited), "\u{feff}a\r\nB\r\nB2\r\nc");
    }

    #[test]
    fn line_ranges_keep_the_final_newline_state() {
        assert_eq!(
            replace_lines("a\nb\nc\n", 2, 2, "X", "f").unwrap(),
            "a\nX\nc\n"
        );
        assert_eq!(replace_lines("a\nb\nc", 3, 3, "Z", "f").unwrap(), "a\nb\nZ");
        assert!(replace_lines("a\n", 1, 2, "x", "f").is_err());
    }

    #[test]
    fn no_match_names_the_nearest_lines() {
        let err = replace_text(
            "fn main() {\n    let total = 1;\n}\n",
            "let totl = 1;",
            "x",
            false,
            "f",
        )
        .unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::NoMatch);
        assert!(err.message.contains("line 2:"), "{}", err.message);
    }
}
