//! A host whose rules limit methods and paths, or that carries a credential: the proxy
//! ends TLS with this run's CA, decides each request, and sends it on over TLS verified
//! against the roots it was given.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use warden_netproxy::{Config, Entry, Injection, NetPolicy, Proxy, Record, Resolver};

/// A TLS server for `secure.test` on loopback whose certificate a test CA signed; it
/// answers each request with its request line and the `Authorization` it got.
fn tls_server() -> (u16, CertificateDer<'static>) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["secure.test".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
    )
    .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let config = Arc::clone(&config);
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let mut request = Vec::new();
                let mut byte = [0u8; 1];
                while !request.ends_with(b"\r\n\r\n") {
                    if tls.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    request.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&request).into_owned();
                let line = text.lines().next().unwrap_or("").to_owned();
                let auth = text
                    .lines()
                    .find_map(|l| l.strip_prefix("authorization: "))
                    .unwrap_or("none")
                    .to_owned();
                let body = format!("{line} auth={auth}");
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.flush();
            });
        }
    });
    (port, ca.der().clone())
}

fn proxy(
    allow: &str,
    root: CertificateDer<'static>,
    inject: Vec<Injection>,
) -> (Proxy, u16, Arc<Mutex<Vec<Record>>>) {
    let records = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&records);
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    let mut config = Config::new(
        NetPolicy::new(&[allow.to_owned()], &[], false).unwrap(),
        Resolver::Fixed(vec![("secure.test".into(), vec![loopback])]),
        Arc::new(move |r| sink.lock().unwrap().push(r)),
    );
    config.upstream_roots = Some(vec![root]);
    config.inject = inject;
    let proxy = Proxy::start(config).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    proxy.serve(listener).unwrap();
    (proxy, port, records)
}

