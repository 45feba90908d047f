//! `warden manifest run`, `reap` and `answer`: a command run under a manifest, from preflight
//! to receipt; the reaper of runs whose lease ran out; a person's answer to a capability
//! action waiting for approval.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use serde_json::json;
use warden_manifest::run::{
    ApprovalAsk, Approver, Credential, Options, ReapAction, Receipt, Status,
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

pub(super) fn run(dir: Option<PathBuf>, args: &ManifestRunArgs) -> Result<Exit, CliError> {
    let refused = |e: anyhow::Error| CliError {
        exit: Exit::Code(REFUSED),
        error: e,
    };
    let repository = match dir {
        Some(d) => d,
        None => std::env::current_dir().map_err(|e| refused(anyhow!(e)))?,
    };
    let settings = load_settings(Some(repository.clone())).map_err(|e| refused(e.error))?;
    let org = org_policy(args.org_policy.as_deref()).map_err(|e| refused(e.error))?;
    let parsed = match read(&args.file).map_err(|e| refused(e.error))? {
        Ok(parsed) => parsed,
        Err(problem) => {
            return Err(refused(anyhow!(
                "{}: {} (line {}): nothing ran",
                args.file.display(),
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
                args.file.display(),
                p.line.unwrap_or(0),
                p.path,
                p.reason
            );
        }
        return Err(refused(anyhow!(
            "{}: {} problem(s); nothing ran (see `warden manifest validate`)",
            args.file.display(),
            found.len()
        )));
    }
    let run_id = warden_manifest::run::new_run_id();
    let runs = runs_dir(&settings)?;
    let store = open_trace().ok();
    if let Some(store) = &store {
        let _ = store.manifest_run_started(&run_id, &parsed.sha256);
    }
    let session: warden_protocol::SessionId = run_id
        .parse()
        .map_err(|e| CliError::failure(anyhow!("{e}")))?;
    let base = warden_sandbox::request_from_settings(&settings, &repository, "true", &[], &[])
        .map_err(|e| refused(anyhow!(e)))?;
    let options = Options {
        run_id: run_id.clone(),
        command: args.command.clone(),
        repository,
        runs_dir: runs.clone(),
        helper: super::sandbox_helper().map_err(CliError::failure)?,
        report_only: args.report_only,
        lease_seconds: args
            .lease_seconds
            .unwrap_or(settings.manifest.lease_seconds),
        credential: credentials(settings.manifest.credentials_file.as_deref()),
        approver: Some(approver(runs.join(&run_id))),
        sink: warden_tools::egress::trace_sink(session),
        environment: std::env::vars().collect(),
        home: base.home,
        home_allow: base.home_allow,
        capture: args.json,
        session: false,
    };
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
    } else if reaped.is_empty() {
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
