//! Descriptors passed over unix sockets (`SCM_RIGHTS`), processes by pidfd, and what a path
//! shows now (`statx`).

use std::io;
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::path::Path;

/// The most descriptors one message carries.
const MOST: usize = 8;

/// Sends `data` (at least one byte) and `fds` over the unix socket `socket` in one message.
pub(crate) fn send_fds(socket: libc::c_int, data: &[u8], fds: &[libc::c_int]) -> io::Result<()> {
    if data.is_empty() || fds.len() > MOST {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut iov = libc::iovec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    };
    // Room for MOST descriptors' control message, aligned as cmsghdr wants.
    let mut control = [0u64; 8];
    let bytes = u32::try_from(std::mem::size_of_val(fds)).unwrap_or(0);
    // SAFETY: msghdr is plain data; the fields set point at live buffers of the sizes given.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE is a pure size computation.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(bytes) } as usize;
        // SAFETY: the control buffer (64 bytes) holds one cmsghdr and MOST descriptors; the data
        // is written unaligned.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
            if cmsg.is_null() {
                return Err(io::Error::other("no room for the descriptors"));
            }
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(bytes) as usize;
            let at = libc::CMSG_DATA(cmsg);
            for (i, fd) in fds.iter().enumerate() {
                let size = std::mem::size_of::<libc::c_int>();
                std::ptr::write_unaligned(at.add(i * size).cast::<libc::c_int>(), *fd);
            }
        }
    }
    loop {
        // SAFETY: `msg` describes valid buffers for the duration of the call.
        let sent = unsafe { libc::sendmsg(socket, &raw const msg, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Receives one message sent with [`send_fds`] into `buf`: its length (0 when the other end
/// closed) and the descriptors it carried (close-on-exec).
pub(crate) fn recv_fds(socket: libc::c_int, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; the fields set point at live buffers of the sizes given.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    let got = loop {
        // SAFETY: `msg` describes valid buffers for the duration of the call.
        let got = unsafe { libc::recvmsg(socket, &raw mut msg, libc::MSG_CMSG_CLOEXEC) };
        if got >= 0 {
            break usize::try_from(got).unwrap_or(0);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: recvmsg filled the control buffer; each header is checked before its data is
    // read, and the count comes from the header's own length.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let header = libc::CMSG_LEN(0) as usize;
                let count = ((*cmsg).cmsg_len as usize).saturating_sub(header)
                    / std::mem::size_of::<libc::c_int>();
                let at = libc::CMSG_DATA(cmsg);
                let size = std::mem::size_of::<libc::c_int>();
                for i in 0..count {
                    let fd = std::ptr::read_unaligned(at.add(i * size).cast::<libc::c_int>());
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&raw const msg, cmsg);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::other(
            "a message carried more descriptors than expected",
        ));
    }
    Ok((got, fds))
}

/// Sends `fd` over the unix socket `socket`, with one byte of data.
pub(crate) fn send_fd(socket: libc::c_int, fd: libc::c_int) -> io::Result<()> {
    send_fds(socket, &[1], &[fd])
}

/// Receives a descriptor sent with [`send_fd`]; `None` when the other end closed without one.
pub(crate) fn recv_fd(socket: libc::c_int) -> io::Result<Option<OwnedFd>> {
    let (got, fds) = recv_fds(socket, &mut [0u8])?;
    Ok(fds.into_iter().next().filter(|_| got > 0))
}

/// What `path` shows now, its last component not followed: device, inode, and whether it is the
/// root of a mount (`None` where the kernel does not say, before Linux 5.8).
pub(crate) fn statx_at_path(path: &Path) -> io::Result<(u64, u64, Option<bool>)> {
    let path = super::cstr(path.as_os_str())?;
    // SAFETY: statx is plain data; the call fills it.
    let mut out: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-parameter.
    let ret = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_INO,
            &raw mut out,
        )
    };
    super::check(ret)?;
    let dev = libc::makedev(out.stx_dev_major, out.stx_dev_minor);
    let bit = u64::try_from(libc::STATX_ATTR_MOUNT_ROOT).unwrap_or(0);
    let known = out.stx_attributes_mask & bit != 0;
    let root = out.stx_attributes & bit != 0;
    Ok((dev, out.stx_ino, known.then_some(root)))
}

/// The device and inode of what `fd` refers to.
pub(crate) fn fstat_id(fd: &OwnedFd) -> io::Result<(u64, u64)> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: stat is plain data; fstat fills it.
    let mut out: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and out-parameter.
    super::check(unsafe { libc::fstat(fd.as_raw_fd(), &raw mut out) })?;
    Ok((out.st_dev, out.st_ino))
}

/// A connected pair of sequenced-packet unix sockets (close-on-exec): messages keep their
/// bounds, and a peer's end is seen as the end of the stream.
pub(crate) fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: a valid two-element out-array.
    super::check(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    })?;
    // SAFETY: socketpair returned two new descriptors that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sends `signal` to the process `pidfd` refers to (never to another that took its id).
pub(crate) fn pidfd_kill(pidfd: libc::c_int, signal: libc::c_int) {
    // SAFETY: integer arguments and a null siginfo; a failure (already gone) needs no handling.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd,
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0u32,
        )
    };
}

/// Whether children that end are reaped at once by the kernel (`SIGCHLD` ignored), or left to
/// be waited for (the default).
pub(crate) fn reap_children_at_once(at_once: bool) {
    let handler = if at_once {
        libc::SIG_IGN
    } else {
        libc::SIG_DFL
    };
    // SAFETY: setting a signal's disposition to SIG_IGN or SIG_DFL installs no handler code.
    unsafe { libc::signal(libc::SIGCHLD, handler) };
}

/// Waits for every child to end.
pub(crate) fn wait_all() {
    loop {
        let mut status = 0;
        // SAFETY: a valid out-parameter.
        let ret = unsafe { libc::waitpid(-1, &raw mut status, 0) };
        if ret < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}
