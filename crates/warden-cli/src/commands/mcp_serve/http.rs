//! `warden mcp serve --http`: streamable HTTP on a loopback address, for clients that connect to
//! a URL. A random token, printed once (or `WARDEN_MCP_TOKEN`), must come with every request,
//! as `Authorization: Bearer TOKEN` or in the URL (`?token=TOKEN`); requests naming a host or an
//! origin other than loopback are refused (DNS rebinding), whatever they carry.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::anyhow;
use http_body_util::BodyExt as _;
use hyper::body::Bytes;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::{Served, Shared};
use crate::CliError;

/// The path the tools are served on.
const PATH: &str = "/mcp";

/// How many connections are served at once; past it, a new one is closed at once.
const CONNECTIONS: usize = 64;

/// How long a client has to send a request's headers.
const HEADERS_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// The shortest token `WARDEN_MCP_TOKEN` may hold.
const SHORTEST_TOKEN: usize = 32;

/// `bytes` random bytes, as URL-safe text.
pub(super) fn random_text(bytes: usize) -> Option<String> {
    use base64::Engine as _;
    use ring::rand::SecureRandom as _;
    let mut buffer = vec![0u8; bytes];
    ring::rand::SystemRandom::new().fill(&mut buffer).ok()?;
    Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buffer))
}

/// Serves `shared`'s tools on `addr` (loopback only) until Ctrl-C.
pub(super) async fn serve(addr: SocketAddr, shared: Arc<Shared>) -> Result<(), CliError> {
    if !addr.ip().is_loopback() {
        return Err(CliError::usage(anyhow!(
            "--http {addr}: warden serves its tools on a loopback address only (127.0.0.1:PORT \
             or [::1]:PORT)"
        )));
    }
    let (token, chosen) = match std::env::var("WARDEN_MCP_TOKEN") {
        Ok(token) if token.trim().len() >= SHORTEST_TOKEN => (token.trim().to_owned(), true),
        Ok(_) => {
            return Err(CliError::usage(anyhow!(
                "WARDEN_MCP_TOKEN is too short to guard warden's tools: use {SHORTEST_TOKEN} \
                 characters or more (`openssl rand -hex 24`)"
            )));
        }
        Err(_) => (
            random_text(32).ok_or_else(|| CliError::failure(anyhow!("no randomness")))?,
            false,
        ),
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| CliError::failure(anyhow!("--http {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| CliError::failure(anyhow!(e)))?;
    let config = config(local);
    let service = StreamableHttpService::new(
        move || Ok(Served::new(Arc::clone(&shared))),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let url = format!("http://{local}{PATH}");
    // Said once, on standard error: a script reads the line that starts with `url:`.
    if chosen {
        eprintln!(
            "warden mcp serve: listening on {url}\n  token: WARDEN_MCP_TOKEN's (send \
             \"Authorization: Bearer $WARDEN_MCP_TOKEN\")"
        );
    } else {
        eprintln!(
            "warden mcp serve: listening on {url}\n  token (shown once): {token}\n  header: \
             Authorization: Bearer {token}\n  url: {url}?token={token}"
        );
    }
    let token = Arc::new(token);
    let room = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS));
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => if let Ok(accepted) = accepted {
                accepted
            } else {
                // Out of descriptors, say: a pause, not a busy loop.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            },
            _ = tokio::signal::ctrl_c() => return Ok(()),
        };
        let Ok(place) = Arc::clone(&room).try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let (service, token) = (service.clone(), Arc::clone(&token));
        tokio::spawn(async move {
            let _place = place;
            let handler = hyper::service::service_fn(move |request| {
                let (service, token) = (service.clone(), Arc::clone(&token));
                async move {
                    Ok::<_, Infallible>(match refused(&request, &token) {
                        Some(response) => response,
                        None => service.handle(request).await,
                    })
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADERS_WITHIN)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                .await;
        });
    }
}

/// What the transport accepts: the loopback names and the address it listens on as hosts, and
/// only pages of those origins (DNS rebinding).
fn config(local: SocketAddr) -> StreamableHttpServerConfig {
    let port = local.port();
    // The address it listens on is a host its clients may name too (127.0.0.2, …).
    let ip = match local.ip() {
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        std::net::IpAddr::V4(v4) => v4.to_string(),
    };
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
        "[::1]".to_owned(),
    ];
    if !hosts.contains(&ip) {
        hosts.push(ip.clone());
    }
    let origins = [
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "[::1]".to_owned(),
        ip,
    ]
    .into_iter()
    .map(|host| format!("http://{host}:{port}"));
    StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
}

type Response = http::Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>;

/// The answer to a request that may not reach the tools: another path, or no token.
fn refused<B>(request: &http::Request<B>, token: &str) -> Option<Response> {
    let answer = |status: http::StatusCode, text: &'static str| {
        let mut response = http::Response::new(
            http_body_util::Full::new(Bytes::from_static(text.as_bytes())).boxed(),
        );
        *response.status_mut() = status;
        response
    };
    if request.uri().path() != PATH {
        return Some(answer(
            http::StatusCode::NOT_FOUND,
            "warden serves MCP on /mcp\n",
        ));
    }
    let bearer = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, given)| given.trim().to_owned());
    let in_url = request.uri().query().and_then(|query| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("token="))
            .map(unescape)
    });
    // No token at all is refused like a wrong one.
    if bearer
        .or(in_url)
        .is_some_and(|given| same(given.as_bytes(), token.as_bytes()))
    {
        return None;
    }
    let mut refused = answer(
        http::StatusCode::UNAUTHORIZED,
        "warden mcp serve: the token printed when it started is needed (Authorization: Bearer \
         TOKEN, or ?token=TOKEN)\n",
    );
    // Nothing more on a connection that did not show the token.
    refused.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    Some(refused)
}

/// A query value with its `%XX` escapes (and `+`) decoded.
fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                if let Some(byte) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    out.push(byte);
                    i += 3;
                } else {
                    out.push(b'%');
                    i += 1;
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether two byte strings are equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_in_the_url_is_read_as_it_was_escaped() {
        assert_eq!(unescape("abc%2Fdef+g"), "abc/def g");
        assert_eq!(unescape("100%"), "100%");
        assert_eq!(unescape("%zz"), "%zz");
    }

    #[test]
    fn tokens_are_compared_whole() {
        assert!(same(b"secret", b"secret"));
        assert!(!same(b"secret", b"secreT"));
        assert!(!same(b"secret", b"secret2"));
        assert!(!same(b"", b"secret"));
    }

    #[test]
    fn a_request_without_the_token_or_on_another_path_is_refused() {
        let request = |uri: &str, auth: Option<&str>| {
            let mut builder = http::Request::builder().uri(uri);
            if let Some(auth) = auth {
                builder = builder.header(http::header::AUTHORIZATION, auth);
            }
            builder.body(()).unwrap()
        };
        let status = |r: &http::Request<()>| refused(r, "tok").map(|response| response.status());
        assert_eq!(status(&request("/mcp", Some("Bearer tok"))), None);
        assert_eq!(status(&request("/mcp", Some("bearer  tok"))), None);
        assert_eq!(status(&request("/mcp?token=tok", None)), None);
        assert_eq!(status(&request("/mcp?token=t%6Fk", None)), None);
        assert_eq!(
            status(&request("/mcp", Some("Basic tok"))),
            Some(http::StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            status(&request("/mcp?token=tok2", None)),
            Some(http::StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            status(&request("/other?token=tok", None)),
            Some(http::StatusCode::NOT_FOUND)
        );
    }
}
