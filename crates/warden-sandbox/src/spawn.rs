//! The parent side: starts the helper, passes it the plan, reads the command's output under the
//! caps, and collects the helper's status.

use crate::running::running_remove;
use std::io::{Read, Write as _};
use std::os::fd::AsRawFd as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::background::{Piped, Running};
use crate::capture::{Readers, Tail, tail_reader};
use crate::cgroup::Cgroup;
use crate::helper::Status;
use crate::history::Layers;
use crate::placeholder::Placeholders;
use crate::plan::Plan;
use crate::process::Process;
use crate::spare::{Key, Slot, Started};
use crate::sys;
use crate::warm::Warm;

/// The argument that makes the `warden` binary act as the sandbox helper.
pub const HELPER_ARG: &str = "__sandbox-helper";

/// The sandbox could not run the command; nothing ran.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the sandbox could not be established: {0}")]
    Setup(String),
    #[error("cannot start the sandbox helper {}: {source}", helper.display())]
    Helper {
        helper: PathBuf,
        source: std::io::Error,
    },
}

/// Where the command's output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Captured, each stream kept up to the plan's output limit.
    Capture,
    /// Passed through to this process's own streams.
    Inherit,
    /// All three piped, for the caller to speak with the command (an MCP server).
    Pipe,
}

impl Output {
    /// Sets `command`'s standard streams: captured with standard input closed, or this
    /// process's own.
    pub(crate) fn apply(self, command: &mut Command) {
        let (stdin, stdout, stderr) = match self {
            Self::Capture => (Stdio::null(), Stdio::piped(), Stdio::piped()),
            Self::Inherit => (Stdio::inherit(), Stdio::inherit(), Stdio::inherit()),
            Self::Pipe => (Stdio::piped(), Stdio::piped(), Stdio::piped()),
        };
        command.stdin(stdin).stdout(stdout).stderr(stderr);
    }
}

/// How a command ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub exit_code: i32,
    pub signal: Option<i32>,
    #[serde(serialize_with = "lossy")]
    pub stdout: Vec<u8>,
    #[serde(serialize_with = "lossy")]
    pub stderr: Vec<u8>,
    pub duration_ms: u64,
    pub timed_out: bool,
    /// Output beyond the limit was dropped.
    pub truncated: bool,
    pub layers: Vec<String>,
    /// The files copied out of sized directories (see [`Request::collect`](crate::Request)).
    pub collected: Vec<crate::helper::Collected>,
    pub usage: crate::helper::Usage,
    /// How each resource limit was bound: the whole sandbox (a cgroup) or each process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<crate::cgroup::Bound>,
    /// What the command should be told: limits that bind less than the whole sandbox.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What became of the command's changes to git's history where something was kept or left
    /// out (see [`crate::history`]); empty when all of it was brought back.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<String>,
}

fn lossy<S: serde::Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&String::from_utf8_lossy(bytes))
}

/// Runs commands in sandboxes, using `helper` (the `warden` binary) as the helper process.
#[derive(Debug, Clone)]
pub struct Sandbox {
    helper: PathBuf,
    /// The spare helper of a session's sandbox (see [`Sandbox::keep_spare`]).
    spare: Option<Arc<Slot>>,
    /// The warm helper of a session's sandbox (see [`Sandbox::keep_warm`]).
    warm: Option<Arc<Warm>>,
}

impl Sandbox {
    /// A sandbox that runs `helper HELPER_ARG` for each command, handing it the plan on a pipe.
    pub fn new(helper: impl Into<PathBuf>) -> Self {
        Self {
            helper: helper.into(),
            spare: None,
            warm: None,
        }
    }

    /// Keeps a warm helper per sandbox profile (see [`crate::warm`]): the namespaces and the
    /// file system are made once, and each command runs in a cell forked from them with its
    /// own PID and IPC namespaces, its own mount namespace copied from the kept one, its own
    /// cgroups, limits, Landlock ruleset and seccomp filters. Commands whose plans a warm
    /// helper cannot serve run as [`Sandbox::keep_spare`] says. For a long-lived process.
    #[must_use]
    pub fn keep_warm(mut self) -> Self {
        self.warm = Some(Arc::default());
        self.keep_spare()
    }

    /// Ends the helpers this sandbox keeps (the spare, the warm helpers and their spare cells)
    /// once those being made now are made: for the end of a session, so that none is left
    /// half-made when the process exits.
    pub fn close(&self) {
        let _ = crate::spare::on_maker_wait(|| ());
        if let Some(warm) = &self.warm {
            warm.close();
        }
        if let Some(slot) = &self.spare {
            slot.close();
        }
    }

    /// The process id of the warm helper kept now, if there is one.
    pub fn warm_pid(&self) -> Option<u32> {
        self.warm.as_ref().and_then(|w| w.pid())
    }

