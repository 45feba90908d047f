//! Every system call the sandbox makes that the standard library does not wrap. This is the only
//! module of warden with `unsafe`; each block says why it is sound.
#![allow(unsafe_code)]

use std::ffi::{CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

mod beneath;
mod cgroup;
mod identity;
pub(crate) mod inotify;
mod mounts;
mod passing;
pub(crate) use beneath::{
    Make, clone_path, clone_tree, is_dir, move_tree_to, open_beneath, open_dir_at, open_path,
    seal_at, stat_at,
};
pub(crate) use cgroup::{fork_into_cgroup, fs_magic, writable, xattr};
pub(crate) use identity::{
    become_user, effective_uid, enter_user_namespace, idmap, move_tree, user_namespace,
};
use mounts::{AT_RECURSIVE, MountAttr};
pub(crate) use mounts::{
    make_mounts_private, mount, overlay_opaque, pivot_root, seal_tree, umount_detach,
};
pub(crate) use passing::{
    fstat_id, pidfd_kill, reap_children_at_once, recv_fd, recv_fds, send_fd, send_fds,
    seqpacket_pair, statx_at_path, wait_all,
};

fn cstr(text: &OsStr) -> io::Result<CString> {
    CString::new(text.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a NUL byte in a path or argument",
        )
    })
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn check_long(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

pub(crate) fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: unshare takes flags by value and touches no memory of ours.
    check(unsafe { libc::unshare(flags) })
}

/// `ptrace(PTRACE_TRACEME)`: a call any process may make of itself, unless a filter refuses it.
pub(crate) fn ptrace_traceme() -> io::Result<()> {
    // SAFETY: PTRACE_TRACEME takes no pointers; the other arguments are ignored.
    let ret = unsafe {
        libc::ptrace(
            libc::PTRACE_TRACEME,
            0,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Makes a write past the file-size limit an error (`EFBIG`) instead of a signal.
pub(crate) fn ignore_file_size_signal() {
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler code.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Forks. Only called from the single-threaded helper process.
pub(crate) fn fork() -> io::Result<libc::pid_t> {
    // SAFETY: the helper is single-threaded (a fresh exec of warden that starts no threads), so
    // the child may go on running ordinary Rust code until it calls execve.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(pid)
    }
}

pub(crate) fn sethostname(name: &str) -> io::Result<()> {
    // SAFETY: the pointer and length describe `name`'s bytes.
    check(unsafe { libc::sethostname(name.as_ptr().cast(), name.len()) })
}

/// Brings the loopback interface of the current network namespace up.
pub(crate) fn loopback_up() -> io::Result<()> {
    // SAFETY: a plain socket for the ioctl; closed below on every path.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = libc::c_char::from_ne_bytes([*src]);
    }
    // SAFETY: `req` is a valid ifreq for SIOCGIFFLAGS/SIOCSIFFLAGS on an open socket.
    let result = unsafe {
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &raw mut req) < 0 {
            Err(io::Error::last_os_error())
        } else {
            req.ifr_ifru.ifru_flags |= libc::c_short::try_from(libc::IFF_UP).unwrap_or(1);
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &raw const req) < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        }
    };
    // SAFETY: closing the socket opened above.
    unsafe { libc::close(fd) };
    result
}

pub(crate) fn setrlimit(resource: libc::__rlimit_resource_t, value: u64) -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: `limit` is a valid rlimit that outlives the call.
    check(unsafe { libc::setrlimit(resource, &raw const limit) })
}

/// Closes every file descriptor from `first` up.
pub(crate) fn close_from(first: u32) -> io::Result<()> {
    // SAFETY: close_range takes plain integers; closing descriptors this process no longer needs
    // (none of them are owned by Rust objects still in use at this point).
    check_long(unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, 0u32) }).map(|_| ())
}

pub(crate) fn set_no_new_privs() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })
}

pub(crate) fn set_parent_death_signal() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) })
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAPABILITY_V3: u32 = 0x2008_0522;

/// Drops every capability: the bounding set, the ambient set, then effective, permitted and
/// inheritable. With `switch_to`, switches to that uid and gid (no supplementary groups) before the
/// last step, while the capability to do so is still there.
pub(crate) fn drop_capabilities(switch_to: Option<(u32, u32)>) -> io::Result<()> {
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments; EINVAL past the last capability is expected.
        let ret = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if ret == -1 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINVAL) {
                return Err(err);
            }
        }
    }
    // SAFETY: prctl with integer arguments only.
    check(unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    })?;
    if let Some((uid, gid)) = switch_to {
        become_user(uid, gid)?;
    }
    let header = CapHeader {
        version: CAPABILITY_V3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: a v3 header and the two data structs v3 expects, both outliving the call.
    check_long(unsafe { libc::syscall(libc::SYS_capset, &raw const header, data.as_ptr()) })
        .map(|_| ())
}

