//! What every connection shares: the proxy's set-up ([`Config`]), the policy and its counters
//! ([`Shared`]), what one connection was decided to be ([`Decided`]), and the [`Record`] each
//! ends in. The protocols (HTTP, SOCKS5, tunnels, interception) all speak through these.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::ca::{Ca, Injection};
use crate::host::{Entry, Host};
use crate::policy::{NetPolicy, Verdict};

/// How names are resolved.
#[derive(Debug, Clone, Default)]
pub enum Resolver {
    /// The system's resolver.
    #[default]
    System,
    /// Only these names, to these addresses (tests: never `/etc/hosts`, never the network).
    Fixed(Vec<(String, Vec<IpAddr>)>),
}

impl Resolver {
    async fn resolve(&self, name: &str, port: u16) -> Vec<IpAddr> {
        match self {
            Self::System => tokio::net::lookup_host((name, port))
                .await
                .map(|addrs| addrs.map(|a| a.ip()).collect())
                .unwrap_or_default(),
            Self::Fixed(map) => map
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, ips)| ips.clone())
                .unwrap_or_default(),
        }
    }
}

/// A person's answer about a host the allowlist does not name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Deny,
    /// This connection only.
    Once,
    /// This host and port for the rest of the run.
    Session,
    /// Also kept by the asker (a rule written to the settings).
    Always,
}

/// Who is asked about an unlisted host: blocking, on a thread of its own.
pub type Ask = Arc<dyn Fn(&str, u16) -> Answer + Send + Sync>;

/// What the proxy did with one connection (or one forwarded request).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// Milliseconds since the Unix epoch, when it was decided.
    pub time_ms: u64,
    /// `http`, `connect`, `socks`, or `https` (a request inside a tunnel whose TLS the proxy
    /// ends).
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    pub host: String,
    pub port: u16,
    /// The address connected to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip: Option<IpAddr>,
    /// `allow` or `deny`.
    pub decision: &'static str,
    /// The entry that allowed it, or why it was refused.
    pub reason: String,
    /// The server name a TLS client asked for, when it was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni: Option<String>,
    /// The request's path, where the proxy saw it (plain HTTP, or a host whose TLS it ends).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The HTTP status, where the proxy saw it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// An `Authorization` header was present (its value is never kept).
    pub authorization: bool,
    /// A `Cookie` header was present (its value is never kept).
    pub cookie: bool,
}

/// Where records go.
pub type Sink = Arc<dyn Fn(Record) + Send + Sync>;

/// How the proxy is set up.
#[derive(Clone)]
pub struct Config {
    pub policy: NetPolicy,
    pub resolver: Resolver,
    /// Asked about unlisted hosts; without one they are refused.
    pub ask: Option<Ask>,
    pub sink: Sink,
    /// Headers put on the requests to some hosts (credentials the sandbox never sees); their
    /// hosts' TLS is ended by the proxy.
    pub inject: Vec<Injection>,
    /// The roots upstream certificates are verified against; `None`: the system's (webpki).
    pub upstream_roots: Option<Vec<rustls::pki_types::CertificateDer<'static>>>,
    /// Decides each request to its hosts (whose TLS the proxy then ends).
    pub gate: Option<Gate>,
    /// The most connections (and requests forwarded) the proxy lets through or refuses; past
    /// it, everything is refused.
    pub budget: Option<u64>,
}

/// A decision about each request to some hosts, made outside the proxy: a capability's scope
/// and expiry, a person's approval. It may put headers on (a credential) or refuse.
#[derive(Clone)]
pub struct Gate {
    pub hosts: Vec<Entry>,
    /// Called off the proxy's thread: it may wait for a person.
    pub decide: Arc<dyn Fn(&GateRequest) -> GateAnswer + Send + Sync>,
}

/// One request a [`Gate`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateRequest {
    pub host: String,
    pub method: String,
    /// Origin-form, query included.
    pub path: String,
    /// Whether it came over TLS (the proxy ended it); plain HTTP otherwise.
    pub tls: bool,
}

/// What a [`Gate`] says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateAnswer {
    /// Send it on as it is.
    Pass,
    /// Send it on with these headers set.
    Add(Vec<(String, String)>),
    /// Refuse it, saying why.
    Refuse(String),
}

