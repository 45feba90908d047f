//! The warm helper itself: one process per sandbox profile that enters the namespaces and
//! builds the file system once, then makes a cell for each command on request. A cell is a fork
//! of it, with the parent's pipes in place of its own descriptors, that waits for its command's
//! plan; given one, it enters a PID and an IPC namespace of the command's own and forks the
//! command as PID 1 there, which copies the kept mount namespace, checks that the kept mounts
//! still show what they showed, adds its own `.git` overlays and `/proc`, detaches the host and
//! seals itself as every sandboxed command does.
//!
//! Protocol, on the sequenced-packet socket at descriptor 3: the helper reads the profile's plan
//! from descriptor 4 and answers `R` (ready) or `E` and why it could not; then each message
//! `C` with the descriptors [status, plan, stdin, stdout, stderr, cgroup directory?] is answered
//! with the cell's process id as text and a pidfd of it. The socket's end ends the helper once
//! its cells have ended.

use std::fs;
use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd as _, OwnedFd};

use crate::helper::{self, Status};
use crate::mounts::{self, Mark, Part};
use crate::plan::Plan;
use crate::{seccomp, sys};

/// What every command of this helper starts from.
struct Prepared {
    filters: Vec<seccompiler::BpfProgram>,
    marks: Vec<Mark>,
}

/// The warm helper's whole life. Never returns.
pub(crate) fn main() -> ! {
    if !sys::is_open(3) {
        sys::exit(126);
    }
    let control = sys::owned_fd(3);
    let mut plan_json = String::new();
    if sys::is_open(4) {
        let _ = fs::File::from(sys::owned_fd(4)).read_to_string(&mut plan_json);
    }
    let prepared = serde_json::from_str::<Plan>(&plan_json)
        .map_err(|e| format!("the sandbox plan is malformed: {e}"))
        .and_then(|plan| prepare(&plan).map(|prepared| (plan, prepared)));
    match prepared {
        Err(why) => {
            let _ = sys::send_fds(control.as_raw_fd(), format!("E{why}").as_bytes(), &[]);
            sys::exit(126)
        }
        Ok((plan, prepared)) => {
            if sys::send_fds(control.as_raw_fd(), b"R", &[]).is_err() {
                sys::exit(126);
            }
            serve(&control, &plan, &prepared)
        }
    }
}

/// The namespaces and the kept file system, in this process itself.
fn prepare(plan: &Plan) -> Result<Prepared, String> {
    let trees = helper::enter(plan, libc::CLONE_NEWNS)?;
    mounts::build(plan, &trees, Part::Kept)?;
    drop(trees);
    sys::sethostname("warden").map_err(|e| format!("hostname: {e}"))?;
    if !plan.network {
        sys::loopback_up().map_err(|e| format!("loopback in the network namespace: {e}"))?;
    }
    let filters = seccomp::filters().map_err(|e| format!("seccomp filter: {e}"))?;
    let marks = mounts::marks(plan)?;
    Ok(Prepared { filters, marks })
}

/// Makes cells until the socket ends, then waits for them.
fn serve(control: &OwnedFd, plan: &Plan, prepared: &Prepared) -> ! {
    // Cells are reaped as they end: the parent watches each through its pidfd.
    sys::reap_children_at_once(true);
    let mut buf = [0u8; 16];
    loop {
        let Ok((got, fds)) = sys::recv_fds(control.as_raw_fd(), &mut buf) else {
            break;
        };
        if got == 0 {
            break;
        }
        if buf[0] != b'C' || !(5..=6).contains(&fds.len()) {
            // Not a request this helper makes sense of: refuse it, make nothing.
            let _ = sys::send_fds(control.as_raw_fd(), b"-", &[]);
            continue;
        }
        let pid = match sys::fork() {
            Ok(0) => cell(control, fds, plan, prepared),
            Ok(pid) => pid,
            Err(_) => {
                let _ = sys::send_fds(control.as_raw_fd(), b"-", &[]);
                continue;
            }
        };
        drop(fds);
        // The pidfd is opened before anything could end the cell (it waits for its plan), so it
        // is this cell's; without one the cell is given up (it ends when its plan pipe does).
        let Ok(pidfd) = sys::pidfd_open(pid).map(sys::owned_fd) else {
            let _ = sys::send_fds(control.as_raw_fd(), b"-", &[]);
            continue;
        };
        let text = pid.to_string();
        if sys::send_fds(control.as_raw_fd(), text.as_bytes(), &[pidfd.as_raw_fd()]).is_err() {
            sys::pidfd_kill(pidfd.as_raw_fd(), libc::SIGKILL);
        }
    }
    // Cells still running keep their namespaces and descriptors; wait for them to end.
    sys::wait_all();
    sys::exit(0)
}

