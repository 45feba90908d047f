//! The system-call filter every sandboxed process runs under.

use std::collections::BTreeMap;
use std::io;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
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
    [deny, clone3]
        .into_iter()
        .map(|f| BpfProgram::try_from(f).map_err(io::Error::other))
        .collect()
}

/// Installs the filters on the calling thread (after `no_new_privs`).
pub(crate) fn install(filters: &[BpfProgram]) -> io::Result<()> {
    for filter in filters {
        seccompiler::apply_filter(filter).map_err(io::Error::other)?;
    }
    Ok(())
}
