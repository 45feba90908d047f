//! The `warden` command line: parses arguments, runs the libraries, prints results.
//!
//! [`main`] is the whole program; [`run`] does the work and returns an [`Exit`], mapped to a
//! process exit code in one place. Exit codes: 0 success, 1 a tool or runtime failure, 2 a usage
//! or settings error. Every error is one line on stderr.

mod args;
mod commands;
mod print;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

pub use args::Cli;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Success,
    /// The tool ran and failed, or the runtime could not finish (trace unwritable…).
    Failure,
    /// The command line or the settings were wrong.
    Usage,
    /// A specific status: `warden exec` passes the command's own through.
    Code(u8),
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        match exit {
            Exit::Success => ExitCode::SUCCESS,
            Exit::Failure => ExitCode::from(1),
            Exit::Usage => ExitCode::from(2),
            Exit::Code(code) => ExitCode::from(code),
        }
    }
}

/// An error with the exit it maps to.
#[derive(Debug)]
pub struct CliError {
    pub exit: Exit,
    pub error: anyhow::Error,
}

impl CliError {
    pub(crate) fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::Usage,
            error: error.into(),
        }
    }

    pub(crate) fn failure(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::Failure,
            error: error.into(),
        }
    }
}

/// Parses `std::env::args` and runs; the whole program.
pub fn main() -> ExitCode {
    let mut args = std::env::args_os();
    // The sandbox helper: warden re-executed, single-threaded, before anything else happens.
    match args.nth(1) {
        Some(a) if a == warden_sandbox::HELPER_ARG => warden_sandbox::helper_main(),
        // A probe of `warden sandbox doctor`, run inside a sandbox.
        Some(a) if a == warden_sandbox::PROBE_ARG => warden_sandbox::probe_main(),
        _ => {}
    }
    run_from(std::env::args_os()).into()
}

/// Parses the given arguments and runs, printing errors as one line on stderr.
pub fn run_from<I, T>(args: I) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // `warden exec` reports usage errors with 125, as its contract says; everything else with 2.
    let exec = args
        .iter()
        .skip(1)
        .find(|a| !a.to_string_lossy().starts_with('-'))
        .is_some_and(|a| a == "exec");
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => {
            let exit = args::report_clap_error(&err);
            return if exec && exit == Exit::Usage {
                Exit::Code(125)
            } else {
                exit
            };
        }
    };
    match run(cli) {
        Ok(exit) => exit,
        Err(err) => {
            eprintln!("warden: error: {}", one_line(&err.error));
            err.exit
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Exit, CliError> {
    commands::dispatch(cli)
}

/// The error and its causes on one line.
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for (i, cause) in error.chain().enumerate() {
        let text = cause.to_string();
        if i > 0 {
            if line.contains(&text) {
                continue;
            }
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line.replace('\n', " ")
}
