//! Preflight (SPEC M3), apart from schema validation: what a manifest may ask for. Built-in
//! rules always apply: no host Docker socket, no writable mount but the run's own directories,
//! no wildcard network, nothing malformed that would be enforced loosely. The organisation's
//! policy, when there is one, adds its requirements and caps, and asks for a recorded approval
//! of capabilities that write or publish.

use std::time::SystemTime;

use warden_config::OrgManifest;

mod org;
mod paths;

use crate::parse::{Parsed, Problem};
pub use org::Approvals;
use org::check_org;
use paths::{absolute, under};

use crate::schema::{
    ACTIONS, Alias, CapabilityKind, Filesystem, Mode, Mount, NetworkDefault, Protocol,
};

/// System directories a mount may not cover.
const SYSTEM: &[&str] = &[
    "/", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev", "/sys", "/tmp",
];

/// Every problem of `parsed` (none: it may run).
pub fn preflight(
    parsed: &Parsed,
    org: Option<&OrgManifest>,
    approvals: Approvals<'_>,
    now: SystemTime,
) -> Vec<Problem> {
    let mut out = Vec::new();
    let m = &parsed.manifest;
    let mut bad = |path: &str, reason: String| out.push(parsed.problem(path, reason));
    if m.version != 1 {
        bad(
            "version",
            format!(
                "version {} is not known; this is schema version 1",
                m.version
            ),
        );
    }
    check_run(parsed, now, &mut bad);
    check_filesystem(parsed, &mut bad);
    check_network(parsed, &mut bad);
    check_identity(parsed, &mut bad);
    for (i, pattern) in m.artifacts.redact.iter().enumerate() {
        if let Err(e) = regex::Regex::new(pattern) {
            bad(
                &format!("artifacts.redact[{i}]"),
                format!("not a regular expression: {e}"),
            );
        }
    }
    for (i, path) in m.artifacts.collect.iter().enumerate() {
        let at = format!("artifacts.collect[{i}]");
        if !absolute(path) {
            bad(
                &at,
                format!("{path:?} must be an absolute path inside the sandbox"),
            );
        } else if !m
            .filesystem
            .mounts
            .iter()
            .any(|mount| under(path, &mount.target))
        {
            bad(
                &at,
                format!("{path} is under no mount: there is nothing to collect there"),
            );
        }
    }
    if let Some(org) = org {
        check_org(parsed, org, approvals, &mut bad);
    }
    out
}

fn check_run(parsed: &Parsed, now: SystemTime, bad: &mut impl FnMut(&str, String)) {
    let run = &parsed.manifest.run;
    if let Some(expires) = &run.expires_at {
        match humantime::parse_rfc3339_weak(expires) {
            Err(_) => bad(
                "run.expires_at",
                format!("{expires:?} is not an RFC 3339 time (2026-12-31T23:59:00Z)"),
            ),
            Ok(at) if at <= now => bad(
                "run.expires_at",
                format!("the manifest expired at {expires}"),
            ),
            Ok(_) => {}
        }
    }
    if run.max_duration_seconds == Some(0) {
        bad("run.max_duration_seconds", "must be more than 0".to_owned());
    }
    if let Some(r) = &run.resources {
        if r.cpu.is_some_and(|c| !(c > 0.0 && c.is_finite())) {
            bad("run.resources.cpu", "must be more than 0".to_owned());
        }
        for (name, value) in [
            ("memory_mb", r.memory_mb),
            ("pids", r.pids),
            ("disk_mb", r.disk_mb),
        ] {
            if value == Some(0) {
                bad(
                    &format!("run.resources.{name}"),
                    "must be more than 0".to_owned(),
                );
            }
        }
    }
}

fn docker(p: &str) -> bool {
    p.ends_with("docker.sock") || p.contains("/docker.sock") || p.ends_with("containerd.sock")
}

fn check_filesystem(parsed: &Parsed, bad: &mut impl FnMut(&str, String)) {
    let fs = &parsed.manifest.filesystem;
    for i in 0..fs.mounts.len() {
        check_mount(&fs.mounts, i, bad);
    }
    check_paths(fs, bad);
}

