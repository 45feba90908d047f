//! The `warden` command line: parses arguments, runs the libraries, prints results.
//!
//! [`main`] is the whole program; [`run`] does the work and returns an [`Exit`], mapped to a
//! process exit code in one place. Exit codes: 0 success, 1 a tool or runtime failure, 2 a usage
//! or settings error. Every error is one line on stderr.

mod args;
mod commands;

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
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        match exit {
            Exit::Success => ExitCode::SUCCESS,
            Exit::Failure => ExitCode::from(1),
            Exit::Usage => ExitCode::from(2),
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
    run_from(std::env::args_os()).into()
}

/// Parses the given arguments and runs, printing errors as one line on stderr.
pub fn run_from<I, T>(args: I) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => return args::report_clap_error(&err),
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
