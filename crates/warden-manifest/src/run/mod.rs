//! The runner (SPEC M4–M9): a manifest's run from start to receipt. It resolves every alias
//! (the pinned commit's shared checkout with the run's overlay on it, or worktrees of it, a scratch tmpfs of `disk_mb`, the run's caches), refuses a
//! checkout with links leading out, neutralises repository settings that would run programs,
//! builds the sandbox from the manifest alone (mounts, forbidden paths, limits, an environment
//! of the names allowed, the egress proxy with the allowlist, the budget and the capabilities),
//! runs the command under a renewed lease, collects only the declared artifacts (redacted,
//! hashed) and the workspace's patch, revokes the capabilities, destroys the workspace and
//! checks it is gone — quarantining the run if it is not — and writes the receipt.

mod capability;
mod checkout;
mod collect;
mod conclude;
mod git;
mod layered;
mod layout;
mod lease;
mod lockfiles;
mod network;
mod receipt;
mod report;
mod sandbox;
mod setup;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use sha2::{Digest as _, Sha256};
use warden_netproxy::{Entry, NetPolicy, Record, Sink};
use warden_sandbox::{Limits, Output, Plan, Request, Sandbox};

pub use capability::{ApprovalAsk, Approver};
pub use layout::Resolved;
pub use lease::{ReapAction, Reaped, reap};
pub use receipt::{
    Artifact, CapabilityGrant, CleanupResult, CommandRun, Denied, Grants, Input, MountGrant,
    NetworkGrant, Receipt, Report, Status, Timings,
};

use crate::parse::{Parsed, hex};
use crate::schema::{Alias, Mode, Protocol};
use capability::{Capabilities, Live};
use git::Repo;
use layout::RunDir;
use setup::setup;

/// Why a run could not start or end. Every other failure of a run is its receipt (status
/// `refused`, `failed`, `quarantined`, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The run's directory or its lease could not be written: nothing was set up.
    #[error("{0}")]
    Directory(String),
    #[error("the run has finished already")]
    FinishedAlready,
    /// The receipt could not be written (the run itself is over).
    #[error("{0}")]
    Receipt(String),
}

/// Where a source-control host's credential comes from.
pub type Credential = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What a run needs besides its manifest.
pub struct Options {
    pub run_id: String,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// The task's git repository (its working copy's directory): `repo` and `workspace` are
    /// checkouts of its `HEAD`.
    pub repository: PathBuf,
    /// Where runs' directories are made.
    pub runs_dir: PathBuf,
    /// The sandbox helper (the `warden` binary).
    pub helper: PathBuf,
    /// Observe the limits and report what was used, instead of enforcing them (never for
    /// forbidden paths or credentials).
    pub report_only: bool,
    /// How long a lease lasts without renewal before the run may be reaped.
    pub lease_seconds: u64,
    /// The credential for a source-control host, looked up when the run starts.
    pub credential: Credential,
    /// Asked about capability actions that need a person's approval; without one, refused.
    pub approver: Option<Approver>,
    /// Where the egress proxy's records go (the trace).
    pub sink: Sink,
    /// warden's own environment, from which `identity.variables` are taken.
    pub environment: Vec<(String, String)>,
    /// The home directory the command sees (empty, read-only) and its toolchains.
    pub home: PathBuf,
    pub home_allow: Vec<PathBuf>,
    /// Who the command is on the host when warden runs as root.
    pub root_identity: warden_sandbox::RootIdentity,
    /// Limits no cgroup can hold bind each process instead of stopping the run
    /// (`[sandbox.limits] fallback = "rlimits"`).
    pub fallback: warden_sandbox::Fallback,
    /// The secret list, masked in every root the command can read.
    pub mask: warden_sandbox::MaskRule,
    /// Capture the command's output instead of passing it through.
    pub capture: bool,
    /// Commands come one after another from an agent session, each in a sandbox of its own:
    /// the scratch space lives on disk between them (`disk_mb` then limits each file and the
    /// private `/tmp`, not the scratch's total).
    pub session: bool,
}