fn check_mount(mounts: &[Mount], i: usize, bad: &mut impl FnMut(&str, String)) {
    let mount = &mounts[i];
    {
        let at = format!("filesystem.mounts[{i}]");
        if mount.alias().is_none() && !absolute(&mount.source) {
            bad(
                &format!("{at}.source"),
                format!(
                    "{:?} is neither an alias ({}) nor an absolute host path",
                    mount.source,
                    Alias::names()
                ),
            );
        }
        if docker(&mount.source) || docker(&mount.target) {
            bad(
                &format!("{at}.source"),
                "the host's Docker socket gives root on the host: never mounted".to_owned(),
            );
        }
        if !absolute(&mount.target) {
            bad(
                &format!("{at}.target"),
                format!("{:?} must be an absolute path without `..`", mount.target),
            );
        } else if SYSTEM.contains(&mount.target.trim_end_matches('/')) || mount.target == "/" {
            bad(
                &format!("{at}.target"),
                format!(
                    "{} is a system directory: mount somewhere of the run's own",
                    mount.target
                ),
            );
        }
        if mounts[..i].iter().any(|m| m.target == mount.target) {
            bad(
                &format!("{at}.target"),
                format!("{} is mounted twice", mount.target),
            );
        }
        if mount.alias() == Some(Alias::Repo) && mount.mode == Mode::ReadWrite {
            bad(&format!("{at}.mode"), "the repository is the run's input and stays read-only; edit in `workspace`, a worktree of it".to_owned());
        }
        if mount.mode == Mode::ReadWrite && mount.alias().is_none() {
            bad(
                &format!("{at}.mode"),
                format!(
                    "a writable mount outside the run's own directories ({}): {} would be written on the host",
                    Alias::ALL
                        .into_iter()
                        .filter(|a| a.run_owned())
                        .map(Alias::as_str)
                        .collect::<Vec<_>>()
                        .join(", "),
                    mount.source
                ),
            );
        }
    }
}

fn check_paths(fs: &Filesystem, bad: &mut impl FnMut(&str, String)) {
    for (i, path) in fs.writable_paths.iter().enumerate() {
        let at = format!("filesystem.writable_paths[{i}]");
        if !absolute(path) {
            bad(
                &at,
                format!("{path:?} must be an absolute path without `..`"),
            );
        } else if !fs
            .mounts
            .iter()
            .any(|m| m.mode == Mode::ReadWrite && under(path, &m.target))
        {
            bad(
                &at,
                format!("{path} is under no read_write mount, so it cannot be written"),
            );
        }
        if docker(path) {
            bad(&at, "the host's Docker socket is never writable".to_owned());
        }
    }
    for (i, path) in fs.forbidden_paths.iter().enumerate() {
        let at = format!("filesystem.forbidden_paths[{i}]");
        if !absolute(path) {
            bad(
                &at,
                format!("{path:?} must be an absolute path without `..`"),
            );
        }
        for mount in &fs.mounts {
            if under(&mount.target, path) {
                bad(
                    &at,
                    format!(
                        "{path} forbids {}, which a mount shows: remove one of them",
                        mount.target
                    ),
                );
            }
        }
    }
}

/// Whether a host entry is a wildcard: `*` alone, or `*.` before a single label (`*.com`).
fn wildcard(host: &str) -> bool {
    host == "*"
        || host
            .strip_prefix("*.")
            .is_some_and(|rest| !rest.contains('.'))
}

