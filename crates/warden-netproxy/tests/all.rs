//! The proxy on loopback, against test servers on 127.0.0.1 whose names the test resolver
//! supplies: forwarded requests, tunnels over CONNECT and SOCKS5, and every refusal — unlisted
//! hosts, address literals, ports, private addresses, fronting, a lying `Host`, an empty
//! allowlist — each with its record.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use warden_netproxy::{Answer, Config, NetPolicy, Proxy, Record, Resolver, tls};

/// An HTTP server on loopback answering every request with its request line and `Host`.
fn http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap_or(0);
                let mut host = String::new();
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                    if header.to_ascii_lowercase().starts_with("host:") {
                        header[5..].trim().clone_into(&mut host);
                    }
                }
                let body = format!("{} host={host}", line.trim());
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}

/// A server on loopback that echoes whatever it gets (a stand-in for a TLS server).
fn echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = stream.try_clone().unwrap();
                let mut writer = stream;
                let _ = std::io::copy(&mut reader, &mut writer);
            });
        }
    });
    port
}

struct Harness {
    proxy: Proxy,
    port: u16,
    records: Arc<Mutex<Vec<Record>>>,
}

fn harness(allow: &[String], deny: &[String], block_private: bool) -> Harness {
    harness_asking(allow, deny, block_private, None)
}

fn harness_asking(
    allow: &[String],
    deny: &[String],
    block_private: bool,
    ask: Option<warden_netproxy::Ask>,
) -> Harness {
    let records = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&records);
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    let metadata: IpAddr = "169.254.169.254".parse().unwrap();
    let proxy = Proxy::start(Config {
        policy: NetPolicy::new(allow, deny, block_private).unwrap(),
        resolver: Resolver::Fixed(vec![
            ("allowed.test".into(), vec![loopback]),
            ("other.test".into(), vec![loopback]),
            ("metadata.test".into(), vec![metadata]),
        ]),
        ask,
        sink: Arc::new(move |r| sink.lock().unwrap().push(r)),
        inject: Vec::new(),
        upstream_roots: None,
        gate: None,
        budget: None,
    })
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    proxy.serve(listener).unwrap();
    Harness {
        proxy,
        port,
        records,
    }
}

