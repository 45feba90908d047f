//! The system-call filter every sandboxed process runs under.

use std::collections::BTreeMap;
use std::io;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

/// Calls refused with `EPERM`: tracing and reading other processes, mounts and namespaces,
/// keyrings, BPF, perf, `io_uring`, kexec, modules, reboot, swap, userfaultfd, file handles.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_chroot,
    libc::SYS_acct,
];

/// Namespace flags `clone` may not be given.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

fn arch() -> io::Result<TargetArch> {
    if cfg!(target_arch = "x86_64") {
        Ok(TargetArch::x86_64)
    } else if cfg!(target_arch = "aarch64") {
        Ok(TargetArch::aarch64)
    } else {
        Err(io::Error::other("no seccomp filter for this architecture"))
    }
}

fn errno(value: i32) -> SeccompAction {
    SeccompAction::Errno(u32::try_from(value).unwrap_or(1))
}

fn condition(arg: u8, op: SeccompCmpOp, value: u64) -> io::Result<SeccompCondition> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(io::Error::other)
}

/// The calls that set a file's mode: the call, its mode argument, and its flags argument when
/// the mode applies only with `O_CREAT`.
fn mode_setting_calls() -> Vec<(i64, u8, Option<u8>)> {
    let mut calls = vec![
        (libc::SYS_fchmod, 1, None),
        (libc::SYS_fchmodat, 2, None),
        // fchmodat2: the same number on every architecture (it is newer than the split tables).
        (452, 2, None),
        (libc::SYS_mknodat, 2, None),
        (libc::SYS_openat, 3, Some(2)),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        (libc::SYS_chmod, 1, None),
        (libc::SYS_mknod, 1, None),
        (libc::SYS_creat, 1, None),
        (libc::SYS_open, 2, Some(1)),
    ]);
    calls
}

fn rule(arg: u8, op: SeccompCmpOp, value: u64, len: SeccompCmpArgLen) -> io::Result<SeccompRule> {
    let condition = SeccompCondition::new(arg, len, op, value).map_err(io::Error::other)?;
    SeccompRule::new(vec![condition]).map_err(io::Error::other)
}

/// The filters, in the order they are installed: the deny list, then `clone3` answered with
/// `ENOSYS` so that C libraries fall back to `clone`, whose flags the first filter can see.
/// Calls from any other architecture's ABI kill the process.
pub(crate) fn filters() -> io::Result<Vec<BpfProgram>> {
    let arch = arch()?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|n| (*n, Vec::new())).collect();
    let mut clone_rules = Vec::new();
    for flag in NAMESPACE_FLAGS {
        let flag = u64::from(flag.unsigned_abs());
        clone_rules.push(rule(
            0,
            SeccompCmpOp::MaskedEq(flag),
            flag,
            SeccompCmpArgLen::Qword,
        )?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    // Set-user-ID and set-group-ID bits: a file the command makes is the host user's outside,
    // so creating such bits is refused, by every call that can set a mode.
    for (call, mode_arg, flags_arg) in mode_setting_calls() {
        let mut set_id = Vec::new();
        for bit in [libc::S_ISUID, libc::S_ISGID] {
            let bit = u64::from(bit);
            let mode = condition(mode_arg, SeccompCmpOp::MaskedEq(bit), bit)?;
            let Some(flags) = flags_arg else {
                set_id.push(SeccompRule::new(vec![mode]).map_err(io::Error::other)?);
                continue;
            };
            // open-like calls use the mode only when they create a file.
            for create in [libc::O_CREAT, libc::O_TMPFILE] {
                let create = u64::from(create.unsigned_abs());
                let creating = condition(flags, SeccompCmpOp::MaskedEq(create), create)?;
                set_id.push(
                    SeccompRule::new(vec![mode.clone(), creating]).map_err(io::Error::other)?,
                );
            }
        }
        rules.insert(call, set_id);
    }
    rules.insert(
        libc::SYS_ioctl,
        vec![rule(
            1,
            SeccompCmpOp::Eq,
            libc::TIOCSTI,
            SeccompCmpArgLen::Dword,
        )?],
    );
    let deny = SeccompFilter::new(rules, SeccompAction::Allow, errno(libc::EPERM), arch)
        .map_err(io::Error::other)?;
    let clone3 = SeccompFilter::new(
        // `openat2` passes its mode in memory the filter cannot read: callers fall back to
        // `openat`, like C libraries fall back from `clone3` to `clone`.
        BTreeMap::from([
            (libc::SYS_clone3, Vec::new()),
            (libc::SYS_openat2, Vec::new()),
        ]),
        SeccompAction::Allow,
        errno(libc::ENOSYS),
        arch,
    )
    .map_err(io::Error::other)?;
    let mut programs = [deny, clone3]
        .into_iter()
        .map(|f| BpfProgram::try_from(f).map_err(io::Error::other))
        .collect::<io::Result<Vec<_>>>()?;
    if cfg!(target_arch = "x86_64") {
        programs.push(no_x32(libc::ENOSYS));
    }
    Ok(programs)
}

/// On x86-64, the x32 ABI's calls carry the x86-64 architecture and their own numbers (bit 30
/// set), which the deny list would not recognise: all of them answer `errno`.
fn no_x32(errno: i32) -> BpfProgram {
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    let op = |code: u32, jt: u8, jf: u8, k: u32| sock_filter {
        code: u16::try_from(code).unwrap_or(0),
        jt,
        jf,
        k,
    };
    vec![
        // A = the call's number (offset 0 of seccomp_data).
        op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        op(
            libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
            0,
            1,
            X32_SYSCALL_BIT,
        ),
        op(
            libc::BPF_RET | libc::BPF_K,
            0,
            0,
            RET_ERRNO | errno.unsigned_abs(),
        ),
        op(libc::BPF_RET | libc::BPF_K, 0, 0, RET_ALLOW),
    ]
}

/// Installs the filters on the calling thread (after `no_new_privs`).
pub(crate) fn install(filters: &[BpfProgram]) -> io::Result<()> {
    for filter in filters {
        seccompiler::apply_filter(filter).map_err(io::Error::other)?;
    }
    Ok(())
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn x32_calls_are_caught_by_number() {
        // x32 getpid. Kernels without x32 answer ENOSYS themselves, so the filter answers EPERM
        // here to show that it, not the kernel, caught the call.
        const X32_GETPID: libc::c_long = 0x4000_0000 | libc::SYS_getpid;
        let (before, after, plain) = std::thread::spawn(|| {
            let before = crate::sys::raw_syscall(X32_GETPID);
            crate::sys::set_no_new_privs().unwrap();
            seccompiler::apply_filter(&no_x32(libc::EPERM)).unwrap();
            let after = crate::sys::raw_syscall(X32_GETPID);
            (before, after, crate::sys::raw_syscall(libc::SYS_getpid))
        })
        .join()
        .unwrap();
        assert_ne!(
            before.err().and_then(|e| e.raw_os_error()),
            Some(libc::EPERM)
        );
        assert_eq!(
            after.err().and_then(|e| e.raw_os_error()),
            Some(libc::EPERM)
        );
        assert!(plain.is_ok_and(|pid| pid > 0));
    }
}
