//! Capabilities (seed 003 `identity`): a `source_control` capability's credential never enters
//! the sandbox. The egress proxy ends the TLS of the capability's hosts and asks [`Capabilities`]
//! about each request: in the capability's repository and one of its actions, unexpired, not
//! revoked, approved where the manifest says so — then the credential is put on; otherwise the
//! request is refused and counted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use warden_netproxy::{Entry, GateAnswer, GateRequest};

use crate::schema::Capability;

/// Asked whether a request that needs a person's approval may go.
pub type Approver = Arc<dyn Fn(&ApprovalAsk) -> bool + Send + Sync>;

/// What a person is asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAsk {
    pub capability_id: String,
    pub repository: String,
    pub action: String,
    pub method: String,
    pub host: String,
    pub path: String,
}

/// One capability, live for this run.
#[derive(Clone)]
pub(crate) struct Live {
    pub(crate) id: String,
    pub(crate) repository: String,
    pub(crate) actions: Vec<String>,
    pub(crate) approval_for: Vec<String>,
    /// Where git is served (`github.com`), and the API (`api.github.com`, or the git host with
    /// `/api/v3`).
    pub(crate) git_host: String,
    pub(crate) api_host: String,
    api_prefix: String,
    token: Option<String>,
    pub(crate) expires: SystemTime,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("id", &self.id)
            .field("repository", &self.repository)
            .field("credential", &self.token.is_some())
            .finish_non_exhaustive()
    }
}

impl Live {
    /// `cap` as it lives from `start`, its credential from `credential(host)`.
    pub(crate) fn new(
        id: String,
        cap: &Capability,
        start: SystemTime,
        credential: &dyn Fn(&str) -> Option<String>,
    ) -> Self {
        let git_host = cap
            .host
            .clone()
            .unwrap_or_else(|| "github.com".to_owned())
            .to_ascii_lowercase();
        let (api_host, api_prefix) = if git_host == "github.com" {
            ("api.github.com".to_owned(), String::new())
        } else {
            (git_host.clone(), "/api/v3".to_owned())
        };
        Self {
            id,
            repository: cap.repository.clone().unwrap_or_default(),
            actions: cap.actions.clone(),
            approval_for: cap.require_approval_for.clone(),
            token: credential(&git_host),
            git_host,
            api_host,
            api_prefix,
            expires: start + Duration::from_secs(cap.expires_after_seconds.unwrap_or(900)),
        }
    }

    pub(crate) fn has_credential(&self) -> bool {
        self.token.is_some()
    }

    /// The hosts whose requests it decides, as allowlist entries.
    pub(crate) fn entries(&self) -> Vec<Entry> {
        let mut hosts = vec![self.git_host.clone()];
        if self.api_host != self.git_host {
            hosts.push(self.api_host.clone());
        }
        hosts
            .iter()
            .filter_map(|h| {
                let mut entry = Entry::parse(h).ok()?;
                if entry.ports.is_none() {
                    entry.ports = Some(vec![443]);
                }
                Some(entry)
            })
            .collect()
    }

    fn covers(&self, host: &str) -> bool {
        let bare = |h: &str| h.split(':').next().unwrap_or(h).to_owned();
        bare(&self.git_host) == host || bare(&self.api_host) == host
    }

    /// The action a request is, when it is in this capability's repository: `Ok(None)` when
    /// it is not in scope, `Err` when it is in scope but no action the capability knows.
    fn action(&self, host: &str, method: &str, path: &str) -> Result<Option<&'static str>, String> {
        let path_only = path.split(['?', '#']).next().unwrap_or(path);
        let query = path.split_once('?').map_or("", |(_, q)| q);
        let repo = self.repository.to_ascii_lowercase();
        let lower = path_only.to_ascii_lowercase();
        let bare = |h: &str| h.split(':').next().unwrap_or(h).to_owned();
        let on_api = bare(&self.api_host) == host
            && (self.api_prefix.is_empty() || lower.starts_with(&self.api_prefix));
        if on_api {
            let rest = &lower[self.api_prefix.len()..];
            let Some(tail) = rest.strip_prefix(&format!("/repos/{repo}")) else {
                return Ok(None);
            };
            if !(tail.is_empty() || tail.starts_with('/')) {
                return Ok(None);
            }
            return api_action(method, tail).map(Some);
        }
        // git over HTTPS: /owner/name(.git)/info/refs, /git-upload-pack, /git-receive-pack.
        let Some(tail) = lower
            .strip_prefix(&format!("/{repo}.git"))
            .or_else(|| lower.strip_prefix(&format!("/{repo}")))
        else {
            return Ok(None);
        };
        if !(tail.is_empty() || tail.starts_with('/')) {
            return Ok(None);
        }
        let receive =
            tail.ends_with("/git-receive-pack") || query.contains("service=git-receive-pack");
        if receive {
            return Ok(Some("push_branch"));
        }
        if method.eq_ignore_ascii_case("GET")
            || method.eq_ignore_ascii_case("HEAD")
            || tail.ends_with("/git-upload-pack")
        {
            return Ok(Some("read"));
        }
        Err(format!("{method} {path} is not a git operation"))
    }

    fn headers(&self, host: &str, path: &str) -> Vec<(String, String)> {
        let Some(token) = &self.token else {
            return Vec::new();
        };
        let bare = self.api_host.split(':').next().unwrap_or(&self.api_host);
        let api = bare == host
            && (self.api_prefix.is_empty()
                || path.to_ascii_lowercase().starts_with(&self.api_prefix));
        let value = if api {
            format!("Bearer {token}")
        } else {
            format!(
                "Basic {}",
                base64(format!("x-access-token:{token}").as_bytes())
            )
        };
        vec![("authorization".to_owned(), value)]
    }
}

