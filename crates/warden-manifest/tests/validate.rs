use std::path::Path;
use std::time::SystemTime;
use warden_trace::ApprovalRefused;

use warden_config::OrgManifest;
use warden_manifest::{Problem, TEMPLATES, parse, preflight};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

fn no_approvals(reference: &str, _: &str) -> Result<(), ApprovalRefused> {
    Err(ApprovalRefused::Unknown(reference.to_owned()))
}

fn problems(text: &str, org: Option<&OrgManifest>) -> Vec<Problem> {
    match parse(text) {
        Ok(parsed) => preflight(&parsed, org, &no_approvals, SystemTime::now()),
        Err(problem) => vec![problem],
    }
}

#[test]
fn the_seeds_examples_validate_as_they_are() {
    for name in ["seed-003.yaml", "seed-003-extended.yaml"] {
        let found = problems(&fixture(name), None);
        assert!(found.is_empty(), "{name}: {found:#?}");
    }
    let parsed = parse(&fixture("seed-003-extended.yaml")).unwrap();
    let cap = &parsed.manifest.identity.capabilities[0];
    assert_eq!(cap.repository.as_deref(), Some("acme/docs-site"));
    assert_eq!(cap.expires_after_seconds, Some(1200));
    assert_eq!(parsed.manifest.artifacts.collect.len(), 2);
    assert_eq!(parsed.sha256.len(), 64);
}

#[test]
fn the_templates_validate_and_an_organisation_wants_more_of_the_seed() {
    for (name, text) in TEMPLATES {
        let found = problems(text, None);
        assert!(found.is_empty(), "{name}: {found:#?}");
    }
    let org = OrgManifest::default();
    let strict = problems(&fixture("seed-003.yaml"), Some(&org));
    let paths: Vec<&str> = strict.iter().map(|p| p.path.as_str()).collect();
    assert!(
        paths.contains(&"run.owner") && paths.contains(&"run.expires_at"),
        "{strict:#?}"
    );
    // The explain template meets the default organisation's policy.
    let explain = TEMPLATES.iter().find(|(n, _)| *n == "explain").unwrap().1;
    assert!(problems(explain, Some(&org)).is_empty());
}

/// The seed's manifest with `from` replaced by `to`.
fn edit(from: &str, to: &str) -> String {
    let text = fixture("seed-003.yaml");
    assert!(text.contains(from), "{from:?} is not in the fixture");
    text.replacen(from, to, 1)
}

/// A policy-abiding manifest under the organisation, with `from` replaced by `to`.
fn org_edit(from: &str, to: &str) -> String {
    let text = TEMPLATES
        .iter()
        .find(|(n, _)| *n == "explain")
        .unwrap()
        .1
        .to_owned();
    assert!(text.contains(from), "{from:?} is not in the template");
    text.replacen(from, to, 1)
}

/// (what, manifest, under the organisation, the path, words of the reason, its line)
type Case<'a> = (&'a str, String, bool, &'a str, &'a str, Option<usize>);

