//! `warden manifest run`, `reap` and `answer`: a command run under a manifest, from preflight
//! to receipt; the reaper of runs whose lease ran out; a person's answer to a capability
//! action waiting for approval.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use serde_json::json;
use warden_manifest::Parsed;
use warden_manifest::run::{
    ApprovalAsk, Approver, CommandRun, Credential, Options, Prepared, ReapAction, Receipt, Status,
};

use super::manifest::{org_policy, problems, read};
use super::{load_settings, open_trace, print_json};
use crate::args::ManifestRunArgs;
use crate::{CliError, Exit};

/// The manifest was refused: nothing ran.
const REFUSED: u8 = 125;
/// The sandbox or the workspace could not be set up: nothing ran.
const NO_SETUP: u8 = 126;
/// The duration ran out.
const TIMED_OUT: u8 = 124;
/// Cleanup failed: the run is quarantined.
const QUARANTINED: u8 = 121;

/// How long a run waits for an answer about an action before refusing it.
const ANSWER_WAIT: Duration = Duration::from_secs(600);

/// Where runs' directories are: `[manifest] runs_dir`, else `runs` beside the trace.
fn runs_dir(settings: &warden_config::Settings) -> Result<PathBuf, CliError> {
    if let Some(dir) = &settings.manifest.runs_dir {
        return Ok(home_relative(dir));
    }
    let trace = warden_trace::default_path().map_err(CliError::failure)?;
    Ok(warden_manifest::run::default_runs_dir(&trace))
}

fn home_relative(path: &str) -> PathBuf {
    match path.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map_or_else(|| PathBuf::from(path), |h| PathBuf::from(h).join(rest)),
        None => PathBuf::from(path),
    }
}

fn refused(e: anyhow::Error) -> CliError {
    CliError {
        exit: Exit::Code(REFUSED),
        error: e,
    }
}

/// The manifest in `file`, read and held against preflight: refused (nothing runs) when it
/// does not parse or breaks a rule.
fn checked(file: &Path, org_policy_file: Option<&Path>) -> Result<Parsed, CliError> {
    let org = org_policy(org_policy_file).map_err(|e| refused(e.error))?;
    let parsed = match read(file).map_err(|e| refused(e.error))? {
        Ok(parsed) => parsed,
        Err(problem) => {
            return Err(refused(anyhow!(
                "{}: {} (line {}): nothing ran",
                file.display(),
                problem.reason,
                problem.line.unwrap_or(0)
            )));
        }
    };
    let found = problems(&parsed, org.as_ref());
    if !found.is_empty() {
        for p in &found {
            eprintln!(
                "warden: {}:{}: {}: {}",
                file.display(),
                p.line.unwrap_or(0),
                p.path,
                p.reason
            );
        }
        return Err(refused(anyhow!(
            "{}: {} problem(s); nothing ran (see `warden manifest validate`)",
            file.display(),
            found.len()
        )));
    }
    Ok(parsed)
}

/// The run's options: its id, the repository, where its directory goes, the credentials and
/// who approves, the trace its connections go to.
fn options(
    repository: PathBuf,
    settings: &warden_config::Settings,
    command: Vec<String>,
    lease_seconds: Option<u64>,
) -> Result<Options, CliError> {
    let run_id = warden_manifest::run::new_run_id();
    let runs = runs_dir(settings)?;
    let session: warden_protocol::SessionId = run_id
        .parse()
        .map_err(|e| CliError::failure(anyhow!("{e}")))?;
    let base = warden_sandbox::request_from_settings(settings, &repository, "true", &[], &[])
        .map_err(|e| refused(anyhow!(e)))?;
    Ok(Options {
        approver: Some(approver(runs.join(&run_id))),
        run_id,
        command,
        repository,
        runs_dir: runs,
        helper: super::sandbox_helper().map_err(CliError::failure)?,
        report_only: false,
        lease_seconds: lease_seconds.unwrap_or(settings.manifest.lease_seconds),
        credential: credentials(settings.manifest.credentials_file.as_deref()),
        sink: warden_tools::egress::trace_sink(session),
        environment: std::env::vars().collect(),
        home: base.home,
        home_allow: base.home_allow,
        root_identity: base.root_identity,
        fallback: base.limits.fallback,
        mask: super::exec::secret_mask(settings).map_err(CliError::usage)?,
        capture: false,
        session: false,
    })
}

fn current_dir(dir: Option<PathBuf>) -> Result<PathBuf, CliError> {
    match dir {
        Some(d) => Ok(d),
        None => std::env::current_dir().map_err(|e| refused(anyhow!(e))),
    }
}

