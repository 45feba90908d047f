//! What the proxy answers with and checks on the wire: the body type of its responses, a plain
//! text refusal, the `Host` header a request must carry, headers put on a request.

use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};

use crate::host::{Host, split_port};

pub(crate) type Body = BoxBody<Bytes, hyper::Error>;

pub(crate) fn text(status: StatusCode, message: &str) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(format!("warden: {message}\n")))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    // A refused client has nothing more to say on this connection.
    response.headers_mut().insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    if let Ok(value) = hyper::header::HeaderValue::from_str(&message.replace(['\r', '\n'], " ")) {
        response.headers_mut().insert("x-warden-denied", value);
    }
    response
}

/// Whether the request's `Host` header, if it has one, names `host` and `port` (and nothing
/// else): one header, UTF-8, a host and port that parse and are these. Why not, otherwise.
pub(crate) fn host_header_names(
    headers: &hyper::HeaderMap,
    host: &Host,
    port: u16,
    default_port: u16,
    whose: &str,
) -> Result<(), String> {
    let mut all = headers.get_all(hyper::header::HOST).iter();
    let Some(value) = all.next() else {
        return Ok(());
    };
    if all.next().is_some() {
        return Err("the request has more than one Host header".to_owned());
    }
    let text = value
        .to_str()
        .map_err(|_| "the Host header is not text".to_owned())?;
    let same = split_port(text).ok().is_some_and(|(h, p)| {
        Host::parse(h).is_ok_and(|h| h == *host) && p.unwrap_or(default_port) == port
    });
    if same {
        Ok(())
    } else {
        Err(format!(
            "the Host header {text:?} is not {whose} {host}:{port}"
        ))
    }
}

/// Sets `headers` on `req`, replacing what the client sent under those names.
pub(crate) fn set_headers<B>(req: &mut Request<B>, headers: &[(String, String)]) {
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_str(value),
        ) {
            req.headers_mut().insert(name, value);
        }
    }
}
