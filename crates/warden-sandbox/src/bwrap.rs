//! The bubblewrap backend: the same plan, run by the system's `bwrap`, for hosts where the native
//! path is blocked. Everything is dropped (`--cap-drop ALL`, `--clearenv`), the same seccomp
//! filters are handed over, and the same limits and cgroups apply. No Landlock.

use std::io::{Read as _, Write as _};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::backend::Backend;
use crate::capture::Readers;
use crate::placeholder::Placeholders;
use crate::plan::{Mount, Plan};
use crate::spawn::{Outcome, Output, SandboxError, limits_group};
use crate::{seccomp, sys};

/// Runs plans with `bwrap`.
#[derive(Debug, Clone)]
pub struct Bwrap {
    program: PathBuf,
}

impl Default for Bwrap {
    fn default() -> Self {
        Self {
            program: PathBuf::from("bwrap"),
        }
    }
}

impl Bwrap {
    /// Whether `bwrap` can be started here.
    pub fn available(&self) -> bool {
        Command::new(&self.program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// The first descriptor of the seccomp filters handed to bwrap.
const FIRST_FILTER_FD: i32 = 10;

/// The `bwrap` arguments for `plan`, with `filters` seccomp filters on descriptors from 10 up and
/// the status on descriptor 3.
pub(crate) fn arguments(plan: &Plan, filters: usize) -> Vec<String> {
    let mut a: Vec<String> = [
        "--unshare-user",
        "--uid",
        "1000",
        "--gid",
        "1000",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
        "--hostname",
        "warden",
        "--json-status-fd",
        "3",
    ]
    .map(str::to_owned)
    .to_vec();
    for fd in (FIRST_FILTER_FD..).take(filters) {
        a.extend(["--add-seccomp-fd".to_owned(), fd.to_string()]);
    }
    if !plan.network {
        a.push("--unshare-net".to_owned());
    }
    for (key, value) in &plan.env {
        a.extend(["--setenv".to_owned(), key.clone(), value.clone()]);
    }
    let path = |p: &PathBuf| p.display().to_string();
    // Read-only tmpfs are sealed after everything is mounted inside them.
    let mut late = Vec::new();
    // bubblewrap has no overlay here: a writable root's `.git` is read-only, its history kept.
    let positions = plan.overlay_positions();
    let keep = |a: &mut Vec<String>, index: usize| {
        for (k, _) in positions.iter().enumerate().filter(|(_, p)| **p == index) {
            let git = path(&plan.git_overlays[k]);
            a.extend(["--ro-bind".to_owned(), git.clone(), git]);
        }
    };
    for (index, mount) in plan.mounts.iter().enumerate() {
        keep(&mut a, index);
        match mount {
            Mount::Bind {
                source,
                target,
                writable,
            } => {
                a.extend([
                    if *writable { "--bind" } else { "--ro-bind" }.to_owned(),
                    path(source),
                    path(target),
                ]);
            }
            Mount::Tmpfs {
                target,
                writable,
                size_mb,
            } => {
                a.extend([
                    "--size".to_owned(),
                    (size_mb * 1024 * 1024).to_string(),
                    "--tmpfs".to_owned(),
                    path(target),
                ]);
                if !writable {
                    late.extend(["--remount-ro".to_owned(), path(target)]);
                }
            }
            Mount::MaskFile { target } => {
                a.extend([
                    "--ro-bind".to_owned(),
                    path(&plan.mask_source),
                    path(target),
                ]);
            }
        }
    }
    keep(&mut a, plan.mounts.len());
    a.extend(
        [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--remount-ro",
            "/",
            "--chdir",
        ]
        .map(str::to_owned),
    );
    a.push(path(&plan.cwd));
    a.push("--".to_owned());
    a.push(plan.program.clone());
    a.extend(plan.args.iter().cloned());
    a
}

fn filter_pipe(filter: &seccompiler::BpfProgram) -> Result<std::os::fd::OwnedFd, SandboxError> {
    let mut bytes = Vec::with_capacity(filter.len() * 8);
    for insn in filter {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    let (read, write) =
        sys::pipe().map_err(|e| SandboxError::Setup(format!("seccomp pipe: {e}")))?;
    std::fs::File::from(write)
        .write_all(&bytes)
        .map_err(|e| SandboxError::Setup(format!("seccomp pipe: {e}")))?;
    Ok(read)
}

impl Backend for Bwrap {
    fn name(&self) -> &'static str {
        "bwrap"
    }

    fn run(&self, plan: &Plan, output: Output) -> Result<Outcome, SandboxError> {
        refuse_unsupported(plan)?;
        let group = limits_group(plan)?;
        // bwrap forks the command itself: bwrap joins the groups before it runs.
        let procs = group.join_files(false);
        let placeholders = Placeholders::make(&plan.placeholders).map_err(SandboxError::Setup)?;
        let filters =
            seccomp::filters().map_err(|e| SandboxError::Setup(format!("seccomp filter: {e}")))?;
        let fds = filters
            .iter()
            .map(filter_pipe)
            .collect::<Result<Vec<_>, _>>()?;
        let (status_read, status_write) =
            sys::pipe().map_err(|e| SandboxError::Setup(format!("status pipe: {e}")))?;
        let mut command = Command::new(&self.program);
        command.args(arguments(plan, fds.len())).env_clear();
        output.apply(&mut command);
        let mut places = vec![(status_write.as_raw_fd(), 3)];
        places.extend(fds.iter().map(AsRawFd::as_raw_fd).zip(FIRST_FILTER_FD..));
        let limits = plan.limits.clone();
        sys::before_exec(&mut command, move || {
            for file in &procs {
                sys::join_cgroup(file)?;
            }
            rlimits(&limits)?;
            sys::place_fds(&places)
        });
        let started = Instant::now();
        let mut child = command.spawn().map_err(|source| SandboxError::Helper {
            helper: self.program.clone(),
            source,
        })?;
        drop(status_write);
        drop(fds);
        let readers = Readers::start(
            crate::process::streams(&mut child),
            plan.limits.output_bytes,
        );
        crate::running::running_add(child.id());
        let pid = libc::pid_t::try_from(child.id()).unwrap_or(0);
        // bwrap's init dies with it (--die-with-parent), and the PID namespace with the init.
        let timed_out = sys::wait_or_kill(pid, plan.limits.timeout_ms);
        let waited = child.wait();
        crate::running::running_remove(child.id());
        let status = waited.map_err(|e| SandboxError::Setup(format!("waiting for bwrap: {e}")))?;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut text = String::new();
        let _ = std::fs::File::from(status_read).read_to_string(&mut text);
        let [stdout, stderr] = readers.join();
        // The last report is bwrap's: it writes the exit code after the command and everything
        // it started are gone (the status descriptor stays visible inside, so an earlier line
        // may be the command's own).
        let exit_code = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v.get("exit-code").and_then(serde_json::Value::as_i64))
            .next_back();
        let exit_code = match (timed_out, exit_code) {
            (true, _) => 124,
            (false, Some(code)) => i32::try_from(code).unwrap_or(1),
            (false, None) => {
                let why = String::from_utf8_lossy(&stderr.0).trim().to_owned();
                return Err(SandboxError::Setup(format!(
                    "bwrap could not build the sandbox ({status}): {why}"
                )));
            }
        };
        let layers = layers(plan, &group);
        let (counted, mut limits, warnings) = group.report();
        // bwrap is given no process rlimit (it counts every process of the user).
        for bound in &mut limits {
            if bound.limit == "processes" && bound.by == crate::cgroup::Mechanism::Rlimit {
                bound.by = crate::cgroup::Mechanism::Unenforced;
            }
        }
        drop(placeholders);
        Ok(Outcome {
            exit_code,
            signal: None,
            truncated: stdout.1 || stderr.1,
            stdout: stdout.0,
            stderr: stderr.0,
            duration_ms,
            timed_out,
            layers,
            collected: Vec::new(),
            usage: crate::helper::Usage {
                counted,
                ..crate::helper::Usage::default()
            },
            limits,
            warnings,
            history: Vec::new(),
        })
    }
}

/// What bwrap cannot do: refused before anything runs.
fn refuse_unsupported(plan: &Plan) -> Result<(), SandboxError> {
    if let Some(id) = plan.run_as {
        return Err(SandboxError::Setup(format!(
            "the bwrap backend cannot run commands as the unprivileged user {id} when warden \
             runs as root (it has no idmapped mounts); use the native backend, or set \
             [sandbox] root_identity = \"host\" in your user settings to run them as root; \
             nothing ran"
        )));
    }
    if plan.require_landlock {
        return Err(SandboxError::Setup(
            "landlock is required ([sandbox] require_landlock) and the bwrap backend has none"
                .to_owned(),
        ));
    }
    if !plan.overlays.is_empty() {
        return Err(SandboxError::Setup(
            "an overlay workspace needs the native backend (bwrap would bind its lower layer \
             where the plan keeps a file read-only); nothing ran"
                .to_owned(),
        ));
    }
    if !plan.sized.is_empty() || !plan.collect.is_empty() {
        return Err(SandboxError::Setup(
            "sized scratch space needs the native backend; nothing ran".to_owned(),
        ));
    }
    if plan.proxy_port.is_some() && !plan.network {
        return Err(SandboxError::Setup(
            "the allowlist network needs the native backend (bwrap cannot hand its network \
             namespace to the egress proxy); nothing ran"
                .to_owned(),
        ));
    }
    Ok(())
}

/// The rlimits bwrap and the command inherit (between fork and exec: no allocation).
fn rlimits(limits: &crate::plan::Limits) -> std::io::Result<()> {
    sys::setrlimit(libc::RLIMIT_CORE, 0)?;
    if let Some(mb) = limits.memory_mb {
        sys::setrlimit(libc::RLIMIT_DATA, mb.saturating_mul(1024 * 1024))?;
    }
    if let Some(seconds) = limits.cpu_seconds {
        sys::setrlimit(libc::RLIMIT_CPU, seconds)?;
    }
    if let Some(mb) = limits.disk_mb {
        sys::setrlimit(libc::RLIMIT_FSIZE, mb.saturating_mul(1024 * 1024))?;
    }
    Ok(())
}

/// The layers a bwrap run has: no Landlock, descriptors as bwrap leaves them.
fn layers(plan: &Plan, group: &crate::cgroup::Cgroup) -> Vec<String> {
    let mut layers: Vec<String> = crate::helper::LAYERS
        .iter()
        .filter(|layer| **layer != "closed-descriptors")
        .map(|layer| (*layer).to_owned())
        .collect();
    if !plan.network {
        layers.push("network-namespace".to_owned());
    }
    layers.extend(group.holds.iter().map(|c| format!("cgroup-{c}")));
    layers
}
