//! A model provider for tests: an HTTP/1.1 server on loopback that answers each request with
//! the next scripted reply, written the way the real APIs write them (Server-Sent Events, sent in
//! separate chunks), and records every request it got.
#![allow(clippy::missing_panics_doc, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One scripted reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Written one after the other, each flushed: a stream in pieces.
    pub chunks: Vec<String>,
    /// The pause between chunks.
    pub pause: std::time::Duration,
    /// The wait before the reply begins (a model thinking).
    pub delay: std::time::Duration,
}

impl Reply {
    /// An error status with a JSON body.
    pub fn status(status: u16, message: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![json!({"error": {"message": message}}).to_string()],
            pause: std::time::Duration::ZERO,
            delay: std::time::Duration::ZERO,
        }
    }

    /// The reply with no pause between its chunks.
    #[must_use]
    pub fn fast(mut self) -> Self {
        self.pause = std::time::Duration::ZERO;
        self
    }

    /// The reply after a wait.
    #[must_use]
    pub fn delayed(mut self, delay: std::time::Duration) -> Self {
        self.delay = delay;
        self
    }

    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    fn sse(events: Vec<String>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: events,
            pause: std::time::Duration::from_millis(1),
            delay: std::time::Duration::ZERO,
        }
    }

    /// The reply with its stream cut after `keep` chunks (the connection just closes).
    #[must_use]
    pub fn cut_after(mut self, keep: usize) -> Self {
        self.chunks.truncate(keep);
        self
    }
}

/// A tool call in a script: id, name, arguments (JSON text, sent in pieces of `piece` bytes).
#[derive(Debug, Clone)]
pub struct Call<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub arguments: String,
}

impl<'a> Call<'a> {
    pub fn new(id: &'a str, name: &'a str, arguments: &Value) -> Self {
        Self {
            id,
            name,
            arguments: arguments.to_string(),
        }
    }
}

fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

/// `OpenAI` chat completions, streamed.
pub mod openai {
    use super::{Call, Reply, json, pieces};

    fn data(value: &serde_json::Value) -> String {
        format!("data: {value}\n\n")
    }

    /// Text, then a stop.
    pub fn text(text: &str) -> Reply {
        let mut events: Vec<String> = pieces(text, 7)
            .iter()
            .map(|p| data(&json!({"choices": [{"index": 0, "delta": {"content": p}}]})))
            .collect();
        events.push(data(
            &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ));
        events.push(data(
            &json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20}}),
        ));
        events.push("data: [DONE]\n\n".into());
        Reply::sse(events)
    }

    /// Some text, then tool calls whose arguments arrive `piece` characters at a time,
    /// interleaved between the calls.
    pub fn calls(text: &str, calls: &[Call<'_>], piece: usize) -> Reply {
        let mut events = Vec::new();
        if !text.is_empty() {
            events.push(data(
                &json!({"choices": [{"index": 0, "delta": {"content": text}}]}),
            ));
        }
        for (index, call) in calls.iter().enumerate() {
            events.push(data(
                &json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": index, "id": call.id, "type": "function",
                     "function": {"name": call.name, "arguments": ""}}
                ]}}]}),
            ));
        }
        let split: Vec<Vec<String>> = calls.iter().map(|c| pieces(&c.arguments, piece)).collect();
        let longest = split.iter().map(Vec::len).max().unwrap_or(0);
        for round in 0..longest {
            for (index, parts) in split.iter().enumerate() {
                if let Some(part) = parts.get(round) {
                    events.push(data(
                        &json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                            {"index": index, "function": {"arguments": part}}
                        ]}}]}),
                    ));
                }
            }
        }
        events.push(data(
            &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ));
        events.push(data(
            &json!({"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 30}}),
        ));
        events.push("data: [DONE]\n\n".into());
        Reply::sse(events)
    }
}

/// Anthropic messages, streamed.
pub mod anthropic {
    use super::{Call, Reply, json, pieces};

    fn event(name: &str, value: &serde_json::Value) -> String {
        format!("event: {name}\ndata: {value}\n\n")
    }

