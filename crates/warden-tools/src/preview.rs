//! What a file-changing call would change, before anyone approves it: `editFile` as its own dry
//! run gives it, `writeFile` as the file's content against the new one, `apply_patch` as each
//! file's counts of added and removed lines. Nothing is written.

use serde_json::Value;

use crate::write::{Diff, target};
use crate::{Registry, ToolContext};

/// The most bytes of a preview; the rest is cut and said to be.
pub const PREVIEW_CAP: usize = 16 * 1024;

/// A call's preview: a unified diff for a file change, a summary for a patch; cut at
/// [`PREVIEW_CAP`] bytes (on a character's boundary) when longer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub text: String,
    pub truncated: bool,
}

impl Preview {
    /// `text` as a preview, cut at [`PREVIEW_CAP`]; `None` when it is empty.
    pub fn of(text: String) -> Option<Self> {
        if text.is_empty() {
            return None;
        }
        if text.len() <= PREVIEW_CAP {
            return Some(Self {
                text,
                truncated: false,
            });
        }
        let mut end = PREVIEW_CAP;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Some(Self {
            text: text[..end].to_owned(),
            truncated: true,
        })
    }
}

/// The preview of `name` called with `args`, when it changes files and its change can be
/// computed now; `None` otherwise (another tool, arguments that do not apply).
pub fn preview(
    registry: &Registry,
    ctx: &ToolContext,
    name: &str,
    args: &Value,
) -> Option<Preview> {
    match name {
        "editFile" => {
            let mut dry = args.clone();
            dry.as_object_mut()?
                .insert("dryRun".to_owned(), Value::Bool(true));
            let result = registry.call(ctx, name, dry).ok()?;
            Preview::of(result.get("diff")?.as_str()?.to_owned())
        }
        "writeFile" => {
            let path = args.get("path")?.as_str()?;
            let content = args.get("content")?.as_str()?;
            let target = target(ctx, path).ok()?;
            let old = match std::fs::read(&target.real) {
                Ok(bytes) => String::from_utf8(bytes).ok()?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(_) => return None,
            };
            Preview::of(Diff::new(&target.display, &old, content).text)
        }
        "apply_patch" => {
            let patch = args.get("patch")?.as_str()?;
            let ops = crate::patch::parse(patch).ok()?;
            let mut lines: Vec<String> = ops.iter().map(summary).collect();
            // Then the hunks themselves, after a blank line: a terminal shows them on request.
            lines.push(String::new());
            lines.extend(
                patch
                    .lines()
                    .filter(|l| !matches!(l.trim_end(), "*** Begin Patch" | "*** End Patch"))
                    .map(str::to_owned),
            );
            Preview::of(lines.join("\n"))
        }
        _ => None,
    }
}

/// One file of a patch: what happens to it, with its added and removed lines.
fn summary(op: &crate::patch::FileOp) -> String {
    use crate::patch::FileOp;
    match op {
        FileOp::Add { path, content } => format!("add {path} (+{})", content.lines().count()),
        FileOp::Delete { path } => format!("delete {path}"),
        FileOp::Update {
            path,
            move_to,
            hunks,
        } => {
            let count = |c: char| {
                hunks
                    .iter()
                    .flat_map(|h| &h.tags)
                    .filter(|t| **t == c)
                    .count()
            };
            let moved = move_to
                .as_ref()
                .map(|to| format!(" → {to}"))
                .unwrap_or_default();
            format!("update {path}{moved} (+{} -{})", count('+'), count('-'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_preview_is_cut_on_a_character_and_says_so() {
        let long = "é".repeat(PREVIEW_CAP);
        let cut = Preview::of(long).unwrap();
        assert!(cut.truncated && cut.text.len() <= PREVIEW_CAP);
        assert!(Preview::of(String::new()).is_none());
        let short = Preview::of("+a\n".to_owned()).unwrap();
        assert!(!short.truncated);
    }
}
