//! Selection and trimming (SPEC C1, C2, C4): the conversation that goes to the model, within
//! budget, and a report of what each layer got and what was pruned or dropped, and why.
//!
//! The system layers (rules, goal and state, tools) are rebuilt on every call and never cut.
//! The conversation is cut in two steps, cheapest first: tool results become placeholders that
//! say what they were and how to get them back (the lowest scores first, the last few results
//! last); then, only if that is not enough, whole turns go, the lowest scores first, their opaque
//! identifiers kept in a note. Scores add recency, relevance to the goal, source, pinned,
//! unresolved and risk (see `score`). What is kept stays in its order. Never cut: the task, the
//! latest user message, the most recent failure and the last turn. When even those do not fit,
//! the context goes out over budget and says so: a turn never fails or loops for lack of room.

use std::fmt::Write as _;

use serde::Serialize;
use sha2::{Digest as _, Sha256};
use warden_config::ContextShares;
use warden_model::Item;

use crate::identifiers;
use crate::score::{self, Score, Signals};
use crate::tokens::Tokens;

/// Tool results of the last turns kept raw, whatever else is pruned.
const RECENT_RESULTS: usize = 6;
/// The most identifiers listed for what was dropped.
const MAX_KEPT_IDENTIFIERS: usize = 200;

/// What a context is built from.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// The model's window, in tokens.
    pub window: u64,
    /// The share of the window the context may fill, in percent (the compaction threshold).
    pub threshold_percent: u64,
    pub shares: &'a ContextShares,
    /// Identity, permissions, tool guidance and the project's instructions.
    pub rules: &'a str,
    /// The plan and what the session knows.
    pub goal_state: &'a str,
    /// Tokens of the tool schemas sent with the request.
    pub tool_tokens: u64,
    pub items: &'a [Item],
    /// How tokens are counted for the model.
    pub tokens: &'a Tokens,
    /// What the session is about and how risky its calls were: what is cut first.
    pub signals: &'a Signals,
}

/// The conversation to send, and the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Built {
    #[serde(skip)]
    pub items: Vec<Item>,
    pub report: Report,
    /// What became of each item of the input, in order.
    #[serde(skip)]
    pub fates: Vec<Fate>,
}

/// What became of one item of the conversation, and its score.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fate {
    pub index: usize,
    /// `user`, `assistant`, or the tool's name.
    pub what: String,
    /// `kept`, `protected` (may never be cut), `placeholder` or `dropped`.
    pub fate: &'static str,
    pub tokens: u64,
    /// The sum of the signals (absent for what may never be cut).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signals: Option<Score>,
}

/// What went in, per layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub window: u64,
    /// Tokens the whole context may take.
    pub budget: u64,
    /// Tokens it takes.
    pub total: u64,
    /// The never-cut part alone is larger than the budget.
    pub over_budget: bool,
    pub layers: Vec<Layer>,
}

/// One layer of the context.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Layer {
    pub name: &'static str,
    /// Its share of the window, in tokens.
    pub budget: u64,
    pub used: u64,
    pub kept: usize,
    /// Shortened (tool results replaced by placeholders).
    pub trimmed: usize,
    pub dropped: usize,
    pub reasons: Vec<String>,
}

/// Tokens of one item.
pub fn item_tokens(item: &Item, tokens: &Tokens) -> u64 {
    match item {
        Item::User { text } => tokens.count(text),
        Item::Assistant { text, calls } => {
            tokens.count(text)
                + calls
                    .iter()
                    .map(|c| tokens.count(&c.arguments) + 8)
                    .sum::<u64>()
        }
        Item::ToolResult { content, .. } => tokens.count(content) + 4,
    }
}

fn share(window: u64, percent: u32) -> u64 {
    window.saturating_mul(u64::from(percent)) / 100
}

/// Where each item stands: the turn it belongs to (turn 0 is what precedes the first model
/// answer), and whether it may be cut.
struct Shape {
    turn_of: Vec<usize>,
    protected: Vec<bool>,
    recent: Vec<bool>,
}

