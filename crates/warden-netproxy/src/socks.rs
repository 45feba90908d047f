//! SOCKS5 (RFC 1928), the part a client behind `ALL_PROXY=socks5h://…` uses: no
//! authentication, CONNECT, and the target as a name (resolved here, never inside the sandbox)
//! or an address.

use std::sync::Arc;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::host::Host;
use crate::state::{Shared, record};
use crate::tunnel::tunnel;

/// Reply codes.
pub(crate) const SUCCEEDED: u8 = 0x00;
pub(crate) const NOT_ALLOWED: u8 = 0x02;
pub(crate) const HOST_UNREACHABLE: u8 = 0x04;
pub(crate) const COMMAND_NOT_SUPPORTED: u8 = 0x07;
pub(crate) const ADDRESS_NOT_SUPPORTED: u8 = 0x08;

/// What the client asked to reach.
pub(crate) enum Target {
    Name(String, u16),
    Ip(std::net::IpAddr, u16),
}

/// Reads the greeting and the request; `Err` with the reply to send when the request cannot be
/// served.
pub(crate) async fn handshake(stream: &mut TcpStream) -> std::io::Result<Result<Target, u8>> {
    let mut head = [0u8; 2];
    stream.read_exact(&mut head).await?;
    let mut methods = vec![0u8; usize::from(head[1])];
    stream.read_exact(&mut methods).await?;
    if head[0] != 5 || !methods.contains(&0) {
        stream.write_all(&[5, 0xff]).await?;
        return Ok(Err(NOT_ALLOWED));
    }
    stream.write_all(&[5, 0]).await?;
    let mut request = [0u8; 4];
    stream.read_exact(&mut request).await?;
    if request[1] != 1 {
        return Ok(Err(COMMAND_NOT_SUPPORTED));
    }
    let target = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            stream.read_exact(&mut ip).await?;
            Target::Ip(ip.into(), read_port(stream).await?)
        }
        3 => {
            let length = stream.read_u8().await?;
            let mut name = vec![0u8; usize::from(length)];
            stream.read_exact(&mut name).await?;
            let Ok(name) = String::from_utf8(name) else {
                return Ok(Err(ADDRESS_NOT_SUPPORTED));
            };
            Target::Name(name, read_port(stream).await?)
        }
        4 => {
            let mut ip = [0u8; 16];
            stream.read_exact(&mut ip).await?;
            Target::Ip(ip.into(), read_port(stream).await?)
        }
        _ => return Ok(Err(ADDRESS_NOT_SUPPORTED)),
    };
    Ok(Ok(target))
}

async fn read_port(stream: &mut TcpStream) -> std::io::Result<u16> {
    stream.read_u16().await
}

/// Sends the reply `code` (the bound address is not told).
pub(crate) async fn reply(stream: &mut TcpStream, code: u8) -> std::io::Result<()> {
    stream.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]).await
}

/// One SOCKS5 client: its request decided like any other, then a tunnel.
pub(crate) async fn socks_connection(
    shared: Arc<Shared>,
    mut stream: TcpStream,
) -> std::io::Result<()> {
    let target = match handshake(&mut stream).await? {
        Ok(target) => target,
        Err(code) => {
            let why = "an unsupported SOCKS request (only CONNECT, without authentication)";
            shared.record(record("socks", "", 0).because(why));
            return reply(&mut stream, code).await;
        }
    };
    let (raw, port) = match &target {
        Target::Name(name, port) => (name.clone(), *port),
        Target::Ip(ip, port) => (ip.to_string(), *port),
    };
    let mut rec = record("socks", &raw, port);
    let host = match target {
        Target::Ip(ip, _) => Host::Ip(ip),
        Target::Name(name, _) => match Host::parse(&name) {
            Ok(host) => host,
            Err(e) => {
                rec.reason = e.to_string();
                shared.record(rec);
                return reply(&mut stream, NOT_ALLOWED).await;
            }
        },
    };
    rec.host = host.to_string();
    let decided = match shared.decide(&host, port).await {
        Ok(found) => found,
        Err(why) => {
            rec.reason = why;
            shared.record(rec);
            return reply(&mut stream, NOT_ALLOWED).await;
        }
    };
    let (addr, rule) = (decided.addr, decided.rule.clone());
    rec.ip = Some(addr.ip());
    let upstream = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => {
            rec.decision = "allow";
            rec.reason = format!("{rule}; connecting to {addr} failed: {e}");
            shared.record(rec);
            return reply(&mut stream, HOST_UNREACHABLE).await;
        }
    };
    let _ = upstream.set_nodelay(true);
    reply(&mut stream, SUCCEEDED).await?;
    tunnel(shared, stream, upstream, host, decided, rec).await;
    Ok(())
}
