//! The server name of a TLS `ClientHello` (the SNI extension), read from the first bytes a client
//! sends through a tunnel, so that the name it asks the server for can be held against the host
//! it asked the proxy for. The hello may span several records.

/// What the first bytes of a stream say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hello {
    /// More bytes are needed.
    Incomplete,
    /// Not a TLS handshake at all.
    NotTls,
    /// A `ClientHello`, with the server name it asks for (`None`: it names none).
    ServerName(Option<String>),
    /// A TLS record that is not a well-formed `ClientHello`.
    Malformed(&'static str),
}

/// The most bytes read for a hello before giving up on it.
pub const MAX_HELLO: usize = 64 * 1024;

/// Reads the `ClientHello` at the start of `data`.
pub fn client_hello(data: &[u8]) -> Hello {
    if data.is_empty() {
        return Hello::Incomplete;
    }
    if data[0] != 0x16 {
        return Hello::NotTls;
    }
    // The handshake message, from the payloads of the records so far.
    let mut message = Vec::new();
    let mut at = 0;
    let needed = loop {
        if data.len() < at + 5 {
            return Hello::Incomplete;
        }
        if data[at] != 0x16 {
            return Hello::Malformed("a record other than a handshake inside the hello");
        }
        let length = usize::from(u16::from_be_bytes([data[at + 3], data[at + 4]]));
        if data.len() < at + 5 + length {
            return Hello::Incomplete;
        }
        message.extend_from_slice(&data[at + 5..at + 5 + length]);
        at += 5 + length;
        if message.len() >= 4 {
            if message[0] != 0x01 {
                return Hello::Malformed("the first handshake message is not a `ClientHello`");
            }
            let body = (usize::from(message[1]) << 16)
                | (usize::from(message[2]) << 8)
                | usize::from(message[3]);
            if message.len() >= 4 + body {
                break body;
            }
        }
    };
    parse(&message[4..4 + needed])
}

fn parse(hello: &[u8]) -> Hello {
    let mut r = Reader { data: hello, at: 0 };
    let parsed = (|| -> Option<Option<String>> {
        r.skip(2 + 32)?; // version, random
        let session = r.u8()?;
        r.skip(usize::from(session))?;
        let suites = r.u16()?;
        r.skip(usize::from(suites))?;
        let compression = r.u8()?;
        r.skip(usize::from(compression))?;
        if r.at == r.data.len() {
            return Some(None);
        }
        let extensions_end = r.at + usize::from(r.u16()?);
        while r.at < extensions_end {
            let kind = r.u16()?;
            let length = usize::from(r.u16()?);
            if kind != 0 {
                r.skip(length)?;
                continue;
            }
            let list_end = r.at + usize::from(r.u16()?);
            while r.at < list_end {
                let name_type = r.u8()?;
                let name_length = usize::from(r.u16()?);
                let name = r.take(name_length)?;
                if name_type == 0 {
                    return Some(Some(String::from_utf8(name.to_vec()).ok()?));
                }
            }
            return Some(None);
        }
        Some(None)
    })();
    match parsed {
        Some(name) => Hello::ServerName(name),
        None => Hello::Malformed("the `ClientHello` ends early or its server name is not text"),
    }
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let slice = self.data.get(self.at..self.at + n)?;
        self.at += n;
        Some(slice)
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
}

/// A `ClientHello` for `server_name` (none when `None`), in one record or split across records
/// of at most `record_size` bytes: for tests and the bench.
pub fn sample_hello(server_name: Option<&str>, record_size: usize) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&[0x03, 0x03]);
    body.extend_from_slice(&[7; 32]);
    body.push(0);
    body.extend_from_slice(&[0, 2, 0x13, 0x01]);
    body.extend_from_slice(&[1, 0]);
    let mut extensions = Vec::new();
    // A padding extension first, so the name is not at a fixed place.
    extensions.extend_from_slice(&[0x00, 0x15, 0x00, 0x04, 0, 0, 0, 0]);
    if let Some(name) = server_name {
        let name = name.as_bytes();
        let n = u16::try_from(name.len()).unwrap_or(u16::MAX);
        extensions.extend_from_slice(&[0, 0]);
        extensions.extend_from_slice(&(n + 5).to_be_bytes());
        extensions.extend_from_slice(&(n + 3).to_be_bytes());
        extensions.push(0);
        extensions.extend_from_slice(&n.to_be_bytes());
        extensions.extend_from_slice(name);
    }
    body.extend_from_slice(
        &u16::try_from(extensions.len())
            .unwrap_or(u16::MAX)
            .to_be_bytes(),
    );
    body.extend_from_slice(&extensions);
    let mut message = vec![0x01];
    let length = u32::try_from(body.len()).unwrap_or(u32::MAX).to_be_bytes();
    message.extend_from_slice(&length[1..]);
    message.extend_from_slice(&body);
    let mut out = Vec::new();
    for chunk in message.chunks(record_size.max(1)) {
        out.extend_from_slice(&[0x16, 0x03, 0x01]);
        out.extend_from_slice(&u16::try_from(chunk.len()).unwrap_or(u16::MAX).to_be_bytes());
        out.extend_from_slice(chunk);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_name_is_read_across_records() {
        let hello = sample_hello(Some("api.example.com"), 16 * 1024);
        assert_eq!(
            client_hello(&hello),
            Hello::ServerName(Some("api.example.com".into()))
        );
        let split = sample_hello(Some("api.example.com"), 10);
        assert_eq!(
            client_hello(&split),
            Hello::ServerName(Some("api.example.com".into()))
        );
        for cut in 0..split.len() {
            assert_eq!(
                client_hello(&split[..cut]),
                Hello::Incomplete,
                "cut at {cut}"
            );
        }
        assert_eq!(
            client_hello(&sample_hello(None, 512)),
            Hello::ServerName(None)
        );
    }

    #[test]
    fn other_bytes_are_not_tls() {
        assert_eq!(client_hello(b"GET / HTTP/1.1\r\n"), Hello::NotTls);
        assert_eq!(client_hello(b"SSH-2.0-OpenSSH"), Hello::NotTls);
        let mut broken = sample_hello(Some("a.example"), 4096);
        broken[5] = 0x02;
        assert!(matches!(client_hello(&broken), Hello::Malformed(_)));
    }
}
