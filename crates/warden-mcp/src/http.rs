//! Streamable HTTP over warden's own `reqwest` (rustls on ring): the SDK's transport drives the
//! session (initialisation, the session id, reconnecting its event streams); this module makes
//! its requests and bounds what comes back, so that one HTTP stack carries the model's requests,
//! the egress proxy's checks and MCP alike.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};

/// The most one event of a server's event stream may hold, and one JSON answer: a tool's result
/// is cut to [`crate::MAX_TEXT`] anyway, so this only has to leave room for its encoding.
pub(crate) const MAX_MESSAGE: usize = 8 * 1024 * 1024;

/// Headers this client sets itself: none given with a request may replace them.
const OWN: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "last-event-id",
];

/// Whether a server's settings may not set the header `name`: this client's own, and those the
/// protocol's transport adds (its version, the method and tool of a request).
pub(crate) fn reserved(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    OWN.contains(&name.as_str())
        || name == "mcp-protocol-version"
        || name == "mcp-method"
        || name == "mcp-name"
        || name.starts_with("mcp-param-")
}

/// warden's HTTP client, as the SDK's streamable HTTP transport's client.
#[derive(Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
}

type Failure = StreamableHttpError<reqwest::Error>;

impl Http {
    /// A client that follows no redirect (a server's answer is its own, not another host's)
    /// and gives up connecting after `connect_timeout`.
    pub(crate) fn new(connect_timeout: std::time::Duration) -> Result<Http, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(connect_timeout)
            .user_agent(concat!("warden/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Http { client })
    }

    fn request(
        &self,
        method: reqwest::Method,
        uri: &str,
        session: Option<&str>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<reqwest::RequestBuilder, Failure> {
        let mut request = self.client.request(method, uri);
        for (name, value) in headers {
            if OWN.contains(&name.as_str()) {
                return Err(StreamableHttpError::ReservedHeaderConflict(
                    name.to_string(),
                ));
            }
            request = request.header(name, value);
        }
        if let Some(session) = session {
            request = request.header(HEADER_SESSION_ID, session);
        }
        if let Some(token) = auth {
            request = request.bearer_auth(token);
        }
        Ok(request)
    }
}

impl StreamableHttpClient for Http {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let mut limits = limits();
        limits.max_sse_event_size = max_sse_event_size.min(MAX_MESSAGE);
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let body = serde_json::to_vec(&message)?;
        let response = self
            .request(
                reqwest::Method::POST,
                &uri,
                session_id.as_deref(),
                auth_header,
                custom_headers,
            )?
            .header(
                reqwest::header::ACCEPT,
                format!("{JSON_MIME_TYPE}, {EVENT_STREAM_MIME_TYPE}"),
            )
            .header(reqwest::header::CONTENT_TYPE, JSON_MIME_TYPE)
            .body(body)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        let status = response.status();
        refuse_auth(&response)?;
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let kind = media_type(&response);
        let answers_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        // A notification or an answer awaits nothing: whatever a server sends back with its
        // success (some send an empty JSON object) is not read.
        if status.is_success() && answers_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status.is_success() && kind.as_deref() == Some(EVENT_STREAM_MIME_TYPE) {
            let events = bounded_events(response, limits.max_sse_event_size.min(MAX_MESSAGE));
            return Ok(StreamableHttpPostResponse::Sse(events, session));
        }
        let max = limits.max_json_response_size.min(MAX_MESSAGE);
        if kind.as_deref() == Some(JSON_MIME_TYPE) {
            let body = read_bounded(response, max).await?;
            // A failure's body may still be a JSON-RPC error, which the caller is shown.
            match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(answer) if status.is_success() || is_error(&answer) => {
                    return Ok(StreamableHttpPostResponse::Json(answer, session));
                }
                Ok(_) => {}
                Err(error) if status.is_success() => return Err(error.into()),
                Err(_) => {}
            }
            return Err(unexpected(status, &body));
        }
        if !status.is_success() {
            let body = read_bounded(response, limits.max_error_response_size.min(4096))
                .await
                .unwrap_or_default();
            return Err(unexpected(status, &body));
        }
        Err(StreamableHttpError::UnexpectedContentType(kind))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        let response = self
            .request(
                reqwest::Method::DELETE,
                &uri,
                Some(&session_id),
                auth_header,
                custom_headers,
            )?
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        // A server that keeps no sessions to end says so; nothing is wrong.
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response
            .error_for_status()
            .map(drop)
            .map_err(StreamableHttpError::Client)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            MAX_MESSAGE,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        let mut request = self
            .request(
                reqwest::Method::GET,
                &uri,
                session_id.as_deref(),
                auth_header,
                custom_headers,
            )?
            .header(reqwest::header::ACCEPT, EVENT_STREAM_MIME_TYPE);
        if let Some(last) = last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, last);
        }
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        refuse_auth(&response)?;
        if !status.is_success() {
            let body = read_bounded(response, 4096).await.unwrap_or_default();
            return Err(unexpected(status, &body));
        }
        match media_type(&response) {
            Some(kind) if kind == EVENT_STREAM_MIME_TYPE => {}
            other => return Err(StreamableHttpError::UnexpectedContentType(other)),
        }
        Ok(bounded_events(
            response,
            max_sse_event_size.min(MAX_MESSAGE),
        ))
    }
}

