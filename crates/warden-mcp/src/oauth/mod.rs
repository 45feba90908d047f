//! Logging in to a remote MCP server (OAuth 2.1 as the MCP specification has it): discovery from
//! the server's `401`, a client (pre-registered, a Client ID Metadata Document, or registered
//! dynamically), an authorization with PKCE (S256) and the `resource` the token is for, the code
//! exchanged for tokens. What the login gives is kept by [`store`], readable by the user only.

mod discovery;
mod redirect;
pub mod store;
mod token;

pub use token::refresh;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use discovery::{Challenge, Endpoints};
use redirect::{code_of, immediate, receive};
use token::{client_credentials, token_request, tokens};

/// Why a login failed, said so a person can act on it.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("finding how to log in: {0}")]
    Discovery(String),
    #[error("the server's metadata is for {resource}, not for {server}: no token is asked for")]
    ResourceMismatch { resource: String, server: String },
    #[error("registering warden as a client: {0}")]
    Registration(String),
    #[error("the authorization: {0}")]
    Authorization(String),
    #[error("the token endpoint: {0}")]
    Token(String),
    #[error("HTTP: {0}")]
    Http(String),
    #[error("the server asks for no login")]
    NotRequired,
}

/// A client registered beforehand (its id, and its secret if it has one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    pub client_id: String,
    pub client_secret: Option<String>,
}

/// How the authorization code comes back.
pub enum Redirect {
    /// A browser: `show` is handed the address to open (it opens it, or prints it); the code
    /// comes back to a listener on loopback, within `wait`.
    Loopback {
        show: Box<dyn Fn(&str) + Send + Sync>,
        wait: Duration,
    },
    /// An authorization server that answers at once (a test's, or a gateway's for a logged-in
    /// session): its redirect is read, not followed.
    Immediate,
    /// No browser on this machine, or no way back to it: `show` is handed the address to open
    /// elsewhere, and `read` returns the address the browser ended on (whose page will not
    /// load: nothing listens there), pasted by the person.
    Paste {
        show: Box<dyn Fn(&str) + Send + Sync>,
        read: Box<dyn Fn() -> Option<String> + Send + Sync>,
    },
}

/// What a login asks for beyond the server's address.
pub struct Login {
    pub client: Option<Client>,
    /// This client's metadata document (a URL), used as its id where the server takes one.
    pub client_metadata_url: Option<String>,
    pub redirect: Redirect,
    /// The client's private key (PKCS #8 PEM, P-256) where it authenticates with a signed
    /// assertion (`private_key_jwt`) instead of a secret.
    pub signing_key: Option<String>,
}

/// What a login gives: the tokens, and how to refresh them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// Seconds since the epoch; `None` when the server did not say.
    pub expires_at: Option<u64>,
    pub scope: Option<String>,
    /// The resource the token is for: it is sent to that server only.
    pub resource: String,
    pub token_endpoint: String,
    pub client: Client,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub auth_method: String,
}

impl Tokens {
    /// Whether the token is for the server at `url` (the resource it was issued for covers it):
    /// a token is never sent elsewhere.
    pub fn is_for(&self, url: &str) -> bool {
        reqwest::Url::parse(url).is_ok_and(|server| discovery::covers(&self.resource, &server))
    }

    /// Seconds until it expires (0 once it has); `None` when the server did not say.
    pub fn expires_in(&self) -> Option<u64> {
        self.expires_at.map(|at| at.saturating_sub(now()))
    }

