//! Building the context of a 2,000-item, one-million-token session (target ≤ 20 ms), against a
//! baseline from the same run: cloning the same conversation once, which any builder must do.
//!
//! `cargo bench -p warden-context --bench build`
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::cast_precision_loss)]

use std::fmt::Write as _;
use std::time::Instant;

use warden_config::ContextShares;
use warden_context::{Input, Signals, Tokens, build};
use warden_model::{Item, ToolCall};

fn session() -> Vec<Item> {
    let mut items = vec![Item::User {
        text: "Fix the slug of names with several spaces".into(),
    }];
    // 666 turns of an assistant call and two results: about 2,000 items, 4 MB of text.
    for t in 0..666 {
        let calls: Vec<ToolCall> = (0..2)
            .map(|r| ToolCall {
                id: format!("c{t}_{r}"),
                name: "readFile".into(),
                arguments: format!("{{\"path\": \"src/module{t}/file{r}.rs\"}}"),
            })
            .collect();
        items.push(Item::Assistant {
            text: format!("Reading module {t}."),
            calls: calls.clone(),
        });
        for call in &calls {
            let mut content = String::new();
            for line in 0..60 {
                let _ = writeln!(
                    content,
                    "{line:>6}\tfn helper_{t}_{line}(x: u32) -> u32 {{ x + {line} }} // see src/lib.rs:{line}"
                );
            }
            items.push(Item::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error: false,
            });
        }
    }
    items
}

fn main() {
    let items = session();
    for window in [200_000, 20_000] {
        measure(&items, window);
    }
}

fn measure(items: &[Item], window: u64) {
    let bytes: usize = items
        .iter()
        .map(|i| match i {
            Item::User { text } | Item::Assistant { text, .. } => text.len(),
            Item::ToolResult { content, .. } => content.len(),
        })
        .sum();
    let shares = ContextShares::default();
    let tokens = Tokens::estimate(1.0);
    let signals = Signals::new(
        [
            "Fix the slug of names with several spaces",
            "Plan: fix, test.",
        ],
        ["never edit src/module3"],
        std::collections::HashMap::new(),
    );
    let rounds = 15;
    let mut clone = Vec::new();
    let mut built = Vec::new();
    let mut last = None;
    for _ in 0..rounds {
        let started = Instant::now();
        let copy = items.to_vec();
        clone.push(started.elapsed().as_secs_f64() * 1000.0);
        drop(copy);
        let started = Instant::now();
        let result = build(&Input {
            window,
            threshold_percent: 80,
            shares: &shares,
            rules: "You are a coding agent.",
            goal_state: "Plan: fix, test.",
            tool_tokens: 3000,
            items,
            tokens: &tokens,
            signals: &signals,
        });
        built.push(started.elapsed().as_secs_f64() * 1000.0);
        last = Some(result);
    }
    clone.sort_by(f64::total_cmp);
    built.sort_by(f64::total_cmp);
    let (clone, built_ms) = (clone[rounds / 2], built[rounds / 2]);
    let report = last.unwrap().report;
    println!(
        "context of {} items, {:.1} MB (about {} k tokens), window {window}, median of {rounds}:",
        items.len(),
        bytes as f64 / 1e6,
        bytes / 4000
    );
    println!("  clone of the conversation (baseline)  {clone:7.2} ms");
    println!(
        "  build                                 {built_ms:7.2} ms   ratio {:.1}   (target 20 ms)",
        built_ms / clone
    );
    println!(
        "  result: {} tokens of a {} budget; trimmed {}, dropped {}",
        report.total,
        report.budget,
        report.layers.iter().map(|l| l.trimmed).sum::<usize>(),
        report.layers.iter().map(|l| l.dropped).sum::<usize>()
    );
}
