//! The HTTP side of the proxy: `CONNECT` opens a tunnel, an absolute-form `http://` request is
//! forwarded as origin-form to the address checked, with its `Host` held against its URL.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpStream;

use crate::host::{Host, split_port};
use crate::io::Counted;
use crate::state::{Record, Shared, record};
use crate::tunnel::tunnel;
use crate::wire::{Body, host_header_names, text};

pub(crate) async fn http_request(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    if req.method() == Method::CONNECT {
        return connect_request(shared, req).await;
    }
    forward_request(shared, req).await
}

/// `CONNECT host:port`: decided, connected, then a tunnel whose TLS server name must be the host.
async fn connect_request(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let authority = req
        .uri()
        .authority()
        .map(ToString::to_string)
        .unwrap_or_default();
    let Ok((raw_host, Some(port))) = split_port(&authority) else {
        let why = "CONNECT needs host:port";
        shared.record(record("connect", &authority, 0).because(why));
        return text(StatusCode::BAD_REQUEST, why);
    };
    let raw_host = raw_host.to_owned();
    let mut rec = record("connect", &raw_host, port);
    rec.method = Some("CONNECT".to_owned());
    let host = match Host::parse(&raw_host) {
        Ok(host) => host,
        Err(e) => {
            rec.reason = e.to_string();
            shared.record(rec);
            return text(StatusCode::BAD_REQUEST, &e.to_string());
        }
    };
    rec.host = host.to_string();
    let decided = match shared.decide(&host, port).await {
        Ok(found) => found,
        Err(why) => {
            shared.record(rec.because(&why));
            return text(StatusCode::FORBIDDEN, &why);
        }
    };
    let (addr, rule) = (decided.addr, decided.rule.clone());
    rec.ip = Some(addr.ip());
    let upstream = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => {
            rec.reason = format!("{rule}; connecting to {addr} failed: {e}");
            rec.decision = "allow";
            shared.record(rec);
            return text(
                StatusCode::BAD_GATEWAY,
                &format!("connecting to {addr}: {e}"),
            );
        }
    };
    let _ = upstream.set_nodelay(true);
    tokio::spawn(async move {
        let Ok(upgraded) = hyper::upgrade::on(req).await else {
            return;
        };
        let client = hyper_util::rt::TokioIo::new(upgraded);
        tunnel(shared, client, upstream, host, decided, rec).await;
    });
    Response::new(
        http_body_util::Empty::new()
            .map_err(|never| match never {})
            .boxed(),
    )
}

