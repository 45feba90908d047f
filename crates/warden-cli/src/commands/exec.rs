//! `warden exec` — a CLI contract: flags, JSON fields and exit codes are stable — and
//! `warden sandbox doctor`.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde_json::json;
use warden_config::{RawSettings, Settings};
use warden_sandbox::{Limits, Output, Plan, Profile, Request, Sandbox, SandboxError};

use super::{load_settings_with, print_json};
use crate::args::ExecArgs;
use crate::{CliError, Exit};

/// Usage or configuration error.
const USAGE: u8 = 125;
/// The sandbox could not be established; nothing ran.
const NO_SANDBOX: u8 = 126;

/// Toolchain directories under `$HOME` a command may read.
const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".npm",
    ".nvm",
    ".pyenv",
    ".local/bin",
    ".local/lib",
    ".bun",
    ".deno",
    "go/bin",
    ".volta",
];

/// Secrets under `$HOME` hidden even where a mount would show them.
const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".netrc",
    ".docker",
    ".kube",
    ".git-credentials",
];

/// Paths kept read-only inside the workspace.
const WORKSPACE_PROTECTED: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".warden",
    ".vscode",
    ".idea",
    ".husky",
    ".envrc",
];

/// Environment names that never pass unless named with `--env`.
const SECRET_WORDS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"];

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
    let request = request(&settings, &workspace, args)?;
    let backend = args.backend.as_deref().unwrap_or("native");
    if args.no_sandbox || backend == "none" {
        return unsandboxed(&settings, &request, args);
    }
    if backend == "bwrap" {
        return Err(refused(
            "the bwrap backend is not built yet; use --backend native",
        ));
    }
    let plan = Plan::new(&request);
    let helper = std::env::current_exe().map_err(|e| {
        refused(&format!(
            "cannot find the warden binary for the helper: {e}"
        ))
    })?;
    let output = if args.json {
        Output::Capture
    } else {
        Output::Inherit
    };
    let outcome = match Sandbox::new(helper).run(&plan, output) {
        Ok(outcome) => outcome,
        Err(SandboxError::Setup(why)) => return Err(refused(&why)),
        Err(err) => return Err(refused(&err.to_string())),
    };
    if args.json {
        print_json(&json!({
            "cmd": args.command,
            "cwd": workspace,
            "exitCode": outcome.exit_code,
            "signal": outcome.signal,
            "stdout": String::from_utf8_lossy(&outcome.stdout),
            "stderr": String::from_utf8_lossy(&outcome.stderr),
            "durationMs": outcome.duration_ms,
            "timedOut": outcome.timed_out,
            "truncated": outcome.truncated,
            "sandbox": {"backend": "native", "profile": request.profile.as_str(), "layers": outcome.layers},
        }))?;
    }
    Ok(Exit::Code(
        u8::try_from(outcome.exit_code.clamp(0, 255)).unwrap_or(1),
    ))
}

fn refused(why: &str) -> CliError {
    CliError {
        exit: Exit::Code(NO_SANDBOX),
        error: anyhow!("the sandbox could not be established, nothing ran: {why}"),
    }
}

fn request(settings: &Settings, workspace: &Path, args: &ExecArgs) -> Result<Request, CliError> {
    let sandbox = &settings.sandbox;
    let profile = match args.profile.as_deref().unwrap_or(&sandbox.profile) {
        "read-only" => Profile::ReadOnly,
        "workspace-write" => Profile::WorkspaceWrite,
        "full-isolated" => Profile::FullIsolated,
        other => {
            return Err(usage(anyhow!(
                "unknown profile {other:?}: expected read-only, workspace-write or full-isolated"
            )));
        }
    };
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    let absolute = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            workspace.join(p)
        }
    };
    let literal = |s: &String| !s.contains(['*', '?', '[']);
    let from_settings = |list: &[String]| -> Vec<PathBuf> {
        list.iter()
            .filter(|s| literal(s))
            .map(|s| expand(s, workspace, &home))
            .collect()
    };
    let mut mounts = Vec::new();
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
        mounts.push((absolute(Path::new(src)), PathBuf::from(dst), rw));
    }
    let mut deny_read: Vec<PathBuf> = HOME_SECRETS.iter().map(|s| home.join(s)).collect();
    deny_read.extend(from_settings(&sandbox.filesystem.deny_read));
    deny_read.extend(args.deny_read.iter().map(|p| absolute(p)));
    let mut deny_write: Vec<PathBuf> = WORKSPACE_PROTECTED
        .iter()
        .map(|s| workspace.join(s))
        .collect();
    deny_write.extend(from_settings(&sandbox.filesystem.deny_write));
    deny_write.extend(args.deny_write.iter().map(|p| absolute(p)));
    let mut allow_read = from_settings(&sandbox.filesystem.allow_read);
    allow_read.extend(args.allow_read.iter().map(|p| absolute(p)));
    let mut allow_write = from_settings(&sandbox.filesystem.allow_write);
    allow_write.extend(args.allow_write.iter().map(|p| absolute(p)));
    let network = match args.net.as_deref() {
        Some(net) => net == "on",
        None => sandbox.network.mode == "on",
    };
    let limits = &sandbox.limits;
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| usage(anyhow!("no program given after --")))?;
    Ok(Request {
        program: program.clone(),
        args: rest.to_vec(),
        workspace: workspace.to_path_buf(),
        profile,
        allow_read,
        allow_write,
        deny_read,
        deny_write,
        mounts,
        network,
        env: environment(settings, &args.env, &home),
        home_allow: HOME_TOOLCHAINS.iter().map(|s| home.join(s)).collect(),
        home,
        limits: Limits {
            timeout_ms: Some(
                args.timeout
                    .unwrap_or(limits.timeout_seconds)
                    .saturating_mul(1000),
            ),
            memory_mb: Some(args.memory.unwrap_or(limits.memory_mb)),
            pids: Some(args.pids.unwrap_or(limits.pids)),
            cpu_seconds: args.cpu_seconds,
            cpus: args.cpus,
            disk_mb: Some(args.disk.unwrap_or(limits.disk_mb)),
            output_bytes: Some(args.output_limit.unwrap_or(limits.output_bytes)),
        },
    })
}