/// How a run ended.
#[derive(Debug)]
pub struct Finished {
    pub receipt: Receipt,
    /// The run's directory: `receipt.json`, `lease.json`, `artifacts/`.
    pub dir: PathBuf,
    /// The command's output, when captured.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// A new run id: `run-` and 32 hex digits, ordered by time (also the trace session of its
/// network records).
pub fn new_run_id() -> String {
    format!("run-{}", uuid::Uuid::now_v7().simple())
}

/// The default place of runs' directories: `runs/` beside the trace database.
pub fn default_runs_dir(trace: &Path) -> PathBuf {
    trace
        .parent()
        .map_or_else(|| PathBuf::from("runs"), |p| p.join("runs"))
}

/// SHA-256 of a command's arguments, each followed by a NUL byte.
pub fn command_sha256(command: &[String]) -> String {
    let mut hasher = Sha256::new();
    for arg in command {
        hasher.update(arg.as_bytes());
        hasher.update([0]);
    }
    hex(&hasher.finalize())
}

/// Where the repository's git directory appears inside the sandbox (read-only).
const GIT_INSIDE: &str = "/.warden/git";

/// Where the CA bundle of the run's proxy appears inside the sandbox, when it has one.
const CA_INSIDE: &str = "/.warden/ca";

/// What the run was set up with.
struct Setup {
    repo: Option<Repo>,
    resolved: Vec<Resolved>,
    mounts: Vec<Bind>,
    /// The scratch directories made tmpfs for the sandbox's life, with their size.
    sized: Vec<(PathBuf, u64)>,
    /// The commit's shared checkout, held while the run shows it.
    checkout: Option<checkout::Checkout>,
}

/// One mount of the run's sandbox, as set up.
#[derive(Debug, Clone)]
struct Bind {
    /// Where it is on the host.
    host: PathBuf,
    /// Where it appears inside.
    target: PathBuf,
    writable: bool,
    source: Source,
    /// A writable view of a shared checkout: the run's layer directory of its overlay.
    layer: Option<PathBuf>,
}

/// Where a mount comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// One of the run's aliases.
    Alias(Alias),
    /// git's directory and the configuration made for it, shown read-only.
    Git,
    /// A host path, only ever read.
    Host,
}

impl Source {
    /// The run's checkouts, scratch space and git directory are the user's; host paths are not.
    fn owned(self) -> bool {
        self != Source::Host
    }
}

impl Setup {
    /// The mount of `alias`, if the manifest has one.
    fn bind(&self, alias: Alias) -> Option<&Bind> {
        self.mounts
            .iter()
            .find(|b| b.source == Source::Alias(alias))
    }

    /// Where `alias` resolved to, if the manifest mounts it.
    fn resolved(&self, alias: Alias) -> Option<&Resolved> {
        self.resolved.iter().find(|r| r.alias == alias)
    }
}

/// Runs `parsed`'s command under it. `Err` only when the run's directory cannot be made;
/// every later failure is a receipt (status `refused`, `failed`, `quarantined`, …).
pub fn run(parsed: &Parsed, options: &Options) -> Result<Finished, RunError> {
    let mut prepared = prepare(parsed, options)?;
    let (stdout, stderr) = prepared.run_command(options);
    let mut finished = prepared.finish()?;
    finished.stdout = stdout;
    finished.stderr = stderr;
    Ok(finished)
}

/// A run set up and not yet finished: its directories resolved, its sandbox built, its proxy
/// serving, its lease renewed. Commands run in it one after another ([`Prepared::run_command`],
/// or an agent session's through [`Prepared::request`]); [`Prepared::finish`] collects,
/// cleans up and writes the receipt.
pub struct Prepared {
    parsed: Parsed,
    /// The sandbox's helper (the `warden` binary).
    helper: PathBuf,
    report_only: bool,
    dir: RunDir,
    lease: Arc<Mutex<lease::Lease>>,
    heartbeat: Option<lease::Heartbeat>,
    /// `None` when the set-up failed (the receipt says why): nothing runs.
    setup: Option<Setup>,
    receipt: Receipt,
    capabilities: Option<Arc<Capabilities>>,
    egress: Option<Arc<warden_tools::egress::Egress>>,
    observed: Arc<Mutex<Vec<Record>>>,
    /// The sandbox of every command, its program left to fill in.
    base: Option<Request>,
    in_sized: Vec<(String, PathBuf, PathBuf)>,
    collected: Vec<warden_sandbox::Collected>,
    last: Option<warden_sandbox::Outcome>,
    began: SystemTime,
    run_started: Instant,
    concluded: bool,
}

