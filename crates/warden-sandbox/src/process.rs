//! The process a command's sandbox lives in: a helper this process started, or a cell of a warm
//! helper (its child, reached through a pidfd).

use std::fs::File;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::process::Child;

use crate::sys;

#[derive(Debug)]
pub(crate) enum Process {
    /// A helper started by this process.
    Helper(Child),
    /// A warm helper's cell.
    Cell { pid: u32, pidfd: OwnedFd },
}

impl Process {
    pub(crate) fn id(&self) -> u32 {
        match self {
            Self::Helper(child) => child.id(),
            Self::Cell { pid, .. } => *pid,
        }
    }

    /// Kills it (a cell's command and everything in its namespace die with it).
    pub(crate) fn kill(&mut self) {
        match self {
            Self::Helper(child) => {
                let _ = child.kill();
            }
            Self::Cell { pidfd, .. } => sys::pidfd_kill(pidfd.as_raw_fd(), libc::SIGKILL),
        }
    }

    /// Waits for it to end (a helper is reaped; a cell is reaped by its warm helper).
    pub(crate) fn wait(&mut self) {
        match self {
            Self::Helper(child) => {
                let _ = child.wait();
            }
            Self::Cell { pidfd, .. } => {
                let _ = sys::poll_readable(pidfd.as_raw_fd(), None);
            }
        }
    }

    /// Whether it has ended.
    pub(crate) fn ended(&mut self) -> bool {
        match self {
            Self::Helper(child) => matches!(child.try_wait(), Ok(Some(_))),
            Self::Cell { pidfd, .. } => {
                sys::poll_readable(pidfd.as_raw_fd(), Some(0)).unwrap_or(true)
            }
        }
    }
}

/// The read ends of a helper's piped standard output and error, taken from it.
pub(crate) fn streams(child: &mut Child) -> [Option<File>; 2] {
    [
        child.stdout.take().map(|s| File::from(OwnedFd::from(s))),
        child.stderr.take().map(|s| File::from(OwnedFd::from(s))),
    ]
}
