//! inotify: the directory watches that keep a session's walk of its roots current.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::path::Path;

use super::cstr;

/// What a directory's watch reports: any change to its entries (made, removed, renamed in or
/// out, their link counts, modes and contents) and to the directory itself.
pub(crate) const WATCHED: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_ATTRIB
    | libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;

/// One event: the watch it came from (`-1` when the queue overflowed) and its mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) wd: i32,
    pub(crate) mask: u32,
}

/// A new inotify instance, non-blocking and closed on `exec`.
pub(crate) fn init() -> io::Result<OwnedFd> {
    // SAFETY: no pointers; the descriptor returned is owned by nobody else.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    if fd == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Watches the directory at `path` (a link followed: `/proc/self/fd/N` names the directory a
/// descriptor is open on); the watch's number, the same one again for a directory already
/// watched.
pub(crate) fn add_watch(inotify: &OwnedFd, path: &Path, mask: u32) -> io::Result<i32> {
    let path = cstr(path.as_os_str())?;
    // SAFETY: a NUL-terminated path that outlives the call, on a descriptor we own.
    let wd = unsafe { libc::inotify_add_watch(inotify.as_raw_fd(), path.as_ptr(), mask) };
    if wd == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(wd)
    }
}

/// Ends the watch `wd` (already gone with its directory: nothing to do).
pub(crate) fn rm_watch(inotify: &OwnedFd, wd: i32) {
    // SAFETY: no pointers; a watch number on a descriptor we own.
    let _ = unsafe { libc::inotify_rm_watch(inotify.as_raw_fd(), wd) };
}

/// More events than this in one drain are read as an overflow of the queue: the root is walked
/// again, and what is left queued is read the next time.
const MAX_EVENTS: usize = 1 << 18;

/// Every event queued now, without waiting (past [`MAX_EVENTS`], an overflow).
pub(crate) fn drain(inotify: &OwnedFd) -> io::Result<Vec<Event>> {
    Ok(drain_named(inotify)?
        .into_iter()
        .map(|e| Event {
            wd: e.wd,
            mask: e.mask,
        })
        .collect())
}

/// One event with the name it is about (empty for the watched directory itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Named {
    pub(crate) wd: i32,
    pub(crate) mask: u32,
    pub(crate) name: std::ffi::OsString,
}

/// Every event queued now, with its name, without waiting (past [`MAX_EVENTS`], an overflow).
pub(crate) fn drain_named(inotify: &OwnedFd) -> io::Result<Vec<Named>> {
    use std::os::unix::ffi::OsStrExt as _;
    const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
    let mut events = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        if events.len() > MAX_EVENTS {
            events.push(Named {
                wd: -1,
                mask: libc::IN_Q_OVERFLOW,
                name: std::ffi::OsString::new(),
            });
            return Ok(events);
        }
        // SAFETY: the buffer's pointer and length, on a descriptor we own.
        let read = unsafe {
            libc::read(
                inotify.as_raw_fd(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        };
        let Ok(read) = usize::try_from(read) else {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => return Ok(events),
                io::ErrorKind::Interrupted => continue,
                _ => return Err(e),
            }
        };
        let mut at = 0;
        while at + HEADER <= read {
            // SAFETY: the kernel wrote whole events; a header's bytes are in the buffer (checked
            // above), read unaligned because the buffer is bytes.
            let header: libc::inotify_event =
                unsafe { std::ptr::read_unaligned(buffer.as_ptr().add(at).cast()) };
            let len = usize::try_from(header.len).unwrap_or(read);
            let start = (at + HEADER).min(read);
            let end = (start + len).min(read);
            // The name is padded with NULs to its length.
            let bytes = &buffer[start..end];
            let bytes = &bytes[..bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len())];
            events.push(Named {
                wd: header.wd,
                mask: header.mask,
                name: std::ffi::OsStr::from_bytes(bytes).to_owned(),
            });
            at += HEADER + len;
        }
    }
}

/// Whether events are queued on `inotify` now.
pub(crate) fn pending(inotify: &OwnedFd) -> bool {
    let mut poll = libc::pollfd {
        fd: inotify.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd of ours, no wait.
    let ready = unsafe { libc::poll(&raw mut poll, 1, 0) };
    ready > 0 && poll.revents & libc::POLLIN != 0
}

/// Whether the mount table `mountinfo` (an open `/proc/self/mountinfo`) changed since it was
/// opened: the kernel flags it as an exceptional condition.
pub(crate) fn mounts_changed(mountinfo: &std::fs::File) -> bool {
    let mut poll = libc::pollfd {
        fd: mountinfo.as_raw_fd(),
        events: libc::POLLPRI,
        revents: 0,
    };
    // SAFETY: one pollfd, its length passed with it, no waiting.
    let ready = unsafe { libc::poll(&raw mut poll, 1, 0) };
    ready != 0 && poll.revents & (libc::POLLPRI | libc::POLLERR) != 0
}
