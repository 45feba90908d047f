//! One module per subcommand.

mod audit;
mod config;
mod context;
mod exec;
mod hooks;
mod manifest;
mod manifest_run;
mod mcp;
mod mcp_form;
mod mcp_import;
mod mcp_login;
mod mcp_serve;
mod policy;
mod repl;
mod run;
mod skills;
mod tool;
mod trace;
mod trust;
mod undo;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use warden_config::{LoadOptions, RawSettings, Settings};

use crate::args::{Cli, Command, ContextCommand, ManifestCommand, SandboxCommand};
use crate::{CliError, Exit};

pub(crate) fn dispatch(cli: Cli) -> Result<Exit, CliError> {
    let Cli {
        dir,
        trust_project,
        allow_home_workspace,
        command,
    } = cli;
    TRUST_PROJECT.store(trust_project, Ordering::Relaxed);
    ALLOW_HOME_WORKSPACE.store(allow_home_workspace, Ordering::Relaxed);
    match command {
        Command::Tool(args) => tool::run(dir, &args),
        Command::Tools(args) => tool::list(dir, &args),
        Command::Mcp(command) => mcp::run(dir, command),
        Command::Hooks(command) => hooks::run(dir, command),
        Command::Audit(args) => audit::run(&args),
        Command::Trace(command) => trace::run(&command),
        Command::Config(command) => config::run(dir, &command),
        Command::Policy(command) => policy::run(dir, command),
        Command::Exec(args) => exec::run(dir, &args),
        Command::Undo(args) => undo::run(&args),
        Command::Sandbox(SandboxCommand::Doctor) => exec::doctor(dir),
        Command::Run(args) => run::run(
            dir,
            &args.agent,
            args.prompt.as_deref(),
            args.manifest.as_deref(),
        ),
        Command::Resume(args) => run::resume(dir, &args),
        Command::Sessions(args) => run::sessions(&args),
        Command::Compact(args) => run::compact(dir, &args, false),
        Command::Handoff(args) => run::compact(dir, &args, true),
        Command::Skills(command) => skills::run(dir, &command),
        Command::Manifest(ManifestCommand::Run(args)) => manifest_run::run(dir, &args),
        Command::Manifest(ManifestCommand::Reap { json }) => manifest_run::reap(dir, json),
        Command::Manifest(ManifestCommand::Answer {
            run_id,
            request,
            allow,
            deny: _,
        }) => manifest_run::answer(dir, &run_id, request, allow),
        Command::Manifest(command) => manifest::run(command),
        Command::Context(ContextCommand::Show(args)) => context::context_show(dir, &args),
        Command::Trust(args) => trust::trust(dir, &args),
        Command::Untrust(args) => trust::untrust(dir, &args),
    }
}

/// `--trust-project`: every settings load of this command trusts the project.
static TRUST_PROJECT: AtomicBool = AtomicBool::new(false);
/// `--allow-home-workspace`.
static ALLOW_HOME_WORKSPACE: AtomicBool = AtomicBool::new(false);
/// Whether what the project's files could not set was reported already.
static REPORTED: AtomicBool = AtomicBool::new(false);

/// Trusts the project for the rest of this command (the answer "this run only").
/// The exit code of an agent run: 0 done, 3 a budget ran out, 130 interrupted, 1 an error
/// (said on standard error).
pub(crate) fn exit_of(status: warden_agent::Status) -> Exit {
    match status {
        warden_agent::Status::Finished => Exit::Success,
        warden_agent::Status::BudgetExhausted(_) => Exit::Code(3),
        warden_agent::Status::Interrupted => Exit::Code(130),
        warden_agent::Status::Error(why) => {
            eprintln!("warden: error: {why}");
            Exit::Failure
        }
    }
}

pub(crate) fn trust_for_this_command() {
    TRUST_PROJECT.store(true, Ordering::Relaxed);
}

/// The sandbox helper: `warden-sandbox-helper` beside this binary when it is installed (a small
/// binary, faster to start and lighter while the command runs), else this binary itself.
pub(crate) fn sandbox_helper() -> std::io::Result<PathBuf> {
    let warden = std::env::current_exe()?;
    let small = warden.with_file_name("warden-sandbox-helper");
    Ok(if small.is_file() { small } else { warden })
}

/// Loads the settings for the working directory (`-C` or the current one).
pub(crate) fn load_settings(dir: Option<PathBuf>) -> Result<Settings, CliError> {
    load_settings_with(dir, RawSettings::default())
}

/// Loads the settings with a command-line layer, and says on standard error (once per
/// command) what of the project's files was not applied.
pub(crate) fn load_settings_with(
    dir: Option<PathBuf>,
    cli: RawSettings,
) -> Result<Settings, CliError> {
    let settings = load_quietly(dir, cli)?;
    report_trust(&settings);
    Ok(settings)
}

/// Loads the settings for looking at them (`config`, `skills`): a home-directory project root
/// is shown, not refused.
pub(crate) fn load_for_inspection(dir: Option<PathBuf>) -> Result<Settings, CliError> {
    let mut options = options(dir, RawSettings::default())?;
    options.allow_home_workspace = true;
    let settings = warden_config::load(&options).map_err(CliError::usage)?;
    report_trust(&settings);
    Ok(settings)
}

/// Loads the settings and reports nothing: the caller decides (`warden run` may ask first).
pub(crate) fn load_quietly(dir: Option<PathBuf>, cli: RawSettings) -> Result<Settings, CliError> {
    let options = options(dir, cli)?;
    warden_config::load(&options).map_err(CliError::usage)
}

fn options(dir: Option<PathBuf>, cli: RawSettings) -> Result<LoadOptions, CliError> {
    let cwd = match dir {
        Some(dir) => dir,
        None => std::env::current_dir()
            .context("cannot read the current directory")
            .map_err(CliError::failure)?,
    };
    let mut options = LoadOptions::new(cwd);
    options.cli = cli;
    options.trust_project = TRUST_PROJECT.load(Ordering::Relaxed);
    options.allow_home_workspace = ALLOW_HOME_WORKSPACE.load(Ordering::Relaxed);
    Ok(options)
}

/// Says once per command, on standard error, which values of the project's settings files were
/// not applied and why, and how to honour them.
pub(crate) fn report_trust(settings: &Settings) {
    if REPORTED.swap(true, Ordering::Relaxed) {
        return;
    }
    for line in trust::report_lines(settings) {
        eprintln!("{line}");
    }
}

/// Opens the trace store at its default place.
pub(crate) fn open_trace() -> Result<warden_trace::TraceStore, CliError> {
    let path = warden_trace::default_path().map_err(CliError::failure)?;
    warden_trace::TraceStore::open(&path).map_err(CliError::failure)
}

/// Prints a JSON value on one line of stdout.
pub(crate) fn print_json(value: &impl serde::Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string(value)
        .context("cannot serialise output")
        .map_err(CliError::failure)?;
    println!("{text}");
    Ok(())
}
