//! The runner (SPEC M4–M9): a manifest's run from start to receipt. It resolves every alias
//! (worktrees of the pinned commit, a scratch tmpfs of `disk_mb`, the run's caches), refuses a
//! checkout with links leading out, neutralises repository settings that would run programs,
//! builds the sandbox from the manifest alone (mounts, forbidden paths, limits, an environment
//! of the names allowed, the egress proxy with the allowlist, the budget and the capabilities),
//! runs the command under a renewed lease, collects only the declared artifacts (redacted,
//! hashed) and the workspace's patch, revokes the capabilities, destroys the workspace and
//! checks it is gone — quarantining the run if it is not — and writes the receipt.

mod capability;
mod collect;
mod git;
mod layout;
mod lease;
mod lockfiles;
mod receipt;
mod report;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use sha2::{Digest as _, Sha256};
use warden_netproxy::{Entry, NetPolicy, Record, Sink};
use warden_sandbox::{Limits, Output, Plan, Request, Sandbox};

pub use capability::{ApprovalAsk, Approver};
pub use layout::Resolved;
pub use lease::{LEASE_FILE, Lease, LeaseStatus, ReapAction, Reaped, reap};
pub use receipt::{
    Artifact, CapabilityGrant, CleanupResult, CommandRun, Denied, Grants, Input, MountGrant,
    NetworkGrant, Receipt, Report, Status, Timings,
};

use crate::parse::{Parsed, hex};
use crate::schema::{Mode, Protocol};
use capability::{Capabilities, Live};
use git::Repo;
use layout::RunDir;

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
    /// Capture the command's output instead of passing it through.
    pub capture: bool,
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
    /// host path, target, writable, source as declared.
    mounts: Vec<(PathBuf, PathBuf, bool, String)>,
    /// The scratch directories made tmpfs for the sandbox's life, with their size.
    sized: Vec<(PathBuf, u64)>,
}