impl Config {
    /// A proxy of `policy`, records to `sink`, no asker, nothing injected, the system's roots.
    pub fn new(policy: NetPolicy, resolver: Resolver, sink: Sink) -> Self {
        Self {
            policy,
            resolver,
            ask: None,
            sink,
            inject: Vec::new(),
            upstream_roots: None,
            gate: None,
            budget: None,
        }
    }
}

/// Where one connection goes, and how.
#[derive(Debug, Clone)]
pub(crate) struct Decided {
    /// The one address checked, and connected to.
    pub(crate) addr: SocketAddr,
    /// The entry that allowed it, or who did.
    pub(crate) rule: String,
    /// `Some`: the proxy ends TLS and sees each request.
    pub(crate) intercept: Option<Intercept>,
}

/// Why the proxy ends a host's TLS.
#[derive(Debug, Clone)]
pub(crate) enum Intercept {
    /// These entries decide each request by method and path.
    Requests(Vec<Entry>),
    /// Only a credential is put on: every request goes through.
    Credentials,
}

impl Intercept {
    /// The entries that decide requests, if any do.
    pub(crate) fn rules(&self) -> Option<&[Entry]> {
        match self {
            Self::Requests(rules) => Some(rules),
            Self::Credentials => None,
        }
    }
}

/// Connections allowed and refused so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub allowed: u64,
    pub denied: u64,
    /// Of those denied, refused because the budget was spent.
    pub over_budget: u64,
}

