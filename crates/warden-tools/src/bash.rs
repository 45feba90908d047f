//! `bash`: one shell command, run inside the sandbox (SPEC T7). Standard input is closed; when
//! the command ends, everything it started is gone with it.

use schemars::JsonSchema;
use serde::Deserialize;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warden_protocol::{ToolError, ToolErrorKind};
use warden_sandbox::{Output, Plan, Sandbox, SandboxError, request_from_settings};

use crate::{Tool, ToolContext};

/// Lines kept from the start and from the end of a long output.
const HEAD_LINES: usize = 40;
const TAIL_LINES: usize = 80;
/// Characters kept of one line.
const LINE_CHARS: usize = 400;

/// How long a background command is watched before `bash` returns, for its first output (or
/// its early end).
const BACKGROUND_SETTLE: Duration = Duration::from_millis(1500);

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BashArgs {
    /// The command, as bash would read it. Either this or `jobId`.
    pub command: Option<String>,
    /// Kill it (and everything it started) after this many seconds. Default and ceiling: the
    /// configured limit.
    #[schemars(range(min = 1))]
    pub timeout_seconds: Option<u64>,
    /// Why the command is being run, in a few words (shown in approval prompts and the trace).
    pub description: Option<String>,
    /// Keep the command running after this call returns (a dev server): it gets a `jobId`, runs
    /// in its sandbox until stopped or the session ends, and its output is read with `jobId`.
    pub background: Option<bool>,
    /// A background command started earlier: returns its output since the last look, and how it
    /// ended if it has.
    pub job_id: Option<String>,
    /// With `jobId`: stop it, and everything it started.
    pub stop: Option<bool>,
}

/// The `bash` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bash;

impl Tool for Bash {
    type Args = BashArgs;
    const NAME: &'static str = "bash";
    const DESCRIPTION: &'static str = "Run one shell command in the workspace, inside the sandbox: the workspace is \
        writable, the network is off unless the session allows it, there is no input, and the command is killed at \
        its timeout. Returns the exit code and summaries of stdout and stderr (progress bars, repeats and the middle \
        of long outputs dropped; `truncated` says so). For a dev server, pass `background: true`: it keeps running \
        in its sandbox and returns a `jobId`; call again with `jobId` for its new output, with `stop: true` to end \
        it. Prefer readFile, grep and glob for reading.";
    const READ_ONLY: bool = false;

    fn run(&self, ctx: &ToolContext, args: BashArgs) -> Result<Value, ToolError> {
        let invalid = |message: &str| {
            Err(ToolError::new(ToolErrorKind::InvalidArguments, message).with_field("/command"))
        };
        let command = match (&args.command, &args.job_id) {
            (Some(command), None) => command.clone(),
            (None, Some(id)) => {
                if args.background.is_some() || args.timeout_seconds.is_some() {
                    return invalid(
                        "`background` and `timeoutSeconds` go with `command`, not `jobId`",
                    );
                }
                return job(ctx, id, args.stop == Some(true));
            }
            (Some(_), Some(_)) => return invalid("give `command` or `jobId`, not both"),
            (None, None) => return invalid("give `command` (or `jobId` for a background command)"),
        };
        if args.stop.is_some() {
            return invalid("`stop` goes with `jobId`");
        }
        let Some(helper) = &ctx.sandbox_helper else {
            return Err(ToolError::new(
                ToolErrorKind::SandboxUnavailable,
                "no sandbox is configured for shell commands; nothing ran",
            ));
        };
        let workspace = &ctx.settings.project_root;
        let shell_args = vec!["-c".to_owned(), command.clone()];
        let mut request = request_from_settings(&ctx.settings, workspace, "bash", &shell_args, &[])
            .map_err(|e| ToolError::new(ToolErrorKind::SandboxUnavailable, e))?;
        request.workspace.clone_from(workspace);
        if ctx.network_once.load(std::sync::atomic::Ordering::SeqCst) {
            request.network = true;
        }
        if let (Some(asked), Some(limit)) = (args.timeout_seconds, request.limits.timeout_ms) {
            request.limits.timeout_ms = Some(asked.saturating_mul(1000).min(limit));
        }
        let plan = Plan::new(&request).map_err(|why| {
            ToolError::new(
                ToolErrorKind::SandboxUnavailable,
                format!("the sandbox could not be established, nothing ran: {why}"),
            )
        })?;
        if args.background == Some(true) {
            let mut plan = plan;
            // It runs until it is stopped or the session ends, under every other limit.
            plan.limits.timeout_ms = None;
            return background(ctx, &command, Sandbox::new(helper), plan);
        }
        let outcome = Sandbox::new(helper)
            .run(&plan, Output::Capture)
            .map_err(unavailable)?;
        let out = normalise(&outcome.stdout);
        let err = normalise(&outcome.stderr);
        let (cut_out, cut_err) = (out.cut, err.cut);
        let mut result = json!({
            "cmd": command,
            "cwd": ".",
            "exitCode": outcome.exit_code,
            "stdoutSummary": out.text,
            "stderrSummary": err.text,
            "durationMs": outcome.duration_ms,
            "truncated": outcome.truncated || cut_out || cut_err,
            "summary": one_line(outcome.exit_code, outcome.duration_ms, &out, &err),
        });
        if outcome.timed_out {
            result["timedOut"] = json!(true);
        }
        if outcome.truncated || cut_out || cut_err {
            result["truncationReason"] = json!(if outcome.truncated {
                "output_limit"
            } else {
                "summarised"
            });
        }
        Ok(result)
    }
}

