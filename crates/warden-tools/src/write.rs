//! `writeFile`, and what the file-changing tools share: where they may write, the guard against
//! overwriting what the session has not seen, atomic replacement, and diffs.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use warden_protocol::{ToolError, ToolErrorKind};

use crate::context::ReadRecord;
use crate::read::hex;
use crate::{Tool, ToolContext};

/// Arguments of `writeFile`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteFileArgs {
    /// Path of the file, inside the workspace. Missing directories are created.
    pub path: String,
    /// The whole new content.
    pub content: String,
}

/// The `writeFile` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFile;

impl Tool for WriteFile {
    type Args = WriteFileArgs;
    const NAME: &'static str = "writeFile";
    const DESCRIPTION: &'static str = "Create a file in the workspace, or replace one you have read with readFile in this \
        session and that has not changed since. For changes to existing files prefer editFile. Returns the bytes \
        written and, when a file was replaced, a unified diff.";
    const READ_ONLY: bool = false;

    fn run(&self, ctx: &ToolContext, args: WriteFileArgs) -> Result<Value, ToolError> {
        let target = target(ctx, &args.path)?;
        let max = ctx.caps.write.max_bytes;
        if args.content.len() > max {
            return Err(ToolError::new(
                ToolErrorKind::TooLarge,
                format!(
                    "{}: {} bytes is over the limit of {max} bytes ([tools.write] max_bytes)",
                    args.path,
                    args.content.len()
                ),
            ));
        }
        let existing = match std::fs::read(&target.real) {
            Ok(bytes) => Some(bytes),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => return Err(io(&args.path, &err)),
        };
        let mut result = json!({ "path": target.display, "bytesWritten": args.content.len() });
        match &existing {
            Some(old) => {
                require_unchanged(ctx, &target.real, &args.path, old, true)?;
                let old = String::from_utf8_lossy(old);
                let diff = Diff::new(&target.display, &old, &args.content);
                result["created"] = json!(false);
                result["diff"] = json!(diff.text);
                result["diffSummary"] = json!(diff.summary);
            }
            None => {
                result["created"] = json!(true);
            }
        }
        if let Some(parent) = target.real.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(&args.path, &e))?;
        }
        replace_file(&target.real, args.content.as_bytes()).map_err(|e| io(&args.path, &e))?;
        remember(ctx, &target.real, args.content.as_bytes());
        ctx.changes.push(
            target.real.clone(),
            existing,
            Some(args.content.into_bytes()),
        );
        Ok(result)
    }
}

/// A path a file-changing tool may write.
pub(crate) struct Target {
    /// Where the bytes go (symlinks resolved).
    pub(crate) real: PathBuf,
    pub(crate) display: String,
}

/// Resolves `raw` for writing: inside the project root by its spelling and by where it really
/// leads, never inside `.git/`, never a directory.
pub(crate) fn target(ctx: &ToolContext, raw: &str) -> Result<Target, ToolError> {
    if raw.is_empty() || raw.contains('\0') {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            "path is empty or holds a NUL byte",
        )
        .with_field("/path"));
    }
    let root = &ctx.settings.project_root;
    let lexical = warden_policy::normalize(&ctx.cwd.join(raw));
    let real = warden_policy::real_path(&lexical);
    for (spelling, path) in [("", &lexical), (" (through a symlink)", &real)] {
        if !path.starts_with(root) {
            return Err(ToolError::new(
                ToolErrorKind::OutsideRoots,
                format!(
                    "{raw}: {} is outside the workspace{spelling}; the file tools write only inside it",
                    path.display()
                ),
            ));
        }
        let inside = path.strip_prefix(root).unwrap_or(path);
        if inside
            .components()
            .any(|c| c == Component::Normal(".git".as_ref()))
        {
            return Err(ToolError::new(
                ToolErrorKind::DeniedPath,
                format!("{raw}: the file tools never write inside .git"),
            ));
        }
    }
    if real.is_dir() {
        return Err(ToolError::new(
            ToolErrorKind::IsDirectory,
            format!("{raw}: is a directory"),
        ));
    }
    if real.exists() && !real.is_file() {
        return Err(ToolError::new(
            ToolErrorKind::NotAFile,
            format!("{raw}: not a regular file"),
        ));
    }
    // A secret is neither read nor replaced by the tools.
    if ctx.paths.hides(&real) {
        return Err(ToolError::new(
            ToolErrorKind::DeniedPath,
            format!("{raw}: another name (a hard link) of a protected file"),
        ));
    }
    if real.is_file()
        && let Some(secret) = ctx
            .paths
            .secret_of(&real)
            .or_else(|| ctx.paths.secret_by_link(&real))
    {
        return Err(ToolError::new(
            ToolErrorKind::DeniedPath,
            format!("{raw}: a secret ({secret}), which the file tools neither read nor replace"),
        ));
    }
    Ok(Target {
        display: ctx.paths.display(&real),
        real,
    })
}

/// Refuses when the file changed on disk since this session read it; with `must_have_read`,
/// also when the session never read it.
pub(crate) fn require_unchanged(
    ctx: &ToolContext,
    real: &Path,
    raw: &str,
    current: &[u8],
    must_have_read: bool,
) -> Result<(), ToolError> {
    match ctx.reads.get(real) {
        Some(record) if record.sha256 != hex(&Sha256::digest(current)) => Err(ToolError::new(
            ToolErrorKind::ChangedSinceRead,
            format!(
                "{raw} changed on disk since this session read it; read it again before changing it"
            ),
        )),
        Some(_) => Ok(()),
        None if must_have_read => Err(ToolError::new(
            ToolErrorKind::NotReadFirst,
            format!(
                "{raw} exists and this session has not read it: read it with readFile first (or change it with editFile)"
            ),
        )),
        None => Ok(()),
    }
}