fn expand(entry: &str, workspace: &Path, home: &Path) -> PathBuf {
    if let Some(rest) = entry.strip_prefix("~/") {
        home.join(rest)
    } else if let Some(rest) = entry.strip_prefix("//") {
        Path::new("/").join(rest)
    } else {
        workspace.join(entry.trim_start_matches('/'))
    }
}

/// The command's environment: the allowlist's values from here, never a secret-looking name
/// unless named with `--env`, then what `--env` and `[sandbox.env] set` give.
fn environment(settings: &Settings, flags: &[String], home: &Path) -> Vec<(String, String)> {
    let secret = |name: &str| {
        let upper = name.to_ascii_uppercase();
        SECRET_WORDS.iter().any(|w| upper.contains(w))
    };
    let mut names: Vec<String> = settings.sandbox.env.allow.clone();
    names.extend(["LOGNAME", "SHELL"].map(str::to_owned));
    names.extend(
        std::env::vars()
            .map(|(k, _)| k)
            .filter(|k| k.starts_with("LC_")),
    );
    let mut env: Vec<(String, String)> = Vec::new();
    let set = |env: &mut Vec<(String, String)>, name: &str, value: String| {
        env.retain(|(k, _)| k != name);
        env.push((name.to_owned(), value));
    };
    for name in names.iter().filter(|n| !secret(n)) {
        if let Ok(value) = std::env::var(name) {
            set(&mut env, name, value);
        }
    }
    for (name, value) in &settings.sandbox.env.set {
        set(&mut env, name, value.clone());
    }
    for flag in flags {
        match flag.split_once('=') {
            Some((name, value)) => set(&mut env, name, value.to_owned()),
            None => {
                if let Ok(value) = std::env::var(flag) {
                    set(&mut env, flag, value);
                }
            }
        }
    }
    set(&mut env, "HOME", home.display().to_string());
    set(&mut env, "TMPDIR", "/tmp".to_owned());
    if !env.iter().any(|(k, _)| k == "PATH") {
        set(&mut env, "PATH", "/usr/local/bin:/usr/bin:/bin".to_owned());
    }
    env
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
pub(super) fn doctor() -> Result<Exit, CliError> {
    let dir = std::env::temp_dir();
    let request = Request {
        program: "true".to_owned(),
        workspace: dir.canonicalize().unwrap_or(dir),
        home: PathBuf::from("/nonexistent"),
        env: vec![("PATH".to_owned(), "/usr/bin:/bin".to_owned())],
        limits: Limits {
            timeout_ms: Some(10_000),
            pids: Some(64),
            ..Limits::default()
        },
        ..Request::default()
    };
    let helper = std::env::current_exe().map_err(|e| refused(&e.to_string()))?;
    match Sandbox::new(helper).run(&Plan::new(&request), Output::Capture) {
        Ok(outcome) => {
            for layer in &outcome.layers {
                println!("ok       {layer}");
            }
            println!("missing  landlock (not used by this version)");
            Ok(Exit::Success)
        }
        Err(err) => {
            println!("FAILED   {err}");
            Ok(Exit::Code(NO_SANDBOX))
        }
    }
}