/// CONNECT through the proxy, TLS trusting `ca`, one request; the answer.
fn request(proxy: u16, port: u16, ca: &str, line: &str) -> Result<String, String> {
    let mut tcp = TcpStream::connect(("127.0.0.1", proxy)).unwrap();
    write!(
        tcp,
        "CONNECT secure.test:{port} HTTP/1.1\r\nHost: secure.test:{port}\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        tcp.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    over_tls(tcp, port, ca, line)
}

/// SOCKS5 through the proxy (the name resolved there), TLS trusting `ca`, one request.
fn request_socks(proxy: u16, port: u16, ca: &str, line: &str) -> Result<String, String> {
    let mut tcp = TcpStream::connect(("127.0.0.1", proxy)).unwrap();
    tcp.write_all(&[5, 1, 0]).unwrap();
    let mut reply = [0u8; 2];
    tcp.read_exact(&mut reply).unwrap();
    let name = b"secure.test";
    let mut ask = vec![5, 1, 0, 3, u8::try_from(name.len()).unwrap()];
    ask.extend_from_slice(name);
    ask.extend_from_slice(&port.to_be_bytes());
    tcp.write_all(&ask).unwrap();
    let mut granted = [0u8; 10];
    tcp.read_exact(&mut granted).unwrap();
    assert_eq!(granted[1], 0, "SOCKS5 refused the tunnel");
    over_tls(tcp, port, ca, line)
}

/// One request over TLS on `tcp`, trusting `ca`; the answer.
fn over_tls(tcp: TcpStream, port: u16, ca: &str, line: &str) -> Result<String, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let conn = rustls::ClientConnection::new(
        Arc::new(config),
        ServerName::try_from("secure.test").unwrap(),
    )
    .unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    write!(
        tls,
        "{line} HTTP/1.1\r\nHost: secure.test:{port}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut out = String::new();
    match tls.read_to_string(&mut out) {
        Ok(_) => Ok(out),
        Err(_) if !out.is_empty() => Ok(out),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn methods_and_paths_are_decided_inside_tls() {
    let (port, root) = tls_server();
    let (proxy, proxy_port, records) =
        proxy(&format!("GET secure.test:{port}/pkg/*"), root, Vec::new());
    let ca = proxy
        .ca_pem()
        .expect("a rule that needs its TLS ended makes a CA");
    let fetched = request(proxy_port, port, &ca, "GET /pkg/left-pad").unwrap();
    assert!(fetched.starts_with("HTTP/1.1 200"), "{fetched}");
    assert!(
        fetched.contains("GET /pkg/left-pad HTTP/1.1 auth=none"),
        "{fetched}"
    );
    let publish = request(proxy_port, port, &ca, "PUT /pkg/left-pad").unwrap();
    assert!(
        publish.starts_with("HTTP/1.1 403") && publish.contains("is not allowed"),
        "{publish}"
    );
    let other = request(proxy_port, port, &ca, "GET /admin").unwrap();
    assert!(other.starts_with("HTTP/1.1 403"), "{other}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let seen: Vec<(String, String, String)> = records
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.kind == "https")
        .map(|r| {
            (
                r.method.clone().unwrap(),
                r.path.clone().unwrap(),
                r.decision.to_owned(),
            )
        })
        .collect();
    assert!(
        seen.contains(&("GET".into(), "/pkg/left-pad".into(), "allow".into())),
        "{seen:?}"
    );
    assert!(
        seen.contains(&("PUT".into(), "/pkg/left-pad".into(), "deny".into())),
        "{seen:?}"
    );
    // A client that does not trust this run's CA gets nothing through.
    let stranger = rcgen::generate_simple_self_signed(vec!["x".to_owned()])
        .unwrap()
        .cert
        .pem();
    assert!(request(proxy_port, port, &stranger, "GET /pkg/left-pad").is_err());
}

#[test]
fn path_rules_inside_tls_decide_on_one_spelling_and_forward_it() {
    let (port, root) = tls_server();
    let (proxy, proxy_port, _) =
        proxy(&format!("GET secure.test:{port}/lodash*"), root, Vec::new());
    let ca = proxy.ca_pem().unwrap();
    let fetched = request(proxy_port, port, &ca, "GET /lodash/./x").unwrap();
    assert!(fetched.contains("GET /lodash/x HTTP/1.1"), "{fetched}");
    for path in super::CLIMBING {
        let answer = request(proxy_port, port, &ca, &format!("GET {path}")).unwrap();
        assert!(answer.starts_with("HTTP/1.1 4"), "{path}: {answer}");
        assert!(
            !answer.contains("auth="),
            "{path} reached the upstream: {answer}"
        );
    }
    // A target in absolute form is for this tunnel's host, or refused: the upstream would
    // take its host from the request line.
    let own = format!("GET https://secure.test:{port}/lodash/x");
    let fetched = request(proxy_port, port, &ca, &own).unwrap();
    assert!(fetched.contains("GET /lodash/x HTTP/1.1"), "{fetched}");
    for line in [
        "GET https://other.test/lodash".to_owned(),
        "GET https://secure.test:1/lodash".to_owned(),
        format!("CONNECT other.test:{port}"),
    ] {
        let answer = request(proxy_port, port, &ca, &line).unwrap_or_default();
        assert!(!answer.contains("auth="), "{line}: {answer}");
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 4"),
            "{line}: {answer}"
        );
    }
    // Through SOCKS5 the same.
    let fetched = request_socks(proxy_port, port, &ca, "GET /lodash/./x").unwrap();
    assert!(fetched.contains("GET /lodash/x HTTP/1.1"), "{fetched}");
    for path in super::CLIMBING {
        let answer = request_socks(proxy_port, port, &ca, &format!("GET {path}")).unwrap();
        assert!(answer.starts_with("HTTP/1.1 4"), "{path}: {answer}");
        assert!(!answer.contains("auth="), "socks: {path}: {answer}");
    }
    // A second Host, or another port, inside the tunnel.
    for extra in ["Host: other.test", "Host: secure.test:1"] {
        let line = format!("GET /lodash HTTP/1.1\r\n{extra}\r\nX-Pad: x");
        let answer = request(proxy_port, port, &ca, &line).unwrap();
        assert!(answer.starts_with("HTTP/1.1 400"), "{extra}: {answer}");
        assert!(!answer.contains("auth="), "{extra}: {answer}");
    }
}

#[test]
fn a_credential_is_put_on_by_the_proxy_and_never_seen_inside() {
    let (port, root) = tls_server();
    let injection = Injection {
        host: Entry::parse("secure.test").unwrap(),
        header: "authorization".into(),
        value: "Bearer short-lived-123".into(),
    };
    let (proxy, proxy_port, _) = proxy(&format!("secure.test:{port}"), root, vec![injection]);
    let ca = proxy.ca_pem().unwrap();
    let answer = request(proxy_port, port, &ca, "GET /whoami").unwrap();
    assert!(answer.contains("auth=Bearer short-lived-123"), "{answer}");
}

#[test]
fn hosts_allowed_whole_are_tunnelled_untouched() {
    let (port, root) = tls_server();
    let (proxy, _, _) = proxy(&format!("secure.test:{port}"), root, Vec::new());
    assert!(
        proxy.ca_pem().is_none(),
        "no rule needs the TLS ended: no CA at all"
    );
}