/// A cell: the parent's descriptors in place of the helper's, then one command.
fn cell(control: &OwnedFd, fds: Vec<OwnedFd>, plan: &Plan, prepared: &Prepared) -> ! {
    let _ = control;
    let mut pairs: Vec<(i32, i32)> = fds
        .iter()
        .zip([3, 4, 0, 1, 2, 6])
        .map(|(fd, target)| (fd.as_raw_fd(), target))
        .collect();
    pairs.sort_by_key(|(_, target)| *target);
    let placed = sys::place_fds(&pairs)
        .and_then(|()| sys::close_except(5, if fds.len() == 6 { 6 } else { -1 }))
        .and_then(|()| sys::set_parent_death_signal());
    // The cell waits for its command itself.
    sys::reap_children_at_once(false);
    std::mem::forget(fds);
    if placed.is_err() {
        sys::exit(126);
    }
    let mut out = fs::File::from(sys::owned_fd(3));
    let mut text = String::new();
    let _ = fs::File::from(sys::owned_fd(4)).read_to_string(&mut text);
    if text.is_empty() {
        // Ended before it was handed a command: nothing to do.
        sys::exit(0);
    }
    let status = match serde_json::from_str::<Plan>(&text) {
        Ok(command) if same_profile(plan, &command) => run(&command, prepared),
        Ok(_) => Status {
            exit_code: 126,
            stale: true,
            error: Some("the command's plan is not the one this warm sandbox was made for".into()),
            ..Status::default()
        },
        Err(err) => Status {
            exit_code: 126,
            error: Some(format!("the sandbox plan is malformed: {err}")),
            ..Status::default()
        },
    };
    let code = if status.error.is_some() {
        126
    } else {
        status.exit_code
    };
    if let Ok(line) = serde_json::to_string(&status) {
        let _ = writeln!(out, "{line}");
    }
    sys::exit(code)
}

/// Whether `command` may run in a sandbox made for `profile`.
fn same_profile(profile: &Plan, command: &Plan) -> bool {
    super::Profile::of(profile).is_some_and(|p| Some(p) == super::Profile::of(command))
}

/// One command: its own PID and IPC namespaces, its PID 1 forked into them.
fn run(plan: &Plan, prepared: &Prepared) -> Status {
    if let Err(err) = sys::unshare(libc::CLONE_NEWPID | libc::CLONE_NEWIPC) {
        return Status {
            exit_code: 126,
            error: Some(format!("PID and IPC namespaces: {err}")),
            ..Status::default()
        };
    }
    let mut status = helper::command(plan, |error_fd| own(plan, prepared, error_fd));
    if status
        .error
        .as_deref()
        .is_some_and(|e| e.starts_with(STALE))
    {
        status.stale = true;
    }
    if status.error.is_none() {
        status.layers.push("warm-sandbox".to_owned());
    }
    status
}

/// How the reason begins when the kept tree changed under the helper.
const STALE: &str = "the warm sandbox is stale: ";

/// PID 1 of one command: its own copy of the kept tree, checked, completed, then the command.
fn own(plan: &Plan, prepared: &Prepared, error_fd: i32) -> String {
    let step = |what: &str, result: std::io::Result<()>| result.map_err(|e| format!("{what}: {e}"));
    let result = (|| -> Result<String, String> {
        step("parent-death signal", sys::set_parent_death_signal())?;
        step("mount namespace", sys::unshare(libc::CLONE_NEWNS))?;
        mounts::complete(plan, &prepared.marks, STALE)?;
        crate::last_steps::become_command(plan, &prepared.filters, error_fd)
    })();
    match result {
        Ok(never) | Err(never) => never,
    }
}