    /// Whether it has expired, or will within a minute.
    pub fn expiring(&self) -> bool {
        self.expires_at.is_some_and(|at| at <= now() + 60)
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn http() -> Result<reqwest::Client, OAuthError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .user_agent(concat!("warden/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| OAuthError::Http(e.to_string()))
}

fn block_on<T>(work: impl Future<Output = T>) -> Result<T, OAuthError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| OAuthError::Http(e.to_string()))?;
    Ok(runtime.block_on(work))
}

/// Logs in to the MCP server at `url`: asks it (an `initialize` without a token) unless
/// `challenge` is the `WWW-Authenticate` of a refusal already had (a missing scope: a step-up),
/// finds its authorization server, gets a client, has the user authorize and takes the tokens.
/// `scope` asks for more besides.
pub fn login(
    url: &str,
    login: &Login,
    challenge: Option<&str>,
    scope: Option<&str>,
) -> Result<Tokens, OAuthError> {
    block_on(login_async(url, login, challenge, scope))?
}

/// The scope a `WWW-Authenticate` challenge asks for.
pub fn challenge_scope(header: &str) -> Option<String> {
    discovery::challenge(header).scope
}

async fn login_async(
    url: &str,
    login: &Login,
    given: Option<&str>,
    extra: Option<&str>,
) -> Result<Tokens, OAuthError> {
    let server = reqwest::Url::parse(url).map_err(|e| OAuthError::Discovery(e.to_string()))?;
    let client = http()?;
    let challenge = match given {
        Some(header) => discovery::challenge(header),
        None => probe(&client, url).await?,
    };
    let Found {
        resource,
        scopes_supported,
        endpoints,
    } = discover(&client, url, &server, &challenge).await?;
    let scope = [
        challenge.scope.clone().or(scopes_supported),
        extra.map(str::to_owned),
    ]
    .into_iter()
    .flatten()
    .filter(|s| !s.trim().is_empty())
    .collect::<Vec<_>>()
    .join(" ");
    let scope = (!scope.is_empty()).then_some(scope);
    // An authorization server for machines only: the client's own credentials, no person.
    let grants = &endpoints.grant_types;
    if !grants.is_empty()
        && !grants.iter().any(|g| g == "authorization_code")
        && grants.iter().any(|g| g == "client_credentials")
    {
        return client_credentials(&client, &endpoints, login, &resource, scope).await;
    }
    let listener = match &login.redirect {
        Redirect::Loopback { .. } => Some(
            tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .map_err(|e| OAuthError::Authorization(e.to_string()))?,
        ),
        Redirect::Immediate | Redirect::Paste { .. } => None,
    };
    let port = listener
        .as_ref()
        .and_then(|l| l.local_addr().ok())
        .map_or(1, |a| a.port());
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let (client_id, auth_method) = register(&client, &endpoints, login, &redirect_uri).await?;
    let verifier = random_text(48)?;
    let challenge_text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
        ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()),
    );
    let state = random_text(24)?;
    let mut authorize = reqwest::Url::parse(&endpoints.authorization)
        .map_err(|e| OAuthError::Discovery(e.to_string()))?;
    {
        let mut query = authorize.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &client_id.client_id)
            .append_pair("redirect_uri", &redirect_uri)
            .append_pair("code_challenge", &challenge_text)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state)
            .append_pair("resource", &resource);
        if let Some(scope) = &scope {
            query.append_pair("scope", scope);
        }
    }
    let callback = match (&login.redirect, listener) {
        (Redirect::Loopback { show, wait }, Some(listener)) => {
            show(authorize.as_str());
            receive(listener, *wait).await?
        }
        (Redirect::Paste { show, read }, _) => {
            show(authorize.as_str());
            read().ok_or_else(|| OAuthError::Authorization("no address was pasted".to_owned()))?
        }
        _ => immediate(&client, authorize.as_str()).await?,
    };
    let code = code_of(&callback, &state)?;
    let mut form = vec![
        ("grant_type", "authorization_code".to_owned()),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier),
        ("resource", resource.clone()),
    ];
    let answer = token_request(
        &client,
        &endpoints.token,
        &client_id,
        &auth_method,
        &mut form,
    )
    .await?;
    tokens(&answer, &resource, &endpoints.token, client_id, auth_method)
}

/// What discovery finds: the resource a token is for, the scopes the server lists, and the
/// authorization server's endpoints.
struct Found {
    resource: String,
    scopes_supported: Option<String>,
    endpoints: Endpoints,
}

async fn discover(
    client: &reqwest::Client,
    url: &str,
    server: &reqwest::Url,
    challenge: &Challenge,
) -> Result<Found, OAuthError> {
    let mut resource = url.split('#').next().unwrap_or(url).to_owned();
    let mut scopes_supported = None;
    let mut issuer = None;
    for candidate in discovery::resource_metadata_urls(server, challenge) {
        if let Some(metadata) = get_json(client, &candidate).await {
            if let Some(named) = metadata["resource"].as_str() {
                if !discovery::covers(named, server) {
                    return Err(OAuthError::ResourceMismatch {
                        resource: named.to_owned(),
                        server: url.to_owned(),
                    });
                }
                named.clone_into(&mut resource);
            }
            scopes_supported = metadata["scopes_supported"].as_array().map(|s| {
                s.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" ")
            });
            issuer = metadata["authorization_servers"][0]
                .as_str()
                .map(str::to_owned);
            break;
        }
    }
    // Without resource metadata (protocol 2025-03-26), the server is its own authorization
    // server.
    let issuer = issuer.unwrap_or_else(|| discovery::origin(server));
    let issuer_url = reqwest::Url::parse(&issuer)
        .map_err(|e| OAuthError::Discovery(format!("{issuer}: {e}")))?;
    for candidate in discovery::server_metadata_urls(&issuer_url) {
        if let Some(metadata) = get_json(client, &candidate).await {
            return Ok(Found {
                resource,
                scopes_supported,
                endpoints: discovery::endpoints(&metadata)?,
            });
        }
    }
    Ok(Found {
        resource,
        scopes_supported,
        endpoints: discovery::default_endpoints(&issuer_url),
    })
}

