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
        Ok(token) if token.len() >= 16 => (token, true),
        Ok(_) => {
            return Err(CliError::usage(anyhow!(
                "WARDEN_MCP_TOKEN is too short to guard warden's tools: use 16 characters or more"
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
    let port = local.port();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1", "[::1]"])
        .with_allowed_origins([
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
            format!("http://[::1]:{port}"),
        ]);
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
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => continue,
            },
            _ = tokio::signal::ctrl_c() => return Ok(()),
        };
        let (service, token) = (service.clone(), Arc::clone(&token));
        tokio::spawn(async move {
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
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                .await;
        });
    }
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
        .and_then(|v| v.strip_prefix("Bearer "));
    let in_url = request.uri().query().and_then(|query| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("token="))
    });
    // No token at all is refused like a wrong one.
    if bearer
        .or(in_url)
        .is_some_and(|given| same(given.trim().as_bytes(), token.as_bytes()))
    {
        return None;
    }
    Some(answer(
        http::StatusCode::UNAUTHORIZED,
        "warden mcp serve: the token printed when it started is needed (Authorization: Bearer \
         TOKEN, or ?token=TOKEN)\n",
    ))
}

/// Whether two byte strings are equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
