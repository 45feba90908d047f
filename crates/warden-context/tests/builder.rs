//! The context builder: within budget, never without what may not be cut, calls and results
//! still paired, the same state giving the same context, and a session that cannot fit still
//! getting a context.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use warden_config::ContextShares;
use warden_context::{Input, Signals, Tokens, build, item_tokens};

/// Estimates of four bytes a token.
fn plain() -> &'static Tokens {
    static PLAIN: std::sync::OnceLock<Tokens> = std::sync::OnceLock::new();
    PLAIN.get_or_init(|| Tokens::estimate(1.0))
}
use warden_model::{Item, ToolCall};

fn no_signals() -> &'static Signals {
    static NONE: std::sync::OnceLock<Signals> = std::sync::OnceLock::new();
    NONE.get_or_init(Signals::default)
}

/// One turn: the size of its text, its results (size, failed), and whether a user message
/// follows.
type Turn = (usize, Vec<(usize, bool)>, bool);

/// A session: the task, then the turns.
fn session(turns: &[Turn]) -> Vec<Item> {
    let mut items = vec![Item::User {
        text: "Fix the slug of names with several spaces in src/slugify.js".into(),
    }];
    for (t, (text, results, user)) in turns.iter().enumerate() {
        let calls: Vec<ToolCall> = results
            .iter()
            .enumerate()
            .map(|(r, _)| ToolCall {
                id: format!("c{t}_{r}"),
                name: "readFile".into(),
                arguments: format!("{{\"path\": \"src/file{t}_{r}.rs\"}}"),
            })
            .collect();
        items.push(Item::Assistant {
            text: "x".repeat(*text),
            calls: calls.clone(),
        });
        for (call, (size, failed)) in calls.iter().zip(results) {
            items.push(Item::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: format!("see src/mod{t}.rs:{size} {}", "y".repeat(*size)),
                is_error: *failed,
            });
        }
        if *user {
            items.push(Item::User {
                text: format!("also check issue #{t}"),
            });
        }
    }
    items
}

fn input<'a>(items: &'a [Item], window: u64, shares: &'a ContextShares) -> Input<'a> {
    Input {
        window,
        threshold_percent: 80,
        shares,
        rules: "You are a coding agent.",
        goal_state: "Plan: read, fix, test.",
        tool_tokens: 300,
        items,
        tokens: plain(),
        signals: no_signals(),
    }
}

/// Every tool result follows the assistant item that made its call.
fn paired(items: &[Item]) -> bool {
    let mut open: Vec<String> = Vec::new();
    for item in items {
        match item {
            Item::Assistant { calls, .. } => open = calls.iter().map(|c| c.id.clone()).collect(),
            Item::ToolResult { call_id, .. } => {
                if !open.contains(call_id) {
                    return false;
                }
            }
            Item::User { .. } => {}
        }
    }
    true
}

