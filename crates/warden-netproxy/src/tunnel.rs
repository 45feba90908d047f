//! A tunnel once allowed: the client's first bytes read (a TLS hello must name the host the
//! tunnel was asked for), then bytes copied both ways and counted.

use std::sync::Arc;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::host::{Entry, Host};
use crate::state::{Decided, Record, Shared};
use crate::tls::{self, Hello};

/// The buffer of each direction of a tunnel: large enough for a stream at several gigabits a
/// second on loopback, small enough for a thousand tunnels in a few megabytes.
const COPY_BUFFER: usize = 4 * 1024;

/// Reads the client's first bytes: a TLS hello must name `host`; anything else goes through
/// only on ports other than 443. Then copies both ways and records what went through.
pub(crate) async fn tunnel<C>(
    shared: Arc<Shared>,
    mut client: C,
    mut upstream: TcpStream,
    host: Host,
    decided: Decided,
    mut rec: Record,
) where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let rule = decided.rule.clone();
    // What the client sent first, read straight into one growing buffer (a tunnel's state is
    // kept per connection: no fixed buffer beside it).
    let mut first = Vec::with_capacity(1024);
    let verdict = loop {
        match tls::client_hello(&first) {
            Hello::Incomplete if first.len() < tls::MAX_HELLO => {}
            Hello::Incomplete => break Err("the TLS hello is too long".to_owned()),
            Hello::NotTls if rec.port == 443 => {
                break Err("port 443 carries TLS only, and this is not TLS".to_owned());
            }
            Hello::NotTls => break Ok(None),
            Hello::Malformed(why) => break Err(format!("a malformed TLS hello: {why}")),
            Hello::ServerName(name) => break Ok(Some(name)),
        }
        if first.capacity() - first.len() < 512 {
            first.reserve(first.len().max(1024));
        }
        match client.read_buf(&mut first).await {
            Ok(0) | Err(_) => {
                // The client left before saying anything: nothing went through.
                if first.is_empty() {
                    rec.decision = "allow";
                    rec.reason = rule;
                    shared.record(rec);
                    return;
                }
                break Err("the client left in the middle of its TLS hello".to_owned());
            }
            Ok(_) => {}
        }
    };
    let verdict = verdict.and_then(|tls| match (tls, &host) {
        (None, _) => Ok(false),
        (Some(None), Host::Ip(_)) => Ok(true),
        (Some(None), Host::Name(_)) => Err(format!(
            "the TLS hello names no server, and {host} was asked for"
        )),
        (Some(Some(sni)), _) => {
            rec.sni = Some(sni.clone());
            match Host::parse(&sni) {
                Ok(named) if named == host => Ok(true),
                _ => Err(format!(
                    "the TLS hello asks for {sni}, not {host}: a tunnel may not front for another host"
                )),
            }
        }
    });
    let tls = matches!(&verdict, Ok(true));
    let verdict = verdict.and_then(|_| match (&decided.intercept, tls) {
        (Some(_), false) => Err(format!(
            "the rules for {host} decide each request, so its tunnel must carry TLS the proxy can \
             end; send plain HTTP as an absolute-form request instead"
        )),
        _ => Ok(()),
    });
    if let Err(why) = verdict {
        rec.reason = why;
        shared.record(rec);
        return;
    }
    // A host whose rules decide each request: the proxy ends TLS here, with a certificate of
    // this run's CA, and sees every request.
    if let (Some(intercept), Some(server)) = (decided.intercept, shared.server_tls.clone()) {
        drop(upstream);
        let acceptor = tokio_rustls::TlsAcceptor::from(server);
        let Ok(accepted) = acceptor
            .accept(crate::io::Prefixed::new(first, client))
            .await
        else {
            "the client refused this run's certificate (is its CA trusted?)"
                .clone_into(&mut rec.reason);
            shared.record(rec);
            return;
        };
        let rules = intercept.rules().map(<[Entry]>::to_vec);
        crate::intercept::serve(shared, accepted, host, decided.addr, rules, rec).await;
        return;
    }
    rec.decision = "allow";
    rec.reason = rule;
    if upstream.write_all(&first).await.is_err() {
        shared.record(rec);
        return;
    }
    let first_len = first.len() as u64;
    drop(first);
    let (up, down) = tokio::io::copy_bidirectional_with_sizes(
        &mut client,
        &mut upstream,
        COPY_BUFFER,
        COPY_BUFFER,
    )
    .await
    .unwrap_or((0, 0));
    rec.bytes_up = up + first_len;
    rec.bytes_down = down;
    shared.record(rec);
}