fn shape(items: &[Item]) -> Shape {
    let mut turn = 0;
    let mut turn_of = Vec::with_capacity(items.len());
    for item in items {
        if matches!(item, Item::Assistant { .. }) {
            turn += 1;
        }
        turn_of.push(turn);
    }
    let last_turn = turn;
    let last_user = items.iter().rposition(|i| matches!(i, Item::User { .. }));
    let last_failure = items.iter().rposition(score::failed);
    let failure_turn = last_failure.map(|i| turn_of[i]);
    let mut protected = vec![false; items.len()];
    for (i, p) in protected.iter_mut().enumerate() {
        *p = i == 0
            || Some(i) == last_user
            || (last_turn > 0 && turn_of[i] == last_turn)
            || Some(turn_of[i]) == failure_turn && turn_of[i] > 0;
    }
    let mut recent = vec![false; items.len()];
    let mut left = RECENT_RESULTS;
    for (i, item) in items.iter().enumerate().rev() {
        if left == 0 {
            break;
        }
        if matches!(item, Item::ToolResult { .. }) {
            recent[i] = true;
            left -= 1;
        }
    }
    Shape {
        turn_of,
        protected,
        recent,
    }
}

/// The placeholder a pruned tool result becomes.
fn placeholder(items: &[Item], index: usize) -> Option<String> {
    let Item::ToolResult {
        call_id,
        name,
        content,
        ..
    } = &items[index]
    else {
        return None;
    };
    let arguments = items[..index].iter().rev().find_map(|item| match item {
        Item::Assistant { calls, .. } => calls
            .iter()
            .find(|c| c.id == *call_id)
            .map(|c| c.arguments.clone()),
        _ => None,
    });
    let digest = Sha256::digest(content.as_bytes());
    let mut hash = String::new();
    for byte in &digest[..6] {
        let _ = write!(hash, "{byte:02x}");
    }
    // A command cannot always be run again for its output: its exit and summary stay.
    let again = if name == "bash" {
        let summary = json_string_field(content, "summary")
            .map(|summary| format!(" It ended: {summary}."))
            .unwrap_or_default();
        format!("run it again only if that is safe to repeat.{summary}")
    } else {
        format!("call {name} again to see it.")
    };
    Some(format!(
        "[pruned to save context: the {name} result for {} ({} bytes, sha256 {hash}…); {again}]",
        arguments.unwrap_or_else(|| "this call".to_owned()),
        content.len()
    ))
}

/// The value of a string field of a JSON object inside `content`, found without parsing the
/// whole of it; at most 300 characters.
fn json_string_field(content: &str, field: &str) -> Option<String> {
    let key = format!("\"{field}\":");
    let at = content.find(&key)? + key.len();
    let rest = content[at..].trim_start();
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<String>();
    let value = stream.next()?.ok()?;
    Some(value.chars().take(300).collect())
}

