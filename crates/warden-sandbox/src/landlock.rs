//! Landlock: a second, independent layer for file-system writes (and TCP when the network is
//! off), applied by the command's process itself after the mounts are made. Where the kernel has
//! no Landlock the other layers stand alone; the helper reports which case it is.

use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    path_beneath_rules,
};

use crate::plan::{Mount, Plan};

/// The newest ABI asked for; older kernels get what they support (best effort).
const ABI_WANTED: ABI = ABI::V5;

/// Where the command may write, as the sandbox sees it: writable binds and tmpfs, and `/dev`.
fn writable(plan: &Plan) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = plan
        .mounts
        .iter()
        .filter_map(|m| match m {
            Mount::Bind {
                target,
                writable: true,
                ..
            }
            | Mount::Tmpfs {
                target,
                writable: true,
                ..
            } => Some(target.clone()),
            Mount::Bind { .. } | Mount::Tmpfs { .. } | Mount::MaskFile { .. } => None,
        })
        .filter(|target| !plan.landlock_denied.contains(target))
        .collect();
    paths.push(PathBuf::from("/dev"));
    paths
}

/// Restricts the calling process: writes only beneath the writable paths; no TCP at all when the
/// network is off, but a connection to the egress proxy's port when there is one. Returns
/// whether the kernel enforced it.
pub(crate) fn restrict(plan: &Plan) -> Result<bool, String> {
    let err = |e: landlock::RulesetError| format!("landlock: {e}");
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_write(ABI_WANTED))
        .map_err(err)?;
    if !plan.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_WANTED))
            .map_err(err)?;
    }
    let mut created = ruleset
        .create()
        .map_err(err)?
        .add_rules(path_beneath_rules(
            writable(plan),
            AccessFs::from_write(ABI_WANTED),
        ))
        .map_err(err)?;
    // With the network off, the one TCP connection allowed is to the egress proxy's port on the
    // namespace's own loopback (the namespace has no other address).
    if !plan.network
        && let Some(port) = plan.proxy_port
    {
        created = created
            .add_rule(landlock::NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(err)?;
    }
    let status = created.restrict_self().map_err(err)?;
    Ok(status.ruleset != RulesetStatus::NotEnforced)
}

/// The Landlock ABI version of the running kernel, if it has Landlock.
pub(crate) fn kernel_abi() -> Option<i64> {
    crate::sys::landlock_abi()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_outside_the_writable_mounts_are_refused() {
        if kernel_abi().is_none() {
            assert!(
                std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
                "Landlock is required here"
            );
            return;
        }
        let allowed = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        // The probe works without Landlock.
        std::fs::write(other.path().join("before.txt"), "x").unwrap();
        let plan = Plan {
            cwd: allowed.path().to_path_buf(),
            mounts: vec![Mount::Bind {
                source: allowed.path().into(),
                target: allowed.path().into(),
                writable: true,
            }],
            network: true,
            ..Plan::default()
        };
        let (a, o) = (allowed.path().to_path_buf(), other.path().to_path_buf());
        // Landlock binds the calling thread (and what it starts): test in a thread of its own.
        let results = std::thread::spawn(move || {
            let enforced = restrict(&plan).unwrap();
            let inside = std::fs::write(a.join("inside.txt"), "x").is_ok();
            let outside = std::fs::write(o.join("after.txt"), "x").is_ok();
            (enforced, inside, outside)
        })
        .join()
        .unwrap();
        assert_eq!(results, (true, true, false));
    }
}
