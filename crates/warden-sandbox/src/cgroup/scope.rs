//! A transient systemd scope with `Delegate=yes`, asked for over D-Bus: where warden's own
//! cgroup is neither delegated nor its alone (an ordinary user's terminal, `sudo warden` on a
//! systemd host), systemd moves warden into a scope of its own that it hands over, as podman
//! and crun do. The system manager for root, the user's manager otherwise.
//!
//! The client speaks the D-Bus wire protocol itself (little-endian, `EXTERNAL` authentication)
//! for one call, `org.freedesktop.systemd1.Manager.StartTransientUnit`, and then waits until
//! `/proc/self/cgroup` names the scope.

use std::io::{self, BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Asks systemd to move this process into a new scope with `Delegate=yes`; returns the
/// scope's name once this process is in it.
pub(super) fn enter_delegated_scope() -> Result<String, String> {
    let (bus, which) = bus_path().ok_or("no D-Bus socket to ask systemd on")?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let unit = format!("warden-{}-{nanos:08x}.scope", std::process::id());
    let mut stream = UnixStream::connect(&bus)
        .map_err(|e| format!("the {which} bus at {}: {e}", bus.display()))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    authenticate(&mut stream).map_err(|e| format!("the {which} bus: {e}"))?;
    let mut serial = 0;
    let mut call = |stream: &mut UnixStream, message: Vec<u8>| -> Result<(), String> {
        serial += 1;
        let message = with_serial(message, serial);
        stream.write_all(&message).map_err(|e| e.to_string())?;
        reply(stream, serial)
    };
    // A connection to a bus daemon says hello first; systemd's private socket (no daemon)
    // refuses the hello, and needs none.
    let direct = bus.ends_with("systemd/private");
    if !direct {
        call(&mut stream, hello()).map_err(|e| format!("the {which} bus: Hello: {e}"))?;
    }
    // Process 0 is the caller, as systemd sees it: the right process even when warden's pid
    // namespace is not the bus's.
    call(&mut stream, start_transient_unit(&unit, 0))
        .map_err(|e| format!("systemd ({which}) refused a transient scope: {e}"))?;
    // The job that moves this process may still be running.
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        if own
            .lines()
            .any(|l| l.starts_with("0::") && l.trim_end().ends_with(&unit))
        {
            return Ok(unit);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!(
        "systemd made {unit}, but did not move warden into it"
    ))
}

/// The bus to ask: the system bus as root, else the user's bus, else the user manager's
/// private socket.
fn bus_path() -> Option<(PathBuf, &'static str)> {
    let from_address = |variable: &str| {
        std::env::var(variable).ok().and_then(|address| {
            address
                .split(';')
                .find_map(|a| a.strip_prefix("unix:path="))
                .map(|p| PathBuf::from(p.split(',').next().unwrap_or(p)))
        })
    };
    if crate::sys::effective_uid() == 0 {
        let path = from_address("DBUS_SYSTEM_BUS_ADDRESS")
            .unwrap_or_else(|| PathBuf::from("/run/dbus/system_bus_socket"));
        return path.exists().then_some((path, "system"));
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map_or_else(
        || PathBuf::from(format!("/run/user/{}", crate::sys::effective_uid())),
        PathBuf::from,
    );
    from_address("DBUS_SESSION_BUS_ADDRESS")
        .filter(|p| p.exists())
        .or_else(|| Some(runtime.join("bus")).filter(|p| p.exists()))
        .map(|p| (p, "user"))
        .or_else(|| {
            Some((runtime.join("systemd/private"), "user manager's")).filter(|(p, _)| p.exists())
        })
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `EXTERNAL` authentication as this process's uid (its digits, in hexadecimal).
fn authenticate(stream: &mut UnixStream) -> io::Result<()> {
    let uid = crate::sys::effective_uid().to_string();
    let hex: String = uid
        .bytes()
        .flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]])
        .map(char::from)
        .collect();
    stream.write_all(format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes())?;
    let mut line = String::new();
    BufReader::new(&mut *stream)
        .take(512)
        .read_line(&mut line)?;
    if !line.starts_with("OK ") {
        return Err(io::Error::other(format!(
            "authentication refused: {}",
            line.trim()
        )));
    }
    stream.write_all(b"BEGIN\r\n")
}

