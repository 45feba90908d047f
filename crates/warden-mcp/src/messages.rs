//! What a server's failures say to a person: the end of its standard error, an error with its
//! causes, and none of the SDK's type names.

use std::sync::{Arc, Mutex};

use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::McpError;

use tokio::io::AsyncReadExt;

/// The end of a server's standard error kept for messages.
const STDERR_TAIL: usize = 2048;

/// Keeps the end of a server's standard error in `tail`, for messages.
pub(crate) fn keep_tail(
    runtime: &tokio::runtime::Runtime,
    mut pipe: impl tokio::io::AsyncRead + Send + Unpin + 'static,
    tail: &Arc<Mutex<Vec<u8>>>,
) {
    let tail = Arc::clone(tail);
    runtime.spawn(async move {
        let mut buf = [0u8; 1024];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if let Ok(mut tail) = tail.lock() {
                tail.extend_from_slice(&buf[..n]);
                let excess = tail.len().saturating_sub(STDERR_TAIL);
                tail.drain(..excess);
            }
        }
    });
}

/// What `error` of `what` (a request to the server `server`) was: a refusal the login can
/// answer (found among its causes), else a protocol failure with its causes and `stderr`.
pub(crate) fn failure(
    server: &str,
    what: &str,
    error: &(dyn std::error::Error + 'static),
    stderr: String,
) -> McpError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(inner) = cause {
        match inner.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::AuthRequired(refusal)) => {
                return McpError::LoginNeeded {
                    server: server.to_owned(),
                    what: what.to_owned(),
                    challenge: refusal.www_authenticate_header.clone(),
                };
            }
            Some(StreamableHttpError::InsufficientScope(refusal)) => {
                return McpError::MoreScope {
                    server: server.to_owned(),
                    what: what.to_owned(),
                    challenge: refusal.www_authenticate_header.clone(),
                    scope: refusal.required_scope.clone(),
                };
            }
            _ => {
                // The SDK's failed `initialize` holds its transport's error without naming it
                // as the cause.
                cause = match inner.downcast_ref::<rmcp::service::ClientInitializeError>() {
                    Some(rmcp::service::ClientInitializeError::TransportError {
                        error, ..
                    }) => Some(error),
                    _ => inner.source(),
                };
            }
        }
    }
    McpError::Protocol {
        server: server.to_owned(),
        what: what.to_owned(),
        message: with_causes(error),
        stderr,
    }
}

/// `error` and what caused it, each once: a transport's failure says little on its own
/// ("error sending request") and everything with its causes ("connection refused").
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let text = inner.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        cause = inner.source();
    }
    without_type_names(&message)
}

/// `text` without the SDK's transport type names (`Transport [rmcp::transport::…<…>] error`):
/// a person reads what failed, not how the client is built.
pub(crate) fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("Transport [") {
        out.push_str(&rest[..at]);
        out.push_str("Transport");
        let after = &rest[at + "Transport [".len()..];
        let mut depth = 1usize;
        // Unclosed: kept as it is.
        let mut end = None;
        for (i, c) in after.char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            out.push_str(" [");
            out.push_str(after);
            return out;
        };
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The end of the server's standard error, as a note to an error message.
pub(crate) fn stderr_note(stderr: &Arc<Mutex<Vec<u8>>>) -> String {
    let text = stderr
        .lock()
        .map(|tail| String::from_utf8_lossy(&tail).trim().to_owned())
        .unwrap_or_default();
    if text.is_empty() {
        String::new()
    } else {
        format!(" (its standard error ends: {text})")
    }
}

#[cfg(test)]
mod tests {
    use super::without_type_names;

    #[test]
    fn the_sdk_s_type_names_are_left_out_of_messages() {
        let said = "Send message error Transport [warden_mcp::handler::Watched<rmcp::transport::\
                    worker::WorkerTransport<rmcp::A<B>>>] error: Auth required, when send initialize";
        assert_eq!(
            without_type_names(said),
            "Send message error Transport error: Auth required, when send initialize"
        );
        assert_eq!(without_type_names("plain [1] text"), "plain [1] text");
        assert_eq!(without_type_names("Transport [open"), "Transport [open");
    }
}
