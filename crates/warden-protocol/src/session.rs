//! What a session knows (SPEC S1).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::{SessionId, ToolEvent};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub role: Role,
    pub content: String,
}

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

/// The whole state of one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    pub id: SessionId,
    pub goal: String,
    pub messages: Vec<Message>,
    pub plan: Vec<String>,
    pub working_set: WorkingSet,
    pub tool_trace: Vec<ToolEvent>,
    pub loaded_skills: Vec<String>,
    /// The permission mode in force (`default`, `plan`, …).
    pub permissions: String,
    /// The sandbox profile in force.
    pub sandbox: String,
    pub budgets: Budgets,
}

impl SessionState {
    pub fn new(goal: impl Into<String>) -> Self {
        Self {
            id: SessionId::new(),
            goal: goal.into(),
            messages: Vec::new(),
            plan: Vec::new(),
            working_set: WorkingSet::default(),
            tool_trace: Vec::new(),
            loaded_skills: Vec::new(),
            permissions: "default".to_owned(),
            sandbox: "none".to_owned(),
            budgets: Budgets::default(),
        }
    }
}