/// The action of an API request under `/repos/owner/name`.
fn api_action(method: &str, tail: &str) -> Result<&'static str, String> {
    let m = method.to_ascii_uppercase();
    let parts: Vec<&str> = tail.split('/').filter(|p| !p.is_empty()).collect();
    match (m.as_str(), parts.as_slice()) {
        ("GET" | "HEAD", _) => Ok("read"),
        ("POST", ["git", "refs"]) => Ok("create_branch"),
        ("PATCH" | "POST", ["git", "refs", "heads", ..])
        | ("POST", ["git", "blobs" | "trees" | "commits"])
        | ("PUT", ["contents", ..]) => Ok("push_branch"),
        ("POST", ["pulls"]) => Ok("create_pull_request"),
        ("POST", ["issues" | "pulls" | "commits", _, "comments"] | ["pulls", _, "reviews"]) => {
            Ok("comment")
        }
        _ => Err(format!("{m} {tail} is not an action a capability grants")),
    }
}

/// Every capability of a run, and what they refused.
pub(crate) struct Capabilities {
    live: Vec<Live>,
    /// Hosts the manifest's own allowlist names: out-of-scope requests to them go on without
    /// a credential; to other capability hosts they are refused.
    also_allowed: Vec<Entry>,
    approver: Option<Approver>,
    revoked: AtomicBool,
    denials: AtomicU64,
    /// Why each refusal happened, in order (no credential in them).
    refusals: Mutex<Vec<String>>,
}

