//! The trust gate end to end: a project's files set aside until trusted, and what stands.
//! `keys` tries every key that could widen the user's grants ([`samples`]); the tests here
//! the rest: what only tightens, trust kept or lost as files change, who may trust.

mod keys;
mod samples;

use std::fs;
use std::path::PathBuf;

use super::*;
use crate::{LoadOptions, load};

pub(super) struct Machine {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
}

impl Machine {
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("src/project");
        fs::create_dir_all(root.join(".warden")).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::create_dir_all(base.join("home")).unwrap();
        Machine {
            _dir: dir,
            base,
            root,
        }
    }

    pub(super) fn data_dir(&self) -> PathBuf {
        self.base.join("data")
    }

    pub(super) fn options(&self) -> LoadOptions {
        LoadOptions {
            cwd: self.root.clone(),
            cli: crate::RawSettings::default(),
            managed_path: self.base.join("etc/managed.toml"),
            user_config_dir: Some(self.base.join("config")),
            data_dir: Some(self.data_dir()),
            home: Some(self.base.join("home")),
            trust_project: false,
            allow_home_workspace: false,
        }
    }

    pub(super) fn user(&self, text: &str) {
        fs::create_dir_all(self.base.join("config")).unwrap();
        fs::write(self.base.join("config/settings.toml"), text).unwrap();
    }

    pub(super) fn project(&self, name: &str, text: &str) -> PathBuf {
        let path = self.root.join(".warden").join(name);
        fs::write(&path, text).unwrap();
        path
    }

    pub(super) fn load(&self) -> Settings {
        load(&self.options()).unwrap()
    }

    pub(super) fn trust(&self) {
        let digest = self.load().trust.digest;
        record_trust(
            &self.data_dir(),
            &self.root,
            &digest,
            TrustDecision::Trusted,
        )
        .unwrap();
    }
}

#[test]
fn what_only_tightens_stands_from_an_untrusted_project() {
    let m = Machine::new();
    m.user("[sandbox.limits]\ntimeout_seconds = 600\n[sandbox.network]\nmode = \"allowlist\"\n");
    m.project(
        "settings.toml",
        "[permissions]\nmode = \"plan\"\ndeny = [\"Bash(git push *)\"]\nask = [\"Bash(npm *)\"]\n\
         [permissions.risk]\nnpm = \"L4\"\n[sandbox.limits]\ntimeout_seconds = 60\n\
         [sandbox.network]\nmode = \"off\"\ndenied_domains = [\"x.example\"]\n\
         [sandbox.env]\nallow = [\"PATH\"]\n[context]\ntool_output_tokens = 100\n",
    );
    let s = m.load();
    assert!(!s.trust.trusted);
    assert!(s.trust.ignored.is_empty(), "{:?}", s.trust.ignored);
    assert_eq!(s.permissions.mode, crate::PermissionMode::Plan);
    assert_eq!(s.permissions.deny, ["Bash(git push *)"]);
    // Asks and risk levels only tighten: they are kept apart for the policy to apply so.
    assert!(s.permissions.ask.is_empty());
    assert_eq!(s.permissions.project_ask, ["Bash(npm *)"]);
    assert!(s.permissions.risk.is_empty());
    assert_eq!(s.permissions.project_risk["npm"], crate::RiskName::L4);
    assert_eq!(s.sandbox.limits.timeout_seconds, 60);
    assert_eq!(s.sandbox.network.mode, crate::NetworkMode::Off);
    assert_eq!(s.sandbox.network.denied_domains, ["x.example"]);
    assert_eq!(s.sandbox.env.allow, ["PATH"]);
    assert_eq!(s.context.tool_output_tokens, 100);

    m.trust();
    let s = m.load();
    assert!(s.trust.trusted);
    assert_eq!(s.permissions.ask, ["Bash(npm *)"]);
    assert!(s.permissions.project_ask.is_empty());
    assert_eq!(s.permissions.risk["npm"], crate::RiskName::L4);
    assert!(s.permissions.project_risk.is_empty());
}