fn unavailable(err: SandboxError) -> ToolError {
    match err {
        SandboxError::Setup(why) => ToolError::new(
            ToolErrorKind::SandboxUnavailable,
            format!("the sandbox could not be established, nothing ran: {why}"),
        ),
        SandboxError::Helper { .. } => {
            ToolError::new(ToolErrorKind::SandboxUnavailable, err.to_string())
        }
    }
}

/// Starts a background command, watches it briefly, and returns its job id and first output.
fn background(
    ctx: &ToolContext,
    command: &str,
    sandbox: Sandbox,
    plan: Plan,
) -> Result<Value, ToolError> {
    let id = ctx
        .jobs
        .start(command, sandbox, plan)
        .map_err(unavailable)?;
    let settle = Instant::now() + BACKGROUND_SETTLE;
    while Instant::now() < settle {
        let ended = ctx
            .jobs
            .with(&id, |job| (job.running.ended().is_some(), false))
            .unwrap_or(true);
        if ended {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    job(ctx, &id, false)
}

/// A background command's new output, and its end if it has ended (or was stopped now).
fn job(ctx: &ToolContext, id: &str, stop: bool) -> Result<Value, ToolError> {
    let report = ctx.jobs.with(id, |job| {
        let ended = if stop {
            Some(job.running.stop())
        } else {
            job.running.ended()
        };
        let output = job.running.output();
        let (stdout, cut_out) = summary(&output.stdout);
        let (stderr, cut_err) = summary(&output.stderr);
        let mut result = json!({
            "jobId": id,
            "cmd": job.cmd,
            "cwd": ".",
            "running": ended.is_none(),
            "stdoutSummary": stdout,
            "stderrSummary": stderr,
            "durationMs": u64::try_from(job.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "truncated": output.lost || cut_out || cut_err,
        });
        if output.lost {
            result["truncationReason"] = json!("output_limit");
        }
        let gone = ended.is_some();
        match ended {
            Some(Ok(outcome)) => {
                result["exitCode"] = json!(outcome.exit_code);
                if stop {
                    result["stopped"] = json!(true);
                }
            }
            Some(Err(err)) => return (Err(unavailable(err)), true),
            None => {}
        }
        (Ok(result), gone)
    });
    report.unwrap_or_else(|| {
        let known = ctx.jobs.ids();
        Err(ToolError::new(
            ToolErrorKind::NotFound,
            if known.is_empty() {
                format!("no background command {id:?}: none is running in this session")
            } else {
                format!(
                    "no background command {id:?}; running: {}",
                    known.join(", ")
                )
            },
        ))
    })
}

/// Lines of installers and builders that say nothing about the result (progress, downloads,
/// deprecation notices, packages already there).
const NOISE: &[&str] = &[
    "npm WARN deprecated",
    "npm notice",
    "npm http fetch",
    "Requirement already satisfied:",
    "Collecting ",
    "Downloading ",
    "Using cached ",
    "Installing collected packages",
    "   Compiling ",
    "  Downloaded ",
    "   Downloading ",
    "    Updating ",
    "     Locking ",
    "      Adding ",
    "    Checking ",
    "Get:",
    "Hit:",
    "Unpacking ",
    "Selecting previously unselected",
    "Preparing to unpack",
    "Setting up ",
    "Processing triggers",
];

/// Lines that say something went wrong.
fn is_error_line(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.starts_with("error")
        || lower.contains("error:")
        || lower.contains("error[")
        || lower.starts_with("fatal")
        || lower.starts_with("failed")
        || lower.contains(" failed")
        || lower.starts_with("traceback")
        || lower.contains("panicked at")
        || lower.starts_with("not ok")
        || lower.contains("err!")
}

/// A line with its numbers replaced: lines of one shape differ only in counters and sizes.
fn shape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_number = false;
    for c in line.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// A command's output as the model should see it (SPEC C3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Normalised {
    pub(crate) text: String,
    /// Something was dropped or shortened.
    pub(crate) cut: bool,
    pub(crate) lines: usize,
    pub(crate) noise: usize,
    pub(crate) similar: usize,
    pub(crate) first_error: Option<String>,
}

/// What a terminal would show of each line (text after the last carriage return, no colour
/// codes); installer noise dropped and counted; runs of identical lines folded, and runs of
/// lines alike but for their numbers ("… 312 similar lines …"); long lines cut; only the head
/// and tail of a long output.
pub(crate) fn summary(bytes: &[u8]) -> (String, bool) {
    let n = normalise(bytes);
    (n.text, n.cut)
}

/// See [`summary`]; with the counts behind it.
#[allow(clippy::too_many_lines)]
pub(crate) fn normalise(bytes: &[u8]) -> Normalised {
    let text = String::from_utf8_lossy(bytes);
    let mut seen: Vec<String> = Vec::new();
    let mut cut = false;
    let mut noise = 0usize;
    let mut first_error = None;
    let mut total = 0usize;
    for raw in text.lines() {
        total += 1;
        let shown = strip_ansi(raw.rsplit('\r').next().unwrap_or(raw));
        if NOISE.iter().any(|n| shown.starts_with(n)) {
            noise += 1;
            continue;
        }
        if first_error.is_none() && is_error_line(&shown) {
            first_error = Some(shown.chars().take(200).collect());
        }
        let shown = match shown.char_indices().nth(LINE_CHARS) {
            Some((at, _)) => {
                cut = true;
                format!("{}…", &shown[..at])
            }
            None => shown,
        };
        seen.push(shown);
    }
    // Identical neighbours, then neighbours of one shape.
    let mut lines: Vec<String> = Vec::new();
    let mut similar = 0usize;
    let mut i = 0;
    while i < seen.len() {
        let mut j = i + 1;
        while j < seen.len() && seen[j] == seen[i] {
            j += 1;
        }
        if j - i > 1 {
            lines.push(seen[i].clone());
            lines.push(format!(
                "[the line above repeated {} more times]",
                j - i - 1
            ));
            cut = true;
            i = j;
            continue;
        }
        let form = shape(&seen[i]);
        let mut k = i + 1;
        while k < seen.len() && seen[k] != seen[k - 1] && shape(&seen[k]) == form {
            k += 1;
        }
        if k - i >= 4 && form.contains('#') {
            lines.push(seen[i].clone());
            lines.push(format!("[… {} similar lines …]", k - i - 2));
            lines.push(seen[k - 1].clone());
            similar += k - i - 2;
            cut = true;
            i = k;
            continue;
        }
        lines.push(seen[i].clone());
        i += 1;
    }
    if noise > 0 {
        lines.push(format!(
            "[{noise} installer and build progress lines dropped]"
        ));
        cut = true;
    }
    if lines.len() > HEAD_LINES + TAIL_LINES {
        let omitted = lines.len() - HEAD_LINES - TAIL_LINES;
        let tail = lines.split_off(lines.len() - TAIL_LINES);
        lines.truncate(HEAD_LINES);
        lines.push(format!("[… {omitted} lines omitted …]"));
        lines.extend(tail);
        cut = true;
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') && !out.is_empty() {
        out.push('\n');
    }
    Normalised {
        text: out,
        cut,
        lines: total,
        noise,
        similar,
        first_error,
    }
}

/// One line on what a command did: its exit, how much it printed and what was dropped of it,
/// and the first line that reads as an error.
fn one_line(exit_code: i32, duration_ms: u64, out: &Normalised, err: &Normalised) -> String {
    #[allow(clippy::cast_precision_loss)]
    let seconds = duration_ms as f64 / 1000.0;
    let mut line = format!(
        "exit {exit_code} after {seconds:.1} s; {} lines of output",
        out.lines + err.lines
    );
    let dropped = out.noise + err.noise + out.similar + err.similar;
    if dropped > 0 {
        let _ = write!(line, ", {dropped} of them progress, noise or alike");
    }
    if let Some(error) = err.first_error.as_ref().or(out.first_error.as_ref()) {
        let _ = write!(line, "; first error: {error}");
    }
    line
}

/// Removes ANSI escape sequences (colours, cursor movement).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    #[test]
    fn progress_bars_colours_and_repeats_are_folded() {
        let raw = "Downloading 10%\r Downloading 50%\r Done\n\u{1b}[32mok\u{1b}[0m\nsame\nsame\nsame\nend\n";
        let (text, cut) = summary(raw.as_bytes());
        assert_eq!(
            text,
            " Done\nok\nsame\n[the line above repeated 2 more times]\nend\n"
        );
        assert!(cut);
        let (plain, cut) = summary(b"a\nb\n");
        assert_eq!((plain.as_str(), cut), ("a\nb\n", false));
    }

    #[test]
    fn installer_noise_and_alike_lines_are_dropped_and_counted() {
        let npm = "npm WARN deprecated inflight@1.0.6: This module is not supported\n\
                   npm WARN deprecated glob@7.2.3: Glob versions prior to v9 are no longer supported\n\
                   npm notice New major version of npm available! 10.8.2 -> 11.0.0\n\
                   \n\
                   added 312 packages, and audited 313 packages in 9s\n\
                   \n\
                   found 0 vulnerabilities\n";
        let n = normalise(npm.as_bytes());
        assert_eq!(n.noise, 3);
        assert!(
            n.text.contains("added 312 packages") && n.text.contains("found 0 vulnerabilities")
        );
        assert!(
            n.text
                .contains("[3 installer and build progress lines dropped]")
        );
        let mut cargo = String::new();
        for i in 0..40 {
            let _ = writeln!(cargo, "   Compiling crate{i} v0.{i}.0");
        }
        cargo.push_str("error[E0308]: mismatched types\n  --> src/main.rs:4:18\n");
        let n = normalise(cargo.as_bytes());
        assert_eq!(n.noise, 40);
        assert_eq!(
            n.first_error.as_deref(),
            Some("error[E0308]: mismatched types")
        );
        assert!(n.text.starts_with("error[E0308]"), "{}", n.text);
        let mut pytest = String::new();
        for i in 0..50 {
            let _ = writeln!(
                pytest,
                "tests/test_api.py::test_case_{i} PASSED [{}%]",
                i * 2
            );
        }
        pytest.push_str("FAILED tests/test_api.py::test_delete_user - assert 404 == 204\n");
        let n = normalise(pytest.as_bytes());
        assert_eq!(n.similar, 48);
        assert!(n.text.contains("[… 48 similar lines …]"), "{}", n.text);
        assert!(n.text.contains("test_case_0 PASSED") && n.text.contains("test_case_49 PASSED"));
        assert!(n.first_error.as_deref().unwrap().starts_with("FAILED"));
        let line = one_line(1, 2300, &n, &normalise(b""));
        assert!(
            line.starts_with("exit 1 after 2.3 s; 51 lines of output, 48 of them"),
            "{line}"
        );
        assert!(line.contains("first error: FAILED tests/test_api.py::test_delete_user"));
    }

    #[test]
    fn long_outputs_keep_head_and_tail() {
        // Lines that differ in more than their numbers: none of them alike.
        let mut raw = String::new();
        for i in 0..1000 {
            let _ = writeln!(raw, "line {i} {}", "x".repeat(i % 7));
        }
        let (text, cut) = summary(raw.as_bytes());
        assert!(cut);
        assert!(text.starts_with("line 0 \n"));
        assert!(text.contains("[… 880 lines omitted …]"));
        assert!(text.ends_with("line 999 xxxxx\n"));
    }
}