impl Harness {
    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream
    }

    /// Sends `request` and returns everything the proxy answered.
    fn http(&self, request: &str) -> String {
        let mut stream = self.connect();
        stream.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = stream.read_to_string(&mut out);
        out
    }

    /// A CONNECT, then `payload` through the tunnel; what came back through it.
    fn tunnel(&self, target: &str, payload: &[u8]) -> (String, Vec<u8>) {
        let mut stream = self.connect();
        write!(
            stream,
            "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"
        )
        .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if stream.read(&mut byte).unwrap_or(0) == 0 {
                break;
            }
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        if !head.starts_with("HTTP/1.1 200") {
            let mut rest = String::new();
            let _ = stream.read_to_string(&mut rest);
            return (head + &rest, Vec::new());
        }
        stream.write_all(payload).unwrap();
        let mut back = vec![0u8; payload.len()];
        let got = stream
            .read_exact(&mut back)
            .map(|()| back)
            .unwrap_or_default();
        (head, got)
    }

    fn last(&self) -> Record {
        // Records of finished tunnels arrive as they end.
        for _ in 0..200 {
            if let Some(r) = self.records.lock().unwrap().last().cloned() {
                return r;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no record")
    }

    fn wait_records(&self, n: usize) -> Vec<Record> {
        for _ in 0..300 {
            let records = self.records.lock().unwrap().clone();
            if records.len() >= n {
                return records;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.records.lock().unwrap().clone()
    }
}

fn list(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn an_allowed_host_is_reached_by_a_forwarded_request() {
    let server = http_server();
    let h = harness(&list(&[&format!("allowed.test:{server}")]), &[], false);
    let answer = h.http(&format!(
        "GET http://allowed.test:{server}/hello?x=1 HTTP/1.1\r\nHost: allowed.test:{server}\r\n\
         Authorization: Bearer s3cr3t\r\nConnection: close\r\n\r\n"
    ));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Origin-form upstream, the Host kept.
    assert!(
        answer.contains(&format!(
            "GET /hello?x=1 HTTP/1.1 host=allowed.test:{server}"
        )),
        "{answer}"
    );
    let records = h.wait_records(1);
    let r = &records[0];
    assert_eq!((r.kind, r.decision, r.status), ("http", "allow", Some(200)));
    assert_eq!(r.ip, Some("127.0.0.1".parse().unwrap()));
    assert!(r.authorization && !r.cookie);
    assert!(r.bytes_up > 0 && r.bytes_down > 0, "{r:?}");
    let json = serde_json::to_string(r).unwrap();
    assert!(!json.contains("s3cr3t"), "never the header's value: {json}");
    assert_eq!(h.proxy.counts().allowed, 1);
}

/// The spellings of a path outside `/lodash` that a rule for `/lodash*` matched on the raw path.
const CLIMBING: &[&str] = &[
    "/lodash/../evil",
    "/lodash/%2e%2e/evil",
    "/lodash/%2E%2e/evil",
    "/lodash%2f..%2fevil",
    "/lodash%2F..%2Fevil",
    "/lodash%5c..%5cevil",
    "/lodash\\..\\evil",
    "/lodash/..//evil",
    "/lodash%00/../evil",
];

#[test]
fn path_rules_decide_on_one_spelling_and_forward_it() {
    let server = http_server();
    let h = harness(
        &list(&[&format!("GET allowed.test:{server}/lodash*")]),
        &[],
        false,
    );
    let get = |path: &str| {
        h.http(&format!(
            "GET http://allowed.test:{server}{path} HTTP/1.1\r\nHost: allowed.test:{server}\r\n\
             Connection: close\r\n\r\n"
        ))
    };
    // Reachable under the rule, and forwarded as it was checked.
    let answer = get("/lodash/./x/%7e1");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("GET /lodash/x/~1 HTTP/1.1"), "{answer}");
    let answer = get("/evil");
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    for path in CLIMBING {
        let answer = get(path);
        assert!(answer.starts_with("HTTP/1.1 403"), "{path}: {answer}");
        // The upstream answers with the request line it got and the `Host`.
        assert!(
            !answer.contains(" host="),
            "{path} reached the upstream: {answer}"
        );
    }
}

#[test]
fn a_credential_never_goes_over_plain_http() {
    let server = http_server();
    let allow = list(&[&format!("allowed.test:{server}")]);
    let get = format!(
        "GET http://allowed.test:{server}/whoami HTTP/1.1\r\nHost: allowed.test:{server}\r\n\
         Connection: close\r\n\r\n"
    );
    // Reachable without a credential for it.
    let h = harness(&allow, &[], false);
    assert!(h.http(&get).contains(" host="));
    let mut h = harness(&allow, &[], false);
    h.proxy = {
        let records = Arc::clone(&h.records);
        let mut config = Config::new(
            NetPolicy::new(&allow, &[], false).unwrap(),
            Resolver::Fixed(vec![(
                "allowed.test".into(),
                vec!["127.0.0.1".parse().unwrap()],
            )]),
            Arc::new(move |r| records.lock().unwrap().push(r)),
        );
        config.inject = vec![warden_netproxy::Injection {
            host: warden_netproxy::Entry::parse("allowed.test").unwrap(),
            header: "authorization".into(),
            value: "Bearer short-lived-123".into(),
        }];
        Proxy::start(config).unwrap()
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    h.port = listener.local_addr().unwrap().port();
    h.proxy.serve(listener).unwrap();
    let answer = h.http(&get);
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("only over TLS"), "{answer}");
    assert!(
        !answer.contains(" host=") && !answer.contains("short-lived"),
        "{answer}"
    );
    assert_eq!(h.proxy.counts().denied, 1);
}

#[test]
fn a_doubled_unreadable_or_other_host_header_is_refused() {
    let server = http_server();
    let h = harness(&list(&[&format!("allowed.test:{server}")]), &[], false);
    let with = |headers: &[u8]| {
        let mut request = format!("GET http://allowed.test:{server}/x HTTP/1.1\r\n").into_bytes();
        request.extend_from_slice(headers);
        request.extend_from_slice(b"Connection: close\r\n\r\n");
        let mut tcp = TcpStream::connect(("127.0.0.1", h.port)).unwrap();
        tcp.write_all(&request).unwrap();
        let mut answer = Vec::new();
        let _ = tcp.read_to_end(&mut answer);
        String::from_utf8_lossy(&answer).into_owned()
    };
    let good = format!("Host: allowed.test:{server}\r\n");
    assert!(
        with(good.as_bytes()).contains(" host="),
        "reachable with one right Host"
    );
    for headers in [
        format!("Host: allowed.test:{server}\r\nHost: other.test\r\n").into_bytes(),
        b"Host: allowed.test:\xff\xfe\r\n".to_vec(),
        b"Host: allowed.test:1\r\n".to_vec(),
        b"Host: [not a host\r\n".to_vec(),
    ] {
        let answer = with(&headers);
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(!answer.contains(" host="), "{answer}");
    }
}

#[test]
fn a_tunnel_passes_when_its_tls_server_name_is_the_host() {
    let echo = echo_server();
    let h = harness(&list(&[&format!("allowed.test:{echo}")]), &[], false);
    let mut payload = tls::sample_hello(Some("allowed.test"), 300);
    payload.extend_from_slice(b"after the hello");
    let (head, back) = h.tunnel(&format!("allowed.test:{echo}"), &payload);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(
        back, payload,
        "the hello and what follows reach the server untouched"
    );
    let records = h.wait_records(1);
    assert_eq!(records[0].kind, "connect");
    assert_eq!(records[0].sni.as_deref(), Some("allowed.test"));
}

#[test]
fn a_tunnel_fronting_for_another_host_is_cut() {
    let echo = echo_server();
    let h = harness(&list(&[&format!("allowed.test:{echo}")]), &[], false);
    let payload = tls::sample_hello(Some("other.test"), 16 * 1024);
    let (head, back) = h.tunnel(&format!("allowed.test:{echo}"), &payload);
    assert!(
        head.starts_with("HTTP/1.1 200"),
        "the host itself is allowed: {head}"
    );
    assert!(back.is_empty(), "nothing reached the server or came back");
    let r = h.last();
    assert_eq!(r.decision, "deny");
    assert!(
        r.reason.contains("asks for other.test, not allowed.test"),
        "{}",
        r.reason
    );
    // A hello naming no server is refused for a named host too.
    let (_, back) = h.tunnel(
        &format!("allowed.test:{echo}"),
        &tls::sample_hello(None, 512),
    );
    assert!(back.is_empty());
    assert_eq!(h.proxy.counts().denied, 2);
}

#[test]
fn refusals_say_why_and_are_recorded() {
    let server = http_server();
    let h = harness(
        &list(&["allowed.test", "metadata.test"]),
        &list(&["blocked.allowed.test"]),
        true,
    );
    let cases = [
        // An unlisted host.
        (
            "CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n".to_owned(),
            "not in the allowlist",
        ),
        // An address literal.
        (
            "CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n".to_owned(),
            "an address",
        ),
        // A port not listed.
        (
            format!("CONNECT allowed.test:{server} HTTP/1.1\r\nHost: allowed.test\r\n\r\n"),
            "is not allowed",
        ),
        // A listed name resolving to loopback and to the cloud metadata address.
        (
            "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n".to_owned(),
            "loopback",
        ),
        (
            "GET http://metadata.test/latest/meta-data/ HTTP/1.1\r\nHost: metadata.test\r\n\r\n"
                .to_owned(),
            "link-local",
        ),
        // User info is not a host.
        (
            "CONNECT a@allowed.test:443 HTTP/1.1\r\nHost: x\r\n\r\n".to_owned(),
            "user info",
        ),
    ];
    for (request, why) in &cases {
        let answer = h.http(request);
        assert!(
            answer.starts_with("HTTP/1.1 403") || answer.starts_with("HTTP/1.1 400"),
            "{request}: {answer}"
        );
        assert!(answer.contains(why), "{request}: {answer}");
    }
    let records = h.wait_records(cases.len());
    assert!(records.iter().all(|r| r.decision == "deny"), "{records:?}");
    assert_eq!(h.proxy.counts().denied, cases.len() as u64);
}

#[test]
fn a_host_header_differing_from_the_url_is_refused() {
    let server = http_server();
    let h = harness(
        &list(&[
            &format!("allowed.test:{server}"),
            &format!("other.test:{server}"),
        ]),
        &[],
        false,
    );
    let answer = h.http(&format!(
        "GET http://allowed.test:{server}/ HTTP/1.1\r\nHost: other.test:{server}\r\n\r\n"
    ));
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("is not the URL's host"), "{answer}");
    // https:// in absolute form, and origin-form requests, are not forwarded.
    assert!(
        h.http("GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
            .contains("CONNECT")
    );
    assert!(
        h.http("GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
            .contains("not a proxy request")
    );
}

#[test]
fn an_empty_allowlist_is_no_network() {
    let echo = echo_server();
    let h = harness(&[], &[], false);
    let answer = h.http(&format!(
        "CONNECT allowed.test:{echo} HTTP/1.1\r\nHost: x\r\n\r\n"
    ));
    assert!(
        answer.starts_with("HTTP/1.1 403") && answer.contains("no network"),
        "{answer}"
    );
}

/// A SOCKS5 CONNECT to `name:port`; the reply code, and the stream when it succeeded.
fn socks(h: &Harness, name: &str, port: u16) -> (u8, TcpStream) {
    let mut s = h.connect();
    s.write_all(&[5, 1, 0]).unwrap();
    let mut choice = [0u8; 2];
    s.read_exact(&mut choice).unwrap();
    assert_eq!(choice, [5, 0]);
    let mut request = vec![5, 1, 0, 3, u8::try_from(name.len()).unwrap()];
    request.extend_from_slice(name.as_bytes());
    request.extend_from_slice(&port.to_be_bytes());
    s.write_all(&request).unwrap();
    let mut reply = [0u8; 10];
    s.read_exact(&mut reply).unwrap();
    (reply[1], s)
}

#[test]
fn socks5_names_are_resolved_and_decided_by_the_proxy() {
    let echo = echo_server();
    let h = harness(&list(&[&format!("allowed.test:{echo}")]), &[], false);
    let (code, mut stream) = socks(&h, "allowed.test", echo);
    assert_eq!(code, 0);
    stream.write_all(b"ping").unwrap();
    let mut back = [0u8; 4];
    stream.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"ping");
    drop(stream);
    let (code, _) = socks(&h, "other.test", echo);
    assert_eq!(code, 2, "not allowed by the ruleset");
    let records = h.wait_records(2);
    assert!(
        records
            .iter()
            .any(|r| r.kind == "socks" && r.decision == "allow" && r.bytes_down == 4)
    );
    assert!(
        records
            .iter()
            .any(|r| r.kind == "socks" && r.decision == "deny")
    );
}

#[test]
fn an_unlisted_host_is_put_to_the_asker() {
    let echo = echo_server();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let ask: warden_netproxy::Ask = Arc::new(move |host: &str, port| {
        seen.lock().unwrap().push(format!("{host}:{port}"));
        Answer::Session
    });
    let h = harness_asking(&list(&["allowed.test"]), &[], false, Some(ask));
    let (code, _) = socks(&h, "other.test", echo);
    assert_eq!(code, 0, "approved for the session");
    let (code, _) = socks(&h, "other.test", echo);
    assert_eq!(code, 0);
    assert_eq!(
        asked.lock().unwrap().len(),
        1,
        "asked once: the session remembers"
    );
}

#[path = "all/intercepted.rs"]
mod intercepted;
