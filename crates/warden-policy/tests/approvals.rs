//! Remembered approvals and settings that extend the risk table.

use warden_config::{PermissionMode, RuleList, remember_rule};
use warden_policy::{Action, Wider, remembered_rule, shell};
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

fn read(engine: &warden_policy::Engine, path: &str) -> DecisionKind {
    engine
        .check(&Action::Read(path.to_owned()))
        .decision
        .decision
}

#[test]
fn a_remembered_read_past_the_workspace_covers_that_file_and_no_other() {
    let fixture = Fixture::new();
    let mut engine = fixture.engine("", PermissionMode::Default, true).unwrap();
    let file = fixture.outside.join("notes.txt");
    let other = fixture.outside.join("other.txt");
    std::fs::write(&other, "x\n").unwrap();
    let file = file.to_str().unwrap();
    assert_eq!(read(&engine, file), DecisionKind::RequireApproval);
    // The path as the tool was given it, written as a rule, is anchored at the project root:
    // it does not cover the call (the file is asked about again, every time).
    let mut naive = engine.clone();
    naive.allow_for_session(&format!("Read({file})")).unwrap();
    assert_eq!(read(&naive, file), DecisionKind::RequireApproval);
    let remembered = engine.remembered_path("Read", file);
    let rule = remembered.rule.clone().unwrap();
    assert_eq!(rule, format!("Read(/{file})"));
    engine.allow_for_session(&rule).unwrap();
    assert_eq!(read(&engine, file), DecisionKind::Allow);
    assert_eq!(
        read(&engine, other.to_str().unwrap()),
        DecisionKind::RequireApproval
    );
    // Its directory is the wider second choice, and covers the other file too.
    let Some(Wider::Offered(wider)) = remembered.wider else {
        panic!("{remembered:?}")
    };
    assert_eq!(wider, format!("Read(/{}/**)", fixture.outside.display()));
    engine.allow_for_session(&wider).unwrap();
    assert_eq!(read(&engine, other.to_str().unwrap()), DecisionKind::Allow);
}

#[test]
fn a_remembered_path_rule_is_anchored_and_its_glob_characters_are_literal() {
    let fixture = Fixture::new();
    let mut engine = fixture.engine("", PermissionMode::Default, true).unwrap();
    // A file named `*` in the home directory: its rule must cover it and nothing else.
    for name in ["*", "[ab].txt", "x?.md"] {
        std::fs::write(fixture.home.join("Private").join(name), "x\n").unwrap();
    }
    std::fs::write(fixture.home.join("Private/a.txt"), "x\n").unwrap();
    let star = fixture.home.join("Private/*");
    let star = star.to_str().unwrap();
    let remembered = engine.remembered_path("Read", star);
    assert_eq!(remembered.rule.as_deref(), Some("Read(~/Private/\\*)"));
    // Written unescaped it would cover every file there.
    let mut naive = engine.clone();
    naive.allow_for_session("Read(~/Private/*)").unwrap();
    let probe = fixture.home.join("Private/sandbox-probe.txt");
    assert_eq!(read(&naive, probe.to_str().unwrap()), DecisionKind::Allow);
    engine
        .allow_for_session(remembered.rule.as_deref().unwrap())
        .unwrap();
    assert_eq!(read(&engine, star), DecisionKind::Allow);
    assert_eq!(
        read(&engine, probe.to_str().unwrap()),
        DecisionKind::RequireApproval
    );
    let class = fixture.home.join("Private/[ab].txt");
    let remembered = engine.remembered_path("Read", class.to_str().unwrap());
    engine
        .allow_for_session(remembered.rule.as_deref().unwrap())
        .unwrap();
    assert_eq!(read(&engine, class.to_str().unwrap()), DecisionKind::Allow);
    let a = fixture.home.join("Private/a.txt");
    assert_eq!(
        read(&engine, a.to_str().unwrap()),
        DecisionKind::RequireApproval
    );
    // A bare name inside the workspace is anchored at the project root, not any depth.
    let rule = engine.remembered_path("Edit", "README.md").rule.unwrap();
    assert_eq!(rule, "Edit(/README.md)");
}