    /// Starts the next command's helper as soon as a command has ended, so that the next one
    /// finds it waiting in its cgroups (see [`crate::spare`]): for a long-lived process that
    /// runs many commands. The spare of the last clone is ended when it is dropped.
    #[must_use]
    pub fn keep_spare(mut self) -> Self {
        self.spare = Some(Arc::default());
        self
    }

    /// The process id of the spare helper waiting now, if there is one.
    pub fn spare_pid(&self) -> Option<u32> {
        self.spare.as_ref().and_then(|s| s.pid())
    }

    /// Runs `plan`'s command. Standard input is closed (`/dev/null`) when capturing. A plan
    /// with a proxy port gets no way out: use [`Sandbox::run_serving`].
    pub fn run(&self, plan: &Plan, output: Output) -> Result<Outcome, SandboxError> {
        self.run_serving(plan, output, &mut |_| {})
    }

    /// Runs `plan`'s command, handing `serve` the listening socket of its proxy port (inside
    /// its network namespace) before the command starts.
    pub fn run_serving(
        &self,
        plan: &Plan,
        output: Output,
        serve: &mut dyn FnMut(std::net::TcpListener),
    ) -> Result<Outcome, SandboxError> {
        let mut launched = self.launch(plan, output, true)?;
        if let Some(listener) = launched.listener.take() {
            serve(listener);
        }
        let readers = Readers::start(
            std::mem::take(&mut launched.streams),
            plan.limits.output_bytes,
        );
        let mut status = launched.finish();
        let [mut stdout, mut stderr] = readers.join();
        if let (Err(Unfinished::Stale(_)), Some(warm)) = (&status, &self.warm) {
            // The warm helper no longer matches the host, and nothing ran: a new helper runs it.
            warm.forget();
            let mut launched = self.launch(plan, output, false)?;
            let readers = Readers::start(
                std::mem::take(&mut launched.streams),
                plan.limits.output_bytes,
            );
            status = launched.finish();
            [stdout, stderr] = readers.join();
        }
        self.ready_next(plan, output);
        let mut outcome = status.map_err(|e| SandboxError::Setup(e.into_message()))?;
        outcome.truncated = stdout.1 || stderr.1;
        outcome.stdout = stdout.0;
        outcome.stderr = stderr.0;
        Ok(outcome)
    }

    /// Starts `plan`'s command and returns at once, its output collected in the background
    /// (the last `output_bytes` of each stream kept). The command runs until it ends, its
    /// timeout, [`Running::stop`], or until the [`Running`] is dropped.
    ///
    /// The helper dies with the thread that started it: call this from a thread that lives as
    /// long as the command should.
    pub fn start(&self, plan: &Plan) -> Result<Running, SandboxError> {
        self.start_serving(plan, &mut |_| {})
    }

    /// As [`Sandbox::start`], handing `serve` the listening socket of the plan's proxy port.
    pub fn start_serving(
        &self,
        plan: &Plan,
        serve: &mut dyn FnMut(std::net::TcpListener),
    ) -> Result<Running, SandboxError> {
        // Not in a warm helper: a background command may outlive its profile.
        let mut launched = self.launch(plan, Output::Capture, false)?;
        if let Some(listener) = launched.listener.take() {
            serve(listener);
        }
        self.ready_next(plan, Output::Capture);
        let limit = plan
            .limits
            .output_bytes
            .map_or(usize::MAX, |b| usize::try_from(b).unwrap_or(usize::MAX));
        let streams = [Arc::new(Tail::new(limit)), Arc::new(Tail::new(limit))];
        let [stdout, stderr] = std::mem::take(&mut launched.streams);
        let threads = [
            stdout.map(|s| tail_reader(s, &streams[0])),
            stderr.map(|s| tail_reader(s, &streams[1])),
        ];
        Ok(Running {
            launched: Some(launched),
            streams,
            cursors: [0, 0],
            threads,
            ended: None,
        })
    }

    /// Starts `plan`'s command with its standard input, output and error piped to this
    /// process, for a command to be spoken with (an MCP server): it runs until it ends, its
    /// timeout, [`Running::stop`], or until the [`Running`] is dropped. Never a warm or spare
    /// helper. As with [`Sandbox::start`], the helper dies with the thread that started it.
    pub fn start_piped(&self, plan: &Plan) -> Result<Piped, SandboxError> {
        self.start_piped_serving(plan, &mut |_| {})
    }

