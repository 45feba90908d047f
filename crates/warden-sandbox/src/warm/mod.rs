//! Warm helpers: for a session, one long-lived helper per sandbox profile has entered the user,
//! mount, UTS and network namespaces and built the file system once (the mounts, masks and
//! idmapped trees), and has the seccomp programs compiled; each command runs in a *cell* forked
//! from it (see [`zygote`]), which gives the command what is its own: new PID and IPC
//! namespaces with the command as PID 1, a copy of the kept mount namespace with its own `.git`
//! overlays and `/proc`, the host detached, its cgroups, limits, Landlock ruleset, seccomp
//! filters, dropped capabilities, environment and descriptors. Nothing of one command is there
//! for the next but what the profile keeps by design: the workspace, the session's `/tmp` and
//! `/dev/shm`, and the network namespace's loopback (no process is left to listen on it).
//!
//! The profile is the plan without what differs between commands (program, arguments,
//! environment, working directory, limits, the `.git` layers): any other change — a new secret
//! masked, a protected path that appeared, another mount — gives a plan of another profile,
//! and a new helper is made for it. Before each command its cell checks that every kept mount
//! still shows the file or directory it showed (one whose mount point was removed or replaced
//! on the host is detached by the kernel) and the command runs in a new helper instead if not.
//! A helper or cell that died is replaced; nothing ever runs outside a sandbox.

pub(crate) mod zygote;

use std::fs::File;
use std::io::Write as _;
use std::os::fd::{AsFd as _, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use crate::cgroup::Cgroup;
use crate::placeholder::Placeholders;
use crate::plan::{Limits, Plan};
use crate::process::Process;
use crate::running::{running_add, running_remove};
use crate::spare::{Key, Started, on_maker, on_maker_wait};
use crate::spawn::{HELPER_ARG, Output};
use crate::sys;

/// What a warm helper is made for: the plan without what each command has of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Profile(String);

impl Profile {
    /// The profile of `plan`, or `None` where a warm helper cannot serve it: a proxy bridge,
    /// sized scratch space and files collected from it, and workspace overlays are made per
    /// helper; a mount made after a `.git` overlay that covers it would come before it here.
    pub(crate) fn of(plan: &Plan) -> Option<Self> {
        if plan.proxy_port.is_some()
            || !plan.sized.is_empty()
            || !plan.collect.is_empty()
            || !plan.overlays.is_empty()
        {
            return None;
        }
        let positions = plan.overlay_positions();
        for (git, position) in plan.git_overlays.iter().zip(positions) {
            let covering = plan
                .mounts
                .iter()
                .skip(position)
                .any(|mount| git.starts_with(crate::plan::target(mount)));
            if covering {
                return None;
            }
        }
        let kept = Plan {
            program: String::new(),
            args: Vec::new(),
            cwd: PathBuf::new(),
            env: Vec::new(),
            limits: Limits::default(),
            git_layers: Vec::new(),
            into_cgroup: false,
            ..plan.clone()
        };
        serde_json::to_string(&kept).ok().map(Self)
    }
}

/// A session's warm helper, the spare cell made for the next command, and the helpers replaced
/// while cells of theirs may still run.
#[derive(Debug, Default)]
pub(crate) struct Warm {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    helper: Option<Kept>,
    spare: Option<(Key, Started)>,
    retired: Vec<Kept>,
    /// A profile no warm helper could be made for: its commands run in their own helpers.
    failed: Option<Profile>,
}

impl Warm {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The process id of the warm helper kept now.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.state().helper.as_ref().map(|k| k.child.id())
    }

    /// Whether the helper kept now is made for `plan`'s profile.
    pub(crate) fn serves(&self, plan: &Plan) -> bool {
        let profile = Profile::of(plan);
        self.state()
            .helper
            .as_ref()
            .is_some_and(|k| Some(&k.profile) == profile.as_ref())
    }

    /// A cell for `plan`'s command, waiting for its plan: the spare when it was made for the
    /// same limits and output, else a new one (a new helper first when none is kept for the
    /// profile). `None` where no warm helper serves it.
    pub(crate) fn cell(&self, helper: &Path, plan: &Plan, output: Output) -> Option<Started> {
        let profile = Profile::of(plan)?;
        let key = Key::of(plan, output)?;
        let mut state = self.state();
        state.retired.retain_mut(|k| !k.ended());
        if state.failed.as_ref() == Some(&profile) {
            return None;
        }
        if state
            .helper
            .as_mut()
            .is_some_and(|k| k.profile != profile || k.ended())
        {
            state.retire();
        }
        if state.helper.is_none() {
            let path = helper.to_path_buf();
            let plan = plan.clone();
            let made = on_maker_wait(move || {
                Kept::start(&path, &plan, profile.clone()).map_err(|_| profile)
            });
            match made {
                Some(Ok(kept)) => state.helper = Some(kept),
                Some(Err(profile)) => {
                    state.failed = Some(profile);
                    return None;
                }
                None => return None,
            }
        }
        match state.spare.take() {
            Some((made_for, cell)) if made_for == key => return Some(cell),
            Some((_, cell)) => cell.discard(),
            None => {}
        }
        let made = state.helper.as_ref()?.cell(&key);
        if made.is_err() {
            state.retire();
        }
        made.ok()
    }

    /// Has a cell for a command with `key` made ahead, on the maker's thread.
    pub(crate) fn request(self: &Arc<Self>, key: Key) {
        let warm = Arc::downgrade(self);
        on_maker(move || {
            let Some(warm) = warm.upgrade() else {
                return;
            };
            let mut state = match warm.state.try_lock() {
                Ok(state) => state,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                // A command is taking a cell now, and may be waiting on this very thread for
                // a new helper: no cell made ahead this time.
                Err(TryLockError::WouldBlock) => return,
            };
            if state.spare.is_some() {
                return;
            }
            match state.helper.as_ref().map(|k| k.cell(&key)) {
                Some(Ok(cell)) => state.spare = Some((key, cell)),
                // An answer missed (late, cut short) could be taken for the next request's:
                // the helper is not asked again.
                Some(Err(_)) => state.retire(),
                None => {}
            }
        });
    }

    /// Ends every helper and cell kept, and what still runs in them.
    pub(crate) fn close(&self) {
        let mut state = self.state();
        if let Some((_, cell)) = state.spare.take() {
            cell.discard();
        }
        state.helper = None;
        state.retired.clear();
    }

    /// Gives up the helper kept now (its cells still running end as they would).
    pub(crate) fn forget(&self) {
        self.state().retire();
    }
}

