//! warden's model providers (SPEC A1): OpenAI-compatible chat completions — `OpenAI`, Ollama,
//! llama.cpp's server, vLLM, LM Studio, gateways — and Anthropic messages, both streamed. Tool
//! calls are assembled from their fragments and handed out only when complete: a stream cut
//! before its end yields nothing to run (SPEC T2). Busy providers and broken connections are
//! retried with backoff; a wrong key or model fails at once, naming provider, model and URL.
//! Keys are never printed.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod anthropic;
mod assemble;
mod client;
mod openai;
mod select;
mod types;

pub use client::{ApiKey, Client, ModelError, ModelSpec, Retry, RetryNotice};
pub use select::{Env, SelectError, select};
pub use types::{Event, Finish, Item, Request, ToolCall, ToolDef, Turn, Usage};
