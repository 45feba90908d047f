//! Compaction (SPEC C5): the older part of the conversation becomes a handoff summary the model
//! writes, with every opaque identifier checked by code and put back where it dropped one.

use serde_json::json;
use warden_model::{Item, Request};
use warden_protocol::{Event, Trigger};

use crate::agent::{Agent, AgentError, Compacted, Status};
use crate::context::window;
use crate::state::State;

/// Why nothing was compacted.
#[derive(Debug)]
pub(crate) enum NotCompacted {
    /// Too short, or the model could not summarise it: the context is trimmed instead, and the
    /// turn goes on.
    Trim,
    /// The run ends (Ctrl-C, or the session could not be saved).
    End(Status),
}

impl Agent<'_> {
    /// Compacts now (`/compact`, `warden compact`, `warden handoff`): the older part of the
    /// conversation (for a handoff, all of it but the task) becomes a handoff summary, as when
    /// the context outgrows its window.
    pub async fn compact_now(
        &mut self,
        state: &mut State,
        trigger: Trigger,
    ) -> Result<Compacted, AgentError> {
        match self.compact(state, trigger).await {
            Ok(done) => Ok(done),
            Err(NotCompacted::End(status)) => Err(AgentError::CompactionStopped(status)),
            Err(NotCompacted::Trim) => Err(AgentError::NothingCompacted),
        }
    }

    /// Replaces the older part of the conversation by a handoff summary the model writes, with
    /// every opaque identifier of that part checked and put back where it dropped one. Why not,
    /// when it could not be done or the run must end.
    pub(crate) async fn compact(
        &mut self,
        state: &mut State,
        trigger: Trigger,
    ) -> Result<Compacted, NotCompacted> {
        use warden_context::compaction;
        let end = if trigger == Trigger::Handoff {
            state.items.len()
        } else {
            compaction::cut(&state.items)
        };
        if end <= 2 {
            // Handed off already, nothing since: the summary there is the handoff.
            if let (Trigger::Handoff, [_, Item::User { text }]) = (trigger, state.items.as_slice())
                && let Some(summary) = compaction::summary_of(text)
            {
                return Ok(Compacted {
                    messages: 0,
                    summary: summary.to_owned(),
                    restored: Vec::new(),
                });
            }
            return Err(NotCompacted::Trim);
        }
        self.pre_compact(trigger);
        let range = state.items[1..end].to_vec();
        let mut text = compaction::render(&range);
        // The request must fit the window itself: the oldest part goes first (its identifiers
        // are put back from the range by the repair anyway).
        let room = usize::try_from(window(self.settings).saturating_mul(2)).unwrap_or(usize::MAX);
        if text.len() > room {
            let mut from = text.len() - room;
            while !text.is_char_boundary(from) {
                from += 1;
            }
            text = format!("[… the oldest part is left out …]\n{}", &text[from..]);
        }
        let request = Request {
            system: compaction::PROMPT.to_owned(),
            items: vec![Item::User { text }],
            tools: Vec::new(),
            max_output_tokens: 4096,
        };
        let interrupt = self.interrupt.clone();
        let (mut quiet, mut no_notice) = (|_| {}, |_| {});
        let turn = tokio::select! {
            turn = self.client.complete(&request, &mut quiet, &mut no_notice) => turn,
            () = interrupt.wait() => return Err(NotCompacted::End(Status::Interrupted)),
        };
        let turn = match turn {
            Ok(turn) => turn,
            Err(err) => {
                self.trace(
                    "compaction_failed",
                    &json!({"trigger": trigger.as_str(), "error": err.to_string()}),
                );
                return Err(NotCompacted::Trim);
            }
        };
        self.account(state, &request, &turn, 0);
        let known = state
            .working_set
            .relevant_symbols
            .iter()
            .map(String::as_str);
        let (summary, restored) = compaction::repair(&turn.text, &range, known);
        state
            .items
            .splice(1..end, [compaction::summary_item(&summary, range.len())]);
        state.compactions += 1;
        // The stored conversation is rewritten from the start.
        self.saved_items.set(0);
        let data = json!({
            "trigger": trigger.as_str(),
            "messages": range.len(),
            "summaryChars": summary.len(),
            "restoredIdentifiers": restored,
        });
        // The trace keeps what was put back; the stream says how much.
        self.trace("compaction", &data);
        self.sink.event(&Event::Compaction {
            trigger,
            messages: range.len(),
            restored: restored.len(),
        });
        self.save(state, "running")
            .map_err(|why| NotCompacted::End(Status::Error(why.to_string())))?;
        Ok(Compacted {
            messages: range.len(),
            summary,
            restored,
        })
    }
}
