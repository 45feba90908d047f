//! Paths inside a tree the command can change (a writable root), resolved and made without ever
//! following a link: another sandbox of the same root may rename or replace what is there while
//! this one is being built, so every step is taken from a descriptor, and a link anywhere on the
//! way is an error (`ELOOP`), never a way out.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::path::{Component, Path};

use super::{check, check_long, cstr};

/// `struct open_how` of `openat2(2)`.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;

/// What to make where nothing is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Make {
    /// Nothing: it must be there.
    Nothing,
    /// A directory (and the directories above it).
    Dir,
    /// An empty file (and the directories above it).
    File,
}

/// An `O_PATH` descriptor of `path`, links followed: the top of a tree, outside the command's
/// reach.
pub(crate) fn open_path(path: &Path) -> io::Result<OwnedFd> {
    let path = cstr(path.as_os_str())?;
    // SAFETY: a NUL-terminated path that outlives the call.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    check(if fd < 0 { -1 } else { 0 })?;
    // SAFETY: `fd` was just opened and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn openat2(dir: &OwnedFd, name: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let name = cstr(name.as_os_str())?;
    let how = OpenHow {
        flags: u64::try_from(flags | libc::O_CLOEXEC).unwrap_or(0),
        mode: 0,
        resolve: RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
    };
    // SAFETY: a NUL-terminated name and an open_how whose size is passed with it, outliving the
    // call.
    let fd = check_long(unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            std::ptr::from_ref(&how),
            std::mem::size_of::<OpenHow>(),
        )
    })?;
    let fd = i32::try_from(fd).map_err(|_| io::Error::other("openat2: a descriptor past i32"))?;
    // SAFETY: openat2 returned this descriptor and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An `O_PATH` descriptor of `rest` below the tree `top` (a descriptor), made as `make` says
/// where missing; no link is followed on the way or at the end, and `..` is refused.
pub(crate) fn open_beneath(top: &OwnedFd, rest: &Path, make: Make) -> io::Result<OwnedFd> {
    let parts: Vec<&std::ffi::OsStr> = rest
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: only plain names below a root", rest.display()),
            )),
        })
        .collect::<io::Result<_>>()?;
    let mut at = openat2(top, Path::new("."), libc::O_PATH | libc::O_DIRECTORY)?;
    for (i, name) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let name = Path::new(name);
        let want = if last && make != Make::Dir {
            libc::O_PATH
        } else {
            libc::O_PATH | libc::O_DIRECTORY
        };
        at = match openat2(&at, name, want) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound && make != Make::Nothing => {
                let c = cstr(name.as_os_str())?;
                if last && make == Make::File {
                    // SAFETY: a NUL-terminated name, a directory descriptor of ours.
                    let fd = unsafe {
                        libc::openat(
                            at.as_raw_fd(),
                            c.as_ptr(),
                            libc::O_CREAT
                                | libc::O_EXCL
                                | libc::O_WRONLY
                                | libc::O_NOFOLLOW
                                | libc::O_CLOEXEC,
                            0o644,
                        )
                    };
                    if fd >= 0 {
                        // SAFETY: just opened, ours alone.
                        drop(unsafe { OwnedFd::from_raw_fd(fd) });
                    }
                } else {
                    // SAFETY: as above.
                    let _ = unsafe { libc::mkdirat(at.as_raw_fd(), c.as_ptr(), 0o755) };
                }
                openat2(&at, name, want)?
            }
            Err(e) => return Err(e),
        };
    }
    Ok(at)
}

/// Whether the descriptor `fd` holds a directory.
pub(crate) fn is_dir(fd: &OwnedFd) -> bool {
    // SAFETY: fstat fills the zeroed struct it is given; O_PATH descriptors allow it.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(fd.as_raw_fd(), &raw mut stat) == 0
            && stat.st_mode & libc::S_IFMT == libc::S_IFDIR
    }
}

/// A detached copy of the mount tree at the descriptor `at` (every mount below it included).
pub(crate) fn clone_tree(at: &OwnedFd) -> io::Result<OwnedFd> {
    let flags = 1 /* OPEN_TREE_CLONE */
        | super::AT_RECURSIVE
        | libc::AT_EMPTY_PATH as libc::c_uint
        | libc::O_CLOEXEC as libc::c_uint;
    // SAFETY: an empty NUL-terminated path with AT_EMPTY_PATH: the descriptor itself.
    let fd = check_long(unsafe {
        libc::syscall(libc::SYS_open_tree, at.as_raw_fd(), c"".as_ptr(), flags)
    })?;
    let fd = i32::try_from(fd).map_err(|_| io::Error::other("open_tree: a descriptor past i32"))?;
    // SAFETY: open_tree returned this descriptor and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A detached copy of the mount at `path` and every mount below it, its last component not
/// followed.
pub(crate) fn clone_path(path: &Path) -> io::Result<OwnedFd> {
    let path = cstr(path.as_os_str())?;
    let flags = 1 /* OPEN_TREE_CLONE */
        | super::AT_RECURSIVE
        | libc::AT_SYMLINK_NOFOLLOW as libc::c_uint
        | libc::O_CLOEXEC as libc::c_uint;
    // SAFETY: a NUL-terminated path that outlives the call; the rest are integers.
    let fd = check_long(unsafe {
        libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags)
    })?;
    let fd = i32::try_from(fd).map_err(|_| io::Error::other("open_tree: a descriptor past i32"))?;
    // SAFETY: open_tree returned this descriptor and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Mounts the detached tree `tree` on the descriptor `at`.
pub(crate) fn move_tree_to(tree: &OwnedFd, at: &OwnedFd) -> io::Result<()> {
    const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
    const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
    // SAFETY: empty NUL-terminated paths with the EMPTY_PATH flags: the descriptors themselves.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            at.as_raw_fd(),
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    })
    .map(|_| ())
}

/// Makes the mount at the descriptor `at` (and with `recursive` every mount below it) read-only
/// or writable, and always nosuid and nodev.
pub(crate) fn seal_at(at: &OwnedFd, read_only: bool, recursive: bool) -> io::Result<()> {
    super::mounts::seal(
        at.as_raw_fd(),
        c"",
        read_only,
        recursive,
        libc::AT_EMPTY_PATH as libc::c_uint,
    )
}

/// What `fstatat` says of `name` in the directory `dir` (a link not followed): the walk of a
/// large tree looks one name up, not the whole path.
pub(crate) fn stat_at(dir: &OwnedFd, name: &std::ffi::OsStr) -> io::Result<libc::stat> {
    let name = cstr(name)?;
    // SAFETY: fstatat fills the zeroed struct it is given, from a NUL-terminated name and a
    // directory descriptor of ours.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        check(libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &raw mut stat,
            libc::AT_SYMLINK_NOFOLLOW,
        ))?;
        Ok(stat)
    }
}

/// An `O_PATH` descriptor of the directory `name` in `dir`, never through a link.
pub(crate) fn open_dir_at(dir: &OwnedFd, name: &std::ffi::OsStr) -> io::Result<OwnedFd> {
    let name = cstr(name)?;
    // SAFETY: a NUL-terminated name and a directory descriptor of ours.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    check(fd)?;
    // SAFETY: openat returned this descriptor and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