/// An `initialize` without a token: the challenge of the server's refusal.
async fn probe(client: &reqwest::Client, url: &str) -> Result<Challenge, OAuthError> {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "warden", "version": env!("CARGO_PKG_VERSION")}}});
    let response = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| OAuthError::Http(e.to_string()))?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        let header = response
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        return Ok(discovery::challenge(header));
    }
    if status.is_success() {
        return Err(OAuthError::NotRequired);
    }
    Err(OAuthError::Discovery(format!(
        "the server answered HTTP {status}"
    )))
}

/// A response's body as JSON, at most 1 MiB of it.
async fn json_of(response: reqwest::Response) -> Result<Value, String> {
    if response.content_length().is_some_and(|n| n > 1 << 20) {
        return Err("an answer of more than 1 MiB".to_owned());
    }
    let bytes = response.bytes().await.map_err(|e| e.to_string())?;
    if bytes.len() > 1 << 20 {
        return Err("an answer of more than 1 MiB".to_owned());
    }
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
}

async fn get_json(client: &reqwest::Client, url: &str) -> Option<Value> {
    let response = client.get(url).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    json_of(response).await.ok().filter(Value::is_object)
}

/// The client to log in as, and how it authenticates at the token endpoint: the one given,
/// else its metadata document's URL where the server takes one, else one registered now.
async fn register(
    client: &reqwest::Client,
    endpoints: &Endpoints,
    login: &Login,
    redirect_uri: &str,
) -> Result<(Client, String), OAuthError> {
    if let Some(given) = &login.client {
        let method = method_for(given, endpoints, None);
        return Ok((given.clone(), method));
    }
    if endpoints.cimd
        && let Some(url) = &login.client_metadata_url
    {
        let cimd = Client {
            client_id: url.clone(),
            client_secret: None,
        };
        return Ok((cimd, "none".to_owned()));
    }
    let Some(registration) = &endpoints.registration else {
        return Err(OAuthError::Registration(
            "the server offers no registration and no client is set for it (client_id)".to_owned(),
        ));
    };
    let wanted = if endpoints.auth_methods.iter().any(|m| m == "none")
        || endpoints.auth_methods.is_empty()
    {
        "none"
    } else {
        endpoints.auth_methods[0].as_str()
    };
    let body = json!({
        "client_name": "warden",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": wanted,
    });
    let response = client
        .post(registration)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| OAuthError::Registration(e.to_string()))?;
    let status = response.status();
    let answer = json_of(response)
        .await
        .map_err(|e| OAuthError::Registration(format!("HTTP {status}: {e}")))?;
    let Some(client_id) = answer["client_id"].as_str() else {
        return Err(OAuthError::Registration(format!(
            "HTTP {status}: no client_id"
        )));
    };
    let registered = Client {
        client_id: client_id.to_owned(),
        client_secret: answer["client_secret"].as_str().map(str::to_owned),
    };
    let method = method_for(
        &registered,
        endpoints,
        answer["token_endpoint_auth_method"].as_str(),
    );
    Ok((registered, method))
}

/// How `client` authenticates at the token endpoint: as registered, else the first the server
/// supports that fits (a secret is sent in a header before a body).
fn method_for(client: &Client, endpoints: &Endpoints, registered: Option<&str>) -> String {
    if let Some(method) = registered {
        return method.to_owned();
    }
    if client.client_secret.is_none() {
        return "none".to_owned();
    }
    let supports = |m: &str| endpoints.auth_methods.iter().any(|s| s == m);
    if supports("client_secret_basic") || !supports("client_secret_post") {
        "client_secret_basic".to_owned()
    } else {
        "client_secret_post".to_owned()
    }
}

/// `bytes` random bytes, as URL-safe text.
fn random_text(bytes: usize) -> Result<String, OAuthError> {
    use ring::rand::SecureRandom as _;
    let mut buffer = vec![0u8; bytes];
    ring::rand::SystemRandom::new()
        .fill(&mut buffer)
        .map_err(|_| OAuthError::Authorization("no randomness".to_owned()))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buffer))
}
