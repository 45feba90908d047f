//! Tools an MCP server adds during a run: each put to the person (or answered by `--on-ask`)
//! before the next turn, and offered to the model from then on only when approved.

use std::sync::Arc;

use warden_protocol::{Asked, Decision, Event, Resolved};

use crate::agent::Agent;
use crate::approve::Answer;

impl Agent<'_> {
    /// Puts every tool the servers added since the last turn to the person; whether one was
    /// approved and is offered now.
    pub(crate) fn offer_added_tools(&mut self) -> bool {
        // No server, nothing to list: no thread each turn for it.
        let Some(servers) = self.mcp.filter(|s| !s.is_empty()) else {
            return false;
        };
        let mut offered = false;
        // Listing blocks on each server's own runtime: on a thread of its own, not the loop's.
        let added =
            std::thread::scope(|scope| scope.spawn(|| servers.added()).join().unwrap_or_default());
        for added in added {
            let reason = format!(
                "the MCP server {} added the tool {} during the session; it is offered to the \
                 model only once approved",
                added.server, added.name
            );
            self.publish(&Event::ApprovalRequested {
                tool: added.name.clone(),
                asked: Asked::McpTool {
                    server: added.server.clone(),
                    description: added.description.clone(),
                    reason: reason.clone(),
                },
            });
            let decision = Decision {
                reason,
                ..Decision::unchecked()
            };
            let answer = self.put(&added.name, &added.description, &decision, Answer::Once);
            self.publish(&Event::ApprovalResolved {
                tool: added.name.clone(),
                answer: answer.kind(),
                of: Resolved::McpTool {
                    server: added.server.clone(),
                },
            });
            if matches!(answer, Answer::Deny(_)) {
                continue;
            }
            // Between turns no runner holds the registry: it is this agent's alone.
            let Some(registry) = Arc::get_mut(&mut self.registry) else {
                continue;
            };
            let problem = match added.register(registry) {
                Ok(unpinned) => {
                    offered = true;
                    unpinned
                }
                Err(error) => Some(error.to_string()),
            };
            if let Some(problem) = problem {
                let _ = self.store.record_agent_event(
                    &self.session,
                    "mcp_problem",
                    &serde_json::json!({ "problem": problem }),
                );
            }
        }
        offered
    }
}
