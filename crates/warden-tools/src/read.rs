//! `readFile`: one page of a text file inside the allowed roots, with line numbers.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use warden_protocol::{ToolError, ToolErrorKind};

use crate::context::ReadRecord;
use crate::{Tool, ToolContext, outline, sniff};

/// Files up to this size are read whole: lines counted and the content hashed. Larger files are
/// read only as far as the page asked for.
const WHOLE_FILE_LIMIT: u64 = 64 * 1024 * 1024;
/// Files up to this size get an outline of what surrounds a page: its imports, the blocks it
/// sits in and the types it names.
const OUTLINE_LIMIT: usize = 4 * 1024 * 1024;

/// Arguments of `readFile`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadFileArgs {
    /// Path of the file: relative to the working directory, or absolute inside the workspace.
    pub path: String,
    /// First line to return, counting from 1. Default 1.
    #[schemars(range(min = 1))]
    pub start_line: Option<u64>,
    /// Last line to return, inclusive. Default: one page (2,000 lines unless configured) from startLine.
    #[schemars(range(min = 1))]
    pub end_line: Option<u64>,
}

/// The `readFile` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFile;

impl Tool for ReadFile {
    type Args = ReadFileArgs;
    const NAME: &'static str = "readFile";
    const DESCRIPTION: &'static str = "Read a text file from the workspace, with line numbers. Large files come in \
        pages: use startLine/endLine to read further (the result says when it was truncated and where \
        to continue). Secrets (.env, keys, certificates) and binary files are refused.";
    const READ_ONLY: bool = true;

    fn run(&self, ctx: &ToolContext, args: ReadFileArgs) -> Result<Value, ToolError> {
        let resolved = ctx.paths.resolve(&ctx.cwd, &args.path)?;
        let mut result = page(ctx, &args, &resolved)?;
        // A secret the user unmasked: readable, and said so, for the trace.
        if let Some(pattern) = ctx.paths.unmasked(&resolved.real) {
            result["unmaskedSecret"] = json!(pattern);
        }
        Ok(result)
    }
}

/// The page of `resolved` that `args` asks for.
fn page(
    ctx: &ToolContext,
    args: &ReadFileArgs,
    resolved: &warden_policy::ResolvedPath,
) -> Result<Value, ToolError> {
    let io_err =
        |err: std::io::Error| ToolError::new(ToolErrorKind::Io, format!("{}: {err}", args.path));
    let meta = std::fs::metadata(&resolved.real).map_err(io_err)?;
    if meta.is_dir() {
        return Err(ToolError::new(
            ToolErrorKind::IsDirectory,
            format!("{}: is a directory; use glob to list files", args.path),
        ));
    }
    if !meta.is_file() {
        return Err(ToolError::new(
            ToolErrorKind::NotAFile,
            format!("{}: not a regular file", args.path),
        ));
    }
    let caps = &ctx.caps.read;
    let start = args.start_line.unwrap_or(1);
    let (end, mut reason) = page_bounds(start, args.end_line, caps.page_lines)?;

    let mut file = File::open(&resolved.real).map_err(io_err)?;
    let mut head = vec![0; sniff::SNIFF_BYTES];
    let n = read_full(&mut file, &mut head).map_err(io_err)?;
    head.truncate(n);
    if sniff::is_binary(&head) {
        return Err(binary_error(&args.path, meta.len(), &head));
    }

    let mut out = Page::new(start, end, caps.max_bytes, caps.max_line_chars);
    let mut whole = None;
    let total_lines = if meta.len() <= WHOLE_FILE_LIMIT {
        let mut data = head;
        file.read_to_end(&mut data).map_err(io_err)?;
        for (index, line) in (1u64..).zip(split_lines(&data)) {
            if index > end || !out.push(index, line) {
                break;
            }
        }
        let record = ReadRecord {
            sha256: hex(&Sha256::digest(&data)),
            len: meta.len(),
            modified: meta.modified().ok(),
        };
        ctx.reads.record(resolved.real.clone(), record);
        let total = count_lines(&data);
        whole = Some(data);
        Some(total)
    } else {
        stream_page(
            BufReader::new(std::io::Cursor::new(head).chain(file)),
            &mut out,
        )
        .map_err(io_err)?;
        None
    };
    if out.binary {
        return Err(binary_error(&args.path, meta.len(), b"\0"));
    }
    if let Some(total) = total_lines
        && start > total.max(1)
    {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!(
                "startLine {start} is past the end of {} ({total} lines)",
                args.path
            ),
        )
        .with_field("/startLine")
        .with_expected(format!("an integer from 1 to {total}")));
    }
    if out.byte_capped {
        reason = Some("max_bytes");
    } else if reason.is_none() && args.end_line.is_none() && total_lines.is_none_or(|t| t > end) {
        reason = Some("page_limit");
    }
    let last = out.last.unwrap_or(start.saturating_sub(1));
    let more = total_lines.is_none_or(|t| t > last);
    let truncated = reason.is_some() && more;
    let mut result = json!({
        "path": resolved.display,
        "range": if out.last.is_some() { format!("{start}-{last}") } else { String::new() },
        "content": out.content,
        "totalLines": total_lines,
        "truncated": truncated,
    });
    if truncated {
        result["truncationReason"] = json!(reason);
        result["nextStartLine"] = json!(last + 1);
        result["summary"] = json!(page_summary(start, last, total_lines));
    }
    if out.cut_lines > 0 {
        result["linesCut"] = json!(out.cut_lines);
    }
    if let (Some(data), Some(first)) = (&whole, out.first)
        && let Some(outline) = outline_of(data, first, last, total_lines)
    {
        result["outline"] = json!(outline);
    }
    Ok(result)
}