#[test]
#[allow(clippy::too_many_lines)] // one table of cases
fn malformed_and_violating_manifests_each_give_the_right_error() {
    let org = OrgManifest::default();
    let cases: Vec<Case<'_>> = vec![
        (
            "not YAML",
            "{version: 1, run: {}\n".to_owned(),
            false,
            "",
            "did not find expected",
            Some(2),
        ),
        (
            "an unknown field",
            edit("  max_duration_seconds: 900", "  max_duration: 900"),
            false,
            "run",
            "unknown field `max_duration`",
            Some(4),
        ),
        (
            "a wrong type",
            edit("max_duration_seconds: 900", "max_duration_seconds: soon"),
            false,
            "run.max_duration_seconds",
            "invalid type",
            Some(4),
        ),
        (
            "no run",
            "version: 1\n".to_owned(),
            false,
            "",
            "missing field `run`",
            None,
        ),
        (
            "version 2",
            edit("version: 1", "version: 2"),
            false,
            "version",
            "not known",
            Some(1),
        ),
        (
            "an unknown mode",
            edit("mode: read_only", "mode: rw"),
            false,
            "filesystem.mounts[0].mode",
            "unknown variant",
            Some(13),
        ),
        (
            "an unknown alias",
            edit("source: run-scratch", "source: scratch"),
            false,
            "filesystem.mounts[1].source",
            "neither an alias",
            Some(14),
        ),
        (
            "a relative target",
            edit("target: /scratch", "target: scratch"),
            false,
            "filesystem.mounts[1].target",
            "absolute",
            Some(15),
        ),
        (
            "a target with ..",
            edit("target: /scratch", "target: /scratch/../etc"),
            false,
            "filesystem.mounts[1].target",
            "absolute",
            Some(15),
        ),
        (
            "a system target",
            edit("target: /scratch", "target: /usr"),
            false,
            "filesystem.mounts[1].target",
            "system directory",
            Some(15),
        ),
        (
            "a writable repo",
            edit("mode: read_only", "mode: read_write"),
            false,
            "filesystem.mounts[0].mode",
            "stays read-only",
            Some(13),
        ),
        (
            "a writable host path",
            edit("source: run-scratch", "source: /srv/data"),
            false,
            "filesystem.mounts[1].mode",
            "outside the run's own directories",
            Some(16),
        ),
        (
            "the Docker socket",
            edit(
                "source: run-scratch\n      target: /scratch\n      mode: read_write",
                "source: /var/run/docker.sock\n      target: /run/docker.sock\n      mode: read_only",
            ),
            false,
            "filesystem.mounts[1].source",
            "Docker socket",
            Some(14),
        ),
        (
            "a target mounted twice",
            edit("target: /scratch", "target: /workspace"),
            false,
            "filesystem.mounts[1].target",
            "mounted twice",
            Some(15),
        ),
        (
            "a writable path under no mount",
            edit("    - /scratch\n  forbidden", "    - /data\n  forbidden"),
            false,
            "filesystem.writable_paths[0]",
            "under no read_write mount",
            Some(18),
        ),
        (
            "a writable path under a read-only mount",
            edit(
                "    - /scratch\n  forbidden",
                "    - /workspace/docs\n  forbidden",
            ),
            false,
            "filesystem.writable_paths[0]",
            "under no read_write mount",
            Some(18),
        ),
        (
            "a forbidden path that a mount shows",
            edit("    - /home", "    - /workspace"),
            false,
            "filesystem.forbidden_paths[0]",
            "which a mount shows",
            Some(20),
        ),
        (
            "a relative forbidden path",
            edit("    - /home", "    - home"),
            false,
            "filesystem.forbidden_paths[0]",
            "absolute",
            Some(20),
        ),
        (
            "default allow",
            edit("default: deny", "default: allow"),
            false,
            "network.default",
            "wildcard network",
            Some(25),
        ),
        (
            "a wildcard host",
            edit("host: registry.npmjs.org", "host: \"*\""),
            false,
            "network.allow[0].host",
            "wildcard",
            Some(27),
        ),
        (
            "a TLD wildcard",
            edit("host: registry.npmjs.org", "host: \"*.org\""),
            false,
            "network.allow[0].host",
            "wildcard",
            Some(27),
        ),
        (
            "a host with user info",
            edit("host: registry.npmjs.org", "host: a@registry.npmjs.org"),
            false,
            "network.allow[0].host",
            "user info",
            Some(27),
        ),
        (
            "a port in the host",
            edit("host: registry.npmjs.org", "host: registry.npmjs.org:443"),
            false,
            "network.allow[0].host",
            "under `ports`",
            Some(27),
        ),
        (
            "port 0",
            edit("ports: [443]", "ports: [0]"),
            false,
            "network.allow[0].ports",
            "1 to 65535",
            Some(28),
        ),
        (
            "a port out of range",
            edit("ports: [443]", "ports: [70000]"),
            false,
            "network.allow[0].ports[0]",
            "invalid value",
            Some(28),
        ),
        (
            "tcp without ports",
            edit("      ports: [443]", "      protocol: tcp"),
            false,
            "network.allow[0].ports",
            "must name its ports",
            Some(27),
        ),
        (
            "an unknown protocol",
            edit("      ports: [443]", "      protocol: ftp"),
            false,
            "network.allow[0].protocol",
            "unknown variant",
            Some(28),
        ),
        (
            "a path without /",
            edit(
                "      ports: [443]",
                "      ports: [443]\n      paths: [lodash]",
            ),
            false,
            "network.allow[0].paths[0]",
            "must start with /",
            Some(29),
        ),
        (
            "a secret variable",
            edit(
                "  environment: allowlist",
                "  environment: allowlist\n  variables: [GITHUB_TOKEN]",
            ),
            false,
            "identity.variables[0]",
            "looks like a secret",
            Some(32),
        ),
        (
            "an unknown environment",
            edit("environment: allowlist", "environment: inherit"),
            false,
            "identity.environment",
            "unknown variant",
            Some(31),
        ),
        (
            "a capability without a repository",
            edit(
                "  capabilities: []",
                "  capabilities:\n    - type: source_control\n      actions: [read]",
            ),
            false,
            "identity.capabilities[0].repository",
            "owner/name",
            Some(33),
        ),
        (
            "an unknown action",
            edit(
                "  capabilities: []",
                "  capabilities:\n    - type: source_control\n      repository: a/b\n      actions: [delete_repo]",
            ),
            false,
            "identity.capabilities[0].actions[0]",
            "not an action",
            Some(35),
        ),
        (
            "approval for an action not held",
            edit(
                "  capabilities: []",
                "  capabilities:\n    - type: source_control\n      repository: a/b\n      actions: [read]\n      require_approval_for: [push_branch]",
            ),
            false,
            "identity.capabilities[0].require_approval_for[0]",
            "not among",
            Some(36),
        ),
        (
            "a capability living a day",
            edit(
                "  capabilities: []",
                "  capabilities:\n    - type: source_control\n      repository: a/b\n      actions: [read]\n      expires_after_seconds: 86400",
            ),
            false,
            "identity.capabilities[0].expires_after_seconds",
            "an hour at most",
            Some(36),
        ),
        (
            "an unknown capability type",
            edit(
                "  capabilities: []",
                "  capabilities:\n    - type: cloud_admin",
            ),
            false,
            "identity.capabilities[0].type",
            "unknown variant",
            Some(33),
        ),
        (
            "an expired manifest",
            edit(
                "  max_duration_seconds: 900",
                "  expires_at: \"2020-01-01T00:00:00Z\"\n  max_duration_seconds: 900",
            ),
            false,
            "run.expires_at",
            "expired",
            Some(4),
        ),
        (
            "a malformed expiry",
            edit(
                "  max_duration_seconds: 900",
                "  expires_at: \"next week\"\n  max_duration_seconds: 900",
            ),
            false,
            "run.expires_at",
            "RFC 3339",
            Some(4),
        ),
        (
            "zero memory",
            edit("memory_mb: 4096", "memory_mb: 0"),
            false,
            "run.resources.memory_mb",
            "more than 0",
            Some(7),
        ),
        (
            "a bad redaction",
            edit(
                "  retain_artifacts_hours: 24",
                "  retain_artifacts_hours: 24\nartifacts:\n  redact: [\"(unclosed\"]",
            ),
            false,
            "artifacts.redact[0]",
            "regular expression",
            Some(38),
        ),
        (
            "an artifact under no mount",
            edit(
                "  retain_artifacts_hours: 24",
                "  retain_artifacts_hours: 24\nartifacts:\n  collect: [/etc/passwd]",
            ),
            false,
            "artifacts.collect[0]",
            "under no mount",
            Some(38),
        ),
        // Under the organisation's policy.
        (
            "no owner",
            org_edit("  owner: \"you@example.com\"\n", ""),
            true,
            "run.owner",
            "requires run.owner",
            None,
        ),
        (
            "no expiry",
            org_edit("  expires_at: \"2030-01-01T00:00:00Z\"\n", ""),
            true,
            "run.expires_at",
            "requires run.expires_at",
            None,
        ),
        (
            "too long",
            org_edit("max_duration_seconds: 600", "max_duration_seconds: 7200"),
            true,
            "run.max_duration_seconds",
            "more than the organisation's",
            Some(8),
        ),
        (
            "too much memory",
            org_edit("memory_mb: 2048", "memory_mb: 65536"),
            true,
            "run.resources.memory_mb",
            "more than the organisation's",
            Some(11),
        ),
        (
            "no CPU cap",
            org_edit("    cpu: 1\n", ""),
            true,
            "run.resources.cpu",
            "requires a CPU cap",
            None,
        ),
        (
            "a weaker forbidden list",
            org_edit("    - /root\n", ""),
            true,
            "filesystem.forbidden_paths",
            "requires /root",
            None,
        ),
        (
            "a wildcard subdomain",
            org_edit("  allow: []", "  allow:\n    - host: \"*.example.com\""),
            true,
            "network.allow[0].host",
            "requires hosts to be named",
            Some(38),
        ),
        (
            "a writing capability without approval",
            org_edit(
                "  capabilities: []",
                "  capabilities:\n    - type: source_control\n      repository: a/b\n      actions: [push_branch]",
            ),
            true,
            "identity.capabilities[0].approval_ref",
            "requires an approval",
            None,
        ),
        (
            "an approval that does not resolve",
            org_edit(
                "  capabilities: []",
                "  capabilities:\n    - type: source_control\n      repository: a/b\n      actions: [push_branch]\n      approval_ref: appr_nope",
            ),
            true,
            "identity.capabilities[0].approval_ref",
            "no approval of that id",
            Some(45),
        ),
    ];
    assert!(cases.len() >= 30);
    let mut failures = Vec::new();
    for (what, text, with_org, path, words, line) in &cases {
        let found = problems(text, with_org.then_some(&org));
        let hit = found
            .iter()
            .find(|p| p.path == *path && p.reason.contains(words));
        match hit {
            None => failures.push(format!(
                "{what}: no problem at {path:?} saying {words:?}: {found:#?}"
            )),
            Some(p) if line.is_some() && p.line != *line => {
                failures.push(format!("{what}: at line {:?}, expected {line:?}", p.line));
            }
            Some(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_approval_is_bound_to_the_manifest_without_its_own_reference() {
    let text = org_edit(
        "  capabilities: []",
        "  capabilities:\n    - type: source_control\n      repository: a/b\n      actions: [push_branch]\n      approval_ref: appr_1",
    );
    let parsed = parse(&text).unwrap();
    let digest = parsed.approval_digest();
    let without = parse(&text.replace("      approval_ref: appr_1\n", "")).unwrap();
    assert_eq!(
        without.approval_digest(),
        digest,
        "the reference is not part of what is approved"
    );
    let approved = |reference: &str, d: &str| {
        if reference == "appr_1" && d == digest {
            Ok(())
        } else {
            Err(ApprovalRefused::OtherManifest(reference.to_owned()))
        }
    };
    let org = OrgManifest::default();
    assert!(preflight(&parsed, Some(&org), &approved, SystemTime::now()).is_empty());
    // Any other change to the manifest needs a new approval.
    let changed = parse(&text.replace("a/b", "a/c")).unwrap();
    assert!(!preflight(&changed, Some(&org), &approved, SystemTime::now()).is_empty());
}