/// Replaces this process with `program`. Returns only on failure.
pub(crate) fn execve(program: &Path, args: &[String], env: &[(String, String)]) -> io::Error {
    let path = match cstr(program.as_os_str()) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let mut c_args = Vec::with_capacity(args.len() + 1);
    let mut c_env = Vec::with_capacity(env.len());
    for a in args {
        match cstr(OsStr::new(a)) {
            Ok(c) => c_args.push(c),
            Err(e) => return e,
        }
    }
    for (k, v) in env {
        match cstr(OsStr::new(&format!("{k}={v}"))) {
            Ok(c) => c_env.push(c),
            Err(e) => return e,
        }
    }
    let mut c_args_ptrs: Vec<*const libc::c_char> = c_args.iter().map(|c| c.as_ptr()).collect();
    c_args_ptrs.push(std::ptr::null());
    let mut c_env_ptrs: Vec<*const libc::c_char> = c_env.iter().map(|c| c.as_ptr()).collect();
    c_env_ptrs.push(std::ptr::null());
    // SAFETY: NUL-terminated strings in null-terminated arrays, all alive across the call.
    unsafe { libc::execve(path.as_ptr(), c_args_ptrs.as_ptr(), c_env_ptrs.as_ptr()) };
    io::Error::last_os_error()
}

pub(crate) fn pidfd_open(pid: libc::pid_t) -> io::Result<libc::c_int> {
    // SAFETY: integer arguments only.
    let fd = check_long(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) })?;
    libc::c_int::try_from(fd).map_err(|_| io::Error::other("pidfd out of range"))
}

/// Waits up to `timeout_ms` (forever when `None`) for `fd` to become readable.
pub(crate) fn poll_readable(fd: libc::c_int, timeout_ms: Option<u64>) -> io::Result<bool> {
    let timeout = timeout_ms.map_or(-1, |t| libc::c_int::try_from(t).unwrap_or(libc::c_int::MAX));
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let ret = unsafe { libc::poll(&raw mut pfd, 1, timeout) };
        if ret >= 0 {
            return Ok(ret > 0);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Whether the read end of the pipe whose write end is `fd` is closed (its reader is gone).
pub(crate) fn reader_gone(fd: libc::c_int) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout returns at once.
    let ret = unsafe { libc::poll(&raw mut pfd, 1, 0) };
    ret > 0 && pfd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}

/// Starts a new session (and process group) with this process as its leader.
pub(crate) fn setsid() -> io::Result<()> {
    // SAFETY: no arguments; fails only when already a process group's leader.
    if unsafe { libc::setsid() } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether descriptor `fd` is a terminal.
pub(crate) fn is_terminal(fd: libc::c_int) -> bool {
    // SAFETY: an integer argument; a descriptor that is not open is "not a terminal".
    unsafe { libc::isatty(fd) == 1 }
}

pub(crate) fn kill(pid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: integer arguments only; a failure (already gone) needs no handling.
    unsafe { libc::kill(pid, signal) };
}

/// Waits for `pid` and returns its raw wait status.
pub(crate) fn waitpid(pid: libc::pid_t) -> io::Result<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-parameter.
        let ret = unsafe { libc::waitpid(pid, &raw mut status, 0) };
        if ret == pid {
            return Ok(status);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// CPU time (user and system, in milliseconds) and the largest resident set (KiB) of the
/// children waited for.
pub(crate) fn children_usage() -> (u64, u64) {
    // SAFETY: `rusage` is plain data, and getrusage fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-parameter.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &raw mut usage) } != 0 {
        return (0, 0);
    }
    let ms = |t: libc::timeval| {
        u64::try_from(t.tv_sec).unwrap_or(0) * 1000 + u64::try_from(t.tv_usec).unwrap_or(0) / 1000
    };
    (
        ms(usage.ru_utime) + ms(usage.ru_stime),
        u64::try_from(usage.ru_maxrss).unwrap_or(0),
    )
}

pub(crate) fn exit(code: i32) -> ! {
    // SAFETY: _exit ends the process without running anything else; nothing is left to flush
    // that matters (the status was written with unbuffered writes).
    unsafe { libc::_exit(code) }
}

/// Duplicates `fd` onto `target` in a child about to exec (async-signal-safe).
pub(crate) fn dup2(fd: libc::c_int, target: libc::c_int) -> io::Result<()> {
    // SAFETY: integer arguments only.
    check(unsafe { libc::dup2(fd, target) })
}

/// A pipe whose ends close on exec.
pub(crate) fn pipe() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors were just created and are owned by nothing else.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// Runs `f` in the child of `command` after fork, before exec.
pub(crate) fn before_exec(
    command: &mut std::process::Command,
    f: impl FnMut() -> io::Result<()> + Send + Sync + 'static,
) {
    use std::os::unix::process::CommandExt;
    // SAFETY: callers pass only async-signal-safe work (dup2, prctl) to run between fork and exec.
    unsafe { command.pre_exec(f) };
}

/// Takes ownership of an inherited descriptor.
pub(crate) fn owned_fd(fd: libc::c_int) -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    // SAFETY: called once, for a descriptor the parent handed over and nothing else owns.
    unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }
}