#[test]
fn a_change_that_grants_nothing_new_keeps_the_trust() {
    let m = Machine::new();
    let path = m.project(
        "settings.toml",
        "[permissions]\nallow = [\"Bash(make *)\"]\n",
    );
    m.trust();
    assert!(m.load().trust.trusted);
    fs::write(
        &path,
        "# a comment\n[permissions]\nallow = [\"Bash(make *)\"]\ndeny = [\"Bash(rm *)\"]\n\
         [context]\ntool_output_tokens = 100\n",
    )
    .unwrap();
    let s = m.load();
    assert!(s.trust.trusted, "{:?}", s.trust.basis);
    assert_eq!(s.permissions.allow, ["Bash(make *)"]);
}

#[test]
fn trusted_projects_trusts_from_the_user_layer_only() {
    let m = Machine::new();
    m.project("settings.toml", "[permissions]\nallow = [\"Bash(*)\"]\n");
    // From the project itself: set aside, and it trusts nothing.
    m.project(
        "settings.local.toml",
        &format!("trusted_projects = [\"{}\"]\n", m.root.display()),
    );
    let s = m.load();
    assert!(!s.trust.trusted);
    assert!(s.permissions.allow.is_empty());
    assert!(s.trust.ignored.iter().any(|i| i.key == "trusted_projects"));
    fs::remove_file(m.root.join(".warden/settings.local.toml")).unwrap();
    // From the user's settings, with `~/` and a wildcard.
    m.user("trusted_projects = [\"/nowhere/*\", \"~/src/*\"]\n");
    let mut opts = m.options();
    opts.home = Some(m.base.clone());
    let s = load(&opts).unwrap();
    assert!(s.trust.trusted, "{:?}", s.trust.basis);
    assert!(
        matches!(&s.trust.basis, TrustBasis::Pattern { pattern, .. } if pattern == "~/src/*"),
        "{:?}",
        s.trust.basis
    );
    assert_eq!(s.permissions.allow, ["Bash(*)"]);
    // A link along the pattern is not followed: `~/link/*` with `~/link` leading to `src`.
    std::os::unix::fs::symlink(m.base.join("src"), m.base.join("link")).unwrap();
    m.user("trusted_projects = [\"~/link/*\"]\n");
    assert!(!load(&opts).unwrap().trust.trusted);
}

#[test]
fn a_declined_project_stays_untrusted_and_the_flag_trusts_for_one_load() {
    let m = Machine::new();
    m.project("settings.toml", "[permissions]\nallow = [\"Bash(*)\"]\n");
    let digest = m.load().trust.digest;
    record_trust(&m.data_dir(), &m.root, &digest, TrustDecision::Declined).unwrap();
    let s = m.load();
    assert!(matches!(s.trust.basis, TrustBasis::Declined { .. }));
    assert!(s.permissions.allow.is_empty());
    let mut opts = m.options();
    opts.trust_project = true;
    let s = load(&opts).unwrap();
    assert_eq!(s.trust.basis, TrustBasis::CommandLine);
    assert_eq!(s.permissions.allow, ["Bash(*)"]);
    assert!(forget_trust(&m.data_dir(), &m.root).unwrap());
    assert_eq!(m.load().trust.basis, TrustBasis::Untrusted);
}

#[test]
fn remembered_rules_come_from_the_data_directory_not_the_project() {
    let m = Machine::new();
    // A committed local file's "always" rule grants nothing untrusted.
    m.project(
        "settings.local.toml",
        "[permissions]\nallow = [\"Bash(curl *)\"]\n",
    );
    crate::remember_rule(
        &m.data_dir(),
        &m.root,
        crate::RuleList::Allow,
        "Bash(npm test *)",
    )
    .unwrap();
    let s = m.load();
    assert_eq!(s.permissions.allow, ["Bash(npm test *)"]);
    assert!(
        s.sources
            .iter()
            .any(|src| src.layer == crate::Layer::Remembered)
    );
}

