//! `apply_patch`: the `*** Begin Patch` envelope Codex-trained models emit. Every file of a patch
//! changes, or none does; a hunk whose context is missing or ambiguous is an error naming the
//! file and hunk, never a guess.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use warden_protocol::{ToolError, ToolErrorKind};

use crate::write::{Diff, io, remember, replace_file, require_unchanged, target};
use crate::{Tool, ToolContext};

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyPatchArgs {
    /// The patch, from `*** Begin Patch` to `*** End Patch`.
    pub patch: String,
}

/// The `apply_patch` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApplyPatch;

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    Add {
        path: String,
        content: String,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

/// One `@@` section: lines kept (` `), removed (`-`), added (`+`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hunk {
    /// Text after `@@`, a line to find before the hunk.
    pub anchor: Option<String>,
    pub old: Vec<String>,
    pub new: Vec<String>,
    /// The hunk's lines in order, as ' ', '-' or '+': kept lines keep the file's own text.
    pub tags: Vec<char>,
    /// `*** End of File`: the hunk ends the file.
    pub at_end: bool,
}

impl Hunk {
    /// Adds one ` `, `-` or `+` line (an empty line is an empty kept line); false for any other.
    fn push(&mut self, line: &str) -> bool {
        let (tag, text) = match line.chars().next() {
            None => (' ', ""),
            Some(c @ (' ' | '-' | '+')) => (c, &line[1..]),
            Some(_) => return false,
        };
        if tag != '+' {
            self.old.push(text.to_owned());
        }
        if tag != '-' {
            self.new.push(text.to_owned());
        }
        self.tags.push(tag);
        true
    }
}

fn bad(message: String) -> ToolError {
    ToolError::new(ToolErrorKind::InvalidArguments, message).with_field("/patch")
}

/// Parses a patch into its file operations.
pub fn parse(patch: &str) -> Result<Vec<FileOp>, ToolError> {
    let text = patch.replace("\r\n", "\n");
    let mut lines = text.lines().peekable();
    while lines.peek().is_some_and(|l| l.trim().is_empty()) {
        lines.next();
    }
    if lines.next().map(str::trim) != Some("*** Begin Patch") {
        return Err(bad("the patch must start with *** Begin Patch".to_owned()));
    }
    let mut ops = Vec::new();
    loop {
        let Some(line) = lines.next() else {
            return Err(bad("the patch has no *** End Patch".to_owned()));
        };
        if line.trim() == "*** End Patch" {
            break;
        }
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            let mut content = String::new();
            while let Some(next) = lines.peek() {
                let Some(added) = next.strip_prefix('+') else {
                    break;
                };
                content.push_str(added);
                content.push('\n');
                lines.next();
            }
            ops.push(FileOp::Add {
                path: path.trim().to_owned(),
                content,
            });
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            ops.push(FileOp::Delete {
                path: path.trim().to_owned(),
            });
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            let mut move_to = None;
            if let Some(next) = lines.peek().and_then(|l| l.strip_prefix("*** Move to: ")) {
                move_to = Some(next.trim().to_owned());
                lines.next();
            }
            let mut hunks: Vec<Hunk> = Vec::new();
            while let Some(next) = lines.peek().copied() {
                if next.starts_with("*** ") && next.trim() != "*** End of File" {
                    break;
                }
                lines.next();
                if let Some(anchor) = next.strip_prefix("@@") {
                    let anchor = anchor.trim();
                    hunks.push(Hunk {
                        anchor: (!anchor.is_empty()).then(|| anchor.to_owned()),
                        ..Hunk::default()
                    });
                    continue;
                }
                if hunks.is_empty() {
                    hunks.push(Hunk::default());
                }
                let hunk = hunks
                    .last_mut()
                    .unwrap_or_else(|| unreachable!("a hunk was just pushed"));
                if next.trim() == "*** End of File" {
                    hunk.at_end = true;
                } else if !hunk.push(next) {
                    return Err(bad(format!(
                        "{path}: a hunk line must start with ' ', '-' or '+': {next:?}"
                    )));
                }
            }
            if hunks.iter().all(|h| h.old.is_empty() && h.new.is_empty()) && move_to.is_none() {
                return Err(bad(format!("{path}: an update with no hunks")));
            }
            ops.push(FileOp::Update {
                path: path.trim().to_owned(),
                move_to,
                hunks,
            });
        } else if !line.trim().is_empty() {
            return Err(bad(format!("unexpected line in the patch: {line:?}")));
        }
    }
    if ops.is_empty() {
        return Err(bad("the patch changes no file".to_owned()));
    }
    Ok(ops)
}

