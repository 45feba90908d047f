//! Anthropic messages: the request body, and the streamed `content_block_*` events read back.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::assemble::Calls;
use crate::openai::excerpt;
use crate::types::{Event, Finish, Item, Request, Turn, Usage};

/// The version header every request carries.
pub(crate) const VERSION: &str = "2023-06-01";

/// The body of `POST {base}/v1/messages`.
pub(crate) fn body(model: &str, request: &Request) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    // Consecutive tool results go back in one user message, as the API expects.
    let mut results: Vec<Value> = Vec::new();
    let flush = |messages: &mut Vec<Value>, results: &mut Vec<Value>| {
        if !results.is_empty() {
            messages.push(json!({"role": "user", "content": std::mem::take(results)}));
        }
    };
    for item in &request.items {
        match item {
            Item::User { text } => {
                flush(&mut messages, &mut results);
                messages.push(json!({"role": "user", "content": text}));
            }
            Item::Assistant { text, calls } => {
                flush(&mut messages, &mut results);
                let mut content = Vec::new();
                if !text.is_empty() {
                    content.push(json!({"type": "text", "text": text}));
                }
                for call in calls {
                    let input: Value =
                        serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
                    content.push(
                        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                    );
                }
                if content.is_empty() {
                    content.push(json!({"type": "text", "text": "(no text)"}));
                }
                messages.push(json!({"role": "assistant", "content": content}));
            }
            Item::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => results.push(json!({
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": content,
                "is_error": is_error,
            })),
        }
    }
    flush(&mut messages, &mut results);
    let mut body = json!({
        "model": model,
        "system": request.system,
        "messages": messages,
        "max_tokens": request.max_output_tokens,
        "stream": true,
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    body
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: Start,
    },
    ContentBlockStart {
        index: usize,
        content_block: Block,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        usage: Option<OutputUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
}

#[derive(Deserialize)]
struct Start {
    usage: Option<StartUsage>,
}

#[derive(Deserialize)]
struct StartUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct MessageDelta {
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct OutputUsage {
    #[serde(default)]
    output_tokens: u64,
}

/// One streamed answer being read.
#[derive(Default)]
pub(crate) struct Stream {
    text: String,
    calls: Calls,
    /// Indexes of the blocks that are tool calls.
    tool_blocks: Vec<usize>,
    usage: Usage,
    finish: Option<Finish>,
    stopped: bool,
}

impl Stream {
    /// Reads one event's data.
    pub(crate) fn data(&mut self, data: &str, on: &mut dyn FnMut(Event)) -> Result<(), String> {
        let message: StreamEvent = serde_json::from_str(data)
            .map_err(|e| format!("unreadable event ({e}): {}", excerpt(data)))?;
        match message {
            StreamEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage.input_tokens = usage.input_tokens;
                    self.usage.output_tokens = usage.output_tokens;
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                Block::Text { text } if !text.is_empty() => {
                    self.text.push_str(&text);
                    on(Event::Text(text));
                }
                Block::ToolUse { id, name } => {
                    self.tool_blocks.push(index);
                    self.calls.fragment(index, Some(&id), Some(&name), None);
                    on(Event::CallStarted { index, name });
                }
                Block::Text { .. } | Block::Other => {}
            },
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => {
                    self.text.push_str(&text);
                    on(Event::Text(text));
                }
                BlockDelta::InputJsonDelta { partial_json } => {
                    if self.tool_blocks.contains(&index) {
                        self.calls.fragment(index, None, None, Some(&partial_json));
                    }
                }
                BlockDelta::Other => {}
            },
            StreamEvent::ContentBlockStop { index } => {
                if self.tool_blocks.contains(&index) {
                    self.calls.close(index);
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(usage) = usage {
                    self.usage.output_tokens = usage.output_tokens;
                }
                if let Some(reason) = delta.stop_reason {
                    self.finish = Some(match reason.as_str() {
                        "end_turn" | "stop_sequence" => Finish::Stop,
                        "tool_use" => Finish::ToolCalls,
                        "max_tokens" => Finish::Length,
                        _ => Finish::Other,
                    });
                }
            }
            StreamEvent::MessageStop => self.stopped = true,
            StreamEvent::Ping => {}
            StreamEvent::Error { error } => {
                return Err(format!("the provider reported an error: {error}"));
            }
        }
        Ok(())
    }

    /// The turn, if the stream reached `message_stop`; `None` means it was cut, and nothing of
    /// it may run.
    pub(crate) fn end(self) -> Option<Turn> {
        if !self.stopped {
            return None;
        }
        let calls = self.calls.finish_all();
        let finish = match self.finish {
            Some(finish) => finish,
            None if calls.is_empty() => Finish::Stop,
            None => Finish::ToolCalls,
        };
        Some(Turn {
            text: self.text,
            calls,
            usage: self.usage,
            finish,
        })
    }
}
