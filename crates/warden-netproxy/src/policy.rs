//! The decision for one connection, as a pure function of the allowlist: deny entries first,
//! then allow entries by host and port; an empty allowlist is no network; an address literal
//! only when named; and, once the host is resolved, no private address unless the entry that
//! allowed it names its host exactly.

use std::net::IpAddr;

use crate::host::{Entry, Host, HostError, private_range};

/// The allowlist of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetPolicy {
    allow: Vec<Entry>,
    deny: Vec<Entry>,
    /// Refuse private, loopback and link-local addresses unless an entry names its host
    /// exactly. Default true.
    pub block_private: bool,
}

/// What the allowlist says about a host and port, before resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// An allow entry covers it.
    Allow {
        rule: String,
        /// The entry names the host exactly (an address, a private name): private addresses
        /// are let through for it.
        explicit: bool,
    },
    /// Refused, and why.
    Deny(String),
    /// No entry names the host: refused, unless a person allows it.
    Unlisted(String),
}

impl NetPolicy {
    /// A policy from allow and deny entries (`example.com`, `*.example.com`, `host:port`,
    /// addresses). A malformed entry is an error naming it.
    pub fn new(allow: &[String], deny: &[String], block_private: bool) -> Result<Self, HostError> {
        let parse = |list: &[String]| {
            list.iter()
                .map(|e| Entry::parse(e))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            allow: parse(allow)?,
            deny: parse(deny)?,
            block_private,
        })
    }

    /// Allows `entry` from now on (a person's answer for the session).
    pub fn allow(&mut self, entry: Entry) {
        if !self.allow.contains(&entry) {
            self.allow.push(entry);
        }
    }

    /// Whether any entry limits methods or paths (so the proxy needs its own CA).
    pub fn inspects(&self) -> bool {
        self.allow.iter().any(Entry::inspects)
    }

    /// The entries that decide each request to `host:port`, when every allow entry naming it
    /// limits methods or paths; `None` when one allows it whole (a tunnel is enough).
    pub fn inspection(&self, host: &Host, port: u16) -> Option<Vec<Entry>> {
        let named: Vec<&Entry> = self
            .allow
            .iter()
            .filter(|e| e.matches_host(host) && e.matches_port(port))
            .collect();
        (!named.is_empty() && named.iter().all(|e| e.inspects()))
            .then(|| named.into_iter().cloned().collect())
    }

    /// Whether nothing at all is allowed.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty()
    }

    /// The entries allowed, as written.
    pub fn allowed(&self) -> Vec<&str> {
        self.allow.iter().map(|e| e.text.as_str()).collect()
    }

    /// The decision for `host` on `port`, before it is resolved.
    pub fn check(&self, host: &Host, port: u16) -> Verdict {
        // A deny entry without ports refuses every port.
        if let Some(entry) = self
            .deny
            .iter()
            .find(|e| e.matches_host(host) && (e.ports.is_none() || e.matches_port(port)))
        {
            return Verdict::Deny(format!("{host} is denied by {}", entry.text));
        }
        if self.allow.is_empty() {
            return Verdict::Deny("the allowlist is empty: this run has no network".to_owned());
        }
        let named: Vec<&Entry> = self.allow.iter().filter(|e| e.matches_host(host)).collect();
        if let Some(entry) = named.iter().find(|e| e.matches_port(port)) {
            return Verdict::Allow {
                rule: entry.text.clone(),
                explicit: entry.is_explicit(),
            };
        }
        if let Some(entry) = named.first() {
            let ports = entry.ports.as_ref().map_or_else(
                || "80 and 443".to_owned(),
                |p| p.iter().map(u16::to_string).collect::<Vec<_>>().join(", "),
            );
            return Verdict::Deny(format!(
                "port {port} of {host} is not allowed ({} allows {ports}; name other ports as \
                 {host}:{port})",
                entry.text
            ));
        }
        match host {
            Host::Ip(_) => Verdict::Deny(format!(
                "{host} is an address, and the allowlist does not name it"
            )),
            Host::Name(_) => Verdict::Unlisted(format!("{host} is not in the allowlist")),
        }
    }

    /// Whether the addresses `host` resolved to may be reached; `explicit` as the verdict
    /// said. Every address must pass: a name that resolves to one private address among public
    /// ones is refused.
    pub(crate) fn check_addresses(
        &self,
        host: &Host,
        explicit: bool,
        addrs: &[IpAddr],
    ) -> Result<(), String> {
        if addrs.is_empty() {
            return Err(format!("{host} does not resolve"));
        }
        if !self.block_private || explicit {
            return Ok(());
        }
        for ip in addrs {
            if let Some(range) = private_range(*ip) {
                return Err(format!(
                    "{host} resolves to {ip}, {range}: private addresses are blocked \
                     ([sandbox.network] block_private_ranges); name the address itself to reach it"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str], deny: &[&str]) -> NetPolicy {
        let owned = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        NetPolicy::new(&owned(allow), &owned(deny), true).unwrap()
    }

    fn host(s: &str) -> Host {
        Host::parse(s).unwrap()
    }

    fn allowed(p: &NetPolicy, h: &str, port: u16) -> bool {
        matches!(p.check(&host(h), port), Verdict::Allow { .. })
    }

    #[test]
    fn deny_wins_and_subdomains_are_not_the_apex() {
        let p = policy(&["*.example.com", "example.org"], &["bad.example.com"]);
        assert!(allowed(&p, "api.example.com", 443));
        assert!(!allowed(&p, "example.com", 443));
        assert!(
            matches!(p.check(&host("bad.example.com"), 443), Verdict::Deny(r) if r.contains("denied by bad.example.com"))
        );
        assert!(allowed(&p, "EXAMPLE.org.", 80));
        for sneaky in [
            "evil.com.example.org",
            "example.org.evil.com",
            "evilexample.org",
        ] {
            assert!(
                matches!(p.check(&host(sneaky), 443), Verdict::Unlisted(_)),
                "{sneaky}"
            );
        }
    }

    #[test]
    fn ports_are_80_and_443_unless_named() {
        let p = policy(&["example.com", "git.example.com:22"], &[]);
        assert!(allowed(&p, "example.com", 443));
        assert!(
            matches!(p.check(&host("example.com"), 22), Verdict::Deny(r) if r.contains("port 22"))
        );
        assert!(allowed(&p, "git.example.com", 22));
        assert!(!allowed(&p, "git.example.com", 443));
    }

    #[test]
    fn an_empty_allowlist_is_no_network() {
        let p = policy(&[], &[]);
        assert!(
            matches!(p.check(&host("example.com"), 443), Verdict::Deny(r) if r.contains("empty"))
        );
    }

    #[test]
    fn addresses_only_when_named() {
        let p = policy(&["example.com", "10.0.0.5:8080"], &[]);
        assert!(
            matches!(p.check(&host("93.184.216.34"), 443), Verdict::Deny(r) if r.contains("an address"))
        );
        assert!(matches!(
            p.check(&host("10.0.0.5"), 8080),
            Verdict::Allow { explicit: true, .. }
        ));
    }

    #[test]
    fn private_addresses_are_blocked_unless_the_entry_is_explicit() {
        let p = policy(&["example.com", "localhost:3000"], &[]);
        let loopback: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap()];
        let metadata: Vec<IpAddr> = vec!["169.254.169.254".parse().unwrap()];
        let mixed: Vec<IpAddr> = vec![
            "93.184.216.34".parse().unwrap(),
            "10.0.0.1".parse().unwrap(),
        ];
        let public: Vec<IpAddr> = vec!["93.184.216.34".parse().unwrap()];
        let name = host("example.com");
        assert!(
            p.check_addresses(&name, false, &loopback)
                .unwrap_err()
                .contains("loopback")
        );
        assert!(
            p.check_addresses(&name, false, &metadata)
                .unwrap_err()
                .contains("link-local")
        );
        assert!(
            p.check_addresses(&name, false, &mixed).is_err(),
            "one private address is enough"
        );
        assert!(p.check_addresses(&name, false, &public).is_ok());
        assert!(
            p.check_addresses(&name, false, &[])
                .unwrap_err()
                .contains("does not resolve")
        );
        let Verdict::Allow { explicit, .. } = p.check(&host("localhost"), 3000) else {
            panic!("localhost:3000 is listed");
        };
        assert!(explicit);
        assert!(
            p.check_addresses(&host("localhost"), explicit, &loopback)
                .is_ok()
        );
        let open = NetPolicy {
            block_private: false,
            ..p
        };
        assert!(open.check_addresses(&name, false, &loopback).is_ok());
    }
}
