//! The corpus in `tests/corpus/*.toml`, written from the issue and published bypass reports
//! before the engine existed. Every case must hold.

use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;
use warden_config::PermissionMode;
use warden_policy::Action;
use warden_protocol::{DecisionKind, RiskLevel};

use crate::fixture::Fixture;

#[derive(Debug, Deserialize)]
struct File {
    case: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Case {
    id: String,
    pub(crate) tool: String,
    pub(crate) target: String,
    #[serde(default)]
    mode: Option<PermissionMode>,
    #[serde(default)]
    settings: String,
    #[serde(default = "yes")]
    sandboxed: bool,
    expect: Option<DecisionKind>,
    expect_any: Option<Vec<DecisionKind>>,
    risk_min: Option<RiskLevel>,
    risk_max: Option<RiskLevel>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    note: Option<String>,
}

fn yes() -> bool {
    true
}

pub(crate) fn load() -> Vec<(String, Case)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut cases = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
    {
        let text = std::fs::read_to_string(&path).unwrap();
        let file: File =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        cases.extend(file.case.into_iter().map(|c| (name.clone(), c)));
    }
    cases
}

#[test]
fn the_corpus_is_large_and_well_formed() {
    let cases = load();
    assert!(cases.len() >= 300, "{} cases", cases.len());
    let mut ids: Vec<&str> = cases.iter().map(|(_, c)| c.id.as_str()).collect();
    ids.sort_unstable();
    let before = ids.len();
    ids.dedup();
    assert_eq!(before, ids.len(), "duplicate ids");
    let bypasses = cases.iter().filter(|(f, _)| f == "bypasses.toml").count();
    assert!(bypasses >= 60);
    assert!(
        cases
            .iter()
            .filter(|(f, _)| f == "bypasses.toml")
            .all(|(_, c)| c.source.is_some())
    );
    let benign = cases
        .iter()
        .filter(|(_, c)| {
            c.expect == Some(DecisionKind::Allow)
                && c.mode.is_none_or(|m| m == PermissionMode::Default)
                && c.settings.is_empty()
        })
        .count();
    assert!(benign >= 100, "{benign} benign default-mode cases");
    for (_, case) in &cases {
        assert!(
            case.expect.is_some() != case.expect_any.is_some(),
            "{}: exactly one of expect and expect_any",
            case.id
        );
    }
}

#[test]
fn every_case_holds() {
    let fixture = Fixture::new();
    let mut failures = String::new();
    let mut count = 0;
    for (file, case) in load() {
        count += 1;
        let mode = case.mode.unwrap_or(PermissionMode::Default);
        let engine = match fixture.engine(&case.settings, mode, case.sandboxed) {
            Ok(engine) => engine,
            Err(err) => {
                let _ = writeln!(failures, "{file} {}: settings rejected: {err}", case.id);
                continue;
            }
        };
        let target = fixture.fill(&case.target);
        let verdict = engine.check(&Action::from_cli(&case.tool, &target));
        let got = verdict.decision.decision;
        let wanted: Vec<DecisionKind> = case
            .expect
            .map_or_else(|| case.expect_any.clone().unwrap_or_default(), |e| vec![e]);
        let risk = verdict.decision.risk;
        let risk_ok = case
            .risk_min
            .is_none_or(|min| risk.is_some_and(|r| r >= min))
            && case
                .risk_max
                .is_none_or(|max| risk.is_some_and(|r| r <= max));
        if !wanted.contains(&got) || !risk_ok {
            let _ = writeln!(
                failures,
                "{file} {}: {} {:?} in {}: got {} {:?} ({}), wanted {:?} risk {:?}..{:?}{}",
                case.id,
                case.tool,
                case.target,
                mode.as_str(),
                got.as_str(),
                risk,
                verdict.decision.reason,
                wanted.iter().map(|w| w.as_str()).collect::<Vec<_>>(),
                case.risk_min,
                case.risk_max,
                case.note
                    .as_deref()
                    .map(|n| format!(" — {n}"))
                    .unwrap_or_default(),
            );
        }
    }
    let failed = failures.lines().count();
    assert!(
        failures.is_empty(),
        "{failed} of {count} cases failed:\n{failures}"
    );
    let _ = fixture.home();
}
