//! The conversation as warden keeps it, whatever the provider: what is sent, what streams back,
//! and what a finished model turn holds.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One entry of the conversation after the system prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Item {
    /// What the user (or the runtime on the user's behalf) said.
    User { text: String },
    /// What the model said, and the tool calls it made.
    Assistant { text: String, calls: Vec<ToolCall> },
    /// The answer to one tool call.
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
}

/// A tool call as the model made it: the arguments are the model's JSON text, parsed by the
/// caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
}

/// One request to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    pub system: String,
    pub items: Vec<Item>,
    pub tools: Vec<ToolDef>,
    /// The most tokens the answer may take.
    pub max_output_tokens: u32,
}

/// Tokens used by one request (the type every crate counts in).
pub use warden_protocol::Usage;

/// What streams back while the model answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// More of the answer's text.
    Text(String),
    /// A tool call began (its arguments follow in pieces).
    CallStarted { index: usize, name: String },
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// It answered and wants nothing run.
    Stop,
    /// It wants its tool calls run.
    ToolCalls,
    /// It ran out of output tokens.
    Length,
    /// Anything else the provider said.
    Other,
}

/// A finished model turn: the stream ended as the protocol says a stream ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub text: String,
    /// Complete calls, in the order the model made them.
    pub calls: Vec<ToolCall>,
    pub usage: Usage,
    pub finish: Finish,
}
