//! Remembered approvals and settings that extend the risk table.

use warden_config::{PermissionMode, RuleList, remember_rule};
use warden_policy::{Action, remembered_rule, shell};
use warden_protocol::{DecisionKind, RiskLevel};

use crate::fixture::Fixture;

fn decide(engine: &warden_policy::Engine, command: &str) -> DecisionKind {
    engine
        .check(&Action::Bash(command.to_owned()))
        .decision
        .decision
}

#[test]
fn a_session_approval_allows_the_argv_prefix_and_nothing_more() {
    let fixture = Fixture::new();
    let mut engine = fixture.engine("", PermissionMode::Default, true).unwrap();
    assert_eq!(decide(&engine, "npm test"), DecisionKind::RequireApproval);
    let rules = remembered_rule(&shell::analyze("npm test")).unwrap();
    assert_eq!(rules, ["Bash(npm test *)"]);
    for rule in &rules {
        engine.allow_for_session(rule).unwrap();
    }
    assert_eq!(
        decide(&engine, "npm test -- --watch=false"),
        DecisionKind::Allow
    );
    assert_eq!(
        decide(&engine, "npm install left-pad"),
        DecisionKind::RequireApproval
    );
    assert_ne!(
        decide(&engine, "npm test && rm -rf build"),
        DecisionKind::Allow
    );
    assert_eq!(decide(&engine, "npm test; cat .env"), DecisionKind::Deny);
}

#[test]
fn a_session_approval_of_a_read_past_the_workspace_allows_that_read_alone() {
    let fixture = Fixture::new();
    let mut engine = fixture.engine("", PermissionMode::Default, true).unwrap();
    let command = "head -n 5 /etc/hosts";
    let before = decide(&engine, command);
    assert_ne!(before, DecisionKind::Allow, "asked first");
    let rules = remembered_rule(&shell::analyze(command)).unwrap();
    assert_eq!(rules, ["Bash(head -n 5 /etc/hosts)"]);
    for rule in &rules {
        engine.allow_for_session(rule).unwrap();
    }
    assert_eq!(decide(&engine, command), DecisionKind::Allow);
    // Not every `head` of anything: another file, or the same one with more lines, asks again.
    assert_eq!(decide(&engine, "head -n 5 /etc/passwd"), before);
    assert_eq!(decide(&engine, "head -n 500 /etc/hosts"), before);
}

#[test]
fn an_always_approval_is_remembered_outside_the_project_and_loads_again() {
    let fixture = Fixture::new();
    let engine = fixture.engine("", PermissionMode::Default, true).unwrap();
    assert_eq!(
        decide(&engine, "cargo build --release"),
        DecisionKind::RequireApproval
    );
    let rules = remembered_rule(&shell::analyze("cargo build --release")).unwrap();
    for rule in &rules {
        remember_rule(&fixture.data, &fixture.ws, RuleList::Allow, rule).unwrap();
    }
    assert!(!fixture.ws.join(".warden/settings.local.toml").exists());
    let text = std::fs::read_to_string(fixture.data.join("remembered.toml")).unwrap();
    assert!(text.contains("Bash(cargo build *)"), "{text}");
    let engine = fixture.engine("", PermissionMode::Default, true).unwrap();
    assert_eq!(decide(&engine, "cargo build"), DecisionKind::Allow);
    // A deny elsewhere still wins over the remembered allow.
    let engine = fixture
        .engine(
            "[permissions]\ndeny = [\"Bash(cargo build *)\"]\n",
            PermissionMode::Default,
            true,
        )
        .unwrap();
    assert_eq!(decide(&engine, "cargo build"), DecisionKind::Deny);
}

#[test]
fn settings_extend_the_risk_table() {
    let fixture = Fixture::new();
    let settings = "[permissions.risk]\nmytool = \"L0\"\ndeploy-tool = \"L4\"\n";
    let engine = fixture
        .engine(settings, PermissionMode::Auto, true)
        .unwrap();
    // Unknown programs are L3 by default; the settings make one L0 and another L4.
    let plain = fixture.engine("", PermissionMode::Auto, true).unwrap();
    assert_eq!(
        plain
            .check(&Action::Bash("mytool --check".into()))
            .decision
            .risk,
        Some(RiskLevel::L3)
    );
    let mine = engine
        .check(&Action::Bash("mytool --check".into()))
        .decision;
    assert_eq!(
        (mine.decision, mine.risk),
        (DecisionKind::Allow, Some(RiskLevel::L0))
    );
    let deploy = engine
        .check(&Action::Bash("deploy-tool prod".into()))
        .decision;
    assert_eq!(
        (deploy.decision, deploy.risk),
        (DecisionKind::RequireApproval, Some(RiskLevel::L4))
    );
    let bad = fixture.engine(
        "[permissions.risk]\nx = \"L9\"\n",
        PermissionMode::Auto,
        true,
    );
    assert!(bad.is_err_and(|e| e.contains("permissions.risk")));
}