/// An absolute-form request (`GET http://host/path`): its `Host` must be the URI's host; then
/// it goes to the checked address, as origin-form, and the answer comes back.
// Long because each check refuses with its own status and record, in the order they must hold
// (target, host header, path, policy, gate, budget, address); split, that order would be lost.
#[allow(clippy::too_many_lines)]
async fn forward_request(shared: Arc<Shared>, mut req: Request<Incoming>) -> Response<Body> {
    let uri = req.uri().clone();
    let mut rec = record(
        "http",
        uri.host().unwrap_or(""),
        uri.port_u16().unwrap_or(80),
    );
    rec.method = Some(req.method().to_string());
    rec.authorization = req.headers().contains_key(hyper::header::AUTHORIZATION);
    rec.cookie = req.headers().contains_key(hyper::header::COOKIE);
    let deny = |shared: &Shared, rec: Record, status, why: String| {
        shared.record(rec.because(&why));
        text(status, &why)
    };
    match uri.scheme_str() {
        Some("http") => {}
        Some(other) => {
            return deny(
                &shared,
                rec,
                StatusCode::BAD_REQUEST,
                format!("{other}:// through the proxy goes by CONNECT; only http:// is forwarded"),
            );
        }
        None => {
            return deny(
                &shared,
                rec,
                StatusCode::BAD_REQUEST,
                "not a proxy request: give the whole URL (absolute form)".to_owned(),
            );
        }
    }
    let Some(authority) = uri.authority() else {
        return deny(
            &shared,
            rec,
            StatusCode::BAD_REQUEST,
            "the URL names no host".to_owned(),
        );
    };
    let host = match Host::parse(
        authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']'),
    )
    .or_else(|_| Host::parse(authority.host()))
    {
        Ok(host) => host,
        Err(e) => return deny(&shared, rec, StatusCode::BAD_REQUEST, e.to_string()),
    };
    rec.host = host.to_string();
    let port = authority.port_u16().unwrap_or(80);
    // The Host header must name what the URI names: no asking one host for another's pages.
    if let Err(why) = host_header_names(req.headers(), &host, port, 80, "the URL's host") {
        return deny(&shared, rec, StatusCode::BAD_REQUEST, why);
    }
    let decided = match shared.decide(&host, port).await {
        Ok(found) => found,
        Err(why) => return deny(&shared, rec, StatusCode::FORBIDDEN, why),
    };
    let (addr, mut rule) = (decided.addr, decided.rule);
    rec.ip = Some(addr.ip());
    // Plain HTTP shows its method and path: rules that limit them decide here.
    let mut path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    rec.path = Some(path.clone());
    let rules = decided
        .intercept
        .as_ref()
        .and_then(crate::state::Intercept::rules);
    // Where paths decide, they are decided, and forwarded, in one spelling.
    if rules.is_some() || shared.gates_paths(&host) {
        path = match crate::path::normalise(&path) {
            Ok(normal) => normal,
            Err(why) => return deny(&shared, rec, StatusCode::FORBIDDEN, why),
        };
    }
    if let Some(rules) = rules {
        let method = req.method().as_str().to_owned();
        let Some(entry) = rules.iter().find(|e| e.matches_request(&method, &path)) else {
            let why = format!("{method} {path} on {host} is not allowed by the allowlist");
            return deny(&shared, rec, StatusCode::FORBIDDEN, why);
        };
        rule.clone_from(&entry.text);
    }
    let method = req.method().as_str().to_owned();
    match shared.gate(&host, &method, &path, false).await {
        crate::state::GateAnswer::Refuse(why) => {
            return deny(&shared, rec, StatusCode::FORBIDDEN, why);
        }
        crate::state::GateAnswer::Add(headers) => {
            crate::wire::set_headers(&mut req, &headers);
        }
        crate::state::GateAnswer::Pass => {}
    }
    // A credential the proxy puts on requests goes only inside TLS it ended itself: over plain
    // HTTP it would cross the wire in clear.
    if shared.injections.iter().any(|i| i.host.matches_host(&host)) {
        let why = format!(
            "requests to {host} carry a credential, which goes only over TLS: use https://"
        );
        return deny(&shared, rec, StatusCode::FORBIDDEN, why);
    }
    let upstream = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => {
            rec.decision = "allow";
            let why = format!("connecting to {addr}: {e}");
            rec.reason = format!("{rule}; {why}");
            shared.record(rec);
            return text(StatusCode::BAD_GATEWAY, &why);
        }
    };
    let counted = Counted::new(upstream);
    let (up, down) = (Arc::clone(&counted.up), Arc::clone(&counted.down));
    let Ok((mut sender, conn)) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(counted)).await
    else {
        return deny(
            &shared,
            rec,
            StatusCode::BAD_GATEWAY,
            "the upstream connection failed".to_owned(),
        );
    };
    // Origin-form upstream, without the proxy's own headers.
    let Ok(checked) = path.parse() else {
        let why = format!("the path {path:?} is not a request target");
        return deny(&shared, rec, StatusCode::FORBIDDEN, why);
    };
    *req.uri_mut() = checked;
    for name in ["proxy-authorization", "proxy-connection"] {
        req.headers_mut().remove(name);
    }
    // The connection is driven while the request is sent and its answer streams back.
    let driver = tokio::spawn(conn);
    let response = sender.send_request(req).await;
    rec.decision = "allow";
    rec.reason = rule;
    match response {
        Ok(response) => {
            rec.status = Some(response.status().as_u16());
            let finished = Arc::clone(&shared);
            tokio::spawn(async move {
                let _ = driver.await;
                rec.bytes_up = up.load(Ordering::Relaxed);
                rec.bytes_down = down.load(Ordering::Relaxed);
                finished.record(rec);
            });
            response.map(BodyExt::boxed)
        }
        Err(e) => {
            rec.reason = format!("{}; the upstream failed: {e}", rec.reason);
            shared.record(rec);
            text(
                StatusCode::BAD_GATEWAY,
                &format!("the upstream failed: {e}"),
            )
        }
    }
}
