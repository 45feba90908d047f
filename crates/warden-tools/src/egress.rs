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

/// The allowlist of `settings`, plus `allow` and `deny` entries (from the command line).
pub fn policy(settings: &Settings, allow: &[String], deny: &[String]) -> Result<NetPolicy, String> {
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
    NetPolicy::new(&allowed, &denied, net.block_private_ranges)
        .map_err(|e| format!("sandbox.network: {e}"))
}

/// The resolver: the system's, or the test hook's names.
pub fn resolver() -> Result<Resolver, String> {
    let Ok(spec) = std::env::var(TEST_RESOLVE) else {
        return Ok(Resolver::System);
    };
    let mut names: Vec<(String, Vec<IpAddr>)> = Vec::new();
    for pair in spec.split(',').filter(|p| !p.trim().is_empty()) {
        let (name, ip) = pair
            .split_once('=')
            .ok_or_else(|| format!("{TEST_RESOLVE}: {pair:?} is not name=address"))?;
        let ip: IpAddr = ip
            .trim()
            .parse()
            .map_err(|_| format!("{TEST_RESOLVE}: {ip:?} is not an address"))?;
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

/// Starts the proxy of a session.
pub fn start(
    settings: &Settings,
    allow: &[String],
    deny: &[String],
    sink: Sink,
    ask: Option<Ask>,
) -> Result<Proxy, String> {
    let config = Config {
        policy: policy(settings, allow, deny)?,
        resolver: resolver()?,
        ask,
        sink,
    };
    Proxy::start(config).map_err(|e| format!("the egress proxy could not start: {e}"))
}
