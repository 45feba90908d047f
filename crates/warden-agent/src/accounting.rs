//! What a run spends: tokens and cost per turn (estimated where the provider counts none), and
//! the budgets that end it.

use std::time::Instant;

use warden_model::{Item, Request};

use crate::agent::Agent;
use crate::state::State;

impl Agent<'_> {
    /// Which budget ran out, if one did.
    pub(crate) fn exhausted(&self, state: &State, started: Instant) -> Option<String> {
        let b = &self.budgets;
        let wall = state.elapsed_ms + u64::try_from(started.elapsed().as_millis()).unwrap_or(0);
        if b.max_turns.is_some_and(|m| state.turns >= m) {
            return Some(format!("max_turns ({})", state.turns));
        }
        if b.max_tool_calls.is_some_and(|m| state.tool_calls >= m) {
            return Some(format!("max_tool_calls ({})", state.tool_calls));
        }
        if b.max_tokens.is_some_and(|m| state.usage.total() >= m) {
            return Some(format!("max_tokens ({})", state.usage.total()));
        }
        if b.max_cost_usd.is_some_and(|m| state.cost_usd >= m) {
            return Some(format!("max_cost_usd ({:.4})", state.cost_usd));
        }
        if b.max_wall_seconds
            .is_some_and(|m| wall >= m.saturating_mul(1000))
        {
            return Some(format!("max_wall_seconds ({} s)", wall / 1000));
        }
        None
    }

    /// Adds a turn's tokens and cost; learns the estimate's calibration from the provider's
    /// count, and estimates where the provider gave none.
    pub(crate) fn account(
        &self,
        state: &mut State,
        request: &Request,
        turn: &warden_model::Turn,
        estimated: u64,
    ) {
        let mut usage = turn.usage;
        // Learn how the estimate compares with the provider's own count.
        state.calibration =
            warden_context::calibrate(state.calibration, estimated, usage.input_tokens);
        if usage.total() == 0 {
            // Some servers report no usage: the budgets count an estimate instead.
            let plain = warden_context::Tokens::estimate(1.0);
            let item_tokens = |item: &Item| warden_context::item_tokens(item, &plain);
            usage.input_tokens =
                plain.count(&request.system) + request.items.iter().map(item_tokens).sum::<u64>();
            usage.output_tokens = item_tokens(&Item::Assistant {
                text: turn.text.clone(),
                calls: turn.calls.clone(),
            });
        }
        state.usage.add(usage);
        state.cost_usd += self.cost(usage);
    }

    fn cost(&self, usage: warden_model::Usage) -> f64 {
        let spec = self.client.spec();
        let prices = &self.settings.model.prices;
        let Some(price) = prices
            .get(&spec.model)
            .or_else(|| prices.get(&spec.label()))
        else {
            return 0.0;
        };
        #[allow(clippy::cast_precision_loss)]
        let cost = (usage.input_tokens as f64 * price.input_per_mtok
            + usage.output_tokens as f64 * price.output_per_mtok)
            / 1_000_000.0;
        cost
    }
}
