//! Helpers started ahead of their commands. Starting a helper costs a fork, an `exec` and, on
//! cgroup v1, the move into its groups, which waits for an RCU grace period (about 5 ms). A
//! session's [`Sandbox`](crate::Sandbox) that keeps a spare starts the next command's helper
//! while the model thinks: in its own new cgroups, with a clean environment, blocked on its
//! plan pipe, having done nothing else. A command takes it, is handed its plan, and another is
//! started for the one after. One helper serves one command and ends with it, so nothing of a
//! command — processes, descriptors, environment, mounts — is there for the next; each still
//! gets fresh namespaces, a fresh cgroup and its own limits.
//!
//! A spare that died before it was handed its plan (killed, its cgroup removed) takes none: the
//! command starts a new helper instead and nothing ran in between. A spare is made for the
//! limits and output of the last command and used only by one with the same.

use std::os::fd::AsRawFd as _;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak, mpsc};

use crate::cgroup::Cgroup;
use crate::plan::{Limits, Plan};
use crate::process::{Process, streams};
use crate::running::{running_add, running_remove};
use crate::spawn::{HELPER_ARG, Output, SandboxError};
use crate::sys;

/// What a helper was started for: the limits its cgroups hold and where its output goes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Key {
    pub(crate) limits: Limits,
    pub(crate) output: Output,
}

impl Key {
    /// The key of `plan`'s command, or `None` when no spare can serve it (a proxy bridge is
    /// made with the helper).
    pub(crate) fn of(plan: &Plan, output: Output) -> Option<Self> {
        if plan.proxy_port.is_some() || output == Output::Pipe {
            return None;
        }
        // What the helper applies itself, from the plan, is no part of it.
        let limits = Limits {
            timeout_ms: None,
            output_bytes: None,
            ..plan.limits.clone()
        };
        Some(Key { limits, output })
    }
}

/// A helper process, started and waiting for its plan.
#[derive(Debug)]
pub(crate) struct Started {
    pub(crate) process: Process,
    /// The write end of its standard input, where it is piped.
    pub(crate) stdin: Option<std::fs::File>,
    /// The read ends of its standard output and error, where they are captured.
    pub(crate) streams: [Option<std::fs::File>; 2],
    /// The read end of the status pipe (the helper's fd 3).
    pub(crate) status: std::fs::File,
    /// The write end of the plan pipe (the helper's fd 4).
    pub(crate) plan: std::fs::File,
    pub(crate) group: Cgroup,
}

impl Started {
    /// Starts `helper` in `group`'s cgroups (joined before it `exec`s), its output as
    /// `output` says, with the proxy `bridge` at its fd 5 when there is one.
    pub(crate) fn spawn(
        helper: &Path,
        group: Cgroup,
        output: Output,
        bridge: Option<&std::os::unix::net::UnixStream>,
    ) -> Result<Self, SandboxError> {
        let procs = group.join_files(true);
        let (status_read, status_write) =
            sys::pipe().map_err(|e| SandboxError::Setup(format!("status pipe: {e}")))?;
        let (plan_read, plan_write) =
            sys::pipe().map_err(|e| SandboxError::Setup(format!("plan pipe: {e}")))?;
        let mut command = Command::new(helper);
        command.arg(HELPER_ARG).env_clear();
        output.apply(&mut command);
        let mut raw = vec![(status_write.as_raw_fd(), 3), (plan_read.as_raw_fd(), 4)];
        if let Some(helper_end) = bridge {
            raw.push((helper_end.as_raw_fd(), 5));
        }
        if let Some(dir) = group.v2_dir() {
            raw.push((dir.as_raw_fd(), 6));
        }
        sys::before_exec(&mut command, move || {
            for file in &procs {
                sys::join_cgroup(file)?;
            }
            sys::place_fds(&raw)
        });
        let mut child = command.spawn().map_err(|source| SandboxError::Helper {
            helper: helper.to_path_buf(),
            source,
        })?;
        running_add(child.id());
        Ok(Started {
            stdin: child
                .stdin
                .take()
                .map(|s| std::fs::File::from(std::os::fd::OwnedFd::from(s))),
            streams: streams(&mut child),
            process: Process::Helper(child),
            status: std::fs::File::from(status_read),
            plan: std::fs::File::from(plan_write),
            group,
        })
    }

    /// Ends a helper that was never handed a plan, and removes its groups.
    pub(crate) fn discard(mut self) {
        self.process.kill();
        self.process.wait();
        running_remove(self.process.id());
    }
}

/// Where a sandbox keeps its spare helper.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    spare: Mutex<Option<(Key, Started)>>,
}

impl Slot {
    /// The spare made for `key`, if there is one (one made for another key is ended).
    pub(crate) fn take(&self, key: &Key) -> Option<Started> {
        let taken = self
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match taken {
            Some((made_for, started)) if made_for == *key => Some(started),
            Some((_, started)) => {
                started.discard();
                None
            }
            None => None,
        }
    }

    /// Ends the spare waiting now.
    pub(crate) fn close(&self) {
        let taken = self
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((_, started)) = taken {
            started.discard();
        }
    }

    /// The process id of the spare waiting now.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|(_, s)| s.process.id())
    }

    /// Asks for a spare for `key`, started on the maker's thread.
    pub(crate) fn request(self: &Arc<Self>, helper: &Path, key: Key) {
        let helper = helper.to_path_buf();
        let slot = Arc::downgrade(self);
        on_maker(move || make(&helper, key, &slot));
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some((_, started)) = self
            .spare
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            started.discard();
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `job` on the one thread that starts helpers. It never ends: a helper gets its
/// parent-death signal when the thread that started it ends, and a helper started ahead may
/// serve a command long after. Without the thread, `job` never runs.
pub(crate) fn on_maker(job: impl FnOnce() + Send + 'static) {
    let _ = maker()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .send(Box::new(job));
}

/// Runs `job` on the maker's thread and waits for what it gives (`None` without the thread).
pub(crate) fn on_maker_wait<T: Send + 'static>(
    job: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (send, receive) = mpsc::channel();
    on_maker(move || {
        let _ = send.send(job());
    });
    receive.recv().ok()
}

fn maker() -> &'static Mutex<mpsc::Sender<Job>> {
    static MAKER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    MAKER.get_or_init(|| {
        let (send, receive) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("warden-spare-helper".to_owned())
            .spawn(move || {
                for job in receive {
                    job();
                }
                // Every sender is gone only when the process ends; stay, for the helpers.
                loop {
                    std::thread::park();
                }
            });
        // Without the thread no spare is ever made, and every command starts its own helper.
        drop(spawned);
        Mutex::new(send)
    })
}

fn make(helper: &Path, key: Key, slot: &Weak<Slot>) {
    let Some(slot) = slot.upgrade() else {
        return;
    };
    let Ok(group) = Cgroup::create(&key.limits) else {
        return;
    };
    let Ok(started) = Started::spawn(helper, group, key.output, None) else {
        return;
    };
    let old = slot
        .spare
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .replace((key, started));
    if let Some((_, old)) = old {
        old.discard();
    }
}
