//! Hosts and addresses: names normalised the one way they are compared (lowercase, no trailing
//! dot, IDNA as punycode, no user info), allowlist entries parsed (`example.com`,
//! `*.example.com`, `example.com:8443`, `10.0.0.5`, `[::1]:8080`), and the address ranges that
//! are private.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use warden_protocol::wildcard;

/// A host as a connection names it: a normalised name, or an address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// Why a host could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{host:?} is not a host name: {reason}")]
pub struct HostError {
    pub host: String,
    pub reason: &'static str,
}

impl Host {
    /// Reads a host as a request names it. Case and a trailing dot do not matter; a name in
    /// another script becomes punycode; user info (`a@b`) and anything but a host are refused.
    pub fn parse(raw: &str) -> Result<Self, HostError> {
        let err = |reason| HostError {
            host: raw.to_owned(),
            reason,
        };
        if raw.contains('@') {
            return Err(err("user info (`user@host`) is not a host"));
        }
        let bracketed = raw.strip_prefix('[').and_then(|r| r.strip_suffix(']'));
        if let Some(inner) = bracketed {
            return inner
                .parse::<Ipv6Addr>()
                .map(|ip| Self::Ip(IpAddr::V6(ip)))
                .map_err(|_| err("not an IPv6 address between the brackets"));
        }
        if let Ok(ip) = raw.parse::<IpAddr>() {
            return Ok(Self::Ip(ip));
        }
        let trimmed = raw.strip_suffix('.').unwrap_or(raw);
        if trimmed.is_empty() {
            return Err(err("it is empty"));
        }
        if trimmed.contains(|c: char| c.is_whitespace() || "/\\?#%:[]".contains(c)) {
            return Err(err("it holds characters no host name has"));
        }
        let ascii = idna::domain_to_ascii(trimmed).map_err(|_| err("not a valid domain name"))?;
        if ascii.is_empty() || ascii.len() > 253 {
            return Err(err("not a valid domain name"));
        }
        if ascii
            .split('.')
            .any(|label| label.is_empty() || label.len() > 63)
        {
            return Err(err("a label is empty or longer than 63 characters"));
        }
        // A top-level label of digits is no domain: it is a spelling of an address that a
        // resolver would accept (`127.1`, `0x7f.1`, `2130706433`).
        if ascii
            .rsplit('.')
            .next()
            .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(err(
                "a numeric spelling of an address; give the address itself",
            ));
        }
        Ok(Self::Name(ascii))
    }

    /// Whether this is a name that can only be private: `localhost` and its subdomains, a single
    /// label (`db`), or a special-use private domain (`.local`, `.internal`, `.lan`,
    /// `.home.arpa`, `.localhost`).
    pub fn is_private_name(&self) -> bool {
        let Self::Name(name) = self else {
            return false;
        };
        !name.contains('.')
            || name == "localhost"
            || [
                ".localhost",
                ".local",
                ".internal",
                ".lan",
                ".home.arpa",
                ".corp",
            ]
            .iter()
            .any(|suffix| name.ends_with(suffix))
    }
}

/// What an allowlist entry's host part matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// Exactly this host.
    Exact(Host),
    /// Subdomains of this name, not the name itself (`*.example.com`).
    Subdomains(String),
}

/// One allow or deny entry: a host pattern and the ports it covers, and for an allow entry,
/// optionally the methods and paths of the requests it lets through (which the proxy can
/// only see by terminating TLS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub pattern: Pattern,
    /// `None`: the default ports, 80 and 443.
    pub ports: Option<Vec<u16>>,
    /// `None`: every method.
    pub methods: Option<Vec<String>>,
    /// A path pattern (`/v1/*`, `*` any run of characters); `None`: every path.
    pub path: Option<String>,
    /// As written, for reasons.
    pub text: String,
}

/// The ports an entry without ports covers.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

impl Entry {
    /// Reads `example.com`, `*.example.com`, `example.com:8443`, `10.0.0.5`, `[::1]:8080`, and
    /// with methods and a path, `GET,HEAD registry.npmjs.org/lodash*`.
    pub fn parse(text: &str) -> Result<Self, HostError> {
        let trimmed = text.trim();
        let err = |reason| HostError {
            host: trimmed.to_owned(),
            reason,
        };
        let (methods, target) = match trimmed.split_once(char::is_whitespace) {
            Some((methods, rest)) => {
                let list: Vec<String> = methods
                    .split(',')
                    .map(|m| m.trim().to_ascii_uppercase())
                    .collect();
                if list
                    .iter()
                    .any(|m| m.is_empty() || !m.chars().all(|c| c.is_ascii_uppercase()))
                {
                    return Err(err(
                        "methods are words like GET or POST, separated by commas",
                    ));
                }
                (Some(list), rest.trim())
            }
            None => (None, trimmed),
        };
        // The path starts at the first `/` after the host (an IPv6 host is bracketed).
        let host_end = if target.starts_with('[') {
            target.find(']').map_or(target.len(), |i| i + 1)
        } else {
            0
        };
        let (target, path) = match target[host_end..].find('/') {
            Some(at) => (&target[..host_end + at], Some(&target[host_end + at..])),
            None => (target, None),
        };
        // Written as requests are read: `/%7euser*` is `/~user*`.
        let path = path
            .map(|p| {
                crate::path::normalise(p).map_err(|_| {
                    err("the path is one no request could have: an escaped `/`, `\\` or `%`, a `..` above the root, a control character")
                })
            })
            .transpose()?;
        let (host, port) = split_port(target).map_err(err)?;
        let ports = port.map(|p| vec![p]);
        let pattern = match host.strip_prefix("*.") {
            Some(rest) => match Host::parse(rest)? {
                Host::Name(name) => Pattern::Subdomains(name),
                Host::Ip(_) => return Err(err("`*.` goes before a name, not an address")),
            },
            None if host.contains('*') => {
                return Err(err("a wildcard may only be a leading `*.`"));
            }
            None => Pattern::Exact(Host::parse(host)?),
        };
        Ok(Self {
            pattern,
            ports,
            methods,
            path,
            text: trimmed.to_owned(),
        })
    }

