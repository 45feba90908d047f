//! TLS interception, only where a rule needs it: a host whose allow entries limit methods or
//! paths, or that carries a credential to inject. The proxy ends the client's TLS with a
//! certificate for the name it asked for, signed by a CA made for this run (its key stays in
//! memory and dies with the proxy; its certificate is what the sandbox trusts), decides each
//! request by method and path, and sends it on over a new TLS connection to the address
//! checked, verified against the system's roots.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use crate::host::{Entry, Host};
use crate::io::Counted;
use crate::state::{Record, Shared};
use crate::wire::set_headers;

/// Serves the requests of one intercepted tunnel: `client` is the client's TLS stream (already
/// accepted), `rules` the entries that decide each request (`None`: every request, as when only
/// a credential needs the interception).
pub(crate) async fn serve<C>(
    shared: Arc<Shared>,
    client: C,
    host: Host,
    addr: SocketAddr,
    rules: Option<Vec<Entry>>,
    template: Record,
) where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let rules = Arc::new(rules);
    let host = Arc::new(host);
    let service = hyper::service::service_fn(move |req| {
        let (shared, rules, host, template) = (
            Arc::clone(&shared),
            Arc::clone(&rules),
            Arc::clone(&host),
            template.clone(),
        );
        async move {
            Ok::<_, hyper::Error>(
                request(
                    shared,
                    req,
                    &host,
                    addr,
                    rules.as_ref().as_deref(),
                    template,
                )
                .await,
            )
        }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(client), service)
        .await;
}

/// The credentials for `host`, set here (inside TLS this proxy ended) and never seen inside the
/// sandbox.
fn put_credentials(shared: &Shared, req: &mut Request<Incoming>, host: &Host) {
    for injection in shared
        .injections
        .iter()
        .filter(|i| i.host.matches_host(host))
    {
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(injection.header.as_bytes()),
            hyper::header::HeaderValue::from_str(&injection.value),
        ) {
            req.headers_mut().insert(name, value);
        }
    }
}

/// The request as it goes upstream: in origin form, for exactly the path checked. A target in
/// absolute form names the tunnel's host or is refused (the upstream would take its host from
/// there, not from `Host`); `CONNECT` and authority form are refused; where paths decide, the
/// path is normalised ([`crate::path::normalise`]).
fn origin_form(
    req: &mut Request<Incoming>,
    host: &Host,
    port: u16,
    normalise: bool,
) -> Result<String, String> {
    if req.method() == hyper::Method::CONNECT {
        return Err("CONNECT inside a tunnel".to_owned());
    }
    if let Some(authority) = req.uri().authority() {
        let named = crate::host::split_port(authority.as_str())
            .ok()
            .and_then(|(h, p)| Some((Host::parse(h).ok()?, p.unwrap_or(443))));
        if named.as_ref() != Some(&(host.clone(), port)) || authority.as_str().contains('@') {
            return Err(format!(
                "the request names {authority}, not {host}:{port}, the host of this tunnel"
            ));
        }
    }
    let path = req
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    let checked = if normalise {
        crate::path::normalise(&path)?
    } else {
        path
    };
    let Ok(uri) = checked.parse() else {
        return Err(format!("the path {checked:?} is not a request target"));
    };
    *req.uri_mut() = uri;
    Ok(checked)
}

async fn request(
    shared: Arc<Shared>,
    mut req: Request<Incoming>,
    host: &Host,
    addr: SocketAddr,
    rules: Option<&[Entry]>,
    template: Record,
) -> Response<crate::wire::Body> {
    let method = req.method().to_string();
    let mut path = req
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    let mut rec = template;
    rec.kind = "https";
    rec.method = Some(method.clone());
    rec.path = Some(path.clone());
    rec.authorization = req.headers().contains_key(hyper::header::AUTHORIZATION);
    rec.cookie = req.headers().contains_key(hyper::header::COOKIE);
    // The Host header must be the host and port the tunnel is for.
    if let Err(why) =
        crate::wire::host_header_names(req.headers(), host, addr.port(), 443, "the tunnel's host")
    {
        shared.record(rec.because(&why));
        return crate::wire::text(StatusCode::BAD_REQUEST, &why);
    }
    // Where paths decide, they are decided, and forwarded, in one spelling; always in origin
    // form, for this tunnel's host.
    let normalise = rules.is_some() || shared.gates_paths(host);
    match origin_form(&mut req, host, addr.port(), normalise) {
        Ok(checked) => path = checked,
        Err(why) => {
            shared.record(rec.because(&why));
            return crate::wire::text(StatusCode::FORBIDDEN, &why);
        }
    }
    if let Some(rules) = rules {
        let Some(rule) = rules.iter().find(|e| e.matches_request(&method, &path)) else {
            let allowed: Vec<&str> = rules.iter().map(|e| e.text.as_str()).collect();
            let why = format!(
                "{method} {path} on {host} is not allowed (the allowlist lets through: {})",
                allowed.join("; ")
            );
            shared.record(rec.because(&why));
            return crate::wire::text(StatusCode::FORBIDDEN, &why);
        };
        rec.reason.clone_from(&rule.text);
    }
    if let Err(why) = shared.spend() {
        shared.record(rec.because(&why));
        return crate::wire::text(StatusCode::TOO_MANY_REQUESTS, &why);
    }
    match shared.gate(host, &method, &path, true).await {
        crate::state::GateAnswer::Refuse(why) => {
            shared.record(rec.because(&why));
            return crate::wire::text(StatusCode::FORBIDDEN, &why);
        }
        crate::state::GateAnswer::Add(headers) => set_headers(&mut req, &headers),
        crate::state::GateAnswer::Pass => {}
    }
    put_credentials(&shared, &mut req, host);
    for name in ["proxy-authorization", "proxy-connection"] {
        req.headers_mut().remove(name);
    }
    let upstream = match upstream(&shared, host, addr).await {
        Ok(stream) => stream,
        Err(why) => {
            rec.decision = "allow";
            rec.reason = format!("{}; {why}", rec.reason);
            shared.record(rec);
            return crate::wire::text(StatusCode::BAD_GATEWAY, &why);
        }
    };
    let (up, down) = (Arc::clone(&upstream.up), Arc::clone(&upstream.down));
    let Ok((mut sender, conn)) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(upstream)).await
    else {
        return crate::wire::text(StatusCode::BAD_GATEWAY, "the upstream connection failed");
    };
    let driver = tokio::spawn(conn);
    rec.decision = "allow";
    match sender.send_request(req).await {
        Ok(response) => {
            rec.status = Some(response.status().as_u16());
            tokio::spawn(async move {
                let _ = driver.await;
                rec.bytes_up = up.load(std::sync::atomic::Ordering::Relaxed);
                rec.bytes_down = down.load(std::sync::atomic::Ordering::Relaxed);
                shared.record(rec);
            });
            response.map(http_body_util::BodyExt::boxed)
        }
        Err(e) => {
            let why = format!("the upstream failed: {e}");
            rec.reason = format!("{}; {why}", rec.reason);
            shared.record(rec);
            crate::wire::text(StatusCode::BAD_GATEWAY, &why)
        }
    }
}
/// A TLS connection to the address checked, its certificate verified for `host`.
async fn upstream(
    shared: &Shared,
    host: &Host,
    addr: SocketAddr,
) -> Result<Counted<tokio_rustls::client::TlsStream<TcpStream>>, String> {
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let name = match host {
        Host::Name(name) => ServerName::try_from(name.clone()).map_err(|e| e.to_string())?,
        Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(&shared.client_tls));
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS with {host} failed: {e}"))?;
    Ok(Counted::new(tls))
}