/// The real uid and gid of this process.
pub(crate) fn ids() -> (u32, u32) {
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    unsafe { (libc::getuid(), libc::getgid()) }
}

pub(crate) fn close(fd: libc::c_int) {
    // SAFETY: closing a descriptor this code opened and no Rust object owns.
    unsafe { libc::close(fd) };
}

/// Closes every descriptor from `first` up except `keep` (which closes itself on exec).
pub(crate) fn close_except(first: u32, keep: libc::c_int) -> io::Result<()> {
    let keep = u32::try_from(keep).unwrap_or(0);
    if keep >= first {
        if keep > first {
            // SAFETY: integer arguments; these descriptors are not used again.
            check_long(unsafe { libc::syscall(libc::SYS_close_range, first, keep - 1, 0u32) })?;
        }
        // SAFETY: as above.
        return check_long(unsafe {
            libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32)
        })
        .map(|_| ());
    }
    close_from(first)
}

/// Whether `fd` is an open descriptor.
pub(crate) fn is_open(fd: libc::c_int) -> bool {
    // SAFETY: F_GETFD only reads the descriptor's flags.
    unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is `file` (between fork and
/// exec: only async-signal-safe calls).
pub(crate) fn join_cgroup(file: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: open/write/close on a NUL-terminated path and a static buffer; no allocation.
    unsafe {
        let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let wrote = libc::write(fd, b"0".as_ptr().cast(), 1);
        libc::close(fd);
        if wrote != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The Landlock ABI version the kernel offers, or `None` without Landlock.
pub(crate) fn landlock_abi() -> Option<i64> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: a null attribute pointer with size 0 and the VERSION flag only queries the ABI.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (ret > 0).then_some(ret)
}

/// Places each `(source, target)` descriptor at its target, between fork and exec: first every
/// source is copied above 200, so that no target overwrites a source not yet placed.
pub(crate) fn place_fds(pairs: &[(libc::c_int, libc::c_int)]) -> io::Result<()> {
    let mut high = [0 as libc::c_int; 8];
    if pairs.len() > high.len() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    for (slot, (source, _)) in high.iter_mut().zip(pairs) {
        // SAFETY: F_DUPFD with an integer minimum; no memory involved.
        let copy = unsafe { libc::fcntl(*source, libc::F_DUPFD_CLOEXEC, 200) };
        if copy < 0 {
            return Err(io::Error::last_os_error());
        }
        *slot = copy;
    }
    for (copy, (_, target)) in high.iter().zip(pairs) {
        dup2(*copy, *target)?;
    }
    Ok(())
}

/// Whether the child `pid` has exited, without reaping it.
fn exited(pid: libc::pid_t) -> bool {
    // SAFETY: siginfo_t is plain data; waitid fills it. WNOWAIT leaves the child to be reaped.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let ret = libc::waitid(
            libc::P_PID,
            libc::id_t::try_from(pid).unwrap_or(0),
            &raw mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        ret == 0 && info.si_pid() != 0
    }
}

/// Waits for the child `pid` to exit for up to `timeout_ms` (forever when `None`) and kills it
/// with SIGKILL when the time is up; true if it was killed. The child is left to be reaped.
pub(crate) fn wait_or_kill(pid: libc::pid_t, timeout_ms: Option<u64>) -> bool {
    let done = if let Ok(pidfd) = pidfd_open(pid) {
        let done = poll_readable(pidfd, timeout_ms).unwrap_or(false);
        close(pidfd);
        done
    } else {
        // Without pidfd (old kernels), poll the child's state: the limit holds either way.
        let started = std::time::Instant::now();
        loop {
            if exited(pid) {
                break true;
            }
            if timeout_ms.is_some_and(|t| started.elapsed() >= std::time::Duration::from_millis(t))
            {
                break false;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    };
    if !done {
        kill(pid, libc::SIGKILL);
    }
    !done
}

/// A system call with no arguments, by number (tests of the seccomp filters).
#[cfg(test)]
pub(crate) fn raw_syscall(number: libc::c_long) -> io::Result<libc::c_long> {
    // SAFETY: only argument-less calls are made through this (getpid and its numbers).
    let ret = unsafe { libc::syscall(number) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Listens on `fd` again with room for `backlog` connections not yet accepted (the standard
/// library's 128 overflows when a thousand clients connect at once).
pub(crate) fn listen(fd: libc::c_int, backlog: libc::c_int) -> io::Result<()> {
    // SAFETY: integer arguments only.
    check(unsafe { libc::listen(fd, backlog) })
}
