//! The context of each call (SPEC C1–C5): the rules, the skills and the state rebuilt, the
//! conversation selected and trimmed within the model's window, and when that calls for a
//! compaction.

use warden_config::Settings;
use warden_model::{Item, ToolDef};
use warden_protocol::Trigger;

use crate::agent::Agent;
use crate::prompt;
use crate::state::State;

/// The context of the next call: the rules and the state rebuilt, the conversation selected
/// and trimmed within the window (see `warden-context`). The system prompt, and what was built.
pub fn context(
    settings: &Settings,
    state: &State,
    tools: &[ToolDef],
    network: bool,
    model: &str,
    skills: Option<&warden_skills::Registry>,
) -> (String, warden_context::Built) {
    // Exact for the model's own encoding where warden has it, else calibrated estimates.
    let tokens = warden_context::Tokens::for_model(model, state.calibration);
    let mut rules = prompt::rules(settings, network);
    // The skill index and the loaded skills: rebuilt on every call, never cut.
    let index_budget =
        window(settings).saturating_mul(u64::from(settings.skills.index_percent)) / 100;
    rules.push_str(&crate::skills::layer(
        skills,
        state,
        &settings.project_root,
        index_budget,
        &|text: &str| tokens.count(text),
    ));
    let known = prompt::known(state);
    let tool_text = serde_json::to_string(tools).unwrap_or_default();
    let signals = signals(state);
    let built = warden_context::build(&warden_context::Input {
        window: window(settings),
        threshold_percent: 80,
        shares: &settings.context.shares,
        rules: &rules,
        goal_state: &known,
        tool_tokens: tokens.count(&tool_text),
        items: &state.items,
        tokens: &tokens,
        signals: &signals,
    });
    (format!("{rules}{known}"), built)
}

/// What trimming weighs: the goal, the plan, the latest things the user said and the files
/// edited (relevance), the pinned constraints, and the risk of each call.
fn signals(state: &State) -> warden_context::Signals {
    let latest = state
        .items
        .iter()
        .rev()
        .filter_map(|item| match item {
            Item::User { text } if !text.starts_with('[') => Some(text.as_str()),
            _ => None,
        })
        .take(3);
    let focus = std::iter::once(state.goal.as_str())
        .chain(state.plan.iter().map(String::as_str))
        .chain(latest)
        .chain(state.working_set.files_edited.iter().map(String::as_str));
    let risks = state
        .risks
        .iter()
        .map(|(id, level)| (id.clone(), *level))
        .collect();
    warden_context::Signals::new(focus, state.pinned.iter().map(String::as_str), risks)
}

/// Whether the conversation's tool results call for compaction (SPEC C5): more of them than
/// `[context] tool_results_count`, or taking more than `tool_results_share` percent of the
/// window. Only results outside the part compaction keeps raw count: what it cannot fold away
/// does not call for it again.
pub(crate) fn tool_results_trigger(settings: &Settings, state: &State) -> Option<Trigger> {
    let items = &state.items;
    let counter = warden_context::Tokens::estimate(state.calibration);
    let older = &items[..warden_context::compaction::cut(items).min(items.len())];
    let (mut count, mut tokens) = (0u64, 0u64);
    for item in older {
        if matches!(item, Item::ToolResult { .. }) {
            count += 1;
            tokens += warden_context::item_tokens(item, &counter);
        }
    }
    let share = settings.context.tool_results_share;
    let over_share = tokens.saturating_mul(100) > window(settings).saturating_mul(share);
    (count > settings.context.tool_results_count || count > 1 && over_share)
        .then_some(Trigger::ToolResults)
}

/// Whether a context calls for compaction: when pruning was not enough, or after a switch to a
/// smaller window when anything had to be cut.
pub(crate) fn trigger(built: &warden_context::Built, switched: bool) -> Option<Trigger> {
    let cut = |pruned: bool| {
        built
            .report
            .layers
            .iter()
            .any(|l| l.dropped > 0 || (pruned && l.trimmed > 0))
    };
    if switched && cut(true) {
        Some(Trigger::ModelSwitch)
    } else if cut(false) {
        Some(Trigger::Threshold)
    } else {
        None
    }
}

/// The model's window: `[context] window_tokens`, else `[model] context_window`, else 128k.
pub fn window(settings: &Settings) -> u64 {
    settings
        .context
        .window_tokens
        .or(settings.model.context_window)
        .unwrap_or(128_000)
}

impl Agent<'_> {
    /// The context of the next call (see [`context`]).
    pub fn context(&self, state: &State, tools: &[ToolDef]) -> (String, warden_context::Built) {
        context(
            self.settings,
            state,
            tools,
            self.network,
            &self.client.spec().model,
            self.skills,
        )
    }
}
