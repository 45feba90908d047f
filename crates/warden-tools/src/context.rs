//! What a tool runs with: the path policy, its caps, and what this session has read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use warden_config::{Settings, Tools};

use warden_policy::{PathPolicy, PatternError};

use crate::jobs::Jobs;

/// What one read saw, so that a later edit can tell whether the file changed since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    /// SHA-256 of the whole file, hex.
    pub sha256: String,
    pub len: u64,
    pub modified: Option<std::time::SystemTime>,
}

/// Read records by real path; shared by the tools of one session.
#[derive(Debug, Default)]
pub struct ReadLedger {
    records: Mutex<HashMap<PathBuf, ReadRecord>>,
}

impl ReadLedger {
    pub fn record(&self, path: PathBuf, record: ReadRecord) {
        if let Ok(mut records) = self.records.lock() {
            records.insert(path, record);
        }
    }

    pub fn get(&self, path: &Path) -> Option<ReadRecord> {
        self.records.lock().ok()?.get(path).cloned()
    }

    /// Every record: path, digest, length.
    pub fn all(&self) -> Vec<(PathBuf, String, u64)> {
        self.records
            .lock()
            .map(|r| {
                r.iter()
                    .map(|(p, rec)| (p.clone(), rec.sha256.clone(), rec.len))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The file changes made by tool calls and not yet handed to the trace.
#[derive(Debug, Default)]
pub struct ChangeLog {
    changes: Mutex<Vec<warden_trace::FileChange>>,
}

impl ChangeLog {
    pub fn push(&self, path: PathBuf, before: Option<Vec<u8>>, after: Option<Vec<u8>>) {
        if let Ok(mut changes) = self.changes.lock() {
            changes.push(warden_trace::FileChange {
                path,
                before,
                after,
            });
        }
    }

    /// Everything logged since the last call.
    pub fn take(&self) -> Vec<warden_trace::FileChange> {
        self.changes
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }
}

/// Everything a tool call may use.
#[derive(Debug)]
pub struct ToolContext {
    /// The working directory relative paths start from.
    pub cwd: PathBuf,
    pub paths: PathPolicy,
    /// Per-tool caps.
    pub caps: Tools,
    pub reads: ReadLedger,
    /// Changes made, for checkpoints.
    pub changes: ChangeLog,
    /// The sandbox the last shell command ran in (profile, layers, limits it hit), for the
    /// trace: taken by the runner when it records the call.
    pub(crate) last_sandbox: Mutex<Option<(String, serde_json::Value)>>,
    /// A session's watches of the writable roots (the project first, then `[sandbox.filesystem]
    /// allow_write`), for the files each command changes: made at its first command; `None`
    /// outside a session, where one command does not pay for them.
    pub(crate) watch: Option<Mutex<Option<Vec<Watched>>>>,
    /// The settings the context was built from (the Bash tool builds its sandbox from them).
    pub settings: Settings,
    /// The `warden` binary that serves as the sandbox helper; without one the Bash tool refuses
    /// to run anything.
    pub sandbox_helper: Option<PathBuf>,
    /// The sandbox shell commands run in, with the helper above; a session's keeps the next
    /// command's helper ready.
    pub(crate) sandbox: Option<warden_sandbox::Sandbox>,
    /// Background commands of this session; stopped when the context is dropped.
    pub jobs: Jobs,
    /// The next shell command runs with the network on: an escalation a person approved for
    /// that one call.
    pub network_once: std::sync::atomic::AtomicBool,
    /// Directories shell commands may also read: those of the skills active now, so that their
    /// scripts can run wherever the skill is installed. Read-only; the policy still decides
    /// each command.
    pub skill_dirs: std::sync::RwLock<Vec<PathBuf>>,
    /// The session's egress proxy, when the network is `allowlist`: every sandboxed command's
    /// only way out. Without one such commands have no network at all.
    pub egress: Option<std::sync::Arc<crate::egress::Egress>>,
    /// Where the connections of `webFetch` are recorded (the session's trace).
    pub egress_sink: Option<crate::egress::RecordSink>,
    /// The sandbox of every shell command when a manifest governs the session: its mounts,
    /// environment, limits and network, the program filled in per command. Without one it is
    /// built from the settings.
    pub sandbox_template: Option<warden_sandbox::Request>,
    /// The shell commands run so far, for the receipt of a manifest's run.
    pub commands: std::sync::Mutex<Vec<CommandRecord>>,
    /// The secret list as the sandbox applies it to every command (the path policy applies the
    /// same list to the file tools).
    pub mask: warden_sandbox::MaskRule,
    /// Who answers an MCP server's requests for input (a person at the terminal); none refuses
    /// them, saying warden runs headless.
    pub mcp_asker: Option<warden_mcp::Asker>,
    /// Shows a person the address where they log in to an MCP server again (a server that
    /// wants more scope); none where no one can (then the call fails saying how to).
    pub mcp_login: Option<ShowLogin>,
}

/// Shows a person the address (second) where they log in to the MCP server (first).
pub type ShowAddress = dyn Fn(&str, &str) + Send + Sync;

/// Shows a person the address where they log in to the MCP server named first.
#[derive(Clone)]
pub struct ShowLogin(pub std::sync::Arc<ShowAddress>);

impl std::fmt::Debug for ShowLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShowLogin")
    }
}

/// One shell command a session ran (or started in the background).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRecord {
    pub argv: Vec<String>,
    pub exit_code: i32,
    pub duration_ms: u64,
    pub timed_out: bool,
    /// Started in the background: its end is not known here.
    pub background: bool,
}

impl ToolContext {
    /// Builds the context from resolved settings: the roots are the project root plus
    /// `[sandbox.filesystem] allow_read`; the denied patterns are `[tools.read] deny`,
    /// `[sandbox.filesystem] deny_read`, `[permissions] protected_paths` and every `Read(…)` deny
    /// rule, so a directory walk (`grep`, `glob`) skips what a single read would be refused.
    pub fn from_settings(settings: &Settings) -> Result<Self, PatternError> {
        let mut roots = vec![settings.project_root.clone()];
        for extra in &settings.sandbox.filesystem.allow_read {
            roots.push(expand(&settings.project_root, extra));
        }
        let mut denied = settings.tools.read.deny.clone();
        denied.extend(settings.sandbox.filesystem.deny_read.iter().cloned());
        denied.extend(settings.permissions.protected_paths.iter().cloned());
        // warden's own state files: `//` anchors an absolute path.
        denied.extend(
            settings
                .dirs
                .state_files()
                .iter()
                .map(|p| format!("/{}", p.display())),
        );
        for rule in &settings.permissions.deny {
            let spec = rule
                .trim()
                .strip_prefix("Read(")
                .and_then(|r| r.strip_suffix(')'));
            if let Some(spec) = spec.map(str::trim).filter(|s| !s.is_empty()) {
                denied.push(spec.strip_prefix("./").unwrap_or(spec).to_owned());
            }
        }
        let secrets = std::sync::Arc::new(warden_policy::Secrets::from_settings(settings)?);
        let mut mask = warden_sandbox::MaskRule::new(std::sync::Arc::new(crate::SecretMask(
            warden_policy::Secrets::clone(&secrets),
        )));
        if let Some(index) = settings.dirs.toolchain_index() {
            mask = mask.with_index(index);
        }
        Ok(Self {
            cwd: settings.cwd.clone(),
            paths: PathPolicy::new(&roots, &denied)?
                .with_hidden_files(&settings.dirs.state_files())
                .with_secrets(secrets),
            mask,
            mcp_asker: None,
            mcp_login: None,
            caps: settings.tools.clone(),
            reads: ReadLedger::default(),
            changes: ChangeLog::default(),
            last_sandbox: Mutex::default(),
            watch: None,
            settings: settings.clone(),
            sandbox_helper: None,
            sandbox: None,
            jobs: Jobs::default(),
            network_once: std::sync::atomic::AtomicBool::new(false),
            skill_dirs: std::sync::RwLock::default(),
            egress: None,
            egress_sink: None,
            sandbox_template: None,
            commands: std::sync::Mutex::default(),
        })
    }
}

impl ToolContext {
    /// Records the connections of `webFetch` through `sink`.
    #[must_use]
    pub fn with_egress_sink(mut self, sink: warden_netproxy::Sink) -> Self {
        self.egress_sink = Some(crate::egress::RecordSink(sink));
        self
    }