impl Capabilities {
    pub(crate) fn new(
        live: Vec<Live>,
        also_allowed: Vec<Entry>,
        approver: Option<Approver>,
    ) -> Self {
        Self {
            live,
            also_allowed,
            approver,
            revoked: AtomicBool::new(false),
            denials: AtomicU64::new(0),
            refusals: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn entries(&self) -> Vec<Entry> {
        self.live.iter().flat_map(Live::entries).collect()
    }

    /// Revokes them all: every later request is refused.
    pub(crate) fn revoke(&self) {
        self.revoked.store(true, Ordering::SeqCst);
    }

    pub(crate) fn revoked(&self) -> bool {
        self.revoked.load(Ordering::SeqCst)
    }

    /// The credentials' values, to redact from whatever leaves the run.
    pub(crate) fn secrets(&self) -> Vec<String> {
        self.live.iter().filter_map(|l| l.token.clone()).collect()
    }

    pub(crate) fn denials(&self) -> u64 {
        self.denials.load(Ordering::Relaxed)
    }

    fn refuse(&self, why: String) -> GateAnswer {
        self.denials.fetch_add(1, Ordering::Relaxed);
        self.refusals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(why.clone());
        GateAnswer::Refuse(why)
    }

    /// The answer about one request to a capability host.
    pub(crate) fn decide(&self, request: &GateRequest) -> GateAnswer {
        let host = request.host.as_str();
        let Some(live) = self.live.iter().find(|l| l.covers(host)) else {
            return GateAnswer::Pass;
        };
        if self.revoked() {
            return self.refuse("the run is over: its capabilities are revoked".to_owned());
        }
        let action = match live.action(host, &request.method, &request.path) {
            Ok(Some(action)) => action,
            Ok(None) => {
                let listed = self
                    .also_allowed
                    .iter()
                    .any(|e| warden_netproxy::Host::parse(host).is_ok_and(|h| e.matches_host(&h)));
                if listed {
                    return GateAnswer::Pass;
                }
                return self.refuse(format!(
                    "{} {} is outside the capability's repository {}",
                    request.method, request.path, live.repository
                ));
            }
            Err(why) => return self.refuse(why),
        };
        if SystemTime::now() > live.expires {
            return self.refuse(format!("capability {} has expired", live.id));
        }
        if !request.tls {
            return self.refuse("a credential is only put on requests over TLS".to_owned());
        }
        if !live.actions.iter().any(|a| a == action) {
            return self.refuse(format!(
                "{action} is not among the actions of capability {} ({})",
                live.id,
                live.actions.join(", ")
            ));
        }
        if live.approval_for.iter().any(|a| a == action) {
            let ask = ApprovalAsk {
                capability_id: live.id.clone(),
                repository: live.repository.clone(),
                action: action.to_owned(),
                method: request.method.clone(),
                host: host.to_owned(),
                path: request.path.clone(),
            };
            let approved = self.approver.as_ref().is_some_and(|approve| approve(&ask));
            if !approved {
                return self.refuse(format!(
                    "{action} needs a person's approval, and it was not given"
                ));
            }
        }
        if !live.has_credential() {
            return self.refuse(format!(
                "no credential for {} is configured (see docs/manifest.md)",
                live.git_host
            ));
        }
        GateAnswer::Add(live.headers(host, &request.path))
    }
}

fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(TABLE[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::CapabilityKind;

    fn cap(actions: &[&str], approval: &[&str]) -> Capability {
        Capability {
            kind: CapabilityKind::SourceControl,
            repository: Some("acme/docs-site".to_owned()),
            host: None,
            actions: actions.iter().map(|s| (*s).to_owned()).collect(),
            expires_after_seconds: Some(60),
            require_approval_for: approval.iter().map(|s| (*s).to_owned()).collect(),
            approval_ref: None,
        }
    }

    fn req(host: &str, method: &str, path: &str) -> GateRequest {
        GateRequest {
            host: host.to_owned(),
            method: method.to_owned(),
            path: path.to_owned(),
            tls: true,
        }
    }

    #[allow(clippy::unnecessary_wraps)] // the shape of a credential lookup
    fn token(_: &str) -> Option<String> {
        Some("ghs_secret".to_owned())
    }

    #[test]
    fn requests_get_the_credential_only_in_scope_and_for_granted_actions() {
        let live = Live::new(
            "cap_1".into(),
            &cap(&["read", "create_branch"], &[]),
            SystemTime::now(),
            &token,
        );
        let caps = Capabilities::new(vec![live], Vec::new(), None);
        let read = caps.decide(&req(
            "api.github.com",
            "GET",
            "/repos/acme/docs-site/contents/README.md",
        ));
        assert_eq!(
            read,
            GateAnswer::Add(vec![("authorization".into(), "Bearer ghs_secret".into())])
        );
        let clone = caps.decide(&req(
            "github.com",
            "GET",
            "/acme/docs-site.git/info/refs?service=git-upload-pack",
        ));
        let GateAnswer::Add(headers) = clone else {
            panic!("{clone:?}")
        };
        assert_eq!(
            headers[0].1,
            format!("Basic {}", base64(b"x-access-token:ghs_secret"))
        );
        // Another repository, a prefix of the name, an action not granted, a push.
        for (host, method, path) in [
            ("api.github.com", "GET", "/repos/acme/other"),
            ("api.github.com", "GET", "/repos/acme/docs-site-fork"),
            ("api.github.com", "POST", "/repos/acme/docs-site/pulls"),
            ("github.com", "POST", "/acme/docs-site.git/git-receive-pack"),
            ("api.github.com", "DELETE", "/repos/acme/docs-site"),
        ] {
            let answer = caps.decide(&req(host, method, path));
            assert!(
                matches!(answer, GateAnswer::Refuse(_)),
                "{method} {path}: {answer:?}"
            );
        }
        assert_eq!(caps.denials(), 5);
        caps.revoke();
        assert!(matches!(
            caps.decide(&req("api.github.com", "GET", "/repos/acme/docs-site")),
            GateAnswer::Refuse(_)
        ));
    }

    #[test]
    fn actions_needing_approval_wait_for_the_approver() {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&asked);
        let approver: Approver = Arc::new(move |ask: &ApprovalAsk| {
            seen.lock().unwrap().push(ask.action.clone());
            ask.action == "create_pull_request"
        });
        let live = Live::new(
            "cap_1".into(),
            &cap(
                &["push_branch", "create_pull_request"],
                &["push_branch", "create_pull_request"],
            ),
            SystemTime::now(),
            &token,
        );
        let caps = Capabilities::new(vec![live], Vec::new(), Some(approver));
        assert!(matches!(
            caps.decide(&req(
                "github.com",
                "POST",
                "/acme/docs-site.git/git-receive-pack"
            )),
            GateAnswer::Refuse(_)
        ));
        assert!(matches!(
            caps.decide(&req(
                "api.github.com",
                "POST",
                "/repos/acme/docs-site/pulls"
            )),
            GateAnswer::Add(_)
        ));
        assert_eq!(
            *asked.lock().unwrap(),
            ["push_branch", "create_pull_request"]
        );
    }

    #[test]
    fn an_expired_capability_refuses() {
        let live = Live::new(
            "cap_1".into(),
            &cap(&["read"], &[]),
            SystemTime::now() - Duration::from_secs(120),
            &token,
        );
        let caps = Capabilities::new(vec![live], Vec::new(), None);
        let answer = caps.decide(&req("api.github.com", "GET", "/repos/acme/docs-site"));
        assert!(
            matches!(answer, GateAnswer::Refuse(ref why) if why.contains("expired")),
            "{answer:?}"
        );
    }

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"x-access-token:t"), "eC1hY2Nlc3MtdG9rZW46dA==");
    }
}