pub(super) fn run(dir: Option<PathBuf>, args: &ManifestRunArgs) -> Result<Exit, CliError> {
    let repository = current_dir(dir)?;
    let settings = load_settings(Some(repository.clone())).map_err(|e| refused(e.error))?;
    let parsed = checked(&args.file, args.org_policy.as_deref())?;
    let mut options = options(
        repository,
        &settings,
        args.command.clone(),
        args.lease_seconds,
    )?;
    options.report_only = args.report_only;
    options.capture = args.json;
    let run_id = options.run_id.clone();
    let store = open_trace().ok();
    if let Some(store) = &store {
        let _ = store.manifest_run_started(&run_id, &parsed.sha256);
    }
    eprintln!("warden: run {run_id} starting");
    let finished = warden_manifest::run::run(&parsed, &options).map_err(|e| CliError {
        exit: Exit::Code(NO_SETUP),
        error: anyhow!(e),
    })?;
    let receipt = &finished.receipt;
    let value = serde_json::to_value(receipt).map_err(CliError::failure)?;
    if let Some(store) = &store {
        let _ = store.manifest_run_finished(&run_id, receipt.status.as_str(), &value);
    }
    if let Some(path) = &args.receipt {
        let text = serde_json::to_string_pretty(&value).map_err(CliError::failure)?;
        std::fs::write(path, text + "\n")
            .map_err(|e| CliError::failure(anyhow!("--receipt {}: {e}", path.display())))?;
    }
    if args.json {
        print_json(&value)?;
    } else {
        summary(receipt, &finished.dir);
    }
    Ok(Exit::Code(exit_code(receipt)))
}

/// An agent session under a manifest: the run prepared, the session's tools bound to it.
pub(super) struct Governed {
    /// The host directory the session works in (the workspace's worktree).
    pub(super) work_dir: PathBuf,
    writable: bool,
    prepared: Prepared,
    /// The agent's session, which the run's receipt is named in (for `warden audit`).
    session: warden_protocol::SessionId,
}

/// Prepares the run an agent session works in (`warden run --manifest FILE`).
pub(super) fn prepare_session(
    dir: Option<PathBuf>,
    file: &Path,
    session: &warden_protocol::SessionId,
) -> Result<Governed, CliError> {
    let repository = current_dir(dir)?;
    let settings = load_settings(Some(repository.clone())).map_err(|e| refused(e.error))?;
    let parsed = checked(file, None)?;
    let mut options = options(repository, &settings, Vec::new(), None)?;
    options.session = true;
    if let Ok(store) = open_trace() {
        let _ = store.manifest_run_started(&options.run_id, &parsed.sha256);
    }
    let prepared = warden_manifest::run::prepare(&parsed, &options).map_err(|e| CliError {
        exit: Exit::Code(NO_SETUP),
        error: anyhow!(e),
    })?;
    let work = prepared.work_dir().filter(|_| prepared.ready());
    let Some((work_dir, writable)) = work else {
        let finished = prepared
            .finish()
            .map_err(|e| CliError::failure(anyhow!(e)))?;
        record(&finished.receipt);
        return Err(CliError {
            exit: Exit::Code(NO_SETUP),
            error: anyhow!(
                "run {} could not be set up, nothing ran: {} (receipt {})",
                finished.receipt.run_id,
                finished.receipt.warnings.join("; "),
                finished.dir.join("receipt.json").display()
            ),
        });
    };
    eprintln!(
        "warden: session {session} runs under manifest run {} in {}",
        prepared.run_id(),
        work_dir.display()
    );
    Ok(Governed {
        work_dir,
        writable,
        prepared,
        session: session.clone(),
    })
}

fn record(receipt: &Receipt) {
    if let (Ok(store), Ok(value)) = (open_trace(), serde_json::to_value(receipt)) {
        let _ = store.manifest_run_finished(&receipt.run_id, receipt.status.as_str(), &value);
    }
}

impl Governed {
    /// The session's settings bound by the manifest: its budgets where they are tighter, no
    /// file written by the tools where the manifest lets none be, the network as it grants.
    pub(super) fn govern(&self, settings: &mut warden_config::Settings) {
        let manifest = self.prepared.manifest();
        let budgets = manifest.run.budgets.clone().unwrap_or_default();
        let tighter = |ours: Option<u64>, theirs: Option<u64>| match (ours, theirs) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let b = &mut settings.budgets;
        b.max_tool_calls = tighter(b.max_tool_calls, budgets.tool_calls);
        b.max_tokens = tighter(b.max_tokens, budgets.tokens);
        b.max_wall_seconds = tighter(b.max_wall_seconds, manifest.run.max_duration_seconds);
        if !self.writable {
            settings.permissions.deny.push("Edit(/**)".to_owned());
        }
        // Inside the sandbox, commands write at the manifest's targets: the policy's analysis
        // of a command knows them as writable roots.
        for target in self.prepared.writable_targets() {
            let target = target.display().to_string();
            if !settings.sandbox.filesystem.allow_write.contains(&target) {
                settings.sandbox.filesystem.allow_write.push(target);
            }
        }
        settings.sandbox.network.mode = if self.prepared.egress().is_some() {
            warden_config::NetworkMode::Allowlist
        } else {
            warden_config::NetworkMode::Off
        };
    }