/// Reads messages until the reply to `serial`: `Ok` for a method return, the error's name and
/// message for an error. Signals and other replies are skipped.
fn reply(stream: &mut UnixStream, serial: u32) -> Result<(), String> {
    for _ in 0..64 {
        let message = read_message(stream).map_err(|e| format!("reading the reply: {e}"))?;
        if message.reply_to != Some(serial) {
            continue;
        }
        return match message.kind {
            2 => Ok(()),
            _ => Err(format!(
                "{}: {}",
                message.error.unwrap_or_default(),
                message.text.unwrap_or_default()
            )),
        };
    }
    Err("no reply".to_owned())
}

/// What a received message says, as far as a reply needs.
struct Received {
    /// 2 a method return, 3 an error, 4 a signal.
    kind: u8,
    reply_to: Option<u32>,
    error: Option<String>,
    /// An error's first argument, when it is a string.
    text: Option<String>,
}

fn read_message(stream: &mut UnixStream) -> io::Result<Received> {
    let mut fixed = [0u8; 16];
    stream.read_exact(&mut fixed)?;
    if fixed[0] != b'l' {
        return Err(io::Error::other("a big-endian message"));
    }
    let word =
        |at: usize| u32::from_le_bytes([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]]);
    let (body_len, fields_len) = (word(4) as usize, word(12) as usize);
    if body_len > 1 << 24 || fields_len > 1 << 16 {
        return Err(io::Error::other("a message too large"));
    }
    let padded = fields_len.div_ceil(8) * 8;
    let mut rest = vec![0u8; padded + body_len];
    stream.read_exact(&mut rest)?;
    let mut fields = Reader {
        buf: &rest[..fields_len],
        at: 0,
        base: 16,
    };
    let mut received = Received {
        kind: fixed[1],
        reply_to: None,
        error: None,
        text: None,
    };
    while fields.at < fields_len {
        fields.align(8);
        let Some(code) = fields.byte() else { break };
        let signature = fields.signature().unwrap_or_default();
        match (code, signature.as_str()) {
            (5, "u") => received.reply_to = fields.u32(),
            (4, "s") => received.error = fields.string(),
            (_, "s" | "o") => {
                fields.string();
            }
            (_, "g") => {
                fields.signature();
            }
            (_, "u") => {
                fields.u32();
            }
            _ => break,
        }
    }
    if received.kind == 3 {
        let mut body = Reader {
            buf: &rest[padded..],
            at: 0,
            base: 0,
        };
        received.text = body.string();
    }
    Ok(received)
}

/// Reads a message's fields, aligned from the start of the message (`base` bytes before).
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
    base: usize,
}

impl Reader<'_> {
    fn align(&mut self, n: usize) {
        let abs = self.base + self.at;
        self.at += (n - abs % n) % n;
    }

    fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn u32(&mut self) -> Option<u32> {
        self.align(4);
        let bytes = self.buf.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    fn string(&mut self) -> Option<String> {
        let len = self.u32()? as usize;
        let text = self.buf.get(self.at..self.at + len)?;
        self.at += len + 1;
        Some(String::from_utf8_lossy(text).into_owned())
    }

    fn signature(&mut self) -> Option<String> {
        let len = usize::from(self.byte()?);
        let text = self.buf.get(self.at..self.at + len)?;
        self.at += len + 1;
        Some(String::from_utf8_lossy(text).into_owned())
    }
}

/// Builds a message body, aligned from the start of the body (which starts aligned to 8).
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn align(&mut self, n: usize) {
        while !self.buf.len().is_multiple_of(n) {
            self.buf.push(0);
        }
    }

    fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    fn u32(&mut self, v: u32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn string(&mut self, s: &str) {
        self.u32(u32::try_from(s.len()).unwrap_or(0));
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }

    fn signature(&mut self, s: &str) {
        self.byte(u8::try_from(s.len()).unwrap_or(0));
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }

    /// An array whose elements align to `align`, written by `elements`.
    fn array(&mut self, align: usize, elements: impl FnOnce(&mut Self)) {
        self.align(4);
        let at = self.buf.len();
        self.buf.extend_from_slice(&[0; 4]);
        self.align(align);
        let start = self.buf.len();
        elements(self);
        let len = u32::try_from(self.buf.len() - start).unwrap_or(0);
        self.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }
}

