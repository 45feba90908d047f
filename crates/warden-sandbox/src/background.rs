//! Commands that outlive the call that started them: in the background, their output kept
//! ([`Running`]), or spoken with over their piped streams ([`Piped`]).

use std::sync::Arc;

use crate::capture::Tail;
use crate::spawn::{Launched, Outcome, SandboxError, Unfinished};

/// A command started with its standard streams piped ([`Sandbox::start_piped`]): the
/// [`Running`] ends it when dropped.
#[derive(Debug)]
pub struct Piped {
    pub running: Running,
    /// Its standard input, to write to.
    pub stdin: std::fs::File,
    /// Its standard output and error, to read.
    pub stdout: std::fs::File,
    pub stderr: std::fs::File,
}

/// A command running in the background (a dev server).
#[derive(Debug)]
pub struct Running {
    pub(crate) launched: Option<Launched>,
    pub(crate) streams: [Arc<Tail>; 2],
    /// How much of each stream was handed out by [`Running::output`].
    pub(crate) cursors: [u64; 2],
    pub(crate) threads: [Option<std::thread::JoinHandle<()>>; 2],
    pub(crate) ended: Option<Result<Outcome, String>>,
}

/// New output of a background command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Some output was dropped before it could be read (more came than the limit keeps).
    pub lost: bool,
}

impl Running {
    /// The output since the last call.
    pub fn output(&mut self) -> NewOutput {
        let (stdout, lost_out) = self.streams[0].since(&mut self.cursors[0]);
        let (stderr, lost_err) = self.streams[1].since(&mut self.cursors[1]);
        NewOutput {
            stdout,
            stderr,
            lost: lost_out || lost_err,
        }
    }

    /// How it ended, once it has; `None` while it runs.
    pub fn ended(&mut self) -> Option<Result<Outcome, SandboxError>> {
        if self.ended.is_none() {
            let launched = self.launched.as_mut()?;
            if !launched.process.ended() {
                return None;
            }
            self.collect(false);
        }
        self.result()
    }

    /// Kills it and everything it started, and says how it ended.
    pub fn stop(&mut self) -> Result<Outcome, SandboxError> {
        if self.ended.is_none() {
            if let Some(launched) = self.launched.as_mut() {
                // The command is PID 1 of its namespace and dies with the helper (its parent-death
                // signal), and every other process in the namespace with it.
                launched.process.kill();
            }
            self.collect(true);
        }
        self.result().unwrap_or_else(|| {
            Err(SandboxError::Setup(
                "the background command is gone".to_owned(),
            ))
        })
    }

    fn collect(&mut self, killed: bool) {
        let Some(launched) = self.launched.take() else {
            return;
        };
        let killed_at = launched.started.elapsed();
        let mut outcome = match launched.finish() {
            Ok(outcome) => Ok(outcome),
            Err(Unfinished::NoStatus) if !killed => Err(Unfinished::NoStatus.into_message()),
            Err(Unfinished::Failed(why) | Unfinished::Stale(why)) => Err(why),
            // Killed by `stop`: the helper had no chance to report.
            Err(Unfinished::NoStatus) => Ok(Outcome {
                exit_code: 128 + libc::SIGKILL,
                signal: Some(libc::SIGKILL),
                stdout: Vec::new(),
                stderr: Vec::new(),
                duration_ms: u64::try_from(killed_at.as_millis()).unwrap_or(u64::MAX),
                timed_out: false,
                truncated: false,
                layers: Vec::new(),
                collected: Vec::new(),
                usage: crate::helper::Usage::default(),
                limits: Vec::new(),
                warnings: Vec::new(),
                history: vec![
                    "the command was stopped: what it changed in .git was not brought back"
                        .to_owned(),
                ],
            }),
        };
        for thread in self.threads.iter_mut().filter_map(Option::take) {
            let _ = thread.join();
        }
        if let Ok(outcome) = outcome.as_mut() {
            outcome.truncated = self.streams.iter().any(|s| s.dropped() > 0);
        }
        self.ended = Some(outcome);
    }

    fn result(&self) -> Option<Result<Outcome, SandboxError>> {
        self.ended.clone().map(|r| r.map_err(SandboxError::Setup))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.ended.is_none() && self.launched.is_some() {
            let _ = self.stop();
        }
    }
}
