use std::collections::BTreeMap;

use super::*;

#[test]
fn defaults_are_complete_and_match_the_contract() {
    let root = PathBuf::from("/p");
    let s = Settings::defaults(root.clone());
    assert_eq!(
        (&s.project_root, &s.cwd, s.sources.len()),
        (&root, &root, 0)
    );
    assert_eq!(s.permissions, Permissions::default());
    assert_eq!(s.permissions.mode, PermissionMode::Default);
    let sandbox = &s.sandbox;
    assert!(sandbox.enabled && sandbox.fail_if_unavailable);
    assert_eq!(
        (sandbox.backend.as_str(), sandbox.profile.as_str()),
        ("auto", "workspace-write")
    );
    assert_eq!(sandbox.filesystem, SandboxFilesystem::default());
    assert_eq!(sandbox.network.mode, crate::NetworkMode::Off);
    assert!(sandbox.network.block_private_ranges);
    let l = &sandbox.limits;
    assert_eq!(
        (
            l.timeout_seconds,
            l.memory_mb,
            l.pids,
            l.disk_mb,
            l.output_bytes
        ),
        (120, 2048, 256, 1024, 1_048_576)
    );
    assert!((l.cpu - 1.0).abs() < f64::EPSILON);
    assert_eq!(
        sandbox.env.allow,
        ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "USER"]
    );
    assert_eq!(sandbox.env.set, BTreeMap::new());
    let t = &s.tools;
    assert_eq!(t.read.deny, ["**/.ssh/**", "**/.aws/**", ".git/config"]);
    assert_eq!(
        (t.read.page_lines, t.read.max_bytes, t.read.max_line_chars),
        (2000, 262_144, 2000)
    );
    let exclude = ["node_modules", ".git", "dist", "build", "target", "vendor"];
    assert_eq!(
        (t.glob.max_results, t.glob.exclude.as_slice()),
        (200, exclude.map(String::from).as_slice())
    );
    assert_eq!((t.grep.max_hits, t.grep.max_line_chars), (200, 300));
    assert_eq!(t.grep.exclude, t.glob.exclude);
    assert_eq!(s.model, Model::default());
    assert!(s.model.default.is_none() && s.model.context_window.is_none());
    assert_eq!(s.budgets, Budgets::default());
    assert!(s.budgets.max_tokens.is_none() && s.budgets.max_cost_usd.is_none());
    assert_eq!(s.context.tool_output_tokens, 4000);
    assert_eq!(s.context.shares.total(), 100);
    assert!(s.skills.enabled && s.skills.roots.is_empty());
    let org = &s.org;
    assert!(!org.disable_bypass_mode && !org.require_sandbox && org.allowed_modes.is_empty());
    let m = &org.manifest;
    assert!(m.require_purpose && m.require_owner && m.require_expiry);
    assert_eq!((m.max_duration_seconds, m.max_memory_mb), (3600, 8192));
    assert!((m.max_cpu - 4.0).abs() < f64::EPSILON);
}

#[test]
fn permission_modes_round_trip_through_their_names() {
    for mode in PermissionMode::ALL {
        assert_eq!(mode.as_str().parse::<PermissionMode>().unwrap(), mode);
    }
    let err = "yolo".parse::<PermissionMode>().unwrap_err().to_string();
    assert!(err.starts_with("unknown permission mode `yolo`"), "{err}");
}

#[test]
fn layer_names_are_snake_case() {
    let names = [
        Layer::Managed,
        Layer::CommandLine,
        Layer::Local,
        Layer::Project,
        Layer::User,
    ]
    .map(Layer::as_str);
    assert_eq!(
        names,
        ["managed", "command_line", "local", "project", "user"]
    );
    assert_eq!(
        serde_json::to_value(Layer::CommandLine).unwrap(),
        "command_line"
    );
}

#[test]
fn org_allows_every_mode_unless_restricted() {
    let mut org = Org::default();
    assert!(PermissionMode::ALL.iter().all(|mode| org.allows(*mode)));
    org.disable_bypass_mode = true;
    assert!(!org.allows(PermissionMode::Bypass) && org.allows(PermissionMode::Auto));
    org.allowed_modes = vec![PermissionMode::Plan];
    assert!(!org.allows(PermissionMode::Auto) && org.allows(PermissionMode::Plan));
}
