//! OpenAI-compatible chat completions: the request body, and the streamed chunks read back.
//! Serves `OpenAI` and everything that speaks its API (Ollama, llama.cpp's server, vLLM, LM
//! Studio, gateways).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::assemble::Calls;
use crate::types::{Event, Finish, Item, Request, Turn, Usage};

/// The body of `POST {base}/chat/completions`.
pub(crate) fn body(model: &str, request: &Request) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    for item in &request.items {
        messages.push(match item {
            Item::User { text } => json!({"role": "user", "content": text}),
            Item::Assistant { text, calls } => {
                let mut message = json!({"role": "assistant", "content": text});
                if !calls.is_empty() {
                    message["tool_calls"] = calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            })
                        })
                        .collect();
                }
                message
            }
            Item::ToolResult {
                call_id, content, ..
            } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": request.max_output_tokens,
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                })
            })
            .collect();
    }
    body
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<ChunkUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Delta,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    content: Option<String>,
    tool_calls: Option<Vec<CallDelta>>,
    /// The legacy single-call form some servers still stream beside (or instead of)
    /// `tool_calls`.
    function_call: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct CallDelta {
    index: Option<usize>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// One streamed answer being read.
#[derive(Default)]
pub(crate) struct Stream {
    text: String,
    calls: Calls,
    usage: Usage,
    finish: Option<Finish>,
    done: bool,
    /// Whether any chunk used `tool_calls` (then legacy `function_call` deltas are ignored).
    modern: bool,
}

impl Stream {
    /// Reads one `data:` payload. Errors are the provider's own, reported in the stream.
    pub(crate) fn data(&mut self, data: &str, on: &mut dyn FnMut(Event)) -> Result<(), String> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| format!("unreadable chunk ({e}): {}", excerpt(data)))?;
        if let Some(error) = chunk.error {
            return Err(format!("the provider reported an error: {error}"));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            };
        }
        for choice in chunk.choices {
            let delta = choice.delta;
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                self.text.push_str(&text);
                on(Event::Text(text));
            }
            if let Some(calls) = delta.tool_calls {
                self.modern = true;
                for (position, call) in calls.into_iter().enumerate() {
                    let index = call.index.unwrap_or(position);
                    let (name, arguments) = call
                        .function
                        .map_or((None, None), |f| (f.name, f.arguments));
                    let opened = self.calls.fragment(
                        index,
                        call.id.as_deref(),
                        name.as_deref(),
                        arguments.as_deref(),
                    );
                    if opened {
                        on(Event::CallStarted {
                            index,
                            name: name.unwrap_or_default(),
                        });
                    }
                }
            } else if let Some(function) = delta.function_call.filter(|_| !self.modern) {
                let opened = self.calls.fragment(
                    0,
                    None,
                    function.name.as_deref(),
                    function.arguments.as_deref(),
                );
                if opened {
                    on(Event::CallStarted {
                        index: 0,
                        name: function.name.unwrap_or_default(),
                    });
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(match reason.as_str() {
                    "stop" => Finish::Stop,
                    "tool_calls" | "function_call" => Finish::ToolCalls,
                    "length" => Finish::Length,
                    _ => Finish::Other,
                });
            }
        }
        Ok(())
    }

    /// The turn, if the stream ended as it should: `[DONE]`, or at least a finish reason before
    /// the connection closed. `None` means it was cut, and nothing of it may run.
    pub(crate) fn end(self) -> Option<Turn> {
        if !self.done && self.finish.is_none() {
            return None;
        }
        let calls = self.calls.finish_all();
        let finish = match self.finish {
            Some(Finish::Stop | Finish::Other) | None if !calls.is_empty() => Finish::ToolCalls,
            Some(finish) => finish,
            None => Finish::Stop,
        };
        Some(Turn {
            text: self.text,
            calls,
            usage: self.usage,
            finish,
        })
    }
}

pub(crate) fn excerpt(text: &str) -> String {
    let mut cut: String = text.chars().take(300).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(chunks: &[&str]) -> Option<Turn> {
        let mut stream = Stream::default();
        let mut events = Vec::new();
        for chunk in chunks {
            stream.data(chunk, &mut |e| events.push(e)).unwrap();
        }
        stream.end()
    }

    #[test]
    fn legacy_function_call_deltas_beside_tool_calls_are_not_counted_twice() {
        let turn = read(&[
            r#"{"choices":[{"delta":{"function_call":{"name":"glob","arguments":""},"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"glob","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"function_call":{"arguments":"{\"pattern\":"},"tool_calls":[{"index":0,"function":{"arguments":"{\"pattern\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"function_call":{"arguments":"\"*\"}"},"tool_calls":[{"index":0,"function":{"arguments":"\"*\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(turn.calls.len(), 1);
        assert_eq!(turn.calls[0].arguments, r#"{"pattern":"*"}"#);
        assert_eq!(turn.finish, Finish::ToolCalls);
    }

    #[test]
    fn a_stream_without_an_end_is_cut() {
        assert!(
            read(&[
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"bash","arguments":"{\"command\":\"rm"}}]}}]}"#
            ])
            .is_none()
        );
    }
}
