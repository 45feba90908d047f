//! `warden exec` — a CLI contract: flags, JSON fields and exit codes are stable — and
//! `warden sandbox doctor`.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde_json::json;
use warden_config::{RawSettings, Settings};
use warden_sandbox::{
    Backend, Bwrap, Output, Plan, Request, Sandbox, SandboxError, request_from_settings,
};

use super::{load_settings_with, print_json};
use crate::args::ExecArgs;
use crate::{CliError, Exit};

/// Usage or configuration error.
const USAGE: u8 = 125;
/// The sandbox could not be established; nothing ran.
const NO_SANDBOX: u8 = 126;

fn usage(err: impl Into<anyhow::Error>) -> CliError {
    CliError {
        exit: Exit::Code(USAGE),
        error: err.into(),
    }
}

pub(super) fn run(dir: Option<PathBuf>, args: &ExecArgs) -> Result<Exit, CliError> {
    let workspace = match args.workspace.clone().or(dir) {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(usage)?,
    };
    let workspace = workspace
        .canonicalize()
        .map_err(|e| usage(anyhow!("workspace {}: {e}", workspace.display())))?;
    let mut cli = RawSettings::default();
    for file in &args.settings {
        let text = std::fs::read_to_string(file)
            .map_err(|e| usage(anyhow!("--settings {}: {e}", file.display())))?;
        cli = cli.over(warden_config::parse_str(&text, file).map_err(usage)?);
    }
    let settings = load_settings_with(Some(workspace.clone()), cli).map_err(|e| usage(e.error))?;
    let mut request = request(&settings, &workspace, args)?;
    let backend = backend(args, &settings);
    // The allowlist's only way out: the egress proxy, serving the sandbox's own loopback.
    let egress = egress(&request, backend, &settings, args)?;
    if let Some((egress, _)) = &egress {
        egress.trust(&mut request);
    }
    if args.no_sandbox || backend == "none" {
        return unsandboxed(&settings, &request, args);
    }
    let plan = Plan::new(&request).map_err(|why| refused(&why.0))?;
    if let Some(warning) = warden_sandbox::host_root_warning(&request) {
        eprintln!("warden: warning: {warning}");
    }
    let output = if args.json {
        Output::Capture
    } else {
        Output::Inherit
    };
    let native = native(args)?;
    let bwrap = Bwrap::default();
    let chosen: &dyn Backend = if backend == "bwrap" { &bwrap } else { &native };
    let ran = match &egress {
        Some((egress, _)) => native.run_serving(&plan, output, &mut |listener| {
            if let Err(e) = egress.proxy.serve(listener) {
                eprintln!("warden: the egress proxy cannot serve the sandbox: {e}");
            }
        }),
        None => chosen.run(&plan, output),
    };
    native.close();
    let chosen_name = if egress.is_some() {
        "native"
    } else {
        chosen.name()
    };
    let (used, outcome) = match ran {
        Ok(outcome) => (chosen_name, outcome),
        // Strict by default; with fail_if_unavailable = false, bubblewrap may stand in, never
        // no sandbox at all.
        Err(SandboxError::Setup(why))
            if backend == "native"
                && egress.is_none()
                && !settings.sandbox.fail_if_unavailable
                && bwrap.available() =>
        {
            eprintln!("warden: the native sandbox is unavailable ({why}); using bwrap");
            match bwrap.run(&plan, output) {
                Ok(outcome) => ("bwrap", outcome),
                Err(err) => return Err(refused(&err.to_string())),
            }
        }
        Err(SandboxError::Setup(why)) => return Err(refused(&why)),
        Err(err) => return Err(refused(&err.to_string())),
    };
    let network = egress.as_ref().map(|(egress, session)| {
        let counts = egress.proxy.counts();
        json!({"mode": "allowlist", "allowed": counts.allowed, "denied": counts.denied, "session": session.as_str()})
    });
    if let Some((egress, session)) = &egress
        && !args.json
        && egress.proxy.counts().denied > 0
    {
        let counts = egress.proxy.counts();
        eprintln!(
            "warden: network: {} connections allowed, {} refused (see `warden trace network {session}`)",
            counts.allowed, counts.denied
        );
    }
    if args.json {
        let sandbox = json!({
            "backend": used,
            "profile": request.profile.as_str(),
            "layers": outcome.layers,
            "limits": outcome.limits,
            "unmaskedSecrets": plan.unmasked,
        });
        print_json(&result(args, &workspace, &outcome, &sandbox, network))?;
    }
    report_unmasked(&plan, args, &workspace);
    report_history(&outcome, args);
    Ok(Exit::Code(
        u8::try_from(outcome.exit_code.clamp(0, 255)).unwrap_or(1),
    ))
}