    /// As [`Sandbox::start_piped`], handing `serve` the listening socket of the plan's proxy
    /// port (the server's only way out, to the hosts its settings allow).
    pub fn start_piped_serving(
        &self,
        plan: &Plan,
        serve: &mut dyn FnMut(std::net::TcpListener),
    ) -> Result<Piped, SandboxError> {
        let mut launched = self.launch(plan, Output::Pipe, false)?;
        if let Some(listener) = launched.listener.take() {
            serve(listener);
        }
        let [stdout, stderr] = std::mem::take(&mut launched.streams);
        let (Some(stdin), Some(stdout), Some(stderr)) = (launched.stdin.take(), stdout, stderr)
        else {
            return Err(SandboxError::Setup(
                "the command's standard streams were not piped".to_owned(),
            ));
        };
        let running = Running {
            launched: Some(launched),
            streams: [Arc::new(Tail::new(0)), Arc::new(Tail::new(0))],
            cursors: [0, 0],
            threads: [None, None],
            ended: None,
        };
        Ok(Piped {
            running,
            stdin,
            stdout,
            stderr,
        })
    }

    /// Has the spare for a command like `plan`'s started, when this sandbox keeps one. After a
    /// command has ended, not while it starts: moving a process into a cgroup holds back every
    /// fork on the machine until an RCU grace period has passed, the starting command's too.
    fn ready_next(&self, plan: &Plan, output: Output) {
        let Some(key) = Key::of(plan, output) else {
            return;
        };
        if let Some(warm) = &self.warm
            && warm.serves(plan)
        {
            warm.request(key);
        } else if let Some(slot) = &self.spare {
            slot.request(&self.helper, key);
        }
    }

    /// Starts the helper with the plan (a warm helper's cell when `warm` and there is one for
    /// it, else the spare when there is one); the caller reads the output and calls `finish`.
    fn launch(&self, plan: &Plan, output: Output, warm: bool) -> Result<Launched, SandboxError> {
        if let Some(kept) = self.warm.as_ref().filter(|_| warm)
            && let Some(cell) = kept.cell(&self.helper, plan, output)
        {
            match hand_over(cell, plan, None, true) {
                Err(Handover::Gone) => kept.forget(),
                Err(Handover::Failed(e)) => return Err(e),
                Ok(launched) => return Ok(launched),
            }
            // The cell or its helper died before it was handed the plan: nothing ran.
        }
        if let Some(slot) = &self.spare
            && let Some(key) = Key::of(plan, output)
            && let Some(spare) = slot.take(&key)
        {
            match hand_over(spare, plan, None, true) {
                Err(Handover::Gone) => {}
                Err(Handover::Failed(e)) => return Err(e),
                Ok(launched) => return Ok(launched),
            }
            // It died before it was handed the plan: nothing ran; a new one runs it.
        }
        let group = limits_group(plan)?;
        // The helper hands the proxy's listening socket back on this pair.
        let bridge = plan
            .proxy_port
            .map(|_| std::os::unix::net::UnixStream::pair())
            .transpose()
            .map_err(|e| SandboxError::Setup(format!("bridge socket: {e}")))?;
        let started = Started::spawn(
            &self.helper,
            group,
            output,
            bridge.as_ref().map(|(_, theirs)| theirs),
        )?;
        let ours = bridge.map(|(ours, _theirs)| ours);
        hand_over(started, plan, ours, false).map_err(|e| match e {
            Handover::Gone => Unfinished::NoStatus.into_setup(),
            Handover::Failed(e) => e,
        })
    }
}

/// Makes what `plan` needs beside the helper, and hands the `started` helper the plan; a
/// `spare` that cannot take it is [`Handover::Gone`] (a new helper's status says why).
fn hand_over(
    started: Started,
    plan: &Plan,
    bridge: Option<std::os::unix::net::UnixStream>,
    spare: bool,
) -> Result<Launched, Handover> {
    let Started {
        mut process,
        stdin,
        streams,
        status,
        plan: plan_pipe,
        group,
    } = started;
    let made = (|| {
        let placeholders = Placeholders::make(&plan.placeholders).map_err(SandboxError::Setup)?;
        let layers =
            Layers::make(&plan.git_repositories, plan.run_as).map_err(SandboxError::Setup)?;
        // An overlay's root is its upper layer's: the command's when it runs as another id.
        for overlay in plan.overlays.iter().filter(|_| plan.run_as.is_some()) {
            std::os::unix::fs::chown(&overlay.upper, plan.run_as, plan.run_as)
                .map_err(|e| SandboxError::Setup(format!("{}: {e}", overlay.upper.display())))?;
        }
        let json = if plan.git_overlays.is_empty() && group.v2_dir().is_none() {
            serde_json::to_string(plan)
        } else {
            let mut sent = plan.clone();
            sent.git_layers = layers.paths();
            sent.into_cgroup = group.v2_dir().is_some();
            serde_json::to_string(&sent)
        }
        .map_err(|e| SandboxError::Setup(e.to_string()))?;
        Ok((placeholders, layers, json))
    })();
    let (placeholders, layers, json) = match made {
        Ok(made) => made,
        Err(e) => {
            // Never handed its plan: ended and reaped here, so that its number is not killed
            // later as a command's (a Ctrl-C), nor left behind.
            process.kill();
            process.wait();
            running_remove(process.id());
            return Err(Handover::Failed(e));
        }
    };
    let started = Instant::now();
    // The helper reads the plan first thing; if it died instead, the status says so.
    let written = (&plan_pipe).write_all(json.as_bytes());
    drop(plan_pipe);
    let mut launched = Launched {
        process,
        stdin,
        streams,
        status,
        started,
        group,
        placeholders,
        layers,
        listener: None,
    };
    if written.is_err() && spare {
        // Gone before its plan: it is reaped and its groups removed with `launched`.
        launched.process.kill();
        launched.process.wait();
        running_remove(launched.process.id());
        return Err(Handover::Gone);
    }
    if let Some(ours) = bridge {
        launched.listener = receive_listener(&ours);
    }
    Ok(launched)
}