/// The transport's limits, warden's way: no answer larger than [`MAX_MESSAGE`].
fn limits() -> StreamableHttpResponseLimits {
    let mut limits = StreamableHttpResponseLimits::default();
    limits.max_sse_event_size = MAX_MESSAGE;
    limits.max_json_response_size = MAX_MESSAGE;
    limits.max_error_response_size = 4096;
    limits
}

/// A 401 that says how to authenticate, or a 403 that says which scope is missing, is the
/// transport's to report as such (its challenge in the message, for a login to answer).
fn refuse_auth(response: &reqwest::Response) -> Result<(), Failure> {
    let Some(challenge) = response.headers().get(reqwest::header::WWW_AUTHENTICATE) else {
        return Ok(());
    };
    let challenge = String::from_utf8_lossy(challenge.as_bytes()).into_owned();
    match response.status() {
        StatusCode::UNAUTHORIZED => Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(
            challenge,
        ))),
        StatusCode::FORBIDDEN => {
            let scope = crate::oauth::challenge_scope(&challenge);
            Err(StreamableHttpError::InsufficientScope(
                InsufficientScopeError::new(challenge, scope),
            ))
        }
        _ => Ok(()),
    }
}

fn is_error(message: &ServerJsonRpcMessage) -> bool {
    matches!(message, ServerJsonRpcMessage::Error(_))
}

/// `application/json` of `application/json; charset=utf-8`, lower-cased.
fn media_type(response: &reqwest::Response) -> Option<String> {
    let value = response.headers().get(reqwest::header::CONTENT_TYPE)?;
    let text = String::from_utf8_lossy(value.as_bytes());
    Some(
        text.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase(),
    )
}

/// An HTTP failure named by its status and the start of its body (printable characters only:
/// a server's text is not the terminal's to interpret).
fn unexpected(status: StatusCode, body: &[u8]) -> Failure {
    let text: String = String::from_utf8_lossy(&body[..body.len().min(512)])
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let text = text.trim();
    let message = if text.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {text}")
    };
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(message))
}

/// The whole body, refused past `max` bytes without reading further.
async fn read_bounded(response: reqwest::Response, max: usize) -> Result<Vec<u8>, Failure> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(StreamableHttpError::Client)?;
        if body.len() + chunk.len() > max {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The body as server-sent events, each at most `max` bytes: the stream ends in an error at the
/// first longer one, before it is held in memory.
pub(crate) fn bounded_events(
    response: reqwest::Response,
    max: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut size = EventSize::default();
    let bytes = response.bytes_stream().map(move |chunk| match chunk {
        Ok(chunk) if size.add(&chunk) > max => Err(std::io::Error::other(format!(
            "an event of the server's stream is longer than {max} bytes"
        ))),
        Ok(chunk) => Ok(chunk),
        Err(error) => Err(std::io::Error::other(error)),
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

/// The length of the event being read: the bytes since the last empty line.
#[derive(Default)]
struct EventSize {
    event: usize,
    /// Bytes on the current line.
    line: usize,
    /// The last byte was `\r` (so a `\n` after it ends the same line).
    after_cr: bool,
}

impl EventSize {
    /// Counts `chunk` in; the current event's length so far.
    fn add(&mut self, chunk: &[u8]) -> usize {
        for &byte in chunk {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    if self.line == 0 {
                        self.event = 0;
                    } else {
                        self.event += 1;
                    }
                    self.line = 0;
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    self.line += 1;
                    self.event += 1;
                    self.after_cr = false;
                }
            }
        }
        self.event
    }
}

#[cfg(test)]
mod tests {
    use super::EventSize;

    #[test]
    fn an_event_ends_only_at_an_empty_line_whatever_the_line_ends() {
        let mut size = EventSize::default();
        assert_eq!(size.add(b"data: 1234\n"), 11);
        assert_eq!(size.add(b"data: 56\r\n"), 20);
        assert_eq!(size.add(b"\r\n"), 0);
        // CR LF pairs do not pass for empty lines.
        assert_eq!(size.add(b"data: a\r\ndata: b\r\n"), 16);
        assert_eq!(size.add(b"\n"), 0);
        assert_eq!(size.add(b"data: x\r\r"), 0);
    }
}