#[test]
fn the_home_directory_and_the_root_are_refused_as_workspaces() {
    let m = Machine::new();
    let home = m.base.join("home");
    for dir in [home.clone(), m.base.clone(), PathBuf::from("/")] {
        let mut opts = m.options();
        opts.cwd.clone_from(&dir);
        opts.home = Some(home.clone());
        let err = load(&opts).unwrap_err();
        assert!(
            matches!(err, crate::ConfigError::HomeWorkspace { .. }),
            "{}: {err}",
            dir.display()
        );
        assert!(err.to_string().contains("--allow-home-workspace"), "{err}");
        opts.allow_home_workspace = true;
        assert!(load(&opts).is_ok(), "{}", dir.display());
    }
    // A project below the home directory is fine.
    let mut opts = m.options();
    opts.home = Some(m.base.clone().join("src"));
    assert!(load(&opts).is_ok());
}

#[test]
fn what_trust_would_add_to_asks_and_risk_levels_is_shown_though_not_set_aside() {
    let m = Machine::new();
    m.project(
        "settings.toml",
        "[permissions]\nask = [\"Edit(**)\"]\n[permissions.risk]\ngit = \"L0\"\n",
    );
    let s = m.load();
    assert!(s.trust.ignored.is_empty(), "{:?}", s.trust.ignored);
    let shown: Vec<(&str, &str, Option<usize>)> = s
        .trust
        .widening
        .iter()
        .map(|w| (w.key.as_str(), w.value.as_str(), w.line))
        .collect();
    assert_eq!(
        shown,
        [
            ("permissions.ask", "Edit(**)", Some(2)),
            ("permissions.risk.git", "L0", Some(4))
        ]
    );
    assert!(s.trust.widening[0].why.contains("refused action askable"));
}

#[test]
fn a_repositorys_escape_sequences_are_shown_spelled_out() {
    let m = Machine::new();
    m.project(
        "settings.toml",
        "[sandbox.env.set]\n\"\\u001b[2K\" = \"\\r\\u001b[1A\\u202e ok\"\n",
    );
    let s = m.load();
    let report = s.trust.ignored[0].to_string();
    assert!(
        !report.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{report:?}"
    );
    assert!(report.contains("\\u{1b}[1A"), "{report}");
    assert!(report.contains("sandbox.env.set.\\u{1b}[2K"), "{report}");
}

#[test]
fn a_pattern_trusts_projects_at_its_depth_and_double_stars_below() {
    for (pattern, path, matched) in [
        ("/src/*", "/src/proj", true),
        ("/src/*", "/src/proj/pkg", false),
        ("/src/*", "/src", false),
        ("/src/**", "/src/proj/pkg", true),
        ("/src/**/pkg", "/src/a/b/pkg", true),
        ("/src/p*", "/src/proj", true),
        ("/src/proj", "/src/proj", true),
        ("/src/proj", "/src/project", false),
    ] {
        assert_eq!(path_matches(pattern, path), matched, "{pattern} {path}");
    }
}

#[test]
fn the_organisations_locks_bind_a_trusted_project() {
    let m = Machine::new();
    fs::create_dir_all(m.base.join("etc")).unwrap();
    fs::write(
        m.base.join("etc/managed.toml"),
        "[org]\ndisable_bypass_mode = true\nrequire_sandbox = true\n",
    )
    .unwrap();
    m.project("settings.toml", "[permissions]\nmode = \"bypass\"\n");
    let mut opts = m.options();
    opts.trust_project = true;
    let err = load(&opts).unwrap_err().to_string();
    assert!(err.contains("org.disable_bypass_mode"), "{err}");
    m.project("settings.toml", "[sandbox]\nenabled = false\n");
    let err = load(&opts).unwrap_err().to_string();
    assert!(err.contains("org.require_sandbox"), "{err}");
    // Untrusted, the same values are set aside before the locks are checked.
    let s = m.load();
    assert!(s.sandbox.enabled);
}
