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
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
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