#[test]
fn a_wider_rule_over_the_home_a_top_level_directory_or_the_workspace_is_refused_with_the_reason() {
    let fixture = Fixture::new();
    let engine = fixture.engine("", PermissionMode::Default, true).unwrap();
    let refused = |tool: &str, path: &str| match engine.remembered_path(tool, path).wider {
        Some(Wider::Refused { rule, why }) => (rule, why),
        other => panic!("{path}: {other:?}"),
    };
    let (rule, why) = refused("Read", fixture.home.join(".bashrc").to_str().unwrap());
    assert_eq!(rule, "Read(~/**)");
    assert!(why.contains("home directory"), "{why}");
    let (rule, why) = refused("Read", "/etc/hosts");
    assert_eq!(rule, "Read(//etc/**)");
    assert!(why.contains("top-level"), "{why}");
    let (rule, why) = refused("Edit", "README.md");
    assert_eq!(rule, "Edit(/**)");
    assert!(why.contains("whole workspace"), "{why}");
    // The fixture's workspace and home are siblings: what holds one holds both.
    let (_, why) = refused("Read", fixture.ws.join("../x.txt").to_str().unwrap());
    assert!(why.contains("which holds the"), "{why}");
    // A directory of its own is offered.
    assert!(matches!(
        engine.remembered_path("Edit", "src/main.rs").wider,
        Some(Wider::Offered(rule)) if rule == "Edit(/src/**)"
    ));
}

#[test]
fn rules_broader_than_a_permission_may_be_are_named_with_the_reason() {
    let fixture = Fixture::new();
    let engine = fixture.engine("", PermissionMode::Default, true).unwrap();
    for (rule, word) in [
        ("Bash", "every call"),
        ("Bash(*)", "any program"),
        ("Bash(* test)", "any program"),
        ("Bash(python3 *)", "only the exact command"),
        ("Bash(sh -c *)", "only the exact command"),
        ("Bash(npm *)", "subcommands"),
        ("Bash(git *)", "subcommands"),
        ("Bash(npm exec *)", "runs whatever"),
        ("Bash(npx *)", "only the exact command"),
        ("Bash(git config *)", "runs whatever"),
        ("Read", "every call"),
        ("Read(//**)", "whole file system"),
        ("Read(//etc/**)", "top-level"),
        ("Read(~/**)", "home directory"),
        ("Read(~)", "home directory"),
        ("Edit(/**)", "whole workspace"),
        ("Edit(../**)", "which holds the"),
        ("WebFetch", "every call"),
        ("WebFetch(domain:*.com)", "every host"),
    ] {
        let why = engine.too_broad(rule).unwrap();
        assert!(
            why.as_deref().is_some_and(|w| w.contains(word)),
            "{rule}: {why:?}"
        );
    }
    for narrow in [
        "Bash(npm test *)",
        "Bash(cargo build *)",
        "Bash(npm run lint *)",
        "Bash(pytest *)",
        "Bash(cat ~/Private/x.txt)",
        "Read(~/notes/**)",
        "Read(//etc/hosts)",
        "Edit(/src/**)",
        "Edit(/**/*.md)",
        "WebFetch(domain:docs.rs)",
        "WebFetch(domain:*.github.com)",
        "Skill(git-release)",
    ] {
        assert_eq!(engine.too_broad(narrow).unwrap(), None, "{narrow}");
    }
    assert!(engine.too_broad("Bash(").is_err());
}

#[test]
fn a_commands_wider_rule_is_named_and_refused_with_the_reason() {
    use warden_policy::remembered_command;
    let refused = |command: &str| match remembered_command(&shell::analyze(command)) {
        warden_policy::Remembered {
            wider: Some(Wider::Refused { rule, why }),
            ..
        } => (rule, why),
        other => panic!("{command}: {other:?}"),
    };
    // The one-off read of a private file: remembered as itself; `cat *` named and refused.
    let remembered = remembered_command(&shell::analyze("cat $HOME/Private/x.txt"));
    assert_eq!(
        remembered.rule.as_deref(),
        Some("Bash(cat $HOME/Private/x.txt)")
    );
    let (rule, why) = refused("cat $HOME/Private/x.txt");
    assert_eq!(rule, "Bash(cat *)");
    assert!(why.contains("past the workspace"), "{why}");
    let (rule, why) = refused("npm test");
    assert_eq!(rule, "Bash(npm *)");
    assert!(why.contains("subcommands"), "{why}");
    let (rule, why) = refused("python3 x.py");
    assert_eq!(rule, "Bash(python3 *)");
    assert!(why.contains("exact command"), "{why}");
    let (rule, why) = refused("git config core.pager less");
    assert_eq!(rule, "Bash(git config *)");
    assert!(why.contains("runs whatever"), "{why}");
    // `pytest *` is as wide as a command's rule goes: nothing wider is named.
    let remembered = remembered_command(&shell::analyze("pytest -x tests/"));
    assert_eq!(remembered.rule.as_deref(), Some("Bash(pytest *)"));
    assert_eq!(remembered.wider, None);
    // `npm exec` was once remembered as `npm exec *`: any package, any code.
    assert_eq!(remembered_rule(&shell::analyze("npm exec left-pad")), None);
}
