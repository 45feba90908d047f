//! Report-only mode (SPEC M9): the run's limits observed, not enforced, and what the manifest
//! declared set against what the run used — paths written, hosts reached, time, CPU, memory,
//! scratch and requests — with the changes that would let it run enforced.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use warden_netproxy::{Host, Record};
use warden_sandbox::Outcome;

use super::receipt::Report;
use super::{Bind, Setup, Source};
use crate::schema::Alias;
use crate::schema::{Manifest, Mode};

/// The most paths listed.
const MAX_LISTED: usize = 200;

/// Files under `root` changed at or after `since` (links not followed), relative to it. The
/// change time is used: unlike the modification time, a command cannot set it back.
fn written_since(root: &Path, since: SystemTime) -> Vec<PathBuf> {
    let since = since
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let mut out: Vec<PathBuf> = super::layout::entries(root)
        .into_iter()
        .filter(|(_, meta)| {
            let ctime = std::time::Duration::new(
                u64::try_from(meta.ctime()).unwrap_or(0),
                u32::try_from(meta.ctime_nsec()).unwrap_or(0),
            );
            ctime >= since
        })
        .map(|(rel, _)| rel)
        .collect();
    out.sort();
    out
}

fn bytes_under(root: &Path) -> u64 {
    super::layout::entries(root)
        .iter()
        .filter(|(_, meta)| meta.is_file())
        .map(|(_, meta)| meta.len())
        .sum()
}

#[allow(clippy::cast_precision_loss)]
pub(crate) fn build(
    m: &Manifest,
    setup: &Setup,
    records: &[Record],
    outcome: &Outcome,
    since: SystemTime,
) -> Report {
    let mut report = Report::default();
    // Writes: anywhere a read_only mount shows, or outside the writable paths.
    for Bind {
        host,
        target,
        source,
        ..
    } in &setup.mounts
    {
        if !matches!(source, Source::Alias(_)) {
            continue;
        }
        let declared_rw = m
            .filesystem
            .mounts
            .iter()
            .any(|mt| Path::new(&mt.target) == target && mt.mode == Mode::ReadWrite);
        for rel in written_since(host, since) {
            let inside = target.join(&rel);
            let allowed = declared_rw
                && (m.filesystem.writable_paths.is_empty()
                    || m.filesystem
                        .writable_paths
                        .iter()
                        .any(|w| inside.starts_with(w)));
            if !allowed && report.undeclared_writes.len() < MAX_LISTED {
                report.undeclared_writes.push(inside.display().to_string());
            }
        }
    }
    // Hosts: what went through, against the allowlist.
    let entries = super::network::allow_entries(m);
    let mut used: Vec<String> = records
        .iter()
        .filter(|r| r.decision == "allow")
        .map(|r| r.host.clone())
        .collect();
    used.sort();
    used.dedup();
    for host in &used {
        let declared = Host::parse(host).is_ok_and(|h| entries.iter().any(|e| e.matches_host(&h)));
        if declared {
            report.declared_hosts_used.push(host.clone());
        } else {
            report.undeclared_hosts.push(host.clone());
        }
    }
    for allow in &m.network.allow {
        let hit = used.iter().any(|h| {
            Host::parse(h).is_ok_and(|h| {
                warden_netproxy::Entry::parse(&allow.host).is_ok_and(|e| e.matches_host(&h))
            })
        });
        if !hit {
            report.declared_hosts_unused.push(allow.host.clone());
        }
    }
    let resources = m.run.resources.clone().unwrap_or_default();
    report.duration_seconds = outcome.duration_ms as f64 / 1000.0;
    report.declared_duration_seconds = m.run.max_duration_seconds;
    report.cpu_seconds = outcome.usage.cpu_ms as f64 / 1000.0;
    report.max_memory_mb = outcome.usage.max_rss_kb as f64 / 1024.0;
    report.declared_memory_mb = resources.memory_mb;
    report.scratch_mb = setup
        .resolved(Alias::RunScratch)
        .map_or(0.0, |r| bytes_under(&r.path) as f64 / (1024.0 * 1024.0));
    report.declared_disk_mb = resources.disk_mb;
    report.network_requests = records.len() as u64;
    report.declared_network_requests = m.run.budgets.as_ref().and_then(|b| b.network_requests);
    suggest(&mut report);
    report
}

#[allow(clippy::cast_precision_loss)]
fn suggest(report: &mut Report) {
    let mut out = Vec::new();
    for path in &report.undeclared_writes {
        out.push(format!(
            "{path} was written: add it (or its directory) to filesystem.writable_paths under a read_write mount"
        ));
    }
    for host in &report.undeclared_hosts {
        out.push(format!(
            "{host} was reached: add `- host: {host}` to network.allow"
        ));
    }
    for host in &report.declared_hosts_unused {
        out.push(format!(
            "{host} was never reached: it may come out of network.allow"
        ));
    }
    if let Some(d) = report.declared_duration_seconds
        && report.duration_seconds > d as f64
    {
        out.push(format!(
            "the run took {:.0} s, more than max_duration_seconds ({d})",
            report.duration_seconds.ceil()
        ));
    }
    if let Some(mb) = report.declared_memory_mb
        && report.max_memory_mb > mb as f64
    {
        out.push(format!(
            "a process used {:.0} MiB, more than memory_mb ({mb})",
            report.max_memory_mb.ceil()
        ));
    }
    if let Some(mb) = report.declared_disk_mb
        && report.scratch_mb > mb as f64
    {
        out.push(format!(
            "the scratch space held {:.1} MiB, more than disk_mb ({mb})",
            report.scratch_mb
        ));
    }
    if let Some(n) = report.declared_network_requests
        && report.network_requests > n
    {
        out.push(format!(
            "{} network requests were made, more than budgets.network_requests ({n})",
            report.network_requests
        ));
    }
    if out.len() > MAX_LISTED {
        out.truncate(MAX_LISTED);
    }
    report.suggestions = out;
}
