//! The loop (SPEC A2): build the context, call the model, check each call it makes, ask when the
//! policy says so, run what is allowed (read-only calls of a turn at once), observe, repeat —
//! until a final answer, a budget, Ctrl-C or an error. The state is saved after every step.

use std::time::Instant;

use serde_json::json;
use warden_model::{Item, Request};
use warden_protocol::{Event, NetworkCounts};

use crate::agent::{Agent, Status};
use crate::compaction::NotCompacted;
use crate::context::{tool_results_trigger, trigger, window};
use crate::state::State;

impl Agent<'_> {
    /// Runs until the model is done, a budget runs out, Ctrl-C, or an error.
    pub async fn run(&mut self, state: &mut State) -> Status {
        let started = Instant::now();
        // Skills still active from before (a resumed task) narrow again; a new request may call
        // for one by itself.
        if let Err(why) = self.apply_narrowings(state) {
            return Status::Error(why);
        }
        if state
            .items
            .last()
            .is_some_and(|i| matches!(i, Item::User { .. }))
        {
            self.auto_load(state);
        }
        let status = match self.opening_hooks(state) {
            Ok(()) => self.turns(state, started).await,
            Err(status) => status,
        };
        if status == Status::Finished {
            self.unload_all(state);
        }
        state.elapsed_ms += u64::try_from(started.elapsed().as_millis()).unwrap_or(0);
        let _ = self.save(state, status.as_str());
        let network = self.ctx.egress.as_ref().map(|egress| {
            let counts = egress.proxy.counts();
            NetworkCounts {
                allowed: counts.allowed,
                denied: counts.denied,
            }
        });
        let (budget, error) = match &status {
            Status::BudgetExhausted(which) => (Some(which.clone()), None),
            Status::Error(why) => (None, Some(why.clone())),
            Status::Finished | Status::Interrupted => (None, None),
        };
        self.publish(&Event::SessionFinished {
            status: status.kind(),
            usage: state.usage,
            cost_usd: state.cost_usd,
            turns: state.turns,
            tool_calls: state.tool_calls,
            duration_ms: state.elapsed_ms,
            session_id: self.session.as_str().to_owned(),
            network,
            budget,
            error,
        });
        status
    }

    async fn turns(&mut self, state: &mut State, started: Instant) -> Status {
        let mut tools = self.tool_defs();
        let window = window(self.settings);
        // A run going on with a model whose window is smaller: what the larger one saw is
        // summarised once, before the first call, if it no longer fits whole.
        let mut switched = state.window.is_some_and(|before| window < before);
        loop {
            if self.interrupt.raised() {
                return Status::Interrupted;
            }
            if let Some(which) = self.exhausted(state, started) {
                return Status::BudgetExhausted(which);
            }
            if self.offer_added_tools() {
                tools = self.tool_defs();
            }
            let (mut system, mut built) = self.context(state, &tools);
            // Pruning was not enough: the model summarises the older part, once this turn;
            // whatever still does not fit is trimmed, and the turn goes on.
            let trigger = trigger(&built, std::mem::take(&mut switched))
                .or_else(|| tool_results_trigger(self.settings, state));
            if let Some(trigger) = trigger {
                match self.compact(state, trigger).await {
                    Ok(_) => (system, built) = self.context(state, &tools),
                    Err(NotCompacted::End(status)) => return status,
                    Err(NotCompacted::Trim) => {}
                }
            }
            state.window = Some(window);
            let estimated = built.report.total;
            if built
                .report
                .layers
                .iter()
                .any(|l| l.trimmed > 0 || l.dropped > 0)
                || built.report.over_budget
            {
                self.trace("context", &json!(built.report));
            }
            let request = Request {
                items: built.items,
                system,
                tools: tools.clone(),
                max_output_tokens: self.max_output_tokens,
            };
            self.publish(&Event::ModelRequest {
                turn: state.turns + 1,
                items: request.items.len(),
            });
            let interrupt = self.interrupt.clone();
            let turn = {
                let sink = &mut *self.sink;
                let mut retries = Vec::new();
                let mut on_event = |event: warden_model::Event| {
                    if let warden_model::Event::Text(text) = event {
                        sink.text(&text);
                    }
                };
                let mut on_retry = |notice| retries.push(notice);
                let result = tokio::select! {
                    turn = self.client.complete(&request, &mut on_event, &mut on_retry) => Some(turn),
                    () = interrupt.wait() => None,
                };
                for notice in retries {
                    sink.event(&Event::Retry {
                        attempt: notice.attempt,
                        wait_ms: u64::try_from(notice.wait.as_millis()).unwrap_or(u64::MAX),
                        why: notice.why,
                    });
                }
                result
            };
            let turn = match turn {
                None => return Status::Interrupted,
                Some(Err(err)) => return Status::Error(err.to_string()),
                Some(Ok(turn)) => turn,
            };
            self.account(state, &request, &turn, estimated);
            state.turns += 1;
            if !turn.text.is_empty() {
                self.sink.event(&Event::AssistantText {
                    text: turn.text.clone(),
                });
            }
            state.items.push(Item::Assistant {
                text: turn.text.clone(),
                calls: turn.calls.clone(),
            });
            state.pending = turn.calls.iter().map(|c| c.id.clone()).collect();
            if let Err(why) = self.save(state, "running") {
                return Status::Error(why.to_string());
            }
            if turn.calls.is_empty() {
                // A Stop hook may send the model back to work, with its reason.
                match self.after_answer(state, &turn.text) {
                    Some(status) => return status,
                    None => continue,
                }
            }
            if let Some(status) = self.calls(state, &turn.calls) {
                return status;
            }
        }
    }
}
