//! This run's certificate authority and the TLS set-ups around it: the CA made in memory for the
//! hosts whose TLS the proxy ends, the server side that answers with a certificate for the name
//! asked, and the client side that verifies the real upstream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::sign::CertifiedKey;

use crate::host::Entry;

/// A header put on every request to the hosts an entry names (a short-lived credential).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    pub host: Entry,
    pub header: String,
    pub value: String,
}

/// The CA of one run, and the certificates it made, by host.
pub(crate) struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
    leaves: Mutex<HashMap<String, Arc<CertifiedKey>>>,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ca")
    }
}

impl Ca {
    pub(crate) fn new() -> Result<Self, rcgen::Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params
            .distinguished_name
            .push(DnType::CommonName, "warden egress proxy (this run only)");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(Self {
            issuer,
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA's certificate, for the sandbox to trust.
    pub(crate) fn pem(&self) -> String {
        self.issuer.pem()
    }

    fn leaf(&self, host: &str) -> Option<Arc<CertifiedKey>> {
        let mut leaves = self.leaves.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = leaves.get(host) {
            return Some(Arc::clone(found));
        }
        let key = KeyPair::generate().ok()?;
        let params = CertificateParams::new(vec![host.to_owned()]).ok()?;
        let cert = params.signed_by(&key, &self.issuer).ok()?;
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let signing = rustls::crypto::ring::sign::any_supported_type(&der).ok()?;
        let certified = Arc::new(CertifiedKey::new(
            vec![cert.der().clone(), self.issuer.der().clone()],
            signing,
        ));
        leaves.insert(host.to_owned(), Arc::clone(&certified));
        Some(certified)
    }
}

#[derive(Debug)]
struct Certs(Arc<Ca>);

impl rustls::server::ResolvesServerCert for Certs {
    fn resolve(&self, hello: rustls::server::ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.0.leaf(hello.server_name()?)
    }
}

/// The server side: certificates made for each name asked, HTTP/1.1 only.
pub(crate) fn server_config(ca: &Arc<Ca>) -> Arc<rustls::ServerConfig> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap_or_else(|_| unreachable!("ring supports the default TLS versions"))
    .with_no_client_auth()
    .with_cert_resolver(Arc::new(Certs(Arc::clone(ca))));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// The client side: the upstream verified against `roots` (the system's, by default).
pub(crate) fn client_config(
    roots: Option<&[CertificateDer<'static>]>,
) -> Arc<rustls::ClientConfig> {
    let mut store = rustls::RootCertStore::empty();
    match roots {
        Some(roots) => {
            for root in roots {
                let _ = store.add(root.clone());
            }
        }
        None => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap_or_else(|_| unreachable!("ring supports the default TLS versions"))
    .with_root_certificates(store)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}