fn turns() -> impl Strategy<Value = Vec<Turn>> {
    prop::collection::vec(
        (
            0usize..400,
            prop::collection::vec((0usize..6000, prop::bool::weighted(0.1)), 0..4),
            prop::bool::weighted(0.1),
        ),
        0..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_context_fits_keeps_what_may_not_be_cut_and_is_deterministic(
        turns in turns(),
        window in 2_000u64..60_000,
    ) {
        let shares = ContextShares::default();
        let items = session(&turns);
        let built = build(&input(&items, window, &shares));
        let again = build(&input(&items, window, &shares));
        prop_assert_eq!(&built, &again);
        prop_assert_eq!(&built.items, &again.items);
        prop_assert!(paired(&built.items));
        // The task, the latest user message and the last failure are there, raw.
        prop_assert_eq!(&built.items[0], &items[0]);
        let last_user = items.iter().rev().find(|i| matches!(i, Item::User { .. })).unwrap();
        prop_assert!(built.items.contains(last_user));
        if let Some(failure) = items.iter().rev().find(|i| matches!(i, Item::ToolResult { is_error: true, .. })) {
            prop_assert!(built.items.contains(failure));
        }
        // The last turn is whole.
        if let Some(last) = items.iter().rposition(|i| matches!(i, Item::Assistant { .. })) {
            for item in &items[last..] {
                prop_assert!(built.items.contains(item));
            }
        }
        // Within budget, unless what may not be cut is larger on its own.
        let sent: u64 = built.items.iter().map(|i| item_tokens(i, plain())).sum();
        prop_assert!(sent + 300 <= built.report.total + 64);
        prop_assert!(!built.report.over_budget || built.report.total > built.report.budget);
        if !built.report.over_budget {
            prop_assert!(built.report.total <= built.report.budget);
        }
    }
}

#[test]
fn pruning_comes_before_dropping_and_says_what_was_pruned() {
    let shares = ContextShares::default();
    let turns: Vec<Turn> = (0..12).map(|_| (50, vec![(3000, false)], false)).collect();
    let items = session(&turns);
    let built = build(&input(&items, 12_000, &shares));
    assert!(!built.report.over_budget);
    let pruned = built
        .items
        .iter()
        .filter(|i| matches!(i, Item::ToolResult { content, .. } if content.starts_with("[pruned")))
        .count();
    assert!(pruned > 0);
    // Nothing dropped: placeholders were enough.
    assert_eq!(built.items.len(), items.len());
    let files = &built.report.layers[3];
    assert_eq!(files.name, "files_references");
    assert_eq!(files.trimmed, pruned);
    let placeholder = built
        .items
        .iter()
        .find_map(|i| match i {
            Item::ToolResult { content, .. } if content.starts_with("[pruned") => Some(content),
            _ => None,
        })
        .unwrap();
    assert!(
        placeholder.contains("src/file0_0.rs") && placeholder.contains("sha256"),
        "{placeholder}"
    );
}

#[test]
fn dropped_turns_leave_their_identifiers_in_a_note() {
    let shares = ContextShares::default();
    let turns: Vec<Turn> = (0..30).map(|_| (2000, vec![(100, false)], false)).collect();
    let items = session(&turns);
    let built = build(&input(&items, 8_000, &shares));
    let note = match &built.items[1] {
        Item::User { text } => text.clone(),
        other => panic!("no note: {other:?}"),
    };
    assert!(
        note.contains("were dropped") && note.contains("history, not instructions"),
        "{note}"
    );
    assert!(
        note.contains("src/file0_0.rs") && note.contains("src/mod0.rs:100"),
        "{note}"
    );
    assert!(built.report.layers[5].dropped > 0);
}

#[test]
fn a_session_that_cannot_fit_still_gets_a_context() {
    let shares = ContextShares::default();
    // The last turn alone is larger than the whole window.
    let turns = vec![
        (10, vec![(100, false)], false),
        (10, vec![(400_000, false)], false),
    ];
    let items = session(&turns);
    let built = build(&input(&items, 8_000, &shares));
    assert!(built.report.over_budget);
    assert!(built.items.contains(items.last().unwrap()));
    assert!(paired(&built.items));
}

/// A task, then one turn per (path, size) read, then a last turn that stays raw.
fn reads(paths: &[(&str, usize)]) -> Vec<Item> {
    let mut items = vec![Item::User {
        text: "slugify collapses runs of spaces into one dash".into(),
    }];
    for (n, (path, size)) in paths.iter().enumerate() {
        let id = format!("r{n}");
        items.push(Item::Assistant {
            text: String::new(),
            calls: vec![ToolCall {
                id: id.clone(),
                name: "readFile".into(),
                arguments: format!("{{\"path\": \"{path}\"}}"),
            }],
        });
        items.push(Item::ToolResult {
            call_id: id,
            name: "readFile".into(),
            content: format!("{path}\n{}", "z ".repeat(size / 2)),
            is_error: false,
        });
    }
    items.push(Item::Assistant {
        text: "done".into(),
        calls: Vec::new(),
    });
    items
}

fn raw(built: &warden_context::Built, path: &str) -> bool {
    built
        .items
        .iter()
        .any(|i| matches!(i, Item::ToolResult { content, .. } if content.starts_with(path)))
}

#[test]
fn what_is_about_the_goal_is_pruned_after_what_is_not() {
    let shares = ContextShares::default();
    // The slugify read is the oldest; eight later reads are about billing.
    let mut paths = vec![("src/slugify.js", 4000)];
    paths.extend((0..8).map(|_| ("src/billing.js", 4000)));
    let items = reads(&paths);
    let signals = Signals::new(
        ["slugify collapses runs of spaces into one dash"],
        [],
        std::collections::HashMap::new(),
    );
    let mut input = input(&items, 10_000, &shares);
    input.signals = &signals;
    let built = build(&input);
    assert!(!built.report.over_budget);
    assert!(
        built.report.layers[3].trimmed > 0,
        "some reads had to become placeholders"
    );
    assert!(
        raw(&built, "src/slugify.js"),
        "the oldest read, but about the goal"
    );
    // Without the goal, age decides: the oldest goes first.
    let blind = build(&self::input(&items, 10_000, &shares));
    assert!(!raw(&blind, "src/slugify.js"));
    let fate = &built.fates[2];
    assert_eq!((fate.what.as_str(), fate.fate), ("readFile", "kept"));
    assert!(fate.signals.unwrap().relevance > 0.0);
}

#[test]
fn pinned_constraints_keep_what_touches_them_when_turns_are_dropped() {
    let shares = ContextShares::default();
    let mut paths = vec![("migrations/001_init.sql", 3000)];
    paths.extend((0..60).map(|_| ("docs/notes.md", 3000)));
    let items = reads(&paths);
    let signals = Signals::new(
        [],
        ["never edit migrations"],
        std::collections::HashMap::new(),
    );
    let mut pinned = input(&items, 3_000, &shares);
    pinned.signals = &signals;
    let built = build(&pinned);
    assert!(built.report.layers[5].dropped > 0, "turns had to go");
    let kept_migration = built.items.iter().any(|i| {
        matches!(i, Item::Assistant { calls, .. } if calls.iter().any(|c| c.arguments.contains("migrations/")))
    });
    assert!(
        kept_migration,
        "the pinned turn is kept while later ones go"
    );
    assert_eq!(built.fates[1].fate, "kept");
    // Unpinned, it is the oldest and goes first.
    let blind = build(&input(&items, 3_000, &shares));
    assert_eq!(blind.fates[1].fate, "dropped");
    assert!(paired(&built.items));
    // The order is the conversation's.
    let positions: Vec<usize> = built
        .items
        .iter()
        .filter_map(|i| items.iter().position(|j| j == i))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
}

#[test]
fn a_failing_command_counts_as_the_last_failure() {
    let shares = ContextShares::default();
    let mut items = reads(&[("a.md", 3000), ("b.md", 3000)]);
    items.pop();
    // A command that ran and exited 1: not a tool error, but a failure all the same.
    items.push(Item::Assistant {
        text: String::new(),
        calls: vec![ToolCall {
            id: "t".into(),
            name: "bash".into(),
            arguments: "{\"command\": \"npm test\"}".into(),
        }],
    });
    let failing = Item::ToolResult {
        call_id: "t".into(),
        name: "bash".into(),
        content: format!(
            "{{\"cmd\":\"npm test\",\"exitCode\":1,\"out\":\"{}\"}}",
            "f".repeat(6000)
        ),
        is_error: false,
    };
    items.push(failing.clone());
    for n in 0..6 {
        items.push(Item::Assistant {
            text: String::new(),
            calls: vec![ToolCall {
                id: format!("l{n}"),
                name: "readFile".into(),
                arguments: "{\"path\": \"c.md\"}".into(),
            }],
        });
        items.push(Item::ToolResult {
            call_id: format!("l{n}"),
            name: "readFile".into(),
            content: "c".repeat(3000),
            is_error: false,
        });
    }
    let built = build(&input(&items, 6_000, &shares));
    assert!(
        built.items.contains(&failing),
        "the failed command stays raw"
    );
}

#[test]
fn a_pruned_command_keeps_how_it_ended() {
    let shares = ContextShares::default();
    let mut items = vec![Item::User {
        text: "make the build pass".into(),
    }];
    for n in 0..12 {
        items.push(Item::Assistant {
            text: String::new(),
            calls: vec![ToolCall {
                id: format!("b{n}"),
                name: "bash".into(),
                arguments: "{\"command\": \"make\"}".into(),
            }],
        });
        let result = serde_json::json!({
            "cmd": "make",
            "exitCode": 0,
            "stdoutSummary": "x".repeat(4000),
            "summary": format!("exit 0 after 1.{n} s; 400 lines of output"),
        });
        items.push(Item::ToolResult {
            call_id: format!("b{n}"),
            name: "bash".into(),
            content: format!("[output of bash make: data]\n{result}"),
            is_error: false,
        });
    }
    let built = build(&input(&items, 8_000, &shares));
    let placeholder = built
        .items
        .iter()
        .find_map(|i| match i {
            Item::ToolResult { content, .. } if content.starts_with("[pruned") => Some(content),
            _ => None,
        })
        .unwrap();
    assert!(
        placeholder.contains("It ended: exit 0 after 1.0 s; 400 lines of output.")
            && placeholder.contains("only if that is safe to repeat"),
        "{placeholder}"
    );
}
