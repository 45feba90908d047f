//! What a run keeps, saved to the trace after every change so that `warden resume` can go on
//! from the last one.

use serde::{Deserialize, Serialize};
use warden_model::{Item, Usage};
use warden_protocol::WorkingSet;

/// The state of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// The task as first given.
    pub goal: String,
    /// The conversation after the system prompt: saved apart, one row per item, each once.
    #[serde(skip)]
    pub items: Vec<Item>,
    /// The model's plan, as it keeps it with `updatePlan`.
    pub plan: Vec<String>,
    pub working_set: WorkingSet,
    /// Commands run and how they ended (the failures are what matter).
    pub commands: Vec<CommandRecord>,
    pub usage: Usage,
    pub cost_usd: f64,
    pub turns: u64,
    pub tool_calls: u64,
    /// Milliseconds spent in earlier processes of this run (a resumed run adds its own).
    pub elapsed_ms: u64,
    /// Calls of the last model turn that have no result yet: if the process dies, these were
    /// running (or about to), and a resumed run reports them as interrupted.
    pub pending: Vec<String>,
    /// Rules approved "for this session", applied again on resume.
    pub session_rules: Vec<String>,
    /// The provider's base URL, so that a resumed run talks to the same endpoint.
    pub base_url: Option<String>,
    /// Whether the person chose that endpoint (`--base-url`): only then does a resumed run go
    /// back to it. Otherwise it came from the settings of the time, and a resumed run selects
    /// afresh from today's (a project no longer trusted does not choose where keys go).
    #[serde(default)]
    pub base_url_given: bool,
    /// Real tokens per estimated token, learnt from the provider's reports (0 until then).
    pub calibration: f64,
    /// How often the conversation was compacted.
    pub compactions: u64,
    /// Constraints the user pinned (`--pin`, `/pin`): in every call's context, never cut.
    #[serde(default)]
    pub pinned: Vec<String>,
    /// The risk level (0–5) the policy gave each call, by call id: riskier results are cut
    /// later.
    #[serde(default)]
    pub risks: std::collections::BTreeMap<String, u8>,
    /// The window the last model call was built for (a switch to a smaller one compacts).
    #[serde(default)]
    pub window: Option<u64>,
    /// Skills active now, in the order they were loaded: their instructions are a layer of
    /// every call and they narrow what may be done, until the task ends or the model unloads
    /// them.
    #[serde(default)]
    pub skills: Vec<ActiveSkill>,
}

impl State {
    /// Adds constraints the user pinned (kept through every compaction), each once; blank
    /// ones are ignored.
    pub fn pin(&mut self, texts: &[String]) {
        for text in texts {
            let text = text.trim();
            if !text.is_empty() && !self.pinned.iter().any(|p| p == text) {
                self.pinned.push(text.to_owned());
            }
        }
    }
}

/// A command the run executed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandRecord {
    pub command: String,
    pub exit_code: Option<i64>,
}

/// A skill active in a run: what was loaded, as it was approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveSkill {
    pub name: String,
    pub version: Option<String>,
    /// SHA-256 of its `SKILL.md`.
    pub hash: String,
    /// SHA-256 of its whole directory.
    pub tree_hash: String,
    pub path: String,
    /// Its instructions, as loaded.
    pub body: String,
    pub allowed_tools: Option<Vec<String>>,
    pub network: Option<bool>,
    pub write_paths: Option<Vec<String>>,
    pub scripts: Option<bool>,
    /// `model` (the Skill tool) or `auto` (a strong match for the task).
    pub by: String,
}

#[cfg(test)]
mod tests {
    use super::State;

    #[test]
    fn a_pin_is_kept_once_trimmed_and_a_blank_one_not_at_all() {
        let mut state = State::default();
        state.pin(&["never edit migrations/ ".to_owned(), "  ".to_owned()]);
        state.pin(&[
            "never edit migrations/".to_owned(),
            "keep the API".to_owned(),
        ]);
        assert_eq!(state.pinned, ["never edit migrations/", "keep the API"]);
    }
}