    /// Whether the entry limits methods or paths: only seen by terminating TLS.
    pub fn inspects(&self) -> bool {
        self.methods.is_some() || self.path.is_some()
    }

    /// Whether a request of `method` for `path` (origin-form, query included) is covered.
    pub fn matches_request(&self, method: &str, path: &str) -> bool {
        let method_ok = self
            .methods
            .as_ref()
            .is_none_or(|m| m.iter().any(|m| m.eq_ignore_ascii_case(method)));
        let path_only = path.split(['?', '#']).next().unwrap_or(path);
        let path_ok = self
            .path
            .as_ref()
            .is_none_or(|pattern| wildcard(pattern, path_only));
        method_ok && path_ok
    }

    /// Whether the entry covers `host` (ports not considered).
    pub fn matches_host(&self, host: &Host) -> bool {
        match (&self.pattern, host) {
            (Pattern::Exact(want), host) => want == host,
            (Pattern::Subdomains(suffix), Host::Name(name)) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
            (Pattern::Subdomains(_), Host::Ip(_)) => false,
        }
    }

    /// Whether the entry covers `port`.
    pub fn matches_port(&self, port: u16) -> bool {
        match &self.ports {
            Some(ports) => ports.contains(&port),
            None => DEFAULT_PORTS.contains(&port),
        }
    }

    /// Whether this entry names its host exactly (an address, `localhost`, a private name):
    /// such an entry may reach private addresses even while they are blocked.
    pub fn is_explicit(&self) -> bool {
        match &self.pattern {
            Pattern::Exact(Host::Ip(_)) => true,
            Pattern::Exact(host) => host.is_private_name(),
            Pattern::Subdomains(_) => false,
        }
    }
}

/// `host` and its port, where one is given.
pub fn split_port(text: &str) -> Result<(&str, Option<u16>), &'static str> {
    if let Some(rest) = text.strip_prefix('[') {
        let close = rest
            .find(']')
            .ok_or("an IPv6 address without its closing `]`")?;
        let after = &rest[close + 1..];
        let host = &text[..close + 2];
        return match after.strip_prefix(':') {
            Some(port) => Ok((host, Some(port.parse().map_err(|_| "not a port number")?))),
            None if after.is_empty() => Ok((host, None)),
            None => Err("text after the `]`"),
        };
    }
    match text.rsplit_once(':') {
        // An IPv6 address without brackets holds several colons: no port.
        Some((host, _)) if host.contains(':') => Ok((text, None)),
        Some((host, port)) => Ok((host, Some(port.parse().map_err(|_| "not a port number")?))),
        None => Ok((text, None)),
    }
}

/// Why an address is private, if it is: loopback, RFC 1918, link-local (cloud metadata
/// included), CGNAT, unique-local, multicast, unspecified, broadcast, reserved, documentation
/// and benchmarking ranges, and IPv4 inside IPv6 (mapped, compatible, NAT64, 6to4).
pub fn private_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => private_v6(v6),
    }
}

fn private_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_loopback() => "loopback (127.0.0.0/8)",
        _ if ip.is_unspecified() => "unspecified (0.0.0.0)",
        (0, _, _) => "this network (0.0.0.0/8)",
        (10, _, _) => "private (10.0.0.0/8)",
        (172, 16..=31, _) => "private (172.16.0.0/12)",
        (192, 168, _) => "private (192.168.0.0/16)",
        (169, 254, _) => "link-local (169.254.0.0/16, cloud metadata)",
        (100, 64..=127, _) => "carrier-grade NAT (100.64.0.0/10)",
        (192, 0, 0) => "IETF protocol assignments (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18 | 19, _) => "benchmarking (198.18.0.0/15)",
        (224..=239, _, _) => "multicast (224.0.0.0/4)",
        (240..=255, _, _) => "reserved or broadcast (240.0.0.0/4)",
        _ => return None,
    })
}