    /// The session's tools: every shell command in the manifest's sandbox and proxy.
    pub(super) fn tools(&self, ctx: warden_tools::ToolContext) -> warden_tools::ToolContext {
        let mut ctx = match self.prepared.request("bash", &[]) {
            Some(template) => ctx.with_sandbox_template(template),
            None => ctx,
        };
        if let Some(egress) = self.prepared.egress() {
            ctx = ctx.with_shared_egress(egress);
        }
        ctx
    }

    /// Ends the run: the session's commands into the receipt, then artifacts, cleanup and the
    /// receipt itself. A quarantined run exits 121 whatever the session did.
    pub(super) fn finish(
        mut self,
        ctx: &warden_tools::ToolContext,
        exit: Exit,
        json: bool,
    ) -> Result<Exit, CliError> {
        let commands: Vec<CommandRun> = ctx
            .commands
            .lock()
            .map(|log| {
                log.iter()
                    .map(|c| CommandRun {
                        sha256: warden_manifest::run::command_sha256(&c.argv),
                        exit_code: c.exit_code,
                        duration_ms: c.duration_ms,
                        timed_out: c.timed_out,
                        background: c.background,
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.prepared.record_commands(commands);
        let finished = self
            .prepared
            .finish()
            .map_err(|e| CliError::failure(anyhow!(e)))?;
        let receipt = &finished.receipt;
        record(receipt);
        // The session names its run: `warden audit` finds the receipt from it.
        if let Ok(store) = open_trace() {
            let _ = store.record_agent_event(
                &self.session,
                "manifest_run",
                &serde_json::json!({
                    "runId": receipt.run_id,
                    "status": receipt.status.as_str(),
                    "path": finished.dir.join("receipt.json"),
                }),
            );
        }
        if json {
            crate::print::json_line(&warden_agent::Event::Receipt {
                run_id: receipt.run_id.clone(),
                status: receipt.status.as_str().to_owned(),
                path: finished.dir.join("receipt.json"),
            });
        } else {
            summary(receipt, &finished.dir);
        }
        if receipt.status == Status::Quarantined {
            return Ok(Exit::Code(QUARANTINED));
        }
        Ok(exit)
    }
}

fn exit_code(receipt: &Receipt) -> u8 {
    match receipt.status {
        Status::Quarantined => QUARANTINED,
        Status::Refused if receipt.commands.is_empty() => NO_SETUP,
        Status::TimedOut => TIMED_OUT,
        _ => receipt
            .exit_code
            .and_then(|c| u8::try_from(c.clamp(0, 255)).ok())
            .unwrap_or(1),
    }
}

fn summary(receipt: &Receipt, dir: &Path) {
    for warning in &receipt.warnings {
        eprintln!("warden: {warning}");
    }
    if receipt.status == Status::Quarantined {
        eprintln!(
            "warden: ALERT: run {} is QUARANTINED: its cleanup failed ({}); its directories are \
             never reused; `warden manifest reap` retries",
            receipt.run_id,
            receipt.cleanup.errors.join("; ")
        );
    }
    let kept = receipt
        .artifacts
        .iter()
        .filter(|a| a.stored.is_some())
        .count();
    eprintln!(
        "warden: run {} {}; {} artifact(s) in {}; receipt {}",
        receipt.run_id,
        receipt.status.as_str(),
        kept,
        dir.join("artifacts").display(),
        dir.join("receipt.json").display()
    );
    if let Some(report) = &receipt.report {
        for s in &report.suggestions {
            eprintln!("warden: report: {s}");
        }
    }
}

/// The credential of a source-control host: from the credentials file of the settings, else
/// `GITHUB_TOKEN` or `GH_TOKEN` for github.com. Read when the run starts, held by the proxy.
fn credentials(file: Option<&str>) -> Credential {
    let path = file.map(home_relative);
    let table: Option<toml::Table> = path.as_ref().and_then(|p| {
        let text = std::fs::read_to_string(p)
            .map_err(|e| eprintln!("warden: credentials file {}: {e}", p.display()))
            .ok()?;
        toml::from_str(&text)
            .map_err(|e| eprintln!("warden: credentials file {}: {e}", p.display()))
            .ok()
    });
    let env: Vec<(String, String)> = ["GITHUB_TOKEN", "GH_TOKEN"]
        .iter()
        .filter_map(|n| std::env::var(n).ok().map(|v| ((*n).to_owned(), v)))
        .collect();
    Box::new(move |host: &str| {
        let from_file = table
            .as_ref()
            .and_then(|t| t.get(host))
            .and_then(|entry| entry.get("token"))
            .and_then(|t| t.as_str())
            .map(str::to_owned);
        from_file.or_else(|| {
            (host == "github.com")
                .then(|| env.first().map(|(_, v)| v.clone()))
                .flatten()
        })
    })
}

/// Asks a person about a capability action: on the terminal when there is one, else through
/// the run's directory, answered by `warden manifest answer`.
fn approver(run_dir: PathBuf) -> Approver {
    let next = Arc::new(std::sync::atomic::AtomicU32::new(1));
    Arc::new(move |ask: &ApprovalAsk| {
        let question = format!(
            "capability {} wants to {} in {} ({} {}{})",
            ask.capability_id, ask.action, ask.repository, ask.method, ask.host, ask.path
        );
        // The terminal itself, not standard input: the command may be reading that.
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()
            .filter(|_| std::io::stderr().is_terminal());
        if let Some(tty) = tty {
            let mut writer = &tty;
            let _ = write!(writer, "warden: {question}. Allow? [y/N] ");
            let _ = writer.flush();
            let mut line = String::new();
            let _ = std::io::BufReader::new(&tty).read_line(&mut line);
            return matches!(line.trim(), "y" | "Y" | "yes");
        }
        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let pending = run_dir.join("approvals");
        if std::fs::create_dir_all(&pending).is_err() {
            return false;
        }
        let asked = json!({
            "request": n,
            "capability": ask.capability_id,
            "action": ask.action,
            "repository": ask.repository,
            "method": ask.method,
            "host": ask.host,
            "path": ask.path,
        });
        if std::fs::write(pending.join(format!("{n}.json")), asked.to_string()).is_err() {
            return false;
        }
        let run = run_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        eprintln!(
            "warden: {question}: waiting for `warden manifest answer {run} {n} --allow` (or --deny)"
        );
        let answer = pending.join(format!("{n}.answer"));
        let deadline = std::time::Instant::now() + ANSWER_WAIT;
        while std::time::Instant::now() < deadline {
            if let Ok(text) = std::fs::read_to_string(&answer) {
                return text.trim() == "allow";
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    })
}

pub(super) fn answer(
    dir: Option<PathBuf>,
    run_id: &str,
    request: u32,
    allow: bool,
) -> Result<Exit, CliError> {
    let valid = run_id.starts_with("run-") && run_id[4..].bytes().all(|b| b.is_ascii_hexdigit());
    if !valid {
        return Err(CliError::usage(anyhow!("{run_id:?} is not a run id")));
    }
    let settings = load_settings(dir)?;
    let pending = runs_dir(&settings)?.join(run_id).join("approvals");
    if !pending.join(format!("{request}.json")).is_file() {
        return Err(CliError::failure(anyhow!(
            "run {run_id} has no request {request} waiting"
        )));
    }
    let word = if allow { "allow" } else { "deny" };
    let tmp = pending.join(format!(".{request}.answer"));
    std::fs::write(&tmp, word)
        .and_then(|()| std::fs::rename(&tmp, pending.join(format!("{request}.answer"))))
        .map_err(|e| CliError::failure(anyhow!("{}: {e}", pending.display())))?;
    eprintln!("warden: {word}ed request {request} of run {run_id}");
    Ok(Exit::Success)
}

pub(super) fn reap(dir: Option<PathBuf>, json: bool) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
    let runs = runs_dir(&settings)?;
    let reaped = warden_manifest::run::reap(&runs);
    // The cgroups of wardens killed before they could remove them.
    let groups = warden_sandbox::reap_cgroups();
    if groups > 0 && !json {
        eprintln!("warden: removed {groups} cgroup(s) left by wardens that were killed");
    }
    if let Ok(store) = open_trace() {
        for r in reaped
            .iter()
            .filter(|r| r.action != ReapAction::ExpiredArtifacts)
        {
            let receipt = std::fs::read_to_string(runs.join(&r.run_id).join("receipt.json"))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or(serde_json::Value::Null);
            let status = if r.errors.is_empty() {
                "reaped"
            } else {
                "quarantined"
            };
            let _ = store.manifest_run_finished(&r.run_id, status, &receipt);
        }
    }
    if json {
        print_json(&reaped)?;
    } else if reaped.is_empty() && groups == 0 {
        eprintln!("warden: nothing to reap in {}", runs.display());
    } else {
        for r in &reaped {
            let errors = if r.errors.is_empty() {
                String::new()
            } else {
                format!(": {}", r.errors.join("; "))
            };
            let action = serde_json::to_value(r.action).unwrap_or_default();
            println!("{} {}{errors}", r.run_id, action.as_str().unwrap_or(""));
        }
    }
    let failed = reaped
        .iter()
        .any(|r| r.action == ReapAction::StillQuarantined);
    Ok(if failed { Exit::Failure } else { Exit::Success })
}
