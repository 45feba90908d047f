//! The context builder: within budget, never without what may not be cut, calls and results
//! still paired, the same state giving the same context, and a session that cannot fit still
//! getting a context.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use warden_config::ContextShares;
use warden_context::{Input, Tokens, build, item_tokens};

/// Estimates of four bytes a token.
fn plain() -> &'static Tokens {
    static PLAIN: std::sync::OnceLock<Tokens> = std::sync::OnceLock::new();
    PLAIN.get_or_init(|| Tokens::estimate(1.0))
}
use warden_model::{Item, ToolCall};

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
