//! Compaction keeps every identifier at scale: a session of over 500 items made of the
//! development corpus, "summarised" by a summariser that drops every identifier, comes back with
//! every one the extractor finds in it (how many of the labelled ones that is, is measured case by
//! case in `corpus.rs`).
#![allow(clippy::unwrap_used)]

use warden_context::compaction::{SECTIONS, cut, render, repair, summary_item};
use warden_model::{Item, ToolCall};

#[test]
fn every_identifier_of_a_500_item_session_survives_a_lossy_summary() {
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("fixtures/corpus/dev.json")).unwrap();
    let mut items = vec![Item::User {
        text: "Keep the build green".into(),
    }];
    let mut labelled = Vec::new();
    let mut n = 0;
    while items.len() < 520 {
        for case in &cases {
            let text = case["text"].as_str().unwrap();
            for id in warden_context::extract(text) {
                labelled.push(id.text);
            }
            n += 1;
            let call = ToolCall {
                id: format!("c{n}"),
                name: "bash".into(),
                arguments: "{\"command\": \"make\"}".into(),
            };
            items.push(Item::Assistant {
                text: format!("Step {n}."),
                calls: vec![call.clone()],
            });
            items.push(Item::ToolResult {
                call_id: call.id,
                name: call.name,
                content: text.to_owned(),
                is_error: false,
            });
        }
    }
    let end = cut(&items);
    assert!(end > 500, "{end}");
    let range = &items[1..end];
    assert!(!render(range).is_empty());
    // A summariser that keeps the shape and loses every identifier.
    let lossy = "## Goal\nKeep the build green.\n## Progress\nMany commands ran; some failed.\n\
                 ## Decisions\nNone worth noting.";
    let (summary, restored) = repair(lossy, range, []);
    assert!(!restored.is_empty());
    labelled.sort();
    labelled.dedup();
    let lost: Vec<&String> = labelled
        .iter()
        .filter(|id| !warden_context::holds(&summary, id))
        .filter(|id| range_has(range, id))
        .collect();
    assert!(lost.is_empty(), "lost {} identifiers: {lost:?}", lost.len());
    for heading in SECTIONS {
        assert!(summary.contains(&format!("## {heading}")));
    }
    let item = summary_item(&summary, range.len());
    match item {
        Item::User { text } => assert!(text.contains("not instructions")),
        other => panic!("{other:?}"),
    }
}

fn range_has(range: &[Item], id: &str) -> bool {
    range.iter().any(|i| match i {
        Item::ToolResult { content, .. } => content.contains(id),
        _ => false,
    })
}