fn private_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_loopback() {
        return Some("loopback (::1)");
    }
    if ip.is_unspecified() {
        return Some("unspecified (::)");
    }
    let seg = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96): the IPv4 address decides.
    if seg[..5] == [0; 5] && (seg[5] == 0xffff || seg[5] == 0)
        || seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
    {
        return private_v4(embedded(seg[6], seg[7]));
    }
    // 6to4 carries an IPv4 address in its second and third segments.
    if seg[0] == 0x2002 {
        return private_v4(embedded(seg[1], seg[2]));
    }
    Some(match seg[0] {
        s if s & 0xfe00 == 0xfc00 => "unique local (fc00::/7)",
        s if s & 0xffc0 == 0xfe80 => "link-local (fe80::/10)",
        s if s & 0xffc0 == 0xfec0 => "site-local (fec0::/10)",
        s if s & 0xff00 == 0xff00 => "multicast (ff00::/8)",
        0x2001 if seg[1] == 0x0db8 => "documentation (2001:db8::/32)",
        0x0100 if seg[1..4] == [0, 0, 0] => "discard (100::/64)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Host {
        Host::parse(s).unwrap()
    }

    #[test]
    fn names_are_normalised_one_way() {
        assert_eq!(name("Example.COM."), Host::Name("example.com".into()));
        assert_eq!(
            name("bücher.example"),
            Host::Name("xn--bcher-kva.example".into())
        );
        assert_eq!(name("[::1]"), Host::Ip("::1".parse().unwrap()));
        assert_eq!(name("127.0.0.1"), Host::Ip("127.0.0.1".parse().unwrap()));
        assert_eq!(name("cafe.be"), Host::Name("cafe.be".into()));
        for bad in [
            "a@b",
            "user@example.com",
            "",
            ".",
            "ex ample.com",
            "a/b",
            "127.1",
            "0x7f.1",
            "a..b",
            "2130706433",
        ] {
            assert!(Host::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn subdomain_patterns_match_subdomains_only() {
        let entry = Entry::parse("*.example.com").unwrap();
        assert!(entry.matches_host(&name("api.example.com")));
        assert!(entry.matches_host(&name("a.b.example.com")));
        assert!(!entry.matches_host(&name("example.com")), "not the apex");
        assert!(!entry.matches_host(&name("evilexample.com")));
        assert!(!entry.matches_host(&name("example.com.evil.com")));
        let exact = Entry::parse("example.com").unwrap();
        assert!(exact.matches_host(&name("EXAMPLE.com.")));
        assert!(!exact.matches_host(&name("evil.com.example.com")));
        assert!(!exact.matches_host(&name("api.example.com")));
    }

    #[test]
    fn ports_default_to_80_and_443() {
        let plain = Entry::parse("example.com").unwrap();
        assert!(plain.matches_port(443) && plain.matches_port(80) && !plain.matches_port(22));
        let other = Entry::parse("example.com:8443").unwrap();
        assert!(other.matches_port(8443) && !other.matches_port(443));
        let v6 = Entry::parse("[::1]:8080").unwrap();
        assert_eq!(v6.pattern, Pattern::Exact(name("[::1]")));
        assert!(v6.is_explicit());
        assert!(Entry::parse("example.com:http").is_err());
        assert!(Entry::parse("ex*.com").is_err());
        assert!(Entry::parse("*.10.0.0.1").is_err());
    }

    #[test]
    fn private_ranges_are_named() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::1",
        ] {
            assert!(private_range(ip.parse().unwrap()).is_some(), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:2800:220:1::1",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(private_range(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn rule_paths_are_written_as_requests_are_read() {
        let entry = Entry::parse("GET r.test/%7euser/./pkg*").unwrap();
        assert!(entry.matches_request("GET", "/~user/pkg-1"));
        assert!(Entry::parse("GET r.test/../x").is_err());
    }

    #[test]
    fn methods_and_paths_limit_requests() {
        let entry = Entry::parse("GET,head registry.npmjs.org/lodash*").unwrap();
        assert_eq!(entry.pattern, Pattern::Exact(name("registry.npmjs.org")));
        assert!(entry.inspects() && entry.matches_port(443));
        assert!(entry.matches_request("GET", "/lodash/-/lodash-4.17.21.tgz"));
        assert!(entry.matches_request("HEAD", "/lodash?write=true"));
        assert!(
            !entry.matches_request("PUT", "/lodash"),
            "publishing is another grant"
        );
        assert!(!entry.matches_request("GET", "/left-pad"));
        let path_only = Entry::parse("api.example.com:8443/v1/*").unwrap();
        assert_eq!(path_only.ports, Some(vec![8443]));
        assert!(path_only.matches_request("POST", "/v1/items"));
        assert!(!Entry::parse("example.com").unwrap().inspects());
        assert!(Entry::parse("get/ example.com").is_err());
    }

    #[test]
    fn only_exact_private_entries_are_explicit() {
        assert!(Entry::parse("localhost:3000").unwrap().is_explicit());
        assert!(Entry::parse("10.0.0.5").unwrap().is_explicit());
        assert!(Entry::parse("db").unwrap().is_explicit());
        assert!(!Entry::parse("example.com").unwrap().is_explicit());
        assert!(!Entry::parse("*.internal").unwrap().is_explicit());
    }
}