/// A method call; its serial is set by [`with_serial`].
fn method_call(
    destination: &str,
    path: &str,
    interface: &str,
    member: &str,
    signature: &str,
    body: &[u8],
) -> Vec<u8> {
    let mut m = Writer::default();
    m.byte(b'l');
    m.byte(1); // a method call
    m.byte(0);
    m.byte(1); // protocol version
    m.u32(u32::try_from(body.len()).unwrap_or(0));
    m.u32(0); // the serial
    m.array(8, |f| {
        for (code, kind, value) in [
            (1u8, "o", path),
            (2, "s", interface),
            (3, "s", member),
            (6, "s", destination),
        ] {
            f.align(8);
            f.byte(code);
            f.signature(kind);
            f.string(value);
        }
        if !signature.is_empty() {
            f.align(8);
            f.byte(8);
            f.signature("g");
            f.signature(signature);
        }
    });
    m.align(8);
    m.buf.extend_from_slice(body);
    m.buf
}

fn with_serial(mut message: Vec<u8>, serial: u32) -> Vec<u8> {
    message[8..12].copy_from_slice(&serial.to_le_bytes());
    message
}

fn hello() -> Vec<u8> {
    method_call(
        "org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus",
        "Hello",
        "",
        &[],
    )
}

/// `StartTransientUnit(unit, "fail", [PIDs, Delegate, Description, CollectMode], [])`.
fn start_transient_unit(unit: &str, pid: u32) -> Vec<u8> {
    let mut body = Writer::default();
    body.string(unit);
    body.string("fail");
    body.array(8, |props| {
        props.align(8);
        props.string("PIDs");
        props.signature("au");
        props.array(4, |pids| pids.u32(pid));
        props.align(8);
        props.string("Delegate");
        props.signature("b");
        props.u32(1);
        props.align(8);
        props.string("Description");
        props.signature("s");
        props.string("warden: the cgroups of sandboxed commands");
        props.align(8);
        props.string("CollectMode");
        props.signature("s");
        props.string("inactive-or-failed");
    });
    body.array(8, |_| {});
    method_call(
        "org.freedesktop.systemd1",
        "/org/freedesktop/systemd1",
        "org.freedesktop.systemd1.Manager",
        "StartTransientUnit",
        "ssa(sv)a(sa(sv))",
        &body.buf,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_is_the_bytes_the_specification_gives() {
        let m = with_serial(hello(), 1);
        // Little-endian, a method call, version 1, no body, serial 1.
        assert_eq!(&m[..12], &[b'l', 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0]);
        let fields = u32::from_le_bytes([m[12], m[13], m[14], m[15]]) as usize;
        assert_eq!(m.len(), (16 + fields).div_ceil(8) * 8);
        // The first field: PATH, an object path.
        assert_eq!(&m[16..20], &[1, 1, b'o', 0]);
        assert_eq!(&m[24..45], b"/org/freedesktop/DBus");
    }

    #[test]
    fn a_body_starts_aligned_and_arrays_count_their_bytes() {
        let m = start_transient_unit("warden-1.scope", 42);
        let body_len = u32::from_le_bytes([m[4], m[5], m[6], m[7]]) as usize;
        let body = &m[m.len() - body_len..];
        assert_eq!((m.len() - body_len) % 8, 0);
        // The unit's name, then the mode.
        assert_eq!(&body[..4], &14u32.to_le_bytes());
        assert_eq!(&body[4..18], b"warden-1.scope");
        // The pid, inside the PIDs property's array of one.
        let pid = 42u32.to_le_bytes();
        assert!(
            body.windows(8)
                .any(|w| w[..4] == 4u32.to_le_bytes() && w[4..] == pid)
        );
        // The last array (auxiliary units) is empty.
        assert_eq!(&body[body.len() - 4..], &[0, 0, 0, 0]);
    }
}