/// One line on a page that does not show the whole file.
fn page_summary(start: u64, last: u64, total_lines: Option<u64>) -> String {
    let total =
        total_lines.map_or_else(|| "a file too large to count".to_owned(), |t| t.to_string());
    format!(
        "lines {start}-{last} of {total} shown; more from startLine {}",
        last + 1
    )
}

/// What surrounds lines `first..=last` of a file read whole, unless the page is all of it.
fn outline_of(
    data: &[u8],
    first: u64,
    last: u64,
    total_lines: Option<u64>,
) -> Option<outline::Outline> {
    let covers_all = first == 1 && total_lines.is_some_and(|t| last >= t);
    if covers_all || data.len() > OUTLINE_LIMIT {
        return None;
    }
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.lines().collect();
    let to_index = |n: u64| usize::try_from(n - 1).unwrap_or(usize::MAX);
    let outline = outline::outline(&lines, to_index(first), to_index(last));
    (!outline.is_empty()).then_some(outline)
}

/// Builds the numbered content of one page under a byte cap.
struct Page {
    start: u64,
    end: u64,
    max_bytes: usize,
    max_line_chars: usize,
    content: String,
    first: Option<u64>,
    last: Option<u64>,
    byte_capped: bool,
    binary: bool,
    cut_lines: u64,
}

impl Page {
    fn new(start: u64, end: u64, max_bytes: usize, max_line_chars: usize) -> Self {
        Self {
            start,
            end,
            max_bytes,
            max_line_chars,
            content: String::new(),
            first: None,
            last: None,
            byte_capped: false,
            binary: false,
            cut_lines: 0,
        }
    }

    /// Adds line `index` if it is in range; false when the page is full.
    fn push(&mut self, index: u64, raw: &[u8]) -> bool {
        if index < self.start {
            return true;
        }
        if index > self.end {
            return false;
        }
        if raw.contains(&0) {
            self.binary = true;
            return false;
        }
        let text = String::from_utf8_lossy(trim_eol(raw));
        let mut line = String::new();
        let _ = write!(line, "{index:>6}\t");
        match text.char_indices().nth(self.max_line_chars) {
            Some((cut, _)) => {
                let total = text.chars().count();
                let _ = write!(
                    line,
                    "{} … [line cut at {} of {total} chars]",
                    &text[..cut],
                    self.max_line_chars
                );
                self.cut_lines += 1;
            }
            None => line.push_str(&text),
        }
        line.push('\n');
        if self.content.len() + line.len() > self.max_bytes && self.last.is_some() {
            self.byte_capped = true;
            return false;
        }
        self.content.push_str(&line);
        self.first.get_or_insert(index);
        self.last = Some(index);
        true
    }
}

/// The last line a page may hold, and whether the request was clamped to the page size.
fn page_bounds(
    start: u64,
    end_line: Option<u64>,
    page_lines: usize,
) -> Result<(u64, Option<&'static str>), ToolError> {
    let page = u64::try_from(page_lines.max(1)).unwrap_or(u64::MAX);
    let page_end = start.saturating_add(page - 1);
    match end_line {
        Some(end) if end < start => Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!("endLine {end} is before startLine {start}"),
        )
        .with_field("/endLine")
        .with_expected(format!("an integer >= startLine ({start})"))),
        Some(end) if end > page_end => Ok((page_end, Some("page_limit"))),
        Some(end) => Ok((end, None)),
        None => Ok((page_end, None)),
    }
}

/// Reads a file too large to take whole only as far as the page needs; its lines go uncounted.
fn stream_page(mut reader: impl BufRead, out: &mut Page) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut index = 0u64;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        index += 1;
        if !out.push(index, &line) {
            return Ok(());
        }
    }
}

fn binary_error(path: &str, size: u64, head: &[u8]) -> ToolError {
    ToolError::new(
        ToolErrorKind::BinaryFile,
        format!(
            "{path}: binary file ({size} bytes, {}); readFile returns text only",
            sniff::describe(head)
        ),
    )
}

fn read_full(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn count_lines(data: &[u8]) -> u64 {
    let newlines = memchr::memchr_iter(b'\n', data).count() as u64;
    newlines + u64::from(!data.is_empty() && data.last() != Some(&b'\n'))
}

fn split_lines(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    body.split(|b| *b == b'\n')
        .take(if data.is_empty() { 0 } else { usize::MAX })
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}
