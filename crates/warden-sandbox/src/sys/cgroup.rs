//! The system calls of cgroups: a fork into a cgroup (`clone3` with `CLONE_INTO_CGROUP`), which
//! file system a path is on, extended attributes, and write access as the kernel checks it.

use std::ffi::CString;
use std::io;
use std::path::Path;

use super::cstr;

/// `clone3`'s flag that starts the child in the cgroup of a directory descriptor.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// The kernel's `struct clone_args`, as far as `CLONE_INTO_CGROUP` needs it.
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// Forks into the cgroup whose directory `group` is open on: the child is never anywhere else,
/// so nothing it starts can escape the group by forking before a move. Only called from the
/// single-threaded helper process.
pub(crate) fn fork_into_cgroup(group: libc::c_int) -> io::Result<libc::pid_t> {
    let args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: u64::try_from(libc::SIGCHLD).unwrap_or(17),
        cgroup: u64::try_from(group).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?,
        ..CloneArgs::default()
    };
    // SAFETY: as for `fork`: the helper is single-threaded, and a clone3 with no stack, no new
    // thread and SIGCHLD as its exit signal is a fork whose child starts in `group`. `args`
    // outlives the call and its size is passed with it.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &raw const args,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        pid => libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL)),
    }
}

/// The magic number of the file system `path` is on.
pub(crate) fn fs_magic(path: &Path) -> Option<i64> {
    let path = cstr(path.as_os_str()).ok()?;
    // SAFETY: statfs is plain data the call fills; the path outlives the call.
    unsafe {
        let mut info: libc::statfs = std::mem::zeroed();
        (libc::statfs(path.as_ptr(), &raw mut info) == 0).then_some(info.f_type)
    }
}

/// The value of the extended attribute `name` of `path` (links not followed), if it has one.
pub(crate) fn xattr(path: &Path, name: &str) -> Option<Vec<u8>> {
    let path = cstr(path.as_os_str()).ok()?;
    let name = CString::new(name).ok()?;
    let mut value = vec![0u8; 256];
    // SAFETY: NUL-terminated path and name, and a buffer whose length is passed with it.
    let len = unsafe {
        libc::lgetxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    let len = usize::try_from(len).ok()?;
    value.truncate(len);
    Some(value)
}

/// Whether this process may write `path` (its real ids, as the kernel checks them).
pub(crate) fn writable(path: &Path) -> bool {
    cstr(path.as_os_str()).is_ok_and(|path| {
        // SAFETY: a NUL-terminated path that outlives the call.
        unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
    })
}