impl State {
    fn retire(&mut self) {
        if let Some((_, cell)) = self.spare.take() {
            cell.discard();
        }
        if let Some(mut kept) = self.helper.take() {
            // It ends once its last cell has: a command running in one is not cut short.
            kept.control = None;
            self.retired.push(kept);
        }
    }
}

impl Drop for State {
    fn drop(&mut self) {
        if let Some((_, cell)) = self.spare.take() {
            cell.discard();
        }
    }
}

/// A warm helper.
#[derive(Debug)]
struct Kept {
    profile: Profile,
    child: Child,
    /// The socket cells are asked for on; `None` once the helper is given up.
    control: Option<OwnedFd>,
    /// Held as long as the helper's file system has its mount points.
    _placeholders: Placeholders,
}

/// How long a warm helper may take to build its sandbox, or to fork a cell.
const ANSWER_MS: u64 = 30_000;

impl Kept {
    /// Starts a warm helper for `plan`'s profile, and waits until it is ready. On the maker's
    /// thread: the helper dies with the thread that started it.
    fn start(helper: &Path, plan: &Plan, profile: Profile) -> Result<Self, String> {
        let placeholders = Placeholders::make(&plan.placeholders)?;
        let (ours, theirs) = sys::seqpacket_pair().map_err(|e| format!("control socket: {e}"))?;
        let (plan_read, plan_write) = sys::pipe().map_err(|e| format!("plan pipe: {e}"))?;
        let mut command = Command::new(helper);
        command
            .args([HELPER_ARG, "warm"])
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let raw = [(theirs.as_raw_fd(), 3), (plan_read.as_raw_fd(), 4)];
        sys::before_exec(&mut command, move || sys::place_fds(&raw));
        let child = command
            .spawn()
            .map_err(|e| format!("the warm helper {}: {e}", helper.display()))?;
        drop((theirs, plan_read));
        running_add(child.id());
        let mut kept = Kept {
            profile,
            child,
            control: Some(ours),
            _placeholders: placeholders,
        };
        let json = serde_json::to_string(plan).map_err(|e| e.to_string())?;
        (&File::from(plan_write))
            .write_all(json.as_bytes())
            .map_err(|e| format!("the warm helper's plan: {e}"))?;
        let (answer, _) = kept.answer()?;
        match answer.split_first() {
            Some((b'R', _)) => Ok(kept),
            Some((b'E', why)) => Err(String::from_utf8_lossy(why).into_owned()),
            _ => {
                kept.control = None;
                Err("the warm helper ended before it was ready".to_owned())
            }
        }
    }