/// A run dropped before it finished (its session failed half-way) still finishes: revoked,
/// cleaned up, its receipt written.
impl Drop for Prepared {
    fn drop(&mut self) {
        if !self.concluded {
            let _ = self.conclude();
        }
    }
}

/// Sets a run up: the directory, the lease, every alias, the sandbox and the proxy. `Err`
/// only when the run's directory cannot be made; a failure after that leaves a run that runs
/// nothing and finishes `refused`.
pub fn prepare(parsed: &Parsed, options: &Options) -> Result<Prepared, RunError> {
    let started = Instant::now();
    let started_at = SystemTime::now();
    let m = &parsed.manifest;
    let dir = RunDir::create(&options.runs_dir, &options.run_id).map_err(RunError::Directory)?;
    let lease = Arc::new(Mutex::new(lease::Lease {
        run_id: options.run_id.clone(),
        manifest_sha256: parsed.sha256.clone(),
        pid: std::process::id(),
        pid_start: lease::process_start(std::process::id()).unwrap_or(0),
        started_ms: lease::now_ms(),
        heartbeat_ms: lease::now_ms(),
        lease_seconds: options.lease_seconds.max(1),
        status: lease::LeaseStatus::Running,
        repository: None,
        resolved: Vec::new(),
        artifacts_until_ms: None,
        quarantine: Vec::new(),
    }));
    lock(&lease).write(&dir.root).map_err(RunError::Directory)?;
    let heartbeat = lease::Heartbeat::start(dir.root.clone(), Arc::clone(&lease));
    let mut receipt = Receipt {
        run_id: options.run_id.clone(),
        manifest_sha256: parsed.sha256.clone(),
        approval_digest: parsed.approval_digest(),
        purpose: m.run.purpose.clone(),
        owner: m.run.owner.clone(),
        status: Status::Refused,
        ..Receipt::default()
    };
    receipt.timings.started_at = humantime::format_rfc3339_millis(started_at).to_string();
    receipt.grants.uid = warden_sandbox::INSIDE_ID;
    receipt.grants.resources = m.run.resources.clone().unwrap_or_default();
    receipt.grants.budgets = m.run.budgets.clone().unwrap_or_default();
    receipt.grants.max_duration_seconds = m.run.max_duration_seconds;
    receipt
        .grants
        .writable_paths
        .clone_from(&m.filesystem.writable_paths);
    receipt
        .grants
        .forbidden_paths
        .clone_from(&m.filesystem.forbidden_paths);
    let setup = setup(parsed, options, &dir, &lease, &mut receipt);
    let failed = setup.as_ref().err().cloned();
    let mut prepared = Prepared {
        parsed: parsed.clone(),
        helper: options.helper.clone(),
        report_only: options.report_only,
        dir,
        lease,
        heartbeat: Some(heartbeat),
        setup: setup.ok(),
        receipt,
        capabilities: None,
        egress: None,
        observed: Arc::new(Mutex::new(Vec::new())),
        base: None,
        in_sized: Vec::new(),
        collected: Vec::new(),
        last: None,
        began: SystemTime::now(),
        run_started: Instant::now(),
        concluded: false,
    };
    if let Some(why) = failed {
        prepared
            .receipt
            .warnings
            .push(format!("nothing ran: {why}"));
    } else if let Err(why) = prepared.build(options) {
        prepared
            .receipt
            .warnings
            .push(format!("nothing ran: {why}"));
    }
    prepared.receipt.timings.setup_ms = elapsed_ms(started);
    prepared.began = SystemTime::now();
    prepared.run_started = Instant::now();
    Ok(prepared)
}

impl Prepared {
    pub fn run_id(&self) -> &str {
        &self.receipt.run_id
    }