fn check_network(parsed: &Parsed, bad: &mut impl FnMut(&str, String)) {
    let net = &parsed.manifest.network;
    if net.default == NetworkDefault::Allow {
        bad(
            "network.default",
            "`allow` is a wildcard network: list what the run reaches, with `default: deny`"
                .to_owned(),
        );
    }
    for (i, entry) in net.allow.iter().enumerate() {
        let at = format!("network.allow[{i}]");
        if wildcard(&entry.host) {
            bad(
                &format!("{at}.host"),
                format!("{:?} is a wildcard network: name hosts", entry.host),
            );
            continue;
        }
        if let Err(e) = warden_netproxy::Entry::parse(&entry.host) {
            bad(&format!("{at}.host"), e.to_string());
        }
        if entry.host.contains(':') && !entry.host.starts_with('[') {
            bad(
                &format!("{at}.host"),
                "give ports under `ports`, not in the host".to_owned(),
            );
        }
        if entry.protocol == Some(Protocol::Tcp) && entry.ports.is_none() {
            bad(
                &format!("{at}.ports"),
                "a `tcp` entry must name its ports".to_owned(),
            );
        }
        if entry
            .ports
            .as_ref()
            .is_some_and(|p| p.is_empty() || p.contains(&0))
        {
            bad(
                &format!("{at}.ports"),
                "ports are numbers from 1 to 65535; leave `ports` out for the protocol's own"
                    .to_owned(),
            );
        }
        for (j, path) in entry.paths.iter().flatten().enumerate() {
            if !path.starts_with('/') {
                bad(
                    &format!("{at}.paths[{j}]"),
                    format!("{path:?} must start with /"),
                );
            }
        }
        for (j, method) in entry.methods.iter().flatten().enumerate() {
            if method.is_empty() || !method.chars().all(|c| c.is_ascii_alphabetic()) {
                bad(
                    &format!("{at}.methods[{j}]"),
                    format!("{method:?} is not an HTTP method"),
                );
            }
        }
        if (entry.paths.is_some() || entry.methods.is_some())
            && entry.protocol == Some(Protocol::Tcp)
        {
            bad(
                &format!("{at}.paths"),
                "paths and methods are HTTP's: not with `tcp`".to_owned(),
            );
        }
    }
}

/// Variable names that hold secrets: credentials come through capabilities, never the
/// environment.
fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"]
        .iter()
        .any(|w| upper.contains(w))
}

fn check_identity(parsed: &Parsed, bad: &mut impl FnMut(&str, String)) {
    let identity = &parsed.manifest.identity;
    for (i, name) in identity.variables.iter().enumerate() {
        let at = format!("identity.variables[{i}]");
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            bad(&at, format!("{name:?} is not a variable name"));
        } else if secret_name(name) {
            bad(
                &at,
                format!(
                    "{name} looks like a secret: credentials come through capabilities, never the environment"
                ),
            );
        }
    }
    for (i, cap) in identity.capabilities.iter().enumerate() {
        let at = format!("identity.capabilities[{i}]");
        match cap.kind {
            CapabilityKind::SourceControl => {
                let valid = cap.repository.as_deref().is_some_and(|r| {
                    let parts: Vec<&str> = r.split('/').collect();
                    parts.len() == 2
                        && parts.iter().all(|p| {
                            !p.is_empty()
                                && p.chars()
                                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                        })
                });
                if !valid {
                    bad(
                        &format!("{at}.repository"),
                        "a source_control capability names its repository as owner/name".to_owned(),
                    );
                }
            }
        }
        if let Some(host) = &cap.host {
            let named = warden_netproxy::Entry::parse(host).is_ok_and(|e| {
                matches!(e.pattern, warden_netproxy::Pattern::Exact(_)) && !e.inspects()
            });
            if !named {
                bad(
                    &format!("{at}.host"),
                    format!("{host:?} is not a host name (with a port when not 443)"),
                );
            }
        }
        if cap.actions.is_empty() {
            bad(
                &format!("{at}.actions"),
                "a capability names what it may do".to_owned(),
            );
        }
        for (j, action) in cap.actions.iter().enumerate() {
            if !ACTIONS.contains(&action.as_str()) {
                bad(
                    &format!("{at}.actions[{j}]"),
                    format!("{action:?} is not an action ({})", ACTIONS.join(", ")),
                );
            }
        }
        for (j, action) in cap.require_approval_for.iter().enumerate() {
            if !cap.actions.contains(action) {
                bad(
                    &format!("{at}.require_approval_for[{j}]"),
                    format!("{action} is not among the capability's actions"),
                );
            }
        }
        match cap.expires_after_seconds {
            Some(0) => bad(
                &format!("{at}.expires_after_seconds"),
                "must be more than 0".to_owned(),
            ),
            Some(s) if s > 3600 => bad(
                &format!("{at}.expires_after_seconds"),
                format!("{s} seconds: a capability lives an hour at most"),
            ),
            _ => {}
        }
    }
}