/// The hunks of a unified diff of one file (`---`/`+++` headers optional, `@@ -a,b +c,d @@`).
pub(crate) fn parse_unified(diff: &str) -> Result<Vec<Hunk>, ToolError> {
    let text = diff.replace("\r\n", "\n");
    let mut hunks: Vec<Hunk> = Vec::new();
    for line in text.lines() {
        if line.starts_with("--- ")
            || line.starts_with("+++ ")
            || line.starts_with("diff ")
            || line.starts_with("index ")
        {
            continue;
        }
        if line.starts_with("@@") {
            hunks.push(Hunk::default());
            continue;
        }
        let Some(hunk) = hunks.last_mut() else {
            return Err(
                bad(format!("the diff has a line before its first @@: {line:?}"))
                    .with_field("/diff"),
            );
        };
        if line.starts_with('\\') {
            // "\ No newline at end of file": the final-newline state is the file's own.
            continue;
        }
        if !hunk.push(line) {
            return Err(bad(format!(
                "a diff line must start with ' ', '-' or '+': {line:?}"
            ))
            .with_field("/diff"));
        }
    }
    if hunks.is_empty() {
        return Err(bad("the diff has no @@ hunk".to_owned()).with_field("/diff"));
    }
    Ok(hunks)
}

/// The paths a patch writes or deletes, for the policy.
pub(crate) fn paths(patch: &str) -> Vec<String> {
    parse(patch)
        .map(|ops| {
            ops.into_iter()
                .flat_map(|op| match op {
                    FileOp::Add { path, .. } | FileOp::Delete { path } => vec![path],
                    FileOp::Update { path, move_to, .. } => {
                        std::iter::once(path).chain(move_to).collect()
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Applies `hunks` to `text` (LF lines): each hunk's old lines are found after the previous
/// hunk, exactly, then ignoring trailing whitespace, then ignoring surrounding whitespace.
pub fn apply_hunks(text: &str, hunks: &[Hunk], path: &str) -> Result<String, ToolError> {
    let ended = text.ends_with('\n') || text.is_empty();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut from = 0;
    for (n, hunk) in hunks.iter().enumerate() {
        let name = format!("{path}: hunk {}", n + 1);
        if let Some(anchor) = &hunk.anchor {
            let found =
                find(&lines, std::slice::from_ref(anchor), from, false, false).map_err(|e| {
                    ToolError::new(
                        ToolErrorKind::NoMatch,
                        format!("{name}: the line after @@ {e}"),
                    )
                })?;
            from = found + 1;
        }
        let at = if hunk.old.is_empty() {
            if hunk.at_end || hunk.anchor.is_none() && n == 0 && lines.is_empty() {
                lines.len()
            } else {
                from
            }
        } else {
            // After an anchor, the first match below it is the one meant.
            find(&lines, &hunk.old, from, hunk.at_end, hunk.anchor.is_some()).map_err(|e| {
                let kind = if e.contains("times") {
                    ToolErrorKind::MultipleMatches
                } else {
                    ToolErrorKind::NoMatch
                };
                ToolError::new(kind, format!("{name}: its context {e}"))
            })?
        };
        let replacement = merge(hunk, &lines[at..at + hunk.old.len()]);
        let added = replacement.len();
        lines.splice(at..at + hunk.old.len(), replacement);
        from = at + added;
    }
    let mut out = lines.join("\n");
    if ended && !lines.is_empty() {
        out.push('\n');
    }
    Ok(out)
}

/// The hunk's new lines, with kept lines as the file has them (its whitespace, not the patch's).
fn merge(hunk: &Hunk, matched: &[String]) -> Vec<String> {
    let (mut old, mut new) = (matched.iter(), hunk.new.iter());
    let mut out = Vec::with_capacity(hunk.new.len());
    for tag in &hunk.tags {
        match tag {
            ' ' => {
                let file_line = old.next();
                let patch_line = new.next();
                if let Some(line) = file_line.or(patch_line) {
                    out.push(line.clone());
                }
            }
            '-' => {
                old.next();
            }
            _ => out.extend(new.next().cloned()),
        }
    }
    out
}

/// Where `want` stands in `lines` at or after `from`: once (or, with `first`, first), by the first
/// comparison that finds it.
fn find(
    lines: &[String],
    want: &[String],
    from: usize,
    at_end: bool,
    first: bool,
) -> Result<usize, String> {
    type Cmp = fn(&str, &str) -> bool;
    let comparisons: [Cmp; 3] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
    ];
    for same in comparisons {
        let starts: Vec<usize> = (from..=lines.len().saturating_sub(want.len()))
            .filter(|&i| i + want.len() <= lines.len())
            .filter(|&i| !at_end || i + want.len() == lines.len())
            .filter(|&i| want.iter().zip(&lines[i..]).all(|(w, l)| same(l, w)))
            .collect();
        match starts.as_slice() {
            [] => {}
            [one, ..] if first => return Ok(*one),
            [one] => return Ok(*one),
            many => {
                return Err(format!(
                    "occurs {} times (at lines {})",
                    many.len(),
                    many.iter()
                        .map(|i| (i + 1).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    Err(format!("was not found (looked from line {})", from + 1))
}

/// A planned change: where, what it held, what it will hold (`None`: deleted).
struct Change {
    real: PathBuf,
    display: String,
    before: Option<Vec<u8>>,
    after: Option<String>,
}

impl Tool for ApplyPatch {
    type Args = ApplyPatchArgs;
    const NAME: &'static str = "apply_patch";
    const DESCRIPTION: &'static str = "Apply a patch in the *** Begin Patch / *** Add File: / *** Update File: / *** Delete \
        File: / *** Move to: / @@ / *** End Patch format. All files change or none does; a hunk whose context is \
        missing or ambiguous is an error naming the file and hunk.";
    const READ_ONLY: bool = false;

    fn run(&self, ctx: &ToolContext, args: ApplyPatchArgs) -> Result<Value, ToolError> {
        let ops = parse(&args.patch)?;
        let changes = plan(ctx, &ops)?;
        // The cap is on what the patch adds, not on the size of the files it edits.
        let max = ctx.caps.write.max_bytes;
        let added: usize = args
            .patch
            .lines()
            .filter(|l| l.starts_with('+'))
            .map(str::len)
            .sum();
        if added > max {
            return Err(ToolError::new(
                ToolErrorKind::TooLarge,
                format!("the patch adds {added} bytes, over {max}"),
            ));
        }
        commit(ctx, &changes)?;
        let files: Vec<Value> = changes
            .iter()
            .map(|c| {
                let before = c.before.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
                let diff = Diff::new(&c.display, &before, c.after.as_deref().unwrap_or_default());
                let action = match (&c.before, &c.after) {
                    (None, _) => "added",
                    (Some(_), None) => "deleted",
                    (Some(_), Some(_)) => "updated",
                };
                json!({"path": c.display, "action": action, "changedRanges": diff.ranges, "diffSummary": diff.summary})
            })
            .collect();
        Ok(json!({ "applied": true, "files": files }))
    }
}

/// What every operation of a patch will do, worked out before anything is written.
fn plan(ctx: &ToolContext, ops: &[FileOp]) -> Result<Vec<Change>, ToolError> {
    let mut changes: Vec<Change> = Vec::new();
    for op in ops {
        match op {
            FileOp::Add { path, content } => {
                let t = target(ctx, path)?;
                if t.real.exists() {
                    return Err(ToolError::new(
                        ToolErrorKind::InvalidArguments,
                        format!("{path}: Add File, but it exists"),
                    )
                    .with_field("/patch"));
                }
                changes.push(Change {
                    real: t.real,
                    display: t.display,
                    before: None,
                    after: Some(content.clone()),
                });
            }
            FileOp::Delete { path } => {
                let t = target(ctx, path)?;
                let before = std::fs::read(&t.real).map_err(|e| io(path, &e))?;
                require_unchanged(ctx, &t.real, path, &before, false)?;
                changes.push(Change {
                    real: t.real,
                    display: t.display,
                    before: Some(before),
                    after: None,
                });
            }
            FileOp::Update {
                path,
                move_to,
                hunks,
            } => {
                let t = target(ctx, path)?;
                let before = std::fs::read(&t.real).map_err(|e| io(path, &e))?;
                require_unchanged(ctx, &t.real, path, &before, false)?;
                let text = String::from_utf8(before.clone()).map_err(|_| {
                    ToolError::new(ToolErrorKind::BinaryFile, format!("{path}: not UTF-8 text"))
                })?;
                let crlf = text.contains("\r\n");
                let mut after = apply_hunks(&text.replace("\r\n", "\n"), hunks, path)?;
                if crlf {
                    after = after.replace('\n', "\r\n");
                }
                match move_to {
                    Some(dest) => {
                        let d = target(ctx, dest)?;
                        changes.push(Change {
                            real: t.real,
                            display: t.display,
                            before: Some(before),
                            after: None,
                        });
                        changes.push(Change {
                            real: d.real,
                            display: d.display,
                            before: None,
                            after: Some(after),
                        });
                    }
                    None => changes.push(Change {
                        real: t.real,
                        display: t.display,
                        before: Some(before),
                        after: Some(after),
                    }),
                }
            }
        }
    }
    Ok(changes)
}

/// Makes every change, or — when one fails — puts back the ones already made.
fn commit(ctx: &ToolContext, changes: &[Change]) -> Result<(), ToolError> {
    for (done, change) in changes.iter().enumerate() {
        let result = match &change.after {
            Some(after) => change
                .real
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| replace_file(&change.real, after.as_bytes())),
            None => std::fs::remove_file(&change.real),
        };
        if let Err(err) = result {
            for undo in changes[..done].iter().rev() {
                let _ = match &undo.before {
                    Some(before) => replace_file(&undo.real, before),
                    None => std::fs::remove_file(&undo.real),
                };
            }
            return Err(ToolError::new(
                ToolErrorKind::Io,
                format!(
                    "{}: {err}; no file of the patch was changed",
                    change.display
                ),
            ));
        }
        if let Some(after) = &change.after {
            remember(ctx, &change.real, after.as_bytes());
        }
        ctx.changes.push(
            change.real.clone(),
            change.before.clone(),
            change.after.as_ref().map(|a| a.clone().into_bytes()),
        );
    }
    Ok(())
}