/// Builds the conversation for the next call.
// Long because the budget is spent in one pass over the items, pruning then dropping, with
// the running account (what is kept, each item's size, the total, what was pruned and why);
// split, every step would need that account passed along.
#[allow(clippy::too_many_lines)]
pub fn build(input: &Input<'_>) -> Built {
    let c = input.tokens;
    let window = input.window;
    let budget = share(window, u32::try_from(input.threshold_percent).unwrap_or(80));
    let fixed = c.count(input.rules) + c.count(input.goal_state) + input.tool_tokens;
    let available = budget.saturating_sub(fixed);
    let items = input.items;
    let shape = shape(items);
    let mut kept: Vec<Option<Item>> = items.iter().cloned().map(Some).collect();
    let mut sizes: Vec<u64> = items.iter().map(|i| item_tokens(i, c)).collect();
    let mut total: u64 = sizes.iter().sum();
    let mut pruned = 0usize;
    let mut pruned_bytes = 0usize;
    let mut pruned_tools = std::collections::BTreeMap::<&str, usize>::new();
    let mut fate: Vec<&'static str> = shape
        .protected
        .iter()
        .map(|&p| if p { "protected" } else { "kept" })
        .collect();
    // Scored only when something must be cut.
    let scores: Vec<Score> = if total > available {
        score::score(items, input.signals)
    } else {
        Vec::new()
    };
    let total_of = |i: usize| scores.get(i).map_or(0.0, Score::total);
    // 1. Tool results become placeholders, the lowest scores first.
    if total > available {
        // The last few results go last: pruned only when the others were not enough, and
        // always before any turn is dropped.
        let mut candidates: Vec<usize> = (0..items.len())
            .filter(|&i| matches!(items[i], Item::ToolResult { .. }) && !shape.protected[i])
            .collect();
        candidates.sort_by(|&a, &b| {
            shape.recent[a]
                .cmp(&shape.recent[b])
                .then(total_of(a).total_cmp(&total_of(b)))
                .then(a.cmp(&b))
        });
        for i in candidates {
            if total <= available {
                break;
            }
            let Some(text) = placeholder(items, i) else {
                continue;
            };
            if let Some(Item::ToolResult { content, .. }) = &mut kept[i] {
                if text.len() >= content.len() {
                    continue;
                }
                pruned_bytes += content.len();
                *content = text;
                fate[i] = "placeholder";
                if let Item::ToolResult { name, .. } = &items[i] {
                    *pruned_tools.entry(name.as_str()).or_default() += 1;
                }
                let size = item_tokens(kept[i].as_ref().unwrap_or(&items[i]), c);
                total = total - sizes[i] + size;
                sizes[i] = size;
                pruned += 1;
            }
        }
    }
    // 2. Then whole turns, the lowest scores first (a turn scores as its best item); the
    // identifiers of what they held (as it stood in the context, placeholders included) stay in
    // a note, which counts against the budget too.
    let mut dropped_items = 0usize;
    let mut dropped_turns = 0usize;
    let mut lost_ids: Vec<identifiers::Identifier> = Vec::new();
    let mut listed: std::collections::HashSet<identifiers::Identifier> =
        std::collections::HashSet::new();
    let mut note_tokens = 0u64;
    if total > available {
        let last_turn = shape.turn_of.last().copied().unwrap_or(0);
        let mut members_of: Vec<Vec<usize>> = vec![Vec::new(); last_turn + 1];
        for (i, &turn) in shape.turn_of.iter().enumerate() {
            members_of[turn].push(i);
        }
        let mut order: Vec<usize> = (1..members_of.len())
            .filter(|&t| !members_of[t].iter().any(|&i| shape.protected[i]))
            .collect();
        let turn_score = |t: usize| {
            members_of[t]
                .iter()
                .map(|&i| total_of(i))
                .fold(f64::MIN, f64::max)
        };
        let turn_scores: Vec<f64> = (0..members_of.len()).map(turn_score).collect();
        order.sort_by(|&a, &b| turn_scores[a].total_cmp(&turn_scores[b]).then(a.cmp(&b)));
        for t in order {
            if total + note_tokens <= available {
                break;
            }
            let members = &members_of[t];
            for &i in members {
                if let Some(item) = kept[i].take() {
                    if lost_ids.len() < MAX_KEPT_IDENTIFIERS {
                        for id in identifiers::extract(&text_of(&item)) {
                            if lost_ids.len() < MAX_KEPT_IDENTIFIERS && listed.insert(id.clone()) {
                                note_tokens += c.count(&id.text) + 3;
                                lost_ids.push(id);
                            }
                        }
                    }
                    total -= sizes[i];
                    sizes[i] = 0;
                    dropped_items += 1;
                    fate[i] = "dropped";
                }
            }
            dropped_turns += 1;
            note_tokens = note_tokens.max(80);
        }
    }
    let mut out: Vec<Item> = Vec::with_capacity(items.len() + 1);
    for (i, item) in kept.into_iter().enumerate() {
        if let Some(item) = item {
            out.push(item);
        }
        if i == 0 && dropped_items > 0 {
            let mut note = format!(
                "[{dropped_items} earlier messages ({dropped_turns} turns) were dropped to fit the \
                 context window. Your plan and what the session knows are in the system prompt. \
                 This is history, not instructions.]"
            );
            if !lost_ids.is_empty() {
                note.push_str("\nIdentifiers from the dropped part, verbatim:");
                for id in lost_ids.iter().take(MAX_KEPT_IDENTIFIERS) {
                    let _ = write!(note, "\n- {} {}", id.kind.as_str(), id.text);
                }
            }
            total += c.count(&note);
            out.push(Item::User { text: note });
        }
    }
    let total = total + fixed;
    let over_budget = total > budget;
    let layers = layers(
        input,
        &shape,
        &sizes,
        &Cuts {
            pruned,
            pruned_bytes,
            pruned_tools: &pruned_tools,
            dropped: dropped_items,
        },
        over_budget,
    );
    let fates = items
        .iter()
        .enumerate()
        .map(|(i, item)| Fate {
            index: i,
            what: match item {
                Item::User { .. } => "user".to_owned(),
                Item::Assistant { .. } => "assistant".to_owned(),
                Item::ToolResult { name, .. } => name.clone(),
            },
            fate: fate[i],
            tokens: sizes[i],
            score: (!shape.protected[i] && !scores.is_empty()).then(|| total_of(i)),
            signals: (!shape.protected[i])
                .then(|| scores.get(i).copied())
                .flatten(),
        })
        .collect();
    Built {
        items: out,
        report: Report {
            window,
            budget,
            total,
            over_budget,
            layers,
        },
        fates,
    }
}

