//! Properties of the engine over generated commands.

use proptest::prelude::*;
use warden_config::PermissionMode;
use warden_policy::{Action, Engine};
use warden_protocol::DecisionKind;

use crate::fixture::Fixture;

fn decide(engine: &Engine, command: &str) -> DecisionKind {
    engine
        .check(&Action::Bash(command.to_owned()))
        .decision
        .decision
}

const PARTS: &[&str] = &[
    "ls -la src",
    "git status",
    "cat README.md",
    "rg TODO src",
    "echo hi",
    "cargo test",
    "npm install left-pad",
    "curl https://example.com",
    "rm -rf build",
    "git push origin main",
    "cat .env",
    "sudo ls",
    "echo x > out.txt",
    "python3 -c 'print(1)'",
    "rm -rf /",
    "eval \"$CMD\"",
    "wc -l src/main.rs",
];

const JOINERS: &[&str] = &[" && ", " || ", "; ", " | ", "\n", " & "];

fn engine_with(settings: &str) -> (Fixture, Engine) {
    let fixture = Fixture::new();
    let engine = fixture
        .engine(settings, PermissionMode::Default, true)
        .unwrap();
    (fixture, engine)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn a_compound_is_never_more_permissive_than_its_parts(
        a in prop::sample::select(PARTS),
        b in prop::sample::select(PARTS),
        join in prop::sample::select(JOINERS),
        wrap in prop::bool::ANY,
    ) {
        let (_fixture, engine) = engine_with("");
        let compound = format!("{a}{join}{b}");
        let compound = if wrap { format!("( {compound} )") } else { compound };
        let whole = decide(&engine, &compound).strictness();
        let parts = decide(&engine, a)
            .strictness()
            .max(decide(&engine, b).strictness());
        // A compound can offer no rewrite, so its floor is approval where a part needed one.
        let parts = if parts == 1 { 2 } else { parts };
        prop_assert!(whole >= parts, "{compound:?}: {whole} < {parts}");
    }

    #[test]
    fn spellings_of_a_denied_command_stay_denied(
        name in prop::sample::select(&["rm", "\"rm\"", "'rm'", "r''m", "\\rm", "/bin/rm", "/usr/bin/rm", "r\"\"m"][..]),
        wrapper in prop::sample::select(&["", "timeout 5 ", "env ", "env FOO=1 ", "nice -n 5 ", "command ", "nohup ", "xargs ", "time ", "stdbuf -oL ", "setsid ", "exec "][..]),
        shell in prop::sample::select(&["{}", "bash -c '{}'", "sh -c \"{}\"", "echo $({})", "echo `{}`", "true && {}", "ls; {}", "( {} )", "{ {}; }", "cat <({})", "eval '{}'"][..]),
    ) {
        let (_fixture, engine) = engine_with("[permissions]\ndeny = [\"Bash(rm *)\"]\n");
        let inner = format!("{wrapper}{name} -rf build");
        let command = shell.replace("{}", &inner);
        prop_assert_eq!(decide(&engine, &command), DecisionKind::Deny, "{:?}", command);
    }

    #[test]
    fn decisions_are_deterministic(
        a in prop::sample::select(PARTS),
        b in prop::sample::select(PARTS),
        join in prop::sample::select(JOINERS),
    ) {
        let (_fixture, engine) = engine_with("[permissions]\nallow = [\"Bash(cargo test *)\"]\n");
        let command = format!("{a}{join}{b}");
        let first = engine.check(&Action::Bash(command.clone())).decision;
        let again = engine.check(&Action::Bash(command.clone())).decision;
        prop_assert_eq!(&first, &again);
        let other = engine.clone().check(&Action::Bash(command)).decision;
        prop_assert_eq!(first, other);
    }
}

#[test]
fn the_compound_property_can_fail() {
    // The property above would catch an engine that judged only the first command.
    let (_fixture, engine) = engine_with("");
    assert_eq!(decide(&engine, "ls"), DecisionKind::Allow);
    assert_eq!(decide(&engine, "ls && rm -rf /"), DecisionKind::Deny);
}

/// Readers given what makes them run code (issue 23): each is at least L3 alone.
const RUNNING_READERS: &[&str] = &[
    "awk 'BEGIN{system(\"id\")}'",
    "awk '{print | \"sh\"}' README.md",
    "awk -f prog.awk README.md",
    "sed -n '/x/e id' README.md",
    "sed -f script.sed README.md",
    "less +!id README.md",
    "man -P id ls",
    "git --exec-path=/tmp log",
    "GIT_DIR=/tmp/other git log",
    "git grep --open-files-in-pager=id x",
    "tar -xf a.tar --to-command=id",
    "make --eval='x:=$(shell id)'",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_code_running_reader_keeps_its_risk_anywhere_in_a_compound(
        reader in prop::sample::select(RUNNING_READERS),
        other in prop::sample::select(&PARTS[..5]),
        join in prop::sample::select(JOINERS),
        first in prop::bool::ANY,
        shape in 0usize..4,
    ) {
        let (_fixture, engine) = engine_with("");
        let compound = if first {
            format!("{reader}{join}{other}")
        } else {
            format!("{other}{join}{reader}")
        };
        let line = match shape {
            0 => compound,
            1 => format!("( {compound} )"),
            2 => format!("{{ {compound}; }}"),
            _ => format!("sh -c {}", shell_quote(&compound)),
        };
        let verdict = engine.check(&Action::Bash(line.clone())).decision;
        prop_assert!(
            verdict.decision != DecisionKind::Allow
                && verdict.risk.is_some_and(|r| r >= warden_protocol::RiskLevel::L3),
            "{line}: {verdict:?}"
        );
    }
}

/// `text` as one single-quoted shell word.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}