/// The native sandbox; a warm one with `--warm`.
fn native(args: &ExecArgs) -> Result<Sandbox, CliError> {
    let helper = super::sandbox_helper().map_err(|e| {
        refused(&format!(
            "cannot find the warden binary for the helper: {e}"
        ))
    })?;
    let sandbox = Sandbox::new(helper);
    Ok(if args.warm {
        sandbox.keep_warm()
    } else {
        sandbox
    })
}

/// The flag, else the settings' `[sandbox] backend` (`auto` is the native sandbox, with
/// bubblewrap standing in only where `fail_if_unavailable = false`).
fn backend<'a>(args: &'a ExecArgs, settings: &warden_config::Settings) -> &'a str {
    match args.backend.as_deref() {
        Some(flag) => flag,
        None => match settings.sandbox.backend {
            warden_config::Backend::Bwrap => "bwrap",
            warden_config::Backend::Auto | warden_config::Backend::Native => "native",
        },
    }
}

/// What was kept or left out of the command's changes to git's history: on standard error
/// unless the output is JSON (where `sandbox.history` says). Limits that bind less than the
/// whole sandbox: on standard error always.
fn report_history(outcome: &warden_sandbox::Outcome, args: &ExecArgs) {
    for warning in &outcome.warnings {
        eprintln!("warden: warning: {warning}");
    }
    if !args.json {
        for note in &outcome.history {
            eprintln!("warden: git history: {note}");
        }
    }
}

