//! Mounts: made, sealed, moved at, taken away.

use std::ffi::{CString, OsStr};
use std::io;
use std::path::Path;

use super::{check, check_long, cstr};

pub(crate) fn mount(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let source = source.map(|s| cstr(s.as_os_str())).transpose()?;
    let target = cstr(target.as_os_str())?;
    let fstype = fstype.map(|f| cstr(OsStr::new(f))).transpose()?;
    let data = data.map(|d| cstr(OsStr::new(d))).transpose()?;
    let ptr = |c: &Option<CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is a NUL-terminated string that outlives the call, or null where
    // mount(2) allows it.
    check(unsafe {
        libc::mount(
            ptr(&source),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            ptr(&data).cast(),
        )
    })
}

/// Makes every mount of this mount namespace private: nothing mounted here reaches another
/// namespace, nor the other way round.
pub(crate) fn make_mounts_private() -> io::Result<()> {
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
pub(super) struct MountAttr {
    pub(super) attr_set: u64,
    pub(super) attr_clr: u64,
    pub(super) propagation: u64,
    pub(super) userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
pub(super) const AT_RECURSIVE: libc::c_uint = 0x8000;

/// Makes the mount at `path` (and with `recursive` every mount below it) read-only or writable,
/// and always nosuid and nodev.
pub(crate) fn seal_tree(path: &Path, read_only: bool, recursive: bool) -> io::Result<()> {
    let target = cstr(path.as_os_str())?;
    seal(libc::AT_FDCWD, &target, read_only, recursive, 0)
}

/// `mount_setattr` on `path` from `dirfd`, with `flags` besides `AT_RECURSIVE`.
pub(super) fn seal(
    dirfd: libc::c_int,
    path: &std::ffi::CStr,
    read_only: bool,
    recursive: bool,
    flags: libc::c_uint,
) -> io::Result<()> {
    let mut set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    let mut clear = 0;
    if read_only {
        set |= MOUNT_ATTR_RDONLY;
    } else {
        clear |= MOUNT_ATTR_RDONLY;
    }
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = flags | if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: `path` is NUL-terminated and `attr` is a correctly laid-out mount_attr whose size
    // is passed with it; both outlive the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags,
            std::ptr::from_ref(&attr),
            std::mem::size_of::<MountAttr>(),
        )
    };
    check_long(ret).map(|_| ())
}

pub(crate) fn pivot_root(new_root: &Path, put_old: &Path) -> io::Result<()> {
    let new_root = cstr(new_root.as_os_str())?;
    let put_old = cstr(put_old.as_os_str())?;
    // SAFETY: both are NUL-terminated strings that outlive the call.
    check_long(unsafe { libc::syscall(libc::SYS_pivot_root, new_root.as_ptr(), put_old.as_ptr()) })
        .map(|_| ())
}

pub(crate) fn umount_detach(path: &Path) -> io::Result<()> {
    let path = cstr(path.as_os_str())?;
    // SAFETY: a NUL-terminated string that outlives the call.
    check(unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) })
}

/// Whether the directory `path` (not followed if a link) is marked opaque by an overlay mounted
/// with `userxattr`: made anew in its layer, nothing below it shows through.
pub(crate) fn overlay_opaque(path: &Path) -> bool {
    let Ok(path) = cstr(path.as_os_str()) else {
        return false;
    };
    let mut value = [0u8; 4];
    // SAFETY: NUL-terminated strings and a buffer whose size is passed with it, all outliving
    // the call.
    let len = unsafe {
        libc::lgetxattr(
            path.as_ptr(),
            c"user.overlay.opaque".as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    len == 1 && value[0] == b'y'
}