    /// The manifest the run is under.
    pub fn manifest(&self) -> &crate::schema::Manifest {
        &self.parsed.manifest
    }

    /// Whether commands may run: the set-up and the sandbox's construction succeeded.
    pub fn ready(&self) -> bool {
        self.base.is_some()
    }

    /// The host directory an agent session works in: the workspace, else the repository's
    /// checkout, else the scratch space; and whether the manifest lets it be written there
    /// (a `read_write` mount, with no writable paths narrowing it).
    pub fn work_dir(&self) -> Option<(PathBuf, bool)> {
        let setup = self.setup.as_ref()?;
        let m = &self.parsed.manifest;
        [Alias::Workspace, Alias::Repo, Alias::RunScratch]
            .into_iter()
            .find_map(|alias| {
                let Bind { host, target, .. } = setup.bind(alias)?;
                let declared = m
                    .filesystem
                    .mounts
                    .iter()
                    .find(|mt| Path::new(&mt.target) == target)?;
                let narrowed = !m.filesystem.writable_paths.is_empty()
                    && !m
                        .filesystem
                        .writable_paths
                        .iter()
                        .any(|w| Path::new(w) == target);
                let writable = declared.mode == Mode::ReadWrite && alias.run_owned() && !narrowed;
                Some((host.clone(), writable))
            })
    }

    /// The paths inside the sandbox that commands may write: the writable mounts' targets.
    pub fn writable_targets(&self) -> Vec<PathBuf> {
        self.base
            .as_ref()
            .map(|r| {
                r.mounts
                    .iter()
                    .filter(|(_, _, rw)| *rw)
                    .map(|(_, target, _)| target.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The sandbox of a command: the manifest's, with `program` and `args`.
    pub fn request(&self, program: &str, args: &[String]) -> Option<Request> {
        let mut request = self.base.clone()?;
        program.clone_into(&mut request.program);
        request.args = args.to_vec();
        Some(request)
    }

    /// The run's egress proxy, when its sandbox has one: it serves every command's listener.
    pub fn egress(&self) -> Option<Arc<warden_tools::egress::Egress>> {
        self.egress.clone()
    }

    /// Records commands run elsewhere in this run's sandbox (an agent session's shell
    /// commands).
    pub fn record_commands(&mut self, commands: Vec<CommandRun>) {
        self.receipt.commands.extend(commands);
    }

    /// Runs `options.command` in the run's sandbox and records it; its output, when captured.
    pub fn run_command(&mut self, options: &Options) -> (Vec<u8>, Vec<u8>) {
        let Some(mut request) = self.request(
            options.command.first().map_or("", String::as_str),
            options.command.get(1..).unwrap_or_default(),
        ) else {
            return (Vec::new(), Vec::new());
        };
        // Artifacts in the scratch tmpfs are copied out by the sandbox's helper before it goes.
        request.collect = self
            .in_sized
            .iter()
            .map(|(_, src, dst)| (src.clone(), dst.clone()))
            .collect();
        let outcome = Plan::new(&request).map_err(String::from).and_then(|plan| {
            let sandbox = Sandbox::new(&options.helper);
            let output = if options.capture {
                Output::Capture
            } else {
                Output::Inherit
            };
            match &self.egress {
                Some(e) => sandbox.run_serving(&plan, output, &mut |listener| {
                    let _ = e.proxy.serve(listener);
                }),
                None => sandbox.run(&plan, output),
            }
            .map_err(|e| e.to_string())
        });
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(why) => {
                self.receipt.warnings.push(format!(
                    "nothing ran: the sandbox could not be established: {why}"
                ));
                return (Vec::new(), Vec::new());
            }
        };
        self.receipt.sandboxed(&outcome);
        self.receipt.commands.push(CommandRun {
            sha256: command_sha256(&options.command),
            exit_code: outcome.exit_code,
            duration_ms: outcome.duration_ms,
            timed_out: outcome.timed_out,
            background: false,
        });
        self.collected.clone_from(&outcome.collected);
        let streams = (outcome.stdout.clone(), outcome.stderr.clone());
        self.last = Some(outcome);
        streams
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}