    /// Sends the network of allowlist commands through `proxy`.
    #[must_use]
    pub fn with_egress(mut self, egress: crate::egress::Egress) -> Self {
        self.egress = Some(std::sync::Arc::new(egress));
        self
    }

    /// Sends the network of every command through a proxy shared with its owner (a manifest's
    /// run).
    #[must_use]
    pub fn with_shared_egress(mut self, egress: std::sync::Arc<crate::egress::Egress>) -> Self {
        self.egress = Some(egress);
        self
    }

    /// Runs every shell command in `template`'s sandbox (a manifest's), not one built from the
    /// settings.
    #[must_use]
    pub fn with_sandbox_template(mut self, template: warden_sandbox::Request) -> Self {
        self.sandbox_template = Some(template);
        self
    }

    /// Runs shell commands with `helper` (the `warden` binary) as the sandbox helper.
    #[must_use]
    pub fn with_sandbox_helper(mut self, helper: impl Into<PathBuf>) -> Self {
        let helper = helper.into();
        self.sandbox = Some(warden_sandbox::Sandbox::new(helper.clone()));
        self.sandbox_helper = Some(helper);
        self
    }

    /// For a session's many commands: the walk of their roots is kept and brought up to date
    /// between them ([`warden_sandbox::MaskRule::keep_walks`]), and shell commands run in a warm
    /// sandbox kept per profile, each in a cell made ahead while the model thinks
    /// ([`warden_sandbox::Sandbox::keep_warm`]).
    #[must_use]
    pub fn for_session(mut self) -> Self {
        self.mask = std::mem::take(&mut self.mask).keep_walks();
        self.sandbox = self.sandbox.take().map(warden_sandbox::Sandbox::keep_warm);
        self.watch = Some(Mutex::default());
        self
    }

