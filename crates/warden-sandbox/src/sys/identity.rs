//! The calls behind the unprivileged identity (warden run as root): user namespaces made with
//! the id maps only a privileged process may write, mount trees shown through such a map
//! (idmapped mounts), and the switch to the command's own ids.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::path::Path;

use super::{AT_RECURSIVE, MountAttr, check, check_long, cstr};

const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// A new user namespace whose maps are `uid_map` and `gid_map` (lines of `inside host count`),
/// held by a descriptor. A child enters it and waits while this process, privileged where the
/// child came from, writes its maps; then the child goes and the descriptor keeps the namespace.
/// `setgroups` says whether processes in it may set their supplementary groups.
///
/// Call it only from a single-threaded process (the helper): the child runs between fork and
/// exit, and makes only async-signal-safe calls.
pub(crate) fn user_namespace(uid_map: &str, gid_map: &str, setgroups: bool) -> io::Result<OwnedFd> {
    let (ready_read, ready_write) = super::pipe()?;
    let (go_read, go_write) = super::pipe()?;
    let pid = super::fork()?;
    if pid == 0 {
        // SAFETY: async-signal-safe calls only, on descriptors this child owns; it never
        // returns to Rust code.
        unsafe {
            libc::close(ready_read.as_raw_fd());
            libc::close(go_write.as_raw_fd());
            if libc::unshare(libc::CLONE_NEWUSER) != 0 {
                // The reason, as the exit status.
                libc::_exit(*libc::__errno_location());
            }
            libc::write(ready_write.as_raw_fd(), b"r".as_ptr().cast(), 1);
            let mut byte = 0u8;
            libc::read(go_read.as_raw_fd(), (&raw mut byte).cast(), 1);
            libc::_exit(0)
        }
    }
    drop(ready_write);
    drop(go_read);
    let made = (|| {
        let mut byte = [0u8; 1];
        let ready = std::fs::File::from(ready_read);
        if io::Read::read(&mut &ready, &mut byte)? != 1 {
            let status = super::waitpid(pid)?;
            return Err(
                if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) != 0 {
                    io::Error::from_raw_os_error(libc::WEXITSTATUS(status))
                } else {
                    io::Error::other("the process making it ended early")
                },
            );
        }
        let proc = format!("/proc/{pid}");
        let write = |file: &str, text: &str| {
            std::fs::write(format!("{proc}/{file}"), text)
                .map_err(|e| io::Error::new(e.kind(), format!("{file}: {e}")))
        };
        write("uid_map", uid_map)?;
        write("setgroups", if setgroups { "allow" } else { "deny" })?;
        write("gid_map", gid_map)?;
        let path = cstr(std::ffi::OsStr::new(&format!("{proc}/ns/user")))?;
        // SAFETY: a NUL-terminated path that outlives the call.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        check(if fd < 0 { -1 } else { 0 })?;
        // SAFETY: `fd` was just opened and nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    })();
    drop(go_write);
    let _ = super::waitpid(pid);
    made
}

/// Enters the user namespace `fd` (this process must be single-threaded).
pub(crate) fn enter_user_namespace(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: setns takes a descriptor and flags by value.
    check(unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWUSER) })
}

/// Shows the detached tree `tree` (see [`super::clone_tree`]) through `userns`'s maps: a file
/// of host id `a` that the map sends to `b` looks owned by `b`, and a file `b` creates is stored
/// as `a`. Only in the initial user namespace; the tree is moved into place later.
pub(crate) fn idmap(tree: &OwnedFd, userns: &OwnedFd) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_IDMAP,
        attr_clr: 0,
        propagation: 0,
        userns_fd: u64::try_from(userns.as_raw_fd()).unwrap_or(u64::MAX),
    };
    let empty = c"";
    // SAFETY: an empty NUL-terminated path with AT_EMPTY_PATH (the descriptor itself), and a
    // correctly laid-out mount_attr whose size is passed with it; all outlive the call.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
            std::ptr::from_ref(&attr),
            std::mem::size_of::<MountAttr>(),
        )
    })
    .map(|_| ())
}

/// Mounts the detached tree `tree` at `target`.
pub(crate) fn move_tree(tree: &OwnedFd, target: &Path) -> io::Result<()> {
    let target = cstr(target.as_os_str())?;
    let empty = c"";
    // SAFETY: NUL-terminated strings that outlive the call; the rest are integers.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    })
    .map(|_| ())
}

/// Becomes `uid`/`gid` with no supplementary groups (needs `CAP_SETUID` and `CAP_SETGID`).
pub(crate) fn become_user(uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: setgroups with a zero count reads no memory; the others take integers.
    unsafe {
        check(libc::setgroups(0, std::ptr::null()))?;
        check(libc::setresgid(gid, gid, gid))?;
        check(libc::setresuid(uid, uid, uid))
    }
}

/// The effective uid of this process.
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}
