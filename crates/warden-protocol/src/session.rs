//! What a session knows (SPEC S1) and the limits it runs within (SPEC S3); the whole state of
//! an agent's session is the agent's own (`warden_agent::State`).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// What the session has touched and learned, updated from what tools actually did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkingSet {
    pub files_read: BTreeSet<String>,
    pub files_edited: BTreeSet<String>,
    pub relevant_symbols: BTreeSet<String>,
    pub facts: Vec<String>,
    pub decisions: Vec<String>,
    pub open_questions: Vec<String>,
    pub next_actions: Vec<String>,
}

/// Limits a session must stay within (SPEC S3). `None` means no limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budgets {
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_wall_seconds: Option<u64>,
    pub max_tool_calls: Option<u64>,
    pub max_turns: Option<u64>,
}