    /// Starts a look at what the next command changes in the writable roots: the session's
    /// watches made if they are not yet, what happened before (the tools' changes) set aside.
    pub(crate) fn watch_before_command(&self) {
        let Some(watch) = &self.watch else {
            return;
        };
        let Ok(mut watch) = watch.lock() else {
            return;
        };
        match watch.as_mut() {
            Some(roots) => roots.iter_mut().for_each(|w| w.watch.skip()),
            None => *watch = Some(self.writable_roots()),
        }
    }

    /// The session's watches: the project, and each `allow_write` directory that exists and
    /// can be watched whole.
    fn writable_roots(&self) -> Vec<Watched> {
        let project = &self.settings.project_root;
        let mut roots = vec![project.clone()];
        for extra in &self.settings.sandbox.filesystem.allow_write {
            let root = expand(project, extra);
            if root.is_dir() && !roots.iter().any(|r| root.starts_with(r)) {
                roots.push(root);
            }
        }
        roots
            .into_iter()
            .enumerate()
            .filter_map(|(n, root)| {
                warden_sandbox::ChangeWatch::new(&root)
                    .ok()
                    .map(|watch| Watched {
                        root,
                        project: n == 0,
                        watch,
                    })
            })
            .collect()
    }

    /// What the command since [`Self::watch_before_command`] changed in the writable roots:
    /// the project's files relative to it, the others' absolute.
    pub(crate) fn watch_after_command(&self) -> Option<warden_sandbox::Changed> {
        let watch = self.watch.as_ref()?;
        let mut watch = watch.lock().ok()?;
        let roots = watch.as_mut()?;
        let (mut paths, mut count) = (Vec::new(), 0);
        for watched in roots.iter_mut() {
            match watched.watch.take() {
                warden_sandbox::Changed::Unknown => return Some(warden_sandbox::Changed::Unknown),
                warden_sandbox::Changed::Paths(found, n) => {
                    count += n;
                    paths.extend(found.into_iter().map(|p| {
                        if watched.project {
                            p
                        } else {
                            watched.root.join(p).display().to_string()
                        }
                    }));
                }
            }
        }
        Some(warden_sandbox::Changed::Paths(paths, count))
    }

    /// The sandbox shell commands run in.
    pub(crate) fn sandbox(&self) -> Option<warden_sandbox::Sandbox> {
        self.sandbox.clone().or_else(|| {
            self.sandbox_helper
                .as_ref()
                .map(|h| warden_sandbox::Sandbox::new(h.clone()))
        })
    }
}

/// One writable root a session watches.
#[derive(Debug)]
pub(crate) struct Watched {
    root: PathBuf,
    /// The project itself, whose files are named relative to it.
    project: bool,
    watch: warden_sandbox::ChangeWatch,
}

fn expand(project_root: &Path, entry: &str) -> PathBuf {
    if entry == "~"
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home);
    }
    if let Some(rest) = entry.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    if let Some(rest) = entry.strip_prefix("//") {
        return PathBuf::from("/").join(rest);
    }
    project_root.join(entry)
}
