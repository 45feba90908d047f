//! `bash`: one shell command, run inside the sandbox (SPEC T7). Standard input is closed; when
//! the command ends, everything it started is gone with it.

use schemars::JsonSchema;
use serde::Deserialize;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warden_protocol::{ToolError, ToolErrorKind};
use warden_sandbox::{Output, Plan, Sandbox, SandboxError, request_from_settings};

use crate::normalise::{normalise, one_line};
use crate::{Tool, ToolContext};

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
        let Some(sandbox) = ctx.sandbox() else {
            return Err(ToolError::new(
                ToolErrorKind::SandboxUnavailable,
                "no sandbox is configured for shell commands; nothing ran",
            ));
        };
        let mut request = request_for(ctx, &command)?;
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
            return background(ctx, &command, sandbox, plan);
        }
        let before = ctx.egress.as_ref().map(|e| e.proxy.counts());
        ctx.watch_before_command();
        let outcome = sandbox
            .run_serving(&plan, Output::Capture, &mut |listener| {
                if let Some(egress) = &ctx.egress {
                    let _ = egress.proxy.serve(listener);
                }
            })
            .map_err(unavailable)?;
        if let Ok(mut log) = ctx.commands.lock() {
            log.push(crate::context::CommandRecord {
                argv: std::iter::once(request.program.clone())
                    .chain(request.args.iter().cloned())
                    .collect(),
                exit_code: outcome.exit_code,
                duration_ms: outcome.duration_ms,
                timed_out: outcome.timed_out,
                background: false,
            });
        }
        let changed = ctx.watch_after_command();
        record_sandbox(ctx, &request, &outcome, changed);
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
        notes(&mut result, &outcome);
        if let Some(warning) = warden_sandbox::host_root_warning(&request) {
            result["warning"] = json!(warning);
        }
        // Secrets the user unmasked were readable to it: said, for the trace.
        if !plan.unmasked.is_empty() {
            let shown: Vec<String> = plan.unmasked.iter().map(|p| ctx.paths.display(p)).collect();
            result["unmaskedSecrets"] = json!(shown);
        }
        // What went through the egress proxy during this command, and what it refused.
        if let (Some(egress), Some(before), Some(_)) = (&ctx.egress, before, plan.proxy_port) {
            let after = egress.proxy.counts();
            result["network"] = json!({
                "allowed": after.allowed.saturating_sub(before.allowed),
                "denied": after.denied.saturating_sub(before.denied),
            });
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

/// The sandbox a command ran in, for the trace (not the model): its profile, its layers, and
/// the limits it ran into.
fn record_sandbox(
    ctx: &ToolContext,
    request: &warden_sandbox::Request,
    outcome: &warden_sandbox::Outcome,
    changed: Option<warden_sandbox::Changed>,
) {
    let counted = &outcome.usage.counted;
    let mut hit = Vec::new();
    if outcome.timed_out {
        hit.push("time");
    }
    if outcome.truncated {
        hit.push("output");
    }
    if counted.oom_kills.is_some_and(|n| n > 0) {
        hit.push("memory");
    }
    if counted.forks_refused.is_some_and(|n| n > 0) {
        hit.push("processes");
    }
    let mut sandbox = json!({"layers": outcome.layers, "limitsHit": hit});
    // The files of the workspace it changed (a session's commands), as the watch saw them.
    match changed {
        Some(warden_sandbox::Changed::Paths(paths, count)) => {
            sandbox["changedFiles"] = json!(paths);
            sandbox["changedCount"] = json!(count);
        }
        Some(warden_sandbox::Changed::Unknown) => sandbox["changedFiles"] = json!("unknown"),
        None => {}
    }
    if let Ok(mut last) = ctx.last_sandbox.lock() {
        *last = Some((request.profile.as_str().to_owned(), sandbox));
    }
}

/// What the outcome adds when there is something to say: the timeout, what became of git's
/// history, limits that bind each process and not the sandbox (said on every command).
fn notes(result: &mut Value, outcome: &warden_sandbox::Outcome) {
    if outcome.timed_out {
        result["timedOut"] = json!(true);
    }
    if !outcome.history.is_empty() {
        result["history"] = json!(outcome.history);
    }
    if !outcome.warnings.is_empty() {
        result["limitsWarning"] = json!(outcome.warnings.join("; "));
    }
}

/// The sandbox of a shell command: a manifest's, when one governs the session, else the one
/// the settings describe, with the network escalation a person approved for this call.
fn request_for(ctx: &ToolContext, command: &str) -> Result<warden_sandbox::Request, ToolError> {
    let workspace = &ctx.settings.project_root;
    let shell_args = vec!["-c".to_owned(), command.to_owned()];
    let governed = ctx.sandbox_template.is_some();
    let mut request = if let Some(template) = &ctx.sandbox_template {
        // A manifest's sandbox: its mounts, environment, limits and network, nothing else.
        warden_sandbox::Request {
            program: "bash".to_owned(),
            args: shell_args,
            ..template.clone()
        }
    } else {
        let mut request = request_from_settings(&ctx.settings, workspace, "bash", &shell_args, &[])
            .map_err(|e| ToolError::new(ToolErrorKind::SandboxUnavailable, e))?;
        request.workspace.clone_from(workspace);
        request
    };
    // The one secret list, masked in every root the command can read.
    request.mask = ctx.mask.clone();
    // The directories of active skills, read-only: their scripts run where they are.
    if let Ok(dirs) = ctx.skill_dirs.read() {
        for dir in dirs.iter().filter(|d| !d.starts_with(workspace)) {
            request.allow_read.push(dir.clone());
        }
    }
    // A manifest's network is the manifest's: no escalation widens it.
    if ctx.network_once.load(std::sync::atomic::Ordering::SeqCst) && !governed {
        request.network = true;
    }
    if let Some(egress) = &ctx.egress
        && request.proxy_port.is_some()
        && !request.network
        && !governed
    {
        egress.trust(&mut request);
    }
    Ok(request)
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
    let argv: Vec<String> = std::iter::once(plan.program.clone())
        .chain(plan.args.iter().cloned())
        .collect();
    let id = ctx
        .jobs
        .start(command, sandbox, plan, ctx.egress.clone())
        .map_err(unavailable)?;
    if let Ok(mut log) = ctx.commands.lock() {
        log.push(crate::context::CommandRecord {
            argv,
            exit_code: 0,
            duration_ms: 0,
            timed_out: false,
            background: true,
        });
    }
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

/// What a person would read of a command's output, and whether anything was dropped.
pub(crate) fn summary(bytes: &[u8]) -> (String, bool) {
    let n = normalise(bytes);
    (n.text, n.cut)
}