    /// The helper's next message, waited for up to [`ANSWER_MS`].
    fn answer(&self) -> Result<(Vec<u8>, Vec<OwnedFd>), String> {
        let control = self
            .control
            .as_ref()
            .ok_or("the warm helper was given up")?;
        let fd = control.as_raw_fd();
        if !sys::poll_readable(fd, Some(ANSWER_MS)).unwrap_or(false) {
            return Err("the warm helper did not answer".to_owned());
        }
        let mut buf = vec![0u8; 64 * 1024];
        let (got, fds) = sys::recv_fds(fd, &mut buf).map_err(|e| e.to_string())?;
        buf.truncate(got);
        Ok((buf, fds))
    }

    fn ended(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// A new cell for a command with `key`, in new cgroups with its limits.
    fn cell(&self, key: &Key) -> Result<Started, String> {
        let control = self
            .control
            .as_ref()
            .ok_or("the warm helper was given up")?;
        let group = Cgroup::create(&key.limits)?;
        let (status_read, status_write) = sys::pipe().map_err(|e| format!("status pipe: {e}"))?;
        let (plan_read, plan_write) = sys::pipe().map_err(|e| format!("plan pipe: {e}"))?;
        let (ours, theirs) = streams(key.output)?;
        let mut fds: Vec<i32> = vec![status_write.as_raw_fd(), plan_read.as_raw_fd()];
        fds.extend(theirs.iter().map(AsRawFd::as_raw_fd));
        if let Some(dir) = group.v2_dir() {
            fds.push(dir.as_raw_fd());
        }
        sys::send_fds(control.as_raw_fd(), b"C", &fds).map_err(|e| e.to_string())?;
        drop((status_write, plan_read, theirs));
        let (answer, mut given) = self.answer()?;
        let pid = std::str::from_utf8(&answer)
            .ok()
            .and_then(|t| t.parse::<u32>().ok())
            .filter(|_| given.len() == 1)
            .ok_or("the warm helper made no cell")?;
        let pidfd = given.remove(0);
        let started = Started {
            process: Process::Cell { pid, pidfd },
            stdin: None,
            streams: ours,
            status: File::from(status_read),
            plan: File::from(plan_write),
            group,
        };
        // Into its groups now, while nothing waits for it (on cgroup v1 a move waits for an
        // RCU grace period); in the unified hierarchy its command is forked into its group.
        let moved = started.group.join_files(true).iter().try_for_each(|procs| {
            std::fs::write(
                std::ffi::OsStr::from_bytes(procs.as_bytes()),
                pid.to_string(),
            )
        });
        if let Err(e) = moved {
            started.discard();
            return Err(format!("moving the cell into its cgroup: {e}"));
        }
        running_add(pid);
        Ok(started)
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.control = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
        running_remove(self.child.id());
    }
}

/// A cell's standard streams: ours to read (where captured) and theirs to pass, in the order
/// stdin, stdout, stderr.
fn streams(output: Output) -> Result<([Option<File>; 2], Vec<OwnedFd>), String> {
    let err = |e: std::io::Error| format!("the command's streams: {e}");
    match output {
        Output::Capture => {
            let null = OwnedFd::from(File::open("/dev/null").map_err(err)?);
            let (out_read, out_write) = sys::pipe().map_err(err)?;
            let (err_read, err_write) = sys::pipe().map_err(err)?;
            Ok((
                [Some(File::from(out_read)), Some(File::from(err_read))],
                vec![null, out_write, err_write],
            ))
        }
        Output::Pipe => Err("a command spoken with is not served warm".to_owned()),
        Output::Inherit => {
            let own = [
                std::io::stdin().as_fd().try_clone_to_owned(),
                std::io::stdout().as_fd().try_clone_to_owned(),
                std::io::stderr().as_fd().try_clone_to_owned(),
            ];
            let theirs = own
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .map_err(err)?;
            Ok(([None, None], theirs))
        }
    }
}
