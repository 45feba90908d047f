//! The parent side: starts the helper, passes it the plan, reads the command's output under the
//! caps, and collects the helper's status.

use std::io::{Read, Write as _};
use std::os::fd::AsRawFd as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Serialize;

use crate::cgroup::Cgroup;
use crate::helper::Status;
use crate::placeholder::Placeholders;
use crate::plan::Plan;
use crate::sys;

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
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
}

fn lossy<S: serde::Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&String::from_utf8_lossy(bytes))
}

/// Runs commands in sandboxes, using `helper` (the `warden` binary) as the helper process.
#[derive(Debug, Clone)]
pub struct Sandbox {
    helper: PathBuf,
}

impl Sandbox {
    /// A sandbox that runs `helper HELPER_ARG` for each command, handing it the plan on a pipe.
    pub fn new(helper: impl Into<PathBuf>) -> Self {
        Self {
            helper: helper.into(),
        }
    }

    /// Runs `plan`'s command. Standard input is closed (`/dev/null`) when capturing.
    pub fn run(&self, plan: &Plan, output: Output) -> Result<Outcome, SandboxError> {
        let (group, procs) = limits_group(plan)?;
        let placeholders = Placeholders::make(&plan.placeholders).map_err(SandboxError::Setup)?;
        let json = serde_json::to_string(plan).map_err(|e| SandboxError::Setup(e.to_string()))?;
        let (status_read, status_write) =
            sys::pipe().map_err(|e| SandboxError::Setup(format!("status pipe: {e}")))?;
        let (plan_read, plan_write) =
            sys::pipe().map_err(|e| SandboxError::Setup(format!("plan pipe: {e}")))?;
        let mut command = Command::new(&self.helper);
        command.arg(HELPER_ARG).env_clear();
        match output {
            Output::Capture => command
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
            Output::Inherit => command
                .stdin(Stdio::inherit())
                .stdout(Stdio::inherit())
                .stderr(Stdio::inherit()),
        };
        let raw = [status_write.as_raw_fd(), plan_read.as_raw_fd()];
        sys::before_exec(&mut command, move || {
            for file in &procs {
                sys::join_cgroup(file)?;
            }
            sys::place_fds(&[(raw[0], 3), (raw[1], 4)])
        });
        let started = Instant::now();
        let mut child = command.spawn().map_err(|source| SandboxError::Helper {
            helper: self.helper.clone(),
            source,
        })?;
        drop(status_write);
        drop(plan_read);
        // The helper reads the plan first thing; if it died instead, the status says so.
        let _ = std::fs::File::from(plan_write).write_all(json.as_bytes());
        let readers = Readers::start(&mut child, plan.limits.output_bytes);
        let mut status_text = String::new();
        let _ = std::fs::File::from(status_read).read_to_string(&mut status_text);
        let _ = child.wait();
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let [stdout, stderr] = readers.join();
        let status: Status = serde_json::from_str(status_text.trim()).map_err(|_| {
            SandboxError::Setup("the sandbox helper ended without a status".to_owned())
        })?;
        if let Some(error) = status.error {
            return Err(SandboxError::Setup(error));
        }
        let mut layers = status.layers;
        layers.extend(group.holds.iter().map(|c| format!("cgroup-{c}")));
        drop(group);
        drop(placeholders);
        Ok(Outcome {
            exit_code: status.exit_code,
            signal: status.signal,
            truncated: stdout.1 || stderr.1,
            stdout: stdout.0,
            stderr: stderr.0,
            duration_ms,
            timed_out: status.timed_out,
            layers,
        })
    }
}

/// The threads reading a child's captured stdout and stderr.
pub(crate) struct Readers([Option<Reading>; 2]);

/// A thread reading one stream: the bytes kept, and whether more came than were kept.
type Reading = std::thread::JoinHandle<(Vec<u8>, bool)>;

impl Readers {
    /// Starts reading whichever of `child`'s stdout and stderr are piped, keeping at most
    /// `output_bytes` of each.
    pub(crate) fn start(child: &mut std::process::Child, output_bytes: Option<u64>) -> Self {
        let limit = output_bytes.map_or(usize::MAX, |b| usize::try_from(b).unwrap_or(usize::MAX));
        Self([
            child.stdout.take().map(|s| reader(s, limit)),
            child.stderr.take().map(|s| reader(s, limit)),
        ])
    }

    /// What each stream gave, and whether it was cut at the limit; empty for a stream not piped.
    pub(crate) fn join(self) -> [(Vec<u8>, bool); 2] {
        self.0
            .map(|r| r.and_then(|h| h.join().ok()).unwrap_or_default())
    }
}

/// Reads a stream to its end on a thread, keeping at most `limit` bytes: memory stays bounded
/// under a flood, and the writer never blocks on a full pipe.
fn reader(mut stream: impl Read + Send + 'static, limit: usize) -> Reading {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut truncated = false;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = limit.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    truncated |= n > room;
                }
            }
        }
        (kept, truncated)
    })
}

/// The cgroups `plan`'s limits need, and the `cgroup.procs` files to join them through. A process
/// limit binds through rlimits only for ordinary users: as root it needs a cgroup. Memory and CPU
/// quotas use one wherever it can be had.
pub(crate) fn limits_group(plan: &Plan) -> Result<(Cgroup, Vec<std::ffi::CString>), SandboxError> {
    let (uid, _) = sys::ids();
    let limits = &plan.limits;
    let pids = limits.pids.filter(|_| uid == 0 || cgroup_available("pids"));
    let memory = limits.memory_mb.filter(|_| cgroup_available("memory"));
    let group = Cgroup::create(pids, memory, limits.cpus)
        .map_err(|e| SandboxError::Setup(format!("resource limits: {e}")))?;
    let procs = group
        .procs()
        .iter()
        .filter_map(|p| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).ok())
        .collect();
    Ok((group, procs))
}

fn cgroup_available(controller: &str) -> bool {
    std::path::Path::new("/sys/fs/cgroup")
        .join(controller)
        .join("cgroup.procs")
        .exists()
}