/// Records what the session now knows the file holds.
pub(crate) fn remember(ctx: &ToolContext, real: &Path, bytes: &[u8]) {
    let modified = std::fs::metadata(real).ok().and_then(|m| m.modified().ok());
    ctx.reads.record(
        real.to_path_buf(),
        ReadRecord {
            sha256: hex(&Sha256::digest(bytes)),
            len: bytes.len() as u64,
            modified,
        },
    );
}

/// Replaces `path` atomically: a temporary file in the same directory, written and synced, given
/// the old file's mode, then renamed over it. On any failure the old file is untouched.
///
/// The temporary file is made new (`O_CREAT | O_EXCL`, under a name no one can predict for
/// sure), so a symbolic link planted where it would be is never followed: writing through one
/// would reach a file outside the workspace. The rename replaces `path` itself, a link there
/// included, and never what a link points to.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let mode = std::fs::symlink_metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.permissions().mode() & 0o7777);
    let (temp, mut file) = fresh(dir, &name)?;
    let result = (|| {
        file.write_all(bytes)?;
        if let Some(mode) = mode {
            // On the open file, never through a name.
            file.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))?;
        }
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// A new file in `dir` for `name`'s replacement, made exclusively (`O_EXCL` refuses any entry
/// of the name, a link to elsewhere included): another name is tried.
fn fresh(dir: &Path, name: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    fresh_from(dir, name, stamp)
}

/// The temporary names tried for `name`, from `stamp`.
fn temp_name(name: &str, stamp: u32, attempt: u32) -> String {
    let salt = stamp
        .wrapping_mul(2_654_435_761)
        .wrapping_add(attempt.wrapping_mul(40_503));
    format!(".{name}.warden-{salt:08x}.tmp")
}

fn fresh_from(dir: &Path, name: &str, stamp: u32) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut last = None;
    for attempt in 0..32u32 {
        let temp = dir.join(temp_name(name, stamp, attempt));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file)),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => last = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

pub(crate) fn io(raw: &str, err: &std::io::Error) -> ToolError {
    ToolError::new(
        ToolErrorKind::Io,
        format!("{raw}: {err}; the file is unchanged"),
    )
}

/// A unified diff with its summary and the changed line ranges of the new text.
///
/// Made from the common prefix and suffix of the two texts (a memory comparison, however large
/// the file), so an edit costs what it changes: the middle is shown as removed and added lines,
/// with three lines of context either side.
pub(crate) struct Diff {
    pub(crate) text: String,
    pub(crate) summary: String,
    pub(crate) ranges: Vec<String>,
}

const CONTEXT: usize = 3;

impl Diff {
    pub(crate) fn new(path: &str, old: &str, new: &str) -> Self {
        let a: Vec<&str> = old.split_inclusive('\n').collect();
        let b: Vec<&str> = new.split_inclusive('\n').collect();
        let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let limit = a.len().min(b.len()) - prefix;
        let suffix = a
            .iter()
            .rev()
            .zip(b.iter().rev())
            .take(limit)
            .take_while(|(x, y)| x == y)
            .count();
        let (removed, added) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
        let summary = format!("+{} -{} lines", added.len(), removed.len());
        if removed.is_empty() && added.is_empty() {
            return Self {
                text: String::new(),
                summary,
                ranges: Vec::new(),
            };
        }
        let start = prefix.saturating_sub(CONTEXT);
        let before = &a[start..prefix];
        let after_end = (a.len() - suffix + CONTEXT).min(a.len());
        let after = &a[a.len() - suffix..after_end];
        let old_count = before.len() + removed.len() + after.len();
        let new_count = before.len() + added.len() + after.len();
        let line = |n: usize, count: usize| if count == 0 { n } else { n + 1 };
        let mut text = format!(
            "--- a/{path}\n+++ b/{path}\n@@ -{},{old_count} +{},{new_count} @@\n",
            line(start, old_count),
            line(start, new_count)
        );
        let mut push = |tag: char, lines: &[&str]| {
            for l in lines {
                text.push(tag);
                text.push_str(l);
                if !l.ends_with('\n') {
                    text.push_str("\n\\ No newline at end of file\n");
                }
            }
        };
        push(' ', before);
        push('-', removed);
        push('+', added);
        push(' ', after);
        let ranges = if added.len() <= 1 {
            vec![format!("{}", prefix + 1)]
        } else {
            vec![format!("{}-{}", prefix + 1, prefix + added.len())]
        };
        Self {
            text,
            summary,
            ranges,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_planted_at_the_temporary_name_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.toml");
        std::fs::write(&outside, "mine\n").unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        // The first names tried for this stamp all lead outside.
        for attempt in 0..4 {
            std::os::unix::fs::symlink(&outside, ws.join(temp_name("notes.md", 7, attempt)))
                .unwrap();
        }
        let (temp, mut file) = fresh_from(&ws, "notes.md", 7).unwrap();
        file.write_all(b"forged").unwrap();
        assert!(
            !std::fs::symlink_metadata(&temp)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine\n");
        // And the whole replacement leaves a link at the target itself as a link no more,
        // never writing what it pointed to.
        let target = ws.join("notes.md");
        std::os::unix::fs::symlink(&outside, &target).unwrap();
        replace_file(&target, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine\n");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }
}