/// Secrets the user unmasked that the command could read: in the trace (every read of one is),
/// and said on standard error unless the output is JSON (where `sandbox.unmaskedSecrets` says).
fn report_unmasked(plan: &Plan, args: &ExecArgs, workspace: &Path) {
    if !plan.unmasked.is_empty() {
        // Every read of an unmasked secret is in the trace: this command could read these.
        let event = json!({
            "command": args.command,
            "workspace": workspace,
            "unmaskedSecrets": plan.unmasked,
        });
        if let Ok(store) = super::open_trace() {
            let _ = store.record_agent_event(
                &warden_protocol::SessionId::new(),
                "unmasked_secrets_readable",
                &event,
            );
        }
    }
    if !args.json && !plan.unmasked.is_empty() {
        eprintln!(
            "warden: secrets you unmasked were readable to the command: {}",
            plan.unmasked
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// The egress proxy of an allowlist run, and the session its connections are traced under.
fn egress(
    request: &Request,
    backend: &str,
    settings: &Settings,
    args: &ExecArgs,
) -> Result<Option<(warden_tools::egress::Egress, warden_protocol::SessionId)>, CliError> {
    if request.proxy_port.is_none() || request.network || backend == "bwrap" || args.no_sandbox {
        return Ok(None);
    }
    let session = warden_protocol::SessionId::new();
    let sink = warden_tools::egress::trace_sink(session.clone());
    let proxy =
        warden_tools::egress::start(settings, &args.allow_host, &args.deny_host, sink, None)
            .map_err(|e| usage(anyhow!(e)))?;
    Ok(Some((proxy, session)))
}

/// The `--json` result.
fn result(
    args: &ExecArgs,
    workspace: &Path,
    outcome: &warden_sandbox::Outcome,
    sandbox: &serde_json::Value,
    network: Option<serde_json::Value>,
) -> serde_json::Value {
    let mut value = json!({
        "cmd": args.command,
        "cwd": workspace,
        "exitCode": outcome.exit_code,
        "signal": outcome.signal,
        "stdout": String::from_utf8_lossy(&outcome.stdout),
        "stderr": String::from_utf8_lossy(&outcome.stderr),
        "durationMs": outcome.duration_ms,
        "timedOut": outcome.timed_out,
        "truncated": outcome.truncated,
        "sandbox": sandbox.clone(),
    });
    if let Some(network) = network {
        value["network"] = network;
    }
    if !outcome.history.is_empty() {
        value["sandbox"]["history"] = json!(outcome.history);
    }
    if !outcome.warnings.is_empty() {
        value["sandbox"]["warnings"] = json!(outcome.warnings);
    }
    value["usage"] = json!(outcome.usage);
    value
}

fn refused(why: &str) -> CliError {
    CliError {
        exit: Exit::Code(NO_SANDBOX),
        error: anyhow!("the sandbox could not be established, nothing ran: {why}"),
    }
}

/// The one secret list, as the file tools apply it, for the sandbox's walk (with the index of
/// toolchain directories in warden's data directory).
pub(super) fn secret_mask(
    settings: &Settings,
) -> Result<warden_sandbox::MaskRule, warden_policy::PatternError> {
    let secrets = warden_policy::Secrets::from_settings(settings)?;
    let mut mask =
        warden_sandbox::MaskRule::new(std::sync::Arc::new(warden_tools::SecretMask(secrets)));
    if let Some(index) = settings.dirs.toolchain_index() {
        mask = mask.with_index(index);
    }
    Ok(mask)
}

fn request(settings: &Settings, workspace: &Path, args: &ExecArgs) -> Result<Request, CliError> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| usage(anyhow!("no program given after --")))?;
    let mut request = request_from_settings(settings, workspace, program, rest, &args.env)
        .map_err(|e| usage(anyhow!(e)))?;
    request.mask = secret_mask(settings).map_err(usage)?;
    if let Some(name) = &args.profile {
        let profile: warden_config::Profile = name.parse().map_err(|e| usage(anyhow!("{e}")))?;
        request.profile = profile.into();
    }
    let absolute = |p: &PathBuf| {
        if p.is_absolute() {
            p.clone()
        } else {
            workspace.join(p)
        }
    };
    for spec in &args.mounts {
        let mut parts = spec.split(':');
        let (Some(src), Some(dst)) = (parts.next(), parts.next()) else {
            return Err(usage(anyhow!("--mount {spec:?}: expected SRC:DST[:ro|rw]")));
        };
        let rw = match parts.next() {
            None | Some("ro") => false,
            Some("rw") => true,
            Some(other) => {
                return Err(usage(anyhow!(
                    "--mount {spec:?}: {other:?} is neither ro nor rw"
                )));
            }
        };
        request
            .mounts
            .push((absolute(&PathBuf::from(src)), PathBuf::from(dst), rw));
    }
    request
        .deny_read
        .extend(args.deny_read.iter().map(absolute));
    request
        .deny_write
        .extend(args.deny_write.iter().map(absolute));
    request
        .allow_read
        .extend(args.allow_read.iter().map(absolute));
    request
        .allow_write
        .extend(args.allow_write.iter().map(absolute));
    if let Some(net) = &args.net {
        request.network = net == "on";
        request.proxy_port = None;
        // The variables that point a command at the proxy: those `proxy_env` sets.
        let proxy_names = warden_sandbox::proxy_env(warden_sandbox::PROXY_PORT);
        request
            .env
            .retain(|(name, _)| !proxy_names.iter().any(|(n, _)| n == name));
        if net == "allowlist" {
            request.proxy_port = Some(warden_sandbox::PROXY_PORT);
            request
                .env
                .extend(warden_sandbox::proxy_env(warden_sandbox::PROXY_PORT));
        }
    }
    let limits = &mut request.limits;
    if let Some(seconds) = args.timeout {
        limits.timeout_ms = Some(seconds.saturating_mul(1000));
    }
    limits.memory_mb = args.memory.or(limits.memory_mb);
    limits.pids = args.pids.or(limits.pids);
    limits.cpu_seconds = args.cpu_seconds;
    limits.cpus = args.cpus;
    limits.disk_mb = args.disk.or(limits.disk_mb);
    limits.output_bytes = args.output_limit.or(limits.output_bytes);
    Ok(request)
}

fn unsandboxed(settings: &Settings, request: &Request, args: &ExecArgs) -> Result<Exit, CliError> {
    if settings.org.require_sandbox {
        return Err(usage(anyhow!(
            "the organisation requires a sandbox (org.require_sandbox): --no-sandbox is refused"
        )));
    }
    if !args.no_sandbox {
        return Err(usage(anyhow!(
            "--backend none needs --no-sandbox, to say it knowingly"
        )));
    }
    eprintln!(
        "warden: warning: running WITHOUT a sandbox: nothing limits what this command reads, writes or reaches"
    );
    let mut command = std::process::Command::new(&request.program);
    command
        .args(&request.args)
        .current_dir(&request.workspace)
        .env_clear()
        .envs(request.env.iter().cloned());
    let status = command
        .status()
        .map_err(|e| usage(anyhow!("{}: {e}", request.program)))?;
    Ok(Exit::Code(
        u8::try_from(status.code().unwrap_or(1).clamp(0, 255)).unwrap_or(1),
    ))
}

/// `warden sandbox doctor`: runs a trivial command through the sandbox and reports each layer.
pub(super) fn doctor(dir: Option<PathBuf>) -> Result<Exit, CliError> {
    // Landlock is required where the settings say so; the secret list is the settings' own.
    let settings = super::load_for_inspection(dir).ok();
    let require_landlock = settings
        .as_ref()
        .is_some_and(|s| s.sandbox.require_landlock);
    let secrets = match &settings {
        Some(settings) => warden_policy::Secrets::from_settings(settings),
        None => warden_policy::Secrets::from_settings(&Settings::defaults(
            std::env::current_dir().unwrap_or_default(),
        )),
    }
    .map_err(usage)?;
    let mask =
        warden_sandbox::MaskRule::new(std::sync::Arc::new(warden_tools::SecretMask(secrets)));
    // A new directory of a random name, only ours (mode 0700), gone when the checks are.
    let scratch = tempfile::Builder::new()
        .prefix("warden-doctor-")
        .tempdir()
        .map_err(|e| refused(&format!("a directory for the checks: {e}")))?;
    let helper = super::sandbox_helper().map_err(|e| refused(&e.to_string()))?;
    let probe = std::env::current_exe().map_err(|e| refused(&e.to_string()))?;
    let identity = settings.as_ref().map_or_else(
        warden_sandbox::RootIdentity::default,
        warden_sandbox::root_identity,
    );
    let fallback = settings
        .as_ref()
        .map_or_else(warden_sandbox::Fallback::default, |s| {
            warden_sandbox::Fallback::from_setting(s.sandbox.limits.fallback)
        });
    let mut checks =
        warden_sandbox::check_layers(&helper, &probe, scratch.path(), &mask, identity, fallback);
    for check in &mut checks {
        check.required |= require_landlock && check.layer == "landlock";
    }
    drop(scratch);
    let mut missing_required = false;
    for check in &checks {
        let state = if check.works { "works" } else { "missing" };
        let optional = if check.works || check.required {
            ""
        } else {
            " (optional: the other layers stand without it)"
        };
        println!("{state:<8} {:<20} {}{optional}", check.layer, check.detail);
        missing_required |= check.required && !check.works;
    }
    Ok(if missing_required {
        Exit::Failure
    } else {
        Exit::Success
    })
}
