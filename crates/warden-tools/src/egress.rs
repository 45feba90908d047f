//! The egress proxy of a session whose network is `allowlist`: its policy from the settings
//! (`[sandbox.network] allowed_domains`, `denied_domains`, `block_private_ranges`, and the
//! `WebFetch(domain:…)` allow rules), where its records go, and the test resolver hook.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use warden_config::Settings;
use warden_netproxy::{Ask, Config, NetPolicy, Proxy, Record, Resolver, Sink};
use warden_protocol::SessionId;

/// The environment variable of the test resolver: `name=address,…`. The proxy then resolves
/// only those names (never the system's resolver), so tests reach servers on 127.0.0.1 by name.
pub const TEST_RESOLVE: &str = "WARDEN_TEST_RESOLVE";

/// The environment variable of the test roots: a PEM file the proxy verifies upstream
/// certificates against instead of the system's roots (tests' TLS servers on 127.0.0.1).
pub const TEST_UPSTREAM_CA: &str = "WARDEN_TEST_UPSTREAM_CA";

/// Why the egress proxy could not be set up: nothing that needed it runs.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// An allowlist or denylist entry does not parse.
    #[error("sandbox.network: {0}")]
    Entry(#[from] warden_netproxy::HostError),
    /// A test hook's variable (`WARDEN_TEST_RESOLVE`, `WARDEN_TEST_UPSTREAM_CA`) is malformed.
    #[error("{0}")]
    TestHook(String),
    #[error("the egress proxy could not start: {0}")]
    Start(std::io::Error),
    /// The CA bundle the sandbox trusts could not be written.
    #[error("the CA bundle in {}: {source}", dir.display())]
    Trust {
        dir: std::path::PathBuf,
        source: std::io::Error,
    },
}

impl From<EgressError> for String {
    fn from(err: EgressError) -> Self {
        err.to_string()
    }
}

/// The allowlist of `settings`, plus `allow` and `deny` entries (from the command line).
pub fn policy(
    settings: &Settings,
    allow: &[String],
    deny: &[String],
) -> Result<NetPolicy, EgressError> {
    let net = &settings.sandbox.network;
    let mut allowed = net.allowed_domains.clone();
    allowed.extend(settings.permissions.allow.iter().filter_map(|rule| {
        rule.trim()
            .strip_prefix("WebFetch(domain:")
            .and_then(|r| r.strip_suffix(')'))
            .map(|d| d.trim().to_owned())
    }));
    allowed.extend(allow.iter().cloned());
    let mut denied = net.denied_domains.clone();
    denied.extend(deny.iter().cloned());
    Ok(NetPolicy::new(&allowed, &denied, net.block_private_ranges)?)
}

/// The resolver: the system's, or the test hook's names.
pub fn resolver() -> Result<Resolver, EgressError> {
    let Ok(spec) = std::env::var(TEST_RESOLVE) else {
        return Ok(Resolver::System);
    };
    let mut names: Vec<(String, Vec<IpAddr>)> = Vec::new();
    for pair in spec.split(',').filter(|p| !p.trim().is_empty()) {
        let (name, ip) = pair.split_once('=').ok_or_else(|| {
            EgressError::TestHook(format!("{TEST_RESOLVE}: {pair:?} is not name=address"))
        })?;
        let ip: IpAddr = ip.trim().parse().map_err(|_| {
            EgressError::TestHook(format!("{TEST_RESOLVE}: {ip:?} is not an address"))
        })?;
        let name = name.trim().to_ascii_lowercase();
        match names.iter_mut().find(|(n, _)| *n == name) {
            Some((_, ips)) => ips.push(ip),
            None => names.push((name, vec![ip])),
        }
    }
    Ok(Resolver::Fixed(names))
}

/// Where connection records go, shown by name only.
#[derive(Clone)]
pub struct RecordSink(pub Sink);

impl std::fmt::Debug for RecordSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordSink")
    }
}

/// Records of `session` into the trace at its default place, through a connection of their
/// own (the proxy runs on its own thread). A record that cannot be written is dropped; the
/// connection it describes is not affected.
pub fn trace_sink(session: SessionId) -> Sink {
    let store = warden_trace::default_path()
        .ok()
        .and_then(|path| warden_trace::TraceStore::open(&path).ok())
        .map(Mutex::new);
    Arc::new(move |record: Record| {
        if let (Some(store), Ok(data)) = (&store, serde_json::to_value(&record)) {
            let store = store.lock().unwrap_or_else(PoisonError::into_inner);
            let _ = store.record_network(&session, &data);
        }
    })
}

