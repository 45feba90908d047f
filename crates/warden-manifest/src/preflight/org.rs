//! The organisation's policy (`[org.manifest]`): what every run must declare, the resources and
//! scope it may have at most, and the approvals that writing capabilities need.

use warden_config::OrgManifest;

use super::paths::under;
use crate::parse::Parsed;
use crate::schema::{Manifest, Mode, Resources, WRITING_ACTIONS};

/// Where approvals are looked up: `Ok` when `reference` names a recorded, unexpired approval of
/// the manifest whose approval digest is `digest`, else why not.
pub type Approvals<'a> = &'a dyn Fn(&str, &str) -> Result<(), warden_trace::ApprovalRefused>;

pub(super) fn check_org(
    parsed: &Parsed,
    org: &OrgManifest,
    approvals: Approvals<'_>,
    bad: &mut impl FnMut(&str, String),
) {
    let m = &parsed.manifest;
    let run = &m.run;
    let required = |value: &Option<String>| value.as_deref().is_none_or(|v| v.trim().is_empty());
    for (name, needed, value) in [
        ("purpose", org.require_purpose, &run.purpose),
        ("owner", org.require_owner, &run.owner),
        ("expires_at", org.require_expiry, &run.expires_at),
    ] {
        if needed && required(value) {
            bad(
                &format!("run.{name}"),
                format!("the organisation requires run.{name}"),
            );
        }
    }
    match run.max_duration_seconds {
        None => bad(
            "run.max_duration_seconds",
            format!(
                "the organisation requires a duration cap (at most {} seconds)",
                org.max_duration_seconds
            ),
        ),
        Some(s) if s > org.max_duration_seconds => bad(
            "run.max_duration_seconds",
            format!(
                "{s} seconds is more than the organisation's {}",
                org.max_duration_seconds
            ),
        ),
        _ => {}
    }
    check_org_resources(&run.resources.clone().unwrap_or_default(), org, bad);
    check_org_scope(m, org, bad);
    check_org_approvals(parsed, approvals, bad);
}

fn check_org_resources(
    resources: &Resources,
    org: &OrgManifest,
    bad: &mut impl FnMut(&str, String),
) {
    match resources.cpu {
        None => bad(
            "run.resources.cpu",
            format!(
                "the organisation requires a CPU cap (at most {})",
                org.max_cpu
            ),
        ),
        Some(c) if c > org.max_cpu => bad(
            "run.resources.cpu",
            format!("{c} CPUs is more than the organisation's {}", org.max_cpu),
        ),
        _ => {}
    }
    match resources.memory_mb {
        None => bad(
            "run.resources.memory_mb",
            format!(
                "the organisation requires a memory cap (at most {} MiB)",
                org.max_memory_mb
            ),
        ),
        Some(v) if v > org.max_memory_mb => bad(
            "run.resources.memory_mb",
            format!(
                "{v} MiB is more than the organisation's {}",
                org.max_memory_mb
            ),
        ),
        _ => {}
    }
    if let Some(p) = resources.pids.filter(|p| *p > org.max_pids) {
        bad(
            "run.resources.pids",
            format!(
                "{p} processes is more than the organisation's {}",
                org.max_pids
            ),
        );
    }
    if let Some(d) = resources.disk_mb.filter(|d| *d > org.max_disk_mb) {
        bad(
            "run.resources.disk_mb",
            format!(
                "{d} MiB of disk is more than the organisation's {}",
                org.max_disk_mb
            ),
        );
    }
}

fn check_org_scope(m: &Manifest, org: &OrgManifest, bad: &mut impl FnMut(&str, String)) {
    if !org.writable_bases.is_empty() {
        for (i, mount) in m.filesystem.mounts.iter().enumerate() {
            if mount.mode == Mode::ReadWrite
                && !org.writable_bases.iter().any(|b| under(&mount.target, b))
            {
                bad(
                    &format!("filesystem.mounts[{i}].target"),
                    format!(
                        "{} is outside the bases the organisation allows writes in ({})",
                        mount.target,
                        org.writable_bases.join(", ")
                    ),
                );
            }
        }
    }
    if !org.allow_wildcard_hosts {
        for (i, entry) in m.network.allow.iter().enumerate() {
            if entry.host.starts_with("*.") {
                bad(
                    &format!("network.allow[{i}].host"),
                    format!(
                        "{}: the organisation requires hosts to be named (no `*.`)",
                        entry.host
                    ),
                );
            }
        }
    }
    for forbidden in &org.forbidden_paths {
        if !m
            .filesystem
            .forbidden_paths
            .iter()
            .any(|p| under(forbidden, p))
        {
            bad(
                "filesystem.forbidden_paths",
                format!("the organisation requires {forbidden} to be forbidden"),
            );
        }
    }
}

fn check_org_approvals(
    parsed: &Parsed,
    approvals: Approvals<'_>,
    bad: &mut impl FnMut(&str, String),
) {
    let digest = parsed.approval_digest();
    for (i, cap) in parsed.manifest.identity.capabilities.iter().enumerate() {
        let writes: Vec<&String> = cap
            .actions
            .iter()
            .filter(|a| WRITING_ACTIONS.contains(&a.as_str()))
            .collect();
        if writes.is_empty() {
            continue;
        }
        let at = format!("identity.capabilities[{i}].approval_ref");
        match &cap.approval_ref {
            None => bad(
                &at,
                format!(
                    "{} write or publish: the organisation requires an approval (warden manifest approve FILE, then its id here)",
                    writes
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            Some(reference) => {
                if let Err(why) = approvals(reference, &digest) {
                    bad(&at, why.to_string());
                }
            }
        }
    }
}
