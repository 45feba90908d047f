//! The sandboxed commands this process is running, so that an interrupt can end them all.

use std::sync::{Mutex, PoisonError};

use crate::sys;

/// The helpers (and bwrap processes) running now, so that an interrupt can end them all.
static RUNNING: Mutex<Vec<u32>> = Mutex::new(Vec::new());

pub(crate) fn running_add(pid: u32) {
    RUNNING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(pid);
}

pub(crate) fn running_remove(pid: u32) {
    RUNNING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|p| *p != pid);
}

/// Kills every sandboxed command this process is running, and everything they started (each
/// helper's command is PID 1 of its namespace and dies with it). For Ctrl-C.
pub fn kill_running() {
    let pids = RUNNING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    for pid in pids {
        if let Ok(pid) = libc::pid_t::try_from(pid) {
            sys::kill(pid, libc::SIGKILL);
        }
    }
}