/// The egress proxy of a session, and what sandboxed commands need to trust it.
#[derive(Debug)]
pub struct Egress {
    pub proxy: Proxy,
    /// The directory holding the CA bundle, when the proxy ends some hosts' TLS; removed with
    /// the session.
    trust: Option<std::path::PathBuf>,
}

/// The variables of TLS clients that name a CA bundle (the whole bundle: the system's and
/// this run's CA).
const BUNDLE_VARIABLES: &[&str] = &[
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "PIP_CERT",
    "CARGO_HTTP_CAINFO",
];

impl Egress {
    /// Lets `request`'s command trust this run's CA: the bundle's directory readable, and the
    /// usual variables pointing at it (Node adds `NODE_EXTRA_CA_CERTS` to its own roots).
    pub fn trust(&self, request: &mut warden_sandbox::Request) {
        let Some(dir) = &self.trust else {
            return;
        };
        request.allow_read.push(dir.clone());
        Self::point_at(request, dir);
    }

    /// As [`Egress::trust`], the bundle's directory mounted read-only at `inside` instead of
    /// its own path.
    pub fn trust_at(&self, request: &mut warden_sandbox::Request, inside: &std::path::Path) {
        let Some(dir) = &self.trust else {
            return;
        };
        request
            .mounts
            .push((dir.clone(), inside.to_path_buf(), false));
        Self::point_at(request, inside);
    }

    fn point_at(request: &mut warden_sandbox::Request, dir: &std::path::Path) {
        let bundle = dir.join("bundle.pem").display().to_string();
        for name in BUNDLE_VARIABLES {
            request.env.push(((*name).to_owned(), bundle.clone()));
        }
        request.env.push((
            "NODE_EXTRA_CA_CERTS".to_owned(),
            dir.join("ca.pem").display().to_string(),
        ));
    }
}

impl Drop for Egress {
    fn drop(&mut self) {
        if let Some(dir) = self.trust.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Where the system's CA bundle is, on the usual distributions.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// Writes this run's CA (its certificate only: the key never leaves the proxy) and a bundle
/// of the system's roots with it, in a directory of its own.
fn write_trust(
    ca_pem: &str,
    within: Option<&std::path::Path>,
) -> Result<std::path::PathBuf, EgressError> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let parent = within.map_or_else(std::env::temp_dir, std::path::Path::to_path_buf);
    let dir = parent.join(format!("warden-ca-{}-{n}", std::process::id()));
    let err = |source: std::io::Error| EgressError::Trust {
        dir: dir.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(err)?;
    let system = SYSTEM_BUNDLES
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    std::fs::write(dir.join("ca.pem"), ca_pem).map_err(err)?;
    std::fs::write(dir.join("bundle.pem"), format!("{system}\n{ca_pem}")).map_err(err)?;
    Ok(dir)
}

/// Starts the proxy of a session.
pub fn start(
    settings: &Settings,
    allow: &[String],
    deny: &[String],
    sink: Sink,
    ask: Option<Ask>,
) -> Result<Egress, EgressError> {
    let mut config = Config::new(policy(settings, allow, deny)?, resolver()?, sink);
    config.ask = ask;
    launch(config, None)
}

/// Starts a proxy of `config` (its upstream roots from the test hook, when set), and writes
/// the CA bundle the sandbox trusts, when it ends some hosts' TLS, in a directory of its own
/// under `trust_within` (default: the temporary directory).
pub fn launch(
    mut config: Config,
    trust_within: Option<&std::path::Path>,
) -> Result<Egress, EgressError> {
    if let Ok(path) = std::env::var(TEST_UPSTREAM_CA) {
        use rustls::pki_types::pem::PemObject as _;
        let roots = rustls::pki_types::CertificateDer::pem_file_iter(&path)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| EgressError::TestHook(format!("{TEST_UPSTREAM_CA}: {path}: {e}")))?;
        config.upstream_roots = Some(roots);
    }
    let proxy = Proxy::start(config).map_err(EgressError::Start)?;
    let trust = proxy
        .ca_pem()
        .map(|pem| write_trust(&pem, trust_within))
        .transpose()?;
    Ok(Egress { proxy, trust })
}
