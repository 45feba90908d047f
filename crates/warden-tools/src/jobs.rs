//! Background commands (dev servers) of one session: started by `bash` with `background: true`,
//! read and stopped through `bash` with `jobId`, and stopped when the session's context is
//! dropped.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use warden_sandbox::{Plan, Running, Sandbox, SandboxError};

/// The most background commands a session may run at once.
pub const MAX_JOBS: usize = 8;

/// One background command.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) cmd: String,
    pub(crate) running: Running,
    pub(crate) started: Instant,
}

/// What to start, the egress proxy its network goes through (allowlist), and where to answer.
type StartRequest = (
    Sandbox,
    Plan,
    Option<Arc<crate::egress::Egress>>,
    mpsc::Sender<Result<Running, SandboxError>>,
);

/// The background commands of a session.
#[derive(Debug, Default)]
pub struct Jobs {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    running: BTreeMap<String, Job>,
    starter: Option<Starter>,
}

/// The thread every background command is started from. A sandbox helper dies with the thread
/// that started it (its parent-death signal), so that thread must live as long as the session,
/// whichever thread the tool call itself ran on.
#[derive(Debug)]
struct Starter {
    requests: mpsc::Sender<StartRequest>,
    thread: JoinHandle<()>,
}

impl Starter {
    fn new() -> std::io::Result<Self> {
        let (requests, incoming) = mpsc::channel::<StartRequest>();
        let thread = std::thread::Builder::new()
            .name("warden-jobs".to_owned())
            .spawn(move || {
                for (sandbox, plan, egress, reply) in incoming {
                    let started = sandbox.start_serving(&plan, &mut |listener| {
                        if let Some(egress) = &egress {
                            let _ = egress.proxy.serve(listener);
                        }
                    });
                    let _ = reply.send(started);
                }
            })?;
        Ok(Self { requests, thread })
    }
}

impl Jobs {
    /// Starts `plan` in the background under a new job id.
    pub(crate) fn start(
        &self,
        cmd: &str,
        sandbox: Sandbox,
        plan: Plan,
        egress: Option<Arc<crate::egress::Egress>>,
    ) -> Result<String, SandboxError> {
        let mut inner = self.lock();
        if inner.running.len() >= MAX_JOBS {
            return Err(SandboxError::Setup(format!(
                "{MAX_JOBS} background commands are running already; stop one first"
            )));
        }
        if inner.starter.is_none() {
            let starter = Starter::new()
                .map_err(|e| SandboxError::Setup(format!("background starter thread: {e}")))?;
            inner.starter = Some(starter);
        }
        let (reply, answer) = mpsc::channel();
        let sent = inner
            .starter
            .as_ref()
            .is_some_and(|s| s.requests.send((sandbox, plan, egress, reply)).is_ok());
        let running = match answer.recv() {
            Ok(result) if sent => result?,
            _ => {
                return Err(SandboxError::Setup(
                    "the background starter thread is gone".to_owned(),
                ));
            }
        };
        inner.next += 1;
        let id = format!("job-{}", inner.next);
        inner.running.insert(
            id.clone(),
            Job {
                cmd: cmd.to_owned(),
                running,
                started: Instant::now(),
            },
        );
        Ok(id)
    }

    /// Runs `f` on the job `id`; with `remove`, the job is taken out of the session afterwards.
    pub(crate) fn with<T>(&self, id: &str, f: impl FnOnce(&mut Job) -> (T, bool)) -> Option<T> {
        let mut inner = self.lock();
        let job = inner.running.get_mut(id)?;
        let (value, remove) = f(job);
        if remove {
            inner.running.remove(id);
        }
        Some(value)
    }

    /// The ids of the jobs there are.
    pub fn ids(&self) -> Vec<String> {
        self.lock().running.keys().cloned().collect()
    }

    /// Stops every job.
    pub fn stop_all(&self) {
        let jobs = std::mem::take(&mut self.lock().running);
        // Dropping a running job stops it, and everything it started.
        drop(jobs);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.stop_all();
        if let Some(starter) = self.lock().starter.take() {
            drop(starter.requests);
            let _ = starter.thread.join();
        }
    }
}