/// Runs `parsed`'s command under it. `Err` only when the run's directory cannot be made;
/// every later failure is a receipt (status `refused`, `failed`, `quarantined`, …).
#[allow(clippy::too_many_lines)]
pub fn run(parsed: &Parsed, options: &Options) -> Result<Finished, String> {
    let started = Instant::now();
    let started_at = SystemTime::now();
    let m = &parsed.manifest;
    let dir = RunDir::create(&options.runs_dir, &options.run_id)?;
    let lease = Arc::new(Mutex::new(Lease {
        run_id: options.run_id.clone(),
        manifest_sha256: parsed.sha256.clone(),
        pid: std::process::id(),
        pid_start: lease::process_start(std::process::id()).unwrap_or(0),
        started_ms: lease::now_ms(),
        heartbeat_ms: lease::now_ms(),
        lease_seconds: options.lease_seconds.max(1),
        status: LeaseStatus::Running,
        repository: None,
        resolved: Vec::new(),
        artifacts_until_ms: None,
        quarantine: Vec::new(),
    }));
    lock(&lease).write(&dir.root)?;
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

    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let setup = setup(parsed, options, &dir, &lease, &mut receipt);
    receipt.timings.setup_ms = elapsed_ms(started);
    let mut capabilities: Option<Arc<Capabilities>> = None;
    let run_started = Instant::now();
    if let Ok(setup) = &setup {
        match execute(parsed, options, &dir, setup, &mut receipt) {
            Ok(ran) => {
                capabilities = ran.capabilities;
                stdout = ran.stdout;
                stderr = ran.stderr;
            }
            Err(why) => receipt.warnings.push(format!("nothing ran: {why}")),
        }
    } else if let Err(why) = &setup {
        receipt.warnings.push(format!("nothing ran: {why}"));
    }
    receipt.timings.run_ms = elapsed_ms(run_started);

    // Cleanup: revoke, collect the patch, destroy, verify.
    let cleanup_started = Instant::now();
    if let Some(caps) = &capabilities {
        caps.revoke();
        receipt.denied.capability_denials = caps.denials();
    }
    receipt.cleanup.capabilities_revoked = true;
    receipt.cleanup.processes_terminated = !receipt.commands.is_empty() || setup.is_err();
    // What was made: the setup's, or the lease's when the setup stopped half-way.
    let (repo, resolved) = if let Ok(s) = &setup {
        (s.repo.clone(), s.resolved.clone())
    } else {
        let l = lock(&lease);
        (
            l.repository.as_deref().and_then(|r| Repo::open(r).ok()),
            l.resolved.clone(),
        )
    };
    let secrets = capabilities
        .as_ref()
        .map(|c| c.secrets())
        .unwrap_or_default();
    if let Ok(setup) = &setup
        && !receipt.commands.is_empty()
    {
        collect::patch(
            setup.repo.as_ref(),
            &setup.resolved,
            parsed,
            &dir,
            &secrets,
            &mut receipt,
        );
    }
    let keep_workspace = !m.cleanup.delete_workspace;
    let to_destroy: Vec<Resolved> = resolved
        .iter()
        .filter(|r| !(keep_workspace && r.alias == "workspace"))
        .cloned()
        .chain(std::iter::once(Resolved {
            alias: "collected".to_owned(),
            path: dir.collected(),
            git_dir: None,
        }))
        .collect();
    let destroyed = layout::destroy(repo.as_ref(), &to_destroy);
    receipt.cleanup.workspace_destroyed = destroyed.destroyed && !keep_workspace;
    receipt.cleanup.errors.clone_from(&destroyed.errors);
    if keep_workspace {
        receipt
            .warnings
            .push("cleanup.delete_workspace is false: the workspace is kept".to_owned());
    }
    let retain = std::time::Duration::from_secs(m.cleanup.retain_artifacts_hours * 3600);
    let until = SystemTime::now() + retain;
    receipt.cleanup.artifacts_retained_until =
        Some(humantime::format_rfc3339_seconds(until).to_string());
    receipt.timings.cleanup_ms = elapsed_ms(cleanup_started);
    receipt.timings.finished_at = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    drop(heartbeat);
    {
        let mut l = lock(&lease);
        l.heartbeat_ms = lease::now_ms();
        l.artifacts_until_ms =
            Some(lease::now_ms() + u64::try_from(retain.as_millis()).unwrap_or(u64::MAX));
        if destroyed.destroyed {
            l.status = LeaseStatus::Finished;
        } else {
            l.status = LeaseStatus::Quarantined;
            l.quarantine = destroyed.errors;
            receipt.status = Status::Quarantined;
        }
        let _ = l.write(&dir.root);
    }
    let text = serde_json::to_string_pretty(&receipt).map_err(|e| e.to_string())?;
    std::fs::write(dir.root.join("receipt.json"), text + "\n")
        .map_err(|e| format!("{}: {e}", dir.root.join("receipt.json").display()))?;
    Ok(Finished {
        receipt,
        dir: dir.root,
        stdout,
        stderr,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Resolves every alias, recording each in the lease as soon as it exists (so that a run
/// killed half-way is still reaped whole).
fn setup(
    parsed: &Parsed,
    options: &Options,
    dir: &RunDir,
    lease: &Mutex<Lease>,
    receipt: &mut Receipt,
) -> Result<Setup, String> {
    let m = &parsed.manifest;
    if options.command.is_empty() {
        return Err("no command given".to_owned());
    }
    if let Some(expires) = &m.run.expires_at
        && humantime::parse_rfc3339_weak(expires).is_ok_and(|at| at <= SystemTime::now())
    {
        return Err(format!("the manifest expired at {expires}"));
    }
    let needs_git = m
        .filesystem
        .mounts
        .iter()
        .any(|mt| mt.source == "repo" || mt.source == "workspace");
    let mut setup = Setup {
        repo: None,
        resolved: Vec::new(),
        mounts: Vec::new(),
        sized: Vec::new(),
    };
    let mut commit = String::new();
    if needs_git {
        let repo = Repo::open(&options.repository)?;
        commit = repo.head()?;
        receipt.input = Input {
            repository: Some(repo.top.display().to_string()),
            commit: Some(commit.clone()),
            dirty: repo.dirty(),
            neutralised: repo.neutralised.clone(),
        };
        if receipt.input.dirty {
            receipt.warnings.push(format!(
                "the working copy has uncommitted changes; the run starts from commit {commit} without them"
            ));
        }
        lock(lease).repository = Some(repo.top.clone());
        setup.repo = Some(repo);
    }
    let enforce = !options.report_only;
    for mount in &m.filesystem.mounts {
        let rw = mount.mode == Mode::ReadWrite;
        let host = match mount.source.as_str() {
            alias @ ("repo" | "workspace") => checkout(&mut setup, dir, lease, alias, &commit)?,
            alias @ ("run-scratch" | "cache") => {
                let disk = m.run.resources.as_ref().and_then(|r| r.disk_mb);
                own_dir(&mut setup, dir, lease, alias, disk.filter(|_| enforce))?
            }
            host_path => Path::new(host_path)
                .canonicalize()
                .map_err(|e| format!("mount source {host_path}: {e}"))?,
        };
        // A host path is only ever read; the repository is writable only when observing.
        let writable = match mount.source.as_str() {
            "workspace" | "run-scratch" | "cache" => rw || !enforce,
            "repo" => !enforce,
            _ => false,
        };
        receipt.grants.mounts.push(MountGrant {
            source: mount.source.clone(),
            resolved: host.display().to_string(),
            target: mount.target.clone(),
            mode: if mount.mode == Mode::ReadWrite {
                "read_write"
            } else {
                "read_only"
            }
            .to_owned(),
        });
        setup.mounts.push((
            host,
            PathBuf::from(&mount.target),
            writable,
            mount.source.clone(),
        ));
    }
    git_inside(&mut setup, dir)?;
    lockfile_warnings(m, &setup, receipt);
    Ok(setup)
}

/// The worktree of `alias` (`repo` or `workspace`) at `commit`, made once.
fn checkout(
    setup: &mut Setup,
    dir: &RunDir,
    lease: &Mutex<Lease>,
    alias: &str,
    commit: &str,
) -> Result<PathBuf, String> {
    if let Some(r) = setup.resolved.iter().find(|r| r.alias == alias) {
        return Ok(r.path.clone());
    }
    let path = dir.alias(alias);
    let repo = setup.repo.as_ref().ok_or("no repository")?;
    let git_dir = repo.add_worktree(&path, commit)?;
    setup.resolved.push(Resolved {
        alias: alias.to_owned(),
        path: path.clone(),
        git_dir: Some(git_dir.clone()),
    });
    record(lease, dir, &setup.resolved);
    // Inside, the repository's git directory is at GIT_INSIDE (read-only).
    let name = git_dir.file_name().unwrap_or_default().to_string_lossy();
    std::fs::write(
        path.join(".git"),
        format!("gitdir: {GIT_INSIDE}/worktrees/{name}\n"),
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    let leaving = layout::links_leaving(&path);
    if !leaving.is_empty() {
        return Err(format!(
            "the checkout has links that lead out of it, refused: {}",
            leaving.join("; ")
        ));
    }
    Ok(path)
}

/// The run's own directory for `alias` (`run-scratch` or `cache`), made once; the scratch is
/// a tmpfs of `disk_mb` for the sandbox's life.
fn own_dir(
    setup: &mut Setup,
    dir: &RunDir,
    lease: &Mutex<Lease>,
    alias: &str,
    disk_mb: Option<u64>,
) -> Result<PathBuf, String> {
    let path = dir.alias(alias);
    if setup.resolved.iter().any(|r| r.alias == alias) {
        return Ok(path);
    }
    std::fs::create_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    setup.resolved.push(Resolved {
        alias: alias.to_owned(),
        path: path.clone(),
        git_dir: None,
    });
    record(lease, dir, &setup.resolved);
    if alias == "run-scratch"
        && let Some(mb) = disk_mb
    {
        setup.sized.push((path.clone(), mb));
    }
    Ok(path)
}

/// git inside reads the repository's objects and refs, with a configuration of its own.
fn git_inside(setup: &mut Setup, dir: &RunDir) -> Result<(), String> {
    let Some(repo) = &setup.repo else {
        return Ok(());
    };
    if !setup.resolved.iter().any(|r| r.git_dir.is_some()) {
        return Ok(());
    }
    let config = dir.root.join("git-config");
    std::fs::write(&config, repo.sanitised_config())
        .map_err(|e| format!("{}: {e}", config.display()))?;
    let common = repo.common.clone();
    setup
        .mounts
        .push((common, PathBuf::from(GIT_INSIDE), false, "git".to_owned()));
    setup.mounts.push((
        config,
        PathBuf::from(format!("{GIT_INSIDE}/config")),
        false,
        "git".to_owned(),
    ));
    Ok(())
}

/// What an install would download, against what the allowlist reaches.
fn lockfile_warnings(m: &crate::schema::Manifest, setup: &Setup, receipt: &mut Receipt) {
    let Some(root) = setup
        .resolved
        .iter()
        .find(|r| r.alias == "workspace" || r.alias == "repo")
    else {
        return;
    };
    let allowed = allow_entries(m);
    for (file, hosts) in lockfiles::download_hosts(&root.path) {
        let unreachable: Vec<&str> = hosts
            .iter()
            .filter(|h| {
                warden_netproxy::Host::parse(h)
                    .is_ok_and(|host| !allowed.iter().any(|e| e.matches_host(&host)))
            })
            .map(String::as_str)
            .collect();
        if !unreachable.is_empty() {
            receipt.warnings.push(format!(
                "{file} downloads from {}, which network.allow does not reach",
                unreachable.join(", ")
            ));
        }
    }
}

fn record(lease: &Mutex<Lease>, dir: &RunDir, resolved: &[Resolved]) {
    let mut l = lock(lease);
    l.resolved = resolved.to_vec();
    let _ = l.write(&dir.root);
}

/// The manifest's allowlist as proxy entries: one per host and path.
pub(crate) fn allow_entries(m: &crate::schema::Manifest) -> Vec<Entry> {
    let mut out = Vec::new();
    for allow in &m.network.allow {
        let Ok(base) = Entry::parse(&allow.host) else {
            continue;
        };
        let ports = allow.ports.clone().or_else(|| match allow.protocol {
            Some(Protocol::Https) => Some(vec![443]),
            Some(Protocol::Http) => Some(vec![80]),
            _ => None,
        });
        let methods = allow.methods.as_ref().map(|ms| {
            ms.iter()
                .map(|m| m.to_ascii_uppercase())
                .collect::<Vec<_>>()
        });
        let paths: Vec<Option<String>> = match &allow.paths {
            Some(paths) if !paths.is_empty() => paths.iter().cloned().map(Some).collect(),
            _ => vec![None],
        };
        for path in paths {
            let mut entry = base.clone();
            entry.ports.clone_from(&ports);
            entry.methods.clone_from(&methods);
            entry.path.clone_from(&path);
            entry.text = format!(
                "{}{}{}{}",
                methods
                    .as_ref()
                    .map(|m| format!("{} ", m.join(",")))
                    .unwrap_or_default(),
                allow.host,
                ports
                    .as_ref()
                    .map(|p| format!(
                        ":{}",
                        p.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
                    ))
                    .unwrap_or_default(),
                path.unwrap_or_default()
            );
            out.push(entry);
        }
    }
    out
}

/// What running the command left.
struct Ran {
    capabilities: Option<Arc<Capabilities>>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Builds the sandbox and the proxy from the manifest and runs the command.
#[allow(clippy::too_many_lines)]
fn execute(
    parsed: &Parsed,
    options: &Options,
    dir: &RunDir,
    setup: &Setup,
    receipt: &mut Receipt,
) -> Result<Ran, String> {
    let m = &parsed.manifest;
    let enforce = !options.report_only;
    let resources = m.run.resources.clone().unwrap_or_default();
    let budgets = m.run.budgets.clone().unwrap_or_default();
    if enforce && budgets.tool_calls == Some(0) {
        receipt.denied.budget_denials += 1;
        receipt.status = Status::BudgetExceeded;
        return Err("run.budgets.tool_calls is 0: no command may run".to_owned());
    }
    let forbidden: Vec<PathBuf> = m
        .filesystem
        .forbidden_paths
        .iter()
        .map(PathBuf::from)
        .collect();
    let under_forbidden = |p: &Path| forbidden.iter().any(|f| p.starts_with(f));
    let cwd = ["workspace", "repo", "run-scratch"]
        .iter()
        .find_map(|alias| setup.mounts.iter().find(|mt| mt.3 == *alias))
        .map_or_else(|| PathBuf::from("/tmp"), |mt| mt.1.clone());
    let mut mounts: Vec<(PathBuf, PathBuf, bool)> = Vec::new();
    for (host, target, writable, _) in &setup.mounts {
        // With writable paths declared, a writable mount is writable only there.
        let narrowed = enforce
            && *writable
            && !m.filesystem.writable_paths.is_empty()
            && !m
                .filesystem
                .writable_paths
                .iter()
                .any(|w| Path::new(w) == target);
        mounts.push((host.clone(), target.clone(), *writable && !narrowed));
        if narrowed {
            for w in &m.filesystem.writable_paths {
                let Ok(rel) = Path::new(w).strip_prefix(target) else {
                    continue;
                };
                let source = host.join(rel);
                if !setup.sized.iter().any(|(d, _)| source.starts_with(d)) {
                    std::fs::create_dir_all(&source)
                        .map_err(|e| format!("{}: {e}", source.display()))?;
                }
                mounts.push((source, PathBuf::from(w), true));
            }
        }
    }
    let mut env: Vec<(String, String)> = vec![
        (
            "PATH".into(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
        ),
        ("HOME".into(), "/tmp".into()),
        ("TMPDIR".into(), "/tmp".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("USER".into(), "warden".into()),
        ("WARDEN_RUN_ID".into(), options.run_id.clone()),
    ];
    if let Some((_, target, _, _)) = setup.mounts.iter().find(|mt| mt.3 == "cache") {
        let at = |sub: &str| target.join(sub).display().to_string();
        for (name, sub) in [
            ("npm_config_cache", "npm"),
            ("YARN_CACHE_FOLDER", "yarn"),
            ("PIP_CACHE_DIR", "pip"),
            ("CARGO_HOME", "cargo"),
            ("GOMODCACHE", "go/mod"),
            ("GOCACHE", "go/build"),
        ] {
            env.push((name.to_owned(), at(sub)));
        }
        env.push(("XDG_CACHE_HOME".to_owned(), target.display().to_string()));
    }
    for name in &m.identity.variables {
        match options.environment.iter().find(|(k, _)| k == name) {
            Some((k, v)) => env.push((k.clone(), v.clone())),
            None => receipt.warnings.push(format!(
                "identity.variables: {name} is not set, so not passed"
            )),
        }
    }
    // The network: nothing at all, or only the egress proxy.
    let capabilities = if m.identity.capabilities.is_empty() {
        None
    } else {
        let start = SystemTime::now();
        let live: Vec<Live> = m
            .identity
            .capabilities
            .iter()
            .enumerate()
            .map(|(i, cap)| {
                Live::new(
                    format!(
                        "cap_{}_{i}",
                        &options.run_id[4..options.run_id.len().min(16)]
                    ),
                    cap,
                    start,
                    &*options.credential,
                )
            })
            .collect();
        for (l, cap) in live.iter().zip(&m.identity.capabilities) {
            receipt.grants.capabilities.push(CapabilityGrant {
                id: l.id.clone(),
                kind: "source_control".to_owned(),
                repository: l.repository.clone(),
                hosts: l.entries().iter().map(|e| e.text.clone()).collect(),
                actions: cap.actions.clone(),
                require_approval_for: cap.require_approval_for.clone(),
                expires_at: humantime::format_rfc3339_seconds(l.expires).to_string(),
                credential: l.has_credential(),
            });
        }
        Some(Arc::new(Capabilities::new(
            live,
            allow_entries(m),
            options.approver.clone(),
        )))
    };
    let observed: Arc<Mutex<Vec<Record>>> = Arc::new(Mutex::new(Vec::new()));
    let needs_proxy = !m.network.allow.is_empty() || capabilities.is_some() || options.report_only;
    let egress = if needs_proxy {
        let mut policy =
            NetPolicy::new(&[], &[], m.network.block_private_ranges).map_err(|e| e.to_string())?;
        for entry in allow_entries(m) {
            policy.allow(entry);
        }
        if let Some(caps) = &capabilities {
            for entry in caps.entries() {
                policy.allow(entry);
            }
        }
        let seen = Arc::clone(&observed);
        let forward = options.sink.clone();
        let sink: Sink = Arc::new(move |record: Record| {
            lock(&seen).push(record.clone());
            forward(record);
        });
        let resolver = warden_tools::egress::resolver()?;
        let mut config = warden_netproxy::Config::new(policy, resolver, sink);
        if enforce {
            config.budget = budgets.network_requests;
        } else {
            // Observing: every public host is let through and recorded.
            config.ask = Some(Arc::new(|_: &str, _: u16| warden_netproxy::Answer::Once));
        }
        if let Some(caps) = &capabilities {
            let decider = Arc::clone(caps);
            config.gate = Some(warden_netproxy::Gate {
                hosts: caps.entries(),
                decide: Arc::new(move |request| decider.decide(request)),
            });
        }
        Some(warden_tools::egress::launch(config, Some(&dir.root))?)
    } else {
        None
    };
    receipt.grants.network = NetworkGrant {
        mode: if egress.is_some() { "proxy" } else { "none" }.to_owned(),
        allow: allow_entries(m)
            .iter()
            .map(|e| e.text.clone())
            .chain(
                capabilities
                    .iter()
                    .flat_map(|c| c.entries())
                    .map(|e| format!("{} (capability)", e.text)),
            )
            .collect(),
        block_private_ranges: m.network.block_private_ranges,
    };
    let timeout_s = m
        .run
        .max_duration_seconds
        .map(|s| if enforce { s } else { s.saturating_mul(2) });
    let mut request = Request {
        program: options.command[0].clone(),
        args: options.command[1..].to_vec(),
        workspace: PathBuf::new(),
        cwd: Some(cwd),
        mounts,
        deny_read: forbidden.clone(),
        home: options.home.clone(),
        home_allow: options
            .home_allow
            .iter()
            .filter(|p| !under_forbidden(p))
            .cloned()
            .collect(),
        network: false,
        proxy_port: egress.as_ref().map(|_| warden_sandbox::PROXY_PORT),
        limits: Limits {
            timeout_ms: timeout_s.map(|s| s.saturating_mul(1000)),
            memory_mb: resources.memory_mb.filter(|_| enforce),
            pids: resources.pids.filter(|_| enforce),
            cpus: resources.cpu.filter(|_| enforce),
            disk_mb: resources.disk_mb.filter(|_| enforce),
            cpu_seconds: None,
            output_bytes: options.capture.then_some(1024 * 1024),
        },
        sized: setup.sized.clone(),
        ..Request::default()
    };
    if egress.is_some() {
        env.extend(warden_sandbox::proxy_env(warden_sandbox::PROXY_PORT));
    }
    request.env = env;
    if let Some(e) = &egress {
        e.trust_at(&mut request, Path::new(CA_INSIDE));
    }
    // Artifacts in the scratch tmpfs are copied out by the sandbox's helper before it goes.
    let collected_dir = dir.collected();
    std::fs::create_dir(&collected_dir).map_err(|e| format!("{}: {e}", collected_dir.display()))?;
    let in_sized = collect::scratch_sources(m, &setup.mounts, &setup.sized, &collected_dir);
    request.collect = in_sized
        .iter()
        .map(|(_, src, dst)| (src.clone(), dst.clone()))
        .collect();
    receipt.grants.environment = request.env.iter().map(|(k, _)| k.clone()).collect();
    let plan = Plan::new(&request)?;
    let began = SystemTime::now();
    let sandbox = Sandbox::new(&options.helper);
    let output = if options.capture {
        Output::Capture
    } else {
        Output::Inherit
    };
    let outcome = match &egress {
        Some(e) => sandbox.run_serving(&plan, output, &mut |listener| {
            let _ = e.proxy.serve(listener);
        }),
        None => sandbox.run(&plan, output),
    }
    .map_err(|e| format!("the sandbox could not be established: {e}"))?;
    receipt.grants.layers.clone_from(&outcome.layers);
    receipt.commands.push(CommandRun {
        sha256: command_sha256(&options.command),
        exit_code: outcome.exit_code,
        duration_ms: outcome.duration_ms,
        timed_out: outcome.timed_out,
    });
    receipt.exit_code = Some(outcome.exit_code);
    if let Some(e) = &egress {
        let counts = e.proxy.counts();
        receipt.denied.network_denials = counts.denied;
        receipt.denied.budget_denials += counts.over_budget;
    }
    receipt.status = if outcome.timed_out {
        Status::TimedOut
    } else if receipt.denied.budget_denials > 0 {
        Status::BudgetExceeded
    } else if outcome.exit_code == 0 {
        Status::Succeeded
    } else {
        Status::Failed
    };
    let secrets = capabilities
        .as_ref()
        .map(|c| c.secrets())
        .unwrap_or_default();
    collect::artifacts(
        m,
        &setup.mounts,
        &in_sized,
        &outcome.collected,
        dir,
        &secrets,
        receipt,
    );
    if options.report_only {
        let records = lock(&observed).clone();
        receipt.report = Some(report::build(m, setup, &records, &outcome, began));
        if let Some(r) = &receipt.report {
            receipt.denied.filesystem_denials += r.undeclared_writes.len() as u64;
        }
    }
    drop(egress);
    Ok(Ran {
        capabilities,
        stdout: outcome.stdout,
        stderr: outcome.stderr,
    })
}
