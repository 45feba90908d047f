//! The HTTP side: one streamed request per model turn, retried with backoff when the provider
//! is busy or the connection breaks, never when the key or the model is wrong.

use std::time::Duration;

use eventsource_stream::Eventsource as _;
use futures_util::StreamExt as _;
use warden_config::ProviderKind;

use crate::types::{Event, Request, Turn};
use crate::{anthropic, openai};

/// An API key: never printed, never traced.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(…)")
    }
}

/// Which model, where, and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// The wire protocol.
    pub kind: ProviderKind,
    /// The provider's name as the user wrote it (`openai`, `ollama`, a settings table).
    pub provider: String,
    /// The model id sent to the provider.
    pub model: String,
    /// The API's base URL, without a trailing slash.
    pub base_url: String,
    pub api_key: Option<ApiKey>,
}

impl ModelSpec {
    /// `provider/model`, as `--model` takes it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }
}

/// How often and how patiently a request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The wait before the second attempt; it doubles each time, with jitter.
    pub base_delay: Duration,
    /// No wait is longer, `Retry-After` included.
    pub max_delay: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Self {
            attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// Why a model turn failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Wrong key, no access, or no such model or endpoint: retrying cannot help.
    #[error(
        "{provider} refused the request for model {model} at {base_url}: HTTP {status}: {message}"
    )]
    Refused {
        provider: String,
        model: String,
        base_url: String,
        status: u16,
        message: String,
    },
    /// Still failing after every retry.
    #[error("{provider} at {base_url} kept failing after {attempts} attempts: {last}")]
    Exhausted {
        provider: String,
        base_url: String,
        attempts: u32,
        last: String,
    },
    /// The answer could not be read as the protocol says.
    #[error("{provider} sent an answer warden cannot read: {0}", provider = .1)]
    Protocol(String, String),
}

/// Notices about retries, for the caller to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    pub attempt: u32,
    pub wait: Duration,
    pub why: String,
}

/// A model client.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    spec: ModelSpec,
    retry: Retry,
}

/// What one attempt came to.
enum Attempt {
    Done(Turn),
    /// Worth another try, after at least this long (from `Retry-After`).
    Again(String, Option<Duration>),
    Fatal(ModelError),
}

impl Client {
    pub fn new(spec: ModelSpec) -> Result<Self, ModelError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(20))
            .read_timeout(Duration::from_secs(300))
            .build()
            .map_err(|e| ModelError::Protocol(e.to_string(), spec.provider.clone()))?;
        Ok(Self {
            http,
            spec,
            retry: Retry::default(),
        })
    }

    #[must_use]
    pub fn with_retry(mut self, retry: Retry) -> Self {
        self.retry = retry;
        self
    }

    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    /// Sends `request` and streams the answer, calling `on` for each piece of text and each
    /// call begun. A stream cut before its end is retried like a broken connection: nothing of
    /// a cut answer is returned, so none of its calls can run.
    pub async fn complete(
        &self,
        request: &Request,
        on: &mut (dyn FnMut(Event) + Send),
        notice: &mut (dyn FnMut(RetryNotice) + Send),
    ) -> Result<Turn, ModelError> {
        let mut last = String::new();
        for attempt in 1..=self.retry.attempts {
            match self.attempt(request, on).await {
                Attempt::Done(turn) => return Ok(turn),
                Attempt::Fatal(err) => return Err(err),
                Attempt::Again(why, after) => {
                    if attempt == self.retry.attempts {
                        last = why;
                        break;
                    }
                    let wait = after
                        .unwrap_or_else(|| backoff(self.retry.base_delay, attempt))
                        .min(self.retry.max_delay);
                    notice(RetryNotice {
                        attempt,
                        wait,
                        why: why.clone(),
                    });
                    last = why;
                    tokio::time::sleep(wait).await;
                }
            }
        }
        Err(ModelError::Exhausted {
            provider: self.spec.provider.clone(),
            base_url: self.spec.base_url.clone(),
            attempts: self.retry.attempts,
            last,
        })
    }

    async fn attempt(&self, request: &Request, on: &mut (dyn FnMut(Event) + Send)) -> Attempt {
        let spec = &self.spec;
        let (url, body) = match spec.kind {
            ProviderKind::Openai => (
                format!("{}/chat/completions", spec.base_url),
                openai::body(&spec.model, request),
            ),
            ProviderKind::Anthropic => (
                format!("{}/v1/messages", spec.base_url),
                anthropic::body(&spec.model, request),
            ),
        };
        let mut builder = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_string());
        match (spec.kind, &spec.api_key) {
            (ProviderKind::Openai, Some(key)) => {
                builder = builder.bearer_auth(key.expose());
            }
            (ProviderKind::Anthropic, key) => {
                builder = builder.header("anthropic-version", anthropic::VERSION);
                if let Some(key) = key {
                    builder = builder.header("x-api-key", key.expose());
                }
            }
            (ProviderKind::Openai, None) => {}
        }
        let response = match builder.send().await {
            Ok(r) => r,
            Err(e) => return Attempt::Again(format!("cannot reach {url}: {}", cause(&e)), None),
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let text = response.text().await.unwrap_or_default();
            let message = openai::excerpt(text.trim());
            return match status {
                429 | 500..=599 => Attempt::Again(format!("HTTP {status}: {message}"), after),
                _ => Attempt::Fatal(ModelError::Refused {
                    provider: spec.provider.clone(),
                    model: spec.model.clone(),
                    base_url: spec.base_url.clone(),
                    status,
                    message: if message.is_empty() {
                        "(no message)".to_owned()
                    } else {
                        message
                    },
                }),
            };
        }
        let mut events = response.bytes_stream().eventsource();
        let mut openai = openai::Stream::default();
        let mut anthropic = anthropic::Stream::default();
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(e) => return Attempt::Again(format!("the stream broke: {e}"), None),
            };
            let read = match spec.kind {
                ProviderKind::Openai => openai.data(&event.data, on),
                ProviderKind::Anthropic => anthropic.data(&event.data, on),
            };
            if let Err(why) = read {
                return Attempt::Fatal(ModelError::Protocol(why, spec.provider.clone()));
            }
        }
        let turn = match spec.kind {
            ProviderKind::Openai => openai.end(),
            ProviderKind::Anthropic => anthropic.end(),
        };
        match turn {
            Some(turn) => Attempt::Done(turn),
            None => Attempt::Again("the stream ended before the answer did".to_owned(), None),
        }
    }
}

/// The wait before attempt `attempt + 1`: doubling from `base`, with up to a quarter of jitter.
fn backoff(base: Duration, attempt: u32) -> Duration {
    let doubled = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let jitter = doubled / 4 * (nanos % 1000) / 1000;
    doubled + jitter
}

/// The innermost cause of a request error, which says what actually went wrong.
fn cause(err: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = err;
    while let Some(next) = source.source() {
        source = next;
    }
    source.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_bounded_jitter() {
        let base = Duration::from_millis(100);
        for attempt in 1..5 {
            let wait = backoff(base, attempt);
            let floor = base * (1 << (attempt - 1));
            assert!(
                wait >= floor && wait <= floor + floor / 4,
                "{attempt}: {wait:?}"
            );
        }
    }

    #[test]
    fn keys_never_show_in_debug_output() {
        let spec = ModelSpec {
            kind: ProviderKind::Openai,
            provider: "openai".into(),
            model: "m".into(),
            base_url: "http://x".into(),
            api_key: Some(ApiKey::new("sk-secret-123")),
        };
        assert!(!format!("{spec:?}").contains("sk-secret"));
    }
}