/// What was cut, for the report.
struct Cuts<'a> {
    pruned: usize,
    pruned_bytes: usize,
    pruned_tools: &'a std::collections::BTreeMap<&'a str, usize>,
    dropped: usize,
}

fn text_of(item: &Item) -> String {
    match item {
        Item::User { text } => text.clone(),
        Item::Assistant { text, calls } => {
            let mut all = text.clone();
            for call in calls {
                all.push('\n');
                all.push_str(&call.arguments);
            }
            all
        }
        Item::ToolResult { content, .. } => content.clone(),
    }
}

// One arm per layer of the context, in the order the prompt shows them.
#[allow(clippy::too_many_lines)]
fn layers(
    input: &Input<'_>,
    shape: &Shape,
    sizes: &[u64],
    cuts: &Cuts<'_>,
    over_budget: bool,
) -> Vec<Layer> {
    let Cuts {
        pruned,
        pruned_bytes,
        dropped,
        ..
    } = *cuts;
    let s = input.shares;
    let w = input.window;
    let c = input.tokens;
    let items = input.items;
    // Dropped items count nothing (their size is zero).
    let results = |recent: bool| {
        (0..items.len())
            .filter(|&i| {
                matches!(items[i], Item::ToolResult { .. })
                    && shape.recent[i] == recent
                    && sizes[i] > 0
            })
            .collect::<Vec<_>>()
    };
    let (old, recent) = (results(false), results(true));
    let history: Vec<usize> = (1..items.len())
        .filter(|&i| !matches!(items[i], Item::ToolResult { .. }) && sizes[i] > 0)
        .collect();
    let sum = |list: &[usize]| list.iter().map(|&i| sizes[i]).sum::<u64>();
    let mut files_reasons = Vec::new();
    if pruned > 0 {
        let by_tool: Vec<String> = cuts
            .pruned_tools
            .iter()
            .map(|(name, n)| format!("{n} {name}"))
            .collect();
        files_reasons.push(format!(
            "{pruned} tool results ({pruned_bytes} bytes: {}) replaced by placeholders, the              lowest scores first (older, not about the goal, re-readable; pinned, unresolved              and risky ones last)",
            by_tool.join(", ")
        ));
    }
    let mut history_reasons = Vec::new();
    if dropped > 0 {
        history_reasons.push(format!(
            "{dropped} messages of the lowest-scoring turns dropped; their identifiers kept in a \
             note"
        ));
    }
    if over_budget {
        history_reasons.push(
            "what may never be cut (the task, the latest message, the last failure, the last \
             turn) is larger than the budget: sent over budget"
                .to_owned(),
        );
    }
    vec![
        Layer {
            name: "rules",
            budget: share(w, s.rules),
            used: c.count(input.rules),
            kept: 1,
            trimmed: 0,
            dropped: 0,
            reasons: Vec::new(),
        },
        Layer {
            name: "goal_state",
            budget: share(w, s.goal_state),
            used: c.count(input.goal_state) + sizes.first().copied().unwrap_or(0),
            kept: 1 + usize::from(!items.is_empty()),
            trimmed: 0,
            dropped: 0,
            reasons: Vec::new(),
        },
        Layer {
            name: "tools_permissions",
            budget: share(w, s.tools_permissions),
            used: input.tool_tokens,
            kept: 1,
            trimmed: 0,
            dropped: 0,
            reasons: Vec::new(),
        },
        Layer {
            name: "files_references",
            budget: share(w, s.files_references),
            used: sum(&old),
            kept: old.len(),
            trimmed: pruned,
            dropped: 0,
            reasons: files_reasons,
        },
        Layer {
            name: "recent_trace",
            budget: share(w, s.recent_trace),
            used: sum(&recent),
            kept: recent.len(),
            trimmed: 0,
            dropped: 0,
            reasons: Vec::new(),
        },
        Layer {
            name: "history",
            budget: share(w, s.summary),
            used: sum(&history),
            kept: history.len(),
            trimmed: 0,
            dropped,
            reasons: history_reasons,
        },
    ]
}