    fn start() -> String {
        event(
            "message_start",
            &json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "content": [], "usage": {"input_tokens": 100, "output_tokens": 1}}}),
        )
    }

    fn stop(reason: &str) -> Vec<String> {
        vec![
            event(
                "message_delta",
                &json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 20}}),
            ),
            event("message_stop", &json!({"type": "message_stop"})),
        ]
    }

    fn text_block(index: usize, text: &str) -> Vec<String> {
        let mut events = vec![event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        )];
        for piece in pieces(text, 7) {
            events.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        events.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        events
    }

    /// Text, then the end of the turn.
    pub fn text(text: &str) -> Reply {
        let mut events = vec![start()];
        events.extend(text_block(0, text));
        events.push(event("ping", &json!({"type": "ping"})));
        events.extend(stop("end_turn"));
        Reply::sse(events)
    }

    /// Some text, then `tool_use` blocks whose input arrives `piece` characters at a time.
    pub fn calls(text: &str, calls: &[Call<'_>], piece: usize) -> Reply {
        let mut events = vec![start()];
        let mut index = 0;
        if !text.is_empty() {
            events.extend(text_block(0, text));
            index = 1;
        }
        for call in calls {
            events.push(event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
            ));
            for part in pieces(&call.arguments, piece) {
                events.push(event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": part}}),
                ));
            }
            events.push(event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
            index += 1;
        }
        events.extend(stop("tool_use"));
        Reply::sse(events)
    }
}

/// A request the server got.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Shared {
    replies: VecDeque<Reply>,
    received: Vec<Received>,
    /// Requests whose body contains the marker get this reply, every time, out of turn.
    special: Option<(String, Reply)>,
}

/// The server. It runs until the process ends.
#[derive(Clone)]
pub struct FakeProvider {
    port: u16,
    shared: Arc<Mutex<Shared>>,
}

impl FakeProvider {
    /// Starts a server that will answer with `replies`, in order; once they are used up, every
    /// request gets a 500.
    pub fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Mutex::new(Shared {
            replies: replies.into(),
            received: Vec::new(),
            special: None,
        }));
        let state = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = state.clone();
                std::thread::spawn(move || serve(&stream, &state));
            }
        });
        Self { port, shared }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().unwrap().received.clone()
    }

    /// Answers every request whose body contains `marker` with `reply`, out of turn (a
    /// summariser, say), leaving the script for the others.
    #[must_use]
    pub fn answering(self, marker: &str, reply: Reply) -> Self {
        self.shared.lock().unwrap().special = Some((marker.to_owned(), reply));
        self
    }

    /// Adds replies to the end of the script.
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.lock().unwrap().replies.extend(replies);
    }
}

fn serve(stream: &TcpStream, state: &Arc<Mutex<Shared>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let path = parts.next().unwrap_or_default().to_owned();
        let mut headers = Vec::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':') {
                headers.push((k.trim().to_owned(), v.trim().to_owned()));
            }
        }
        let length = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let reply = {
            let mut shared = state.lock().unwrap();
            let body = String::from_utf8_lossy(&body).into_owned();
            let special = shared
                .special
                .as_ref()
                .filter(|(marker, _)| body.contains(marker.as_str()))
                .map(|(_, reply)| reply.clone());
            shared.received.push(Received {
                method,
                path,
                headers,
                body,
            });
            special.unwrap_or_else(|| {
                shared
                    .replies
                    .pop_front()
                    .unwrap_or_else(|| Reply::status(500, "the script has no more replies"))
            })
        };
        std::thread::sleep(reply.delay);
        let mut out = stream.try_clone().unwrap();
        let streamed = reply.headers.iter().any(|(_, v)| v == "text/event-stream");
        let mut head = format!("HTTP/1.1 {} X\r\n", reply.status);
        for (k, v) in &reply.headers {
            let _ = write!(head, "{k}: {v}\r\n");
        }
        if streamed {
            // The stream ends when the connection closes, as a cut one would.
            head.push_str("connection: close\r\n\r\n");
            let _ = out.write_all(head.as_bytes());
            for chunk in &reply.chunks {
                let _ = out.write_all(chunk.as_bytes());
                let _ = out.flush();
                std::thread::sleep(reply.pause);
            }
            let _ = out.shutdown(std::net::Shutdown::Both);
            return;
        }
        let body = reply.chunks.concat();
        let _ = write!(head, "content-length: {}\r\n\r\n", body.len());
        let _ = out.write_all(head.as_bytes());
        let _ = out.write_all(body.as_bytes());
        let _ = out.flush();
    }
}