pub(crate) struct Shared {
    policy: RwLock<NetPolicy>,
    resolver: Resolver,
    ask: Option<Ask>,
    sink: Sink,
    pub(crate) injections: Vec<Injection>,
    pub(crate) client_tls: Arc<rustls::ClientConfig>,
    /// Present when some host's TLS is ended here.
    pub(crate) server_tls: Option<Arc<rustls::ServerConfig>>,
    ca: Option<Arc<Ca>>,
    gate: Option<Gate>,
    budget: Option<u64>,
    spent: AtomicU64,
    over_budget: AtomicU64,
    allowed: AtomicU64,
    denied: AtomicU64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Shared {
    /// The state of a proxy set up by `config`. A CA of its own is made when some host's rules
    /// or credentials need its TLS ended.
    pub(crate) fn new(config: Config) -> std::io::Result<Self> {
        let ca = if config.policy.inspects() || !config.inject.is_empty() || config.gate.is_some() {
            Some(Arc::new(Ca::new().map_err(|e| {
                std::io::Error::other(format!("making this run's CA: {e}"))
            })?))
        } else {
            None
        };
        Ok(Self {
            policy: RwLock::new(config.policy),
            resolver: config.resolver,
            ask: config.ask,
            sink: config.sink,
            injections: config.inject,
            client_tls: crate::ca::client_config(config.upstream_roots.as_deref()),
            server_tls: ca.as_ref().map(crate::ca::server_config),
            ca,
            gate: config.gate,
            budget: config.budget,
            spent: AtomicU64::new(0),
            over_budget: AtomicU64::new(0),
            allowed: AtomicU64::new(0),
            denied: AtomicU64::new(0),
        })
    }

    /// The certificate of this run's CA, when it has one.
    pub(crate) fn ca_pem(&self) -> Option<String> {
        self.ca.as_ref().map(|ca| ca.pem())
    }

    /// How many connections were allowed and refused.
    pub(crate) fn counts(&self) -> Counts {
        Counts {
            allowed: self.allowed.load(Ordering::Relaxed),
            denied: self.denied.load(Ordering::Relaxed),
            over_budget: self.over_budget.load(Ordering::Relaxed),
        }
    }

    /// Allows `entry` for the rest of the proxy's life.
    pub(crate) fn allow(&self, entry: Entry) {
        self.policy
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .allow(entry);
    }

    /// One more connection or request against the budget: refused once it is spent.
    pub(crate) fn spend(&self) -> Result<(), String> {
        let Some(budget) = self.budget else {
            return Ok(());
        };
        if self.spent.fetch_add(1, Ordering::Relaxed) >= budget {
            self.over_budget.fetch_add(1, Ordering::Relaxed);
            return Err(format!(
                "the run's network budget of {budget} requests is spent"
            ));
        }
        Ok(())
    }

    fn gated(&self, host: &Host) -> bool {
        self.gate
            .as_ref()
            .is_some_and(|g| g.hosts.iter().any(|e| e.matches_host(host)))
    }

    /// The gate's answer about a request to `host`, when the gate covers it.
    /// Whether requests to `host` are decided by their paths: a gate (capabilities' scopes)
    /// stands for it.
    pub(crate) fn gates_paths(&self, host: &Host) -> bool {
        self.gate.is_some() && self.gated(host)
    }

    pub(crate) async fn gate(
        &self,
        host: &Host,
        method: &str,
        path: &str,
        tls: bool,
    ) -> GateAnswer {
        let Some(gate) = self.gate.clone().filter(|_| self.gated(host)) else {
            return GateAnswer::Pass;
        };
        let request = GateRequest {
            host: host.to_string(),
            method: method.to_owned(),
            path: path.to_owned(),
            tls,
        };
        tokio::task::spawn_blocking(move || (gate.decide)(&request))
            .await
            .unwrap_or_else(|_| GateAnswer::Refuse("the request's gate failed".to_owned()))
    }

    pub(crate) fn record(&self, record: Record) {
        let counter = if record.decision == "allow" {
            &self.allowed
        } else {
            &self.denied
        };
        counter.fetch_add(1, Ordering::Relaxed);
        (self.sink)(record);
    }

    /// The policy's decision for `host:port`, a person's where the host is unlisted, then the
    /// resolution and its check: the one address to connect to, and the rule, or why not.
    pub(crate) async fn decide(&self, host: &Host, port: u16) -> Result<Decided, String> {
        self.spend()?;
        let verdict = self
            .policy
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .check(host, port);
        let (rule, explicit) = match verdict {
            Verdict::Allow { rule, explicit } => (rule, explicit),
            Verdict::Deny(why) => return Err(why),
            Verdict::Unlisted(why) => {
                let Some(ask) = self.ask.clone() else {
                    return Err(why);
                };
                let name = host.to_string();
                let asked = name.clone();
                let answer = tokio::task::spawn_blocking(move || ask(&asked, port))
                    .await
                    .unwrap_or(Answer::Deny);
                match answer {
                    Answer::Deny => return Err(format!("{why}, and the user refused it")),
                    Answer::Once => (format!("{name}:{port} approved once by the user"), false),
                    Answer::Session | Answer::Always => {
                        if let Ok(entry) = Entry::parse(&format!("{name}:{port}")) {
                            self.policy
                                .write()
                                .unwrap_or_else(PoisonError::into_inner)
                                .allow(entry);
                        }
                        (format!("{name}:{port} approved by the user"), false)
                    }
                }
            }
        };
        let addrs = match host {
            Host::Ip(ip) => vec![*ip],
            Host::Name(name) => self.resolver.resolve(name, port).await,
        };
        self.policy
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .check_addresses(host, explicit, &addrs)?;
        let rules = self
            .policy
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .inspection(host, port);
        let credential =
            self.injections.iter().any(|i| i.host.matches_host(host)) || self.gated(host);
        let intercept = match rules {
            Some(rules) => Some(Intercept::Requests(rules)),
            None if credential => Some(Intercept::Credentials),
            None => None,
        };
        // The checked address is the one connected to: no second resolution to rebind.
        Ok(Decided {
            addr: SocketAddr::new(addrs[0], port),
            rule,
            intercept,
        })
    }
}

impl Record {
    /// The record with `why` as its reason.
    pub(crate) fn because(mut self, why: &str) -> Self {
        why.clone_into(&mut self.reason);
        self
    }
}

pub(crate) fn record(kind: &'static str, host: &str, port: u16) -> Record {
    Record {
        time_ms: now_ms(),
        kind,
        method: None,
        host: host.to_owned(),
        port,
        ip: None,
        decision: "deny",
        reason: String::new(),
        sni: None,
        path: None,
        status: None,
        bytes_up: 0,
        bytes_down: 0,
        authorization: false,
        cookie: false,
    }
}