/// Why a helper was not handed its plan.
enum Handover {
    /// It had ended already: nothing ran.
    Gone,
    /// What the plan needs could not be made.
    Failed(SandboxError),
}

/// The listening socket the helper sends once its network namespace is up; `None` when it
/// ended first (its status says why) or took too long.
fn receive_listener(socket: &std::os::unix::net::UnixStream) -> Option<std::net::TcpListener> {
    let fd = socket.as_raw_fd();
    if !sys::poll_readable(fd, Some(30_000)).unwrap_or(false) {
        return None;
    }
    sys::recv_fd(fd)
        .ok()
        .flatten()
        .map(std::net::TcpListener::from)
}

/// A helper that was started, with what must live as long as its command.
#[derive(Debug)]
pub(crate) struct Launched {
    pub(crate) process: Process,
    /// Its standard input, where it is piped, until the caller takes it.
    stdin: Option<std::fs::File>,
    /// Its standard output and error, until the caller takes them.
    streams: [Option<std::fs::File>; 2],
    status: std::fs::File,
    pub(crate) started: Instant,
    group: Cgroup,
    placeholders: Placeholders,
    /// The layers of its `.git` overlays, brought back once it has ended.
    layers: Layers,
    /// The proxy bridge's listening socket, until handed to the caller.
    listener: Option<std::net::TcpListener>,
}

impl Launched {
    /// Waits for the helper's status and the helper, then releases the cgroups and placeholders.
    /// The outcome's output is left empty.
    pub(crate) fn finish(mut self) -> Result<Outcome, Unfinished> {
        let mut status_text = String::new();
        let _ = self.status.read_to_string(&mut status_text);
        self.process.wait();
        running_remove(self.process.id());
        let duration_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let status: Status =
            serde_json::from_str(status_text.trim()).map_err(|_| Unfinished::NoStatus)?;
        if let Some(error) = status.error {
            return Err(if status.stale {
                Unfinished::Stale(error)
            } else {
                Unfinished::Failed(error)
            });
        }
        let mut layers = status.layers;
        layers.extend(self.group.holds.iter().map(|c| format!("cgroup-{c}")));
        let mut usage = status.usage;
        let (counted, limits, warnings) = self.group.report();
        usage.counted = counted;
        drop(self.placeholders);
        // The helper reported after its PID 1 was reaped: nothing of the command runs now.
        let history = self.layers.publish();
        Ok(Outcome {
            exit_code: status.exit_code,
            signal: status.signal,
            stdout: Vec::new(),
            stderr: Vec::new(),
            duration_ms,
            timed_out: status.timed_out,
            truncated: false,
            layers,
            collected: status.collected,
            usage,
            limits,
            warnings,
            history,
        })
    }
}

/// Why a helper gave no outcome.
pub(crate) enum Unfinished {
    /// It ended without reporting (killed, or it crashed).
    NoStatus,
    /// It could not build the sandbox; nothing ran.
    Failed(String),
    /// Its warm helper no longer matched the host; nothing ran.
    Stale(String),
}

impl Unfinished {
    fn into_setup(self) -> SandboxError {
        SandboxError::Setup(self.into_message())
    }

    pub(crate) fn into_message(self) -> String {
        match self {
            Self::NoStatus => "the sandbox helper ended without a status".to_owned(),
            Self::Failed(why) | Self::Stale(why) => why,
        }
    }
}

/// The cgroups `plan`'s limits need (see [`crate::cgroup`]).
pub(crate) fn limits_group(plan: &Plan) -> Result<Cgroup, SandboxError> {
    Cgroup::create(&plan.limits).map_err(|e| SandboxError::Setup(format!("resource limits: {e}")))
}
