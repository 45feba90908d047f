//! Where a protected server sends its clients: the challenge of its `401` (`WWW-Authenticate`),
//! its Protected Resource Metadata (RFC 9728), its authorization server's metadata (RFC 8414,
//! else the discovery document of `OpenID` Connect), and, for a server of protocol 2025-03-26 with none of them,
//! the default endpoints at its origin.

use serde_json::Value;

use super::OAuthError;

/// What a server's `WWW-Authenticate: Bearer …` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub(crate) resource_metadata: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) error: Option<String>,
}

/// The parameters of a `Bearer` challenge (quoted or not).
pub(crate) fn challenge(header: &str) -> Challenge {
    let rest = header.trim();
    let rest = rest
        .strip_prefix("Bearer")
        .or_else(|| rest.strip_prefix("bearer"))
        .unwrap_or(rest);
    let mut found = Challenge::default();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let name: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if name.is_empty() {
            break;
        }
        let value: String = if chars.peek() == Some(&'"') {
            chars.next();
            let mut value = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
            value
        } else {
            chars.by_ref().take_while(|c| *c != ',').collect()
        };
        match name.trim() {
            "resource_metadata" => found.resource_metadata = Some(value),
            "scope" => found.scope = Some(value),
            "error" => found.error = Some(value),
            _ => {}
        }
    }
    found
}

/// Where the authorization server's endpoints are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoints {
    pub(crate) authorization: String,
    pub(crate) token: String,
    pub(crate) registration: Option<String>,
    /// `token_endpoint_auth_methods_supported`.
    pub(crate) auth_methods: Vec<String>,
    /// `client_id_metadata_document_supported`.
    pub(crate) cimd: bool,
    /// `grant_types_supported` (empty when not said).
    pub(crate) grant_types: Vec<String>,
    /// `issuer`: the audience of a client's signed assertion.
    pub(crate) issuer: Option<String>,
}

/// The scheme, host and port of `url`: `https://a.example:8443`.
pub(crate) fn origin(url: &reqwest::Url) -> String {
    let mut origin = format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default());
    if let Some(port) = url.port() {
        origin = format!("{origin}:{port}");
    }
    origin
}

/// `url`'s path without its trailing `/` (empty for the root).
fn path_of(url: &reqwest::Url) -> String {
    url.path().trim_end_matches('/').to_owned()
}

/// The Protected Resource Metadata documents to try, in order: the one the challenge names,
/// else the path-based one, then the root's.
pub(crate) fn resource_metadata_urls(server: &reqwest::Url, challenge: &Challenge) -> Vec<String> {
    if let Some(named) = &challenge.resource_metadata {
        return vec![named.clone()];
    }
    let origin = origin(server);
    let path = path_of(server);
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    urls
}

/// The authorization server metadata documents to try for `issuer`, in the order the
/// specification gives (never the root's for an issuer with a path).
pub(crate) fn server_metadata_urls(issuer: &reqwest::Url) -> Vec<String> {
    let origin = origin(issuer);
    let path = path_of(issuer);
    if path.is_empty() {
        return vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ];
    }
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ]
}

/// The endpoints a metadata document names; an error when it lacks the two a login needs.
pub(crate) fn endpoints(metadata: &Value) -> Result<Endpoints, OAuthError> {
    let text = |key: &str| metadata[key].as_str().map(str::to_owned);
    let (Some(authorization), Some(token)) =
        (text("authorization_endpoint"), text("token_endpoint"))
    else {
        return Err(OAuthError::Discovery(
            "the authorization server's metadata names no authorization_endpoint or \
             token_endpoint"
                .to_owned(),
        ));
    };
    Ok(Endpoints {
        authorization,
        token,
        registration: text("registration_endpoint"),
        auth_methods: strings(&metadata["token_endpoint_auth_methods_supported"]),
        cimd: metadata["client_id_metadata_document_supported"] == Value::Bool(true),
        grant_types: strings(&metadata["grant_types_supported"]),
        issuer: text("issuer"),
    })
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// The endpoints of a server with no metadata at all (protocol 2025-03-26): at its origin.
pub(crate) fn default_endpoints(server: &reqwest::Url) -> Endpoints {
    let origin = origin(server);
    Endpoints {
        authorization: format!("{origin}/authorize"),
        token: format!("{origin}/token"),
        registration: Some(format!("{origin}/register")),
        auth_methods: Vec::new(),
        cimd: false,
        grant_types: Vec::new(),
        issuer: None,
    }
}

/// Whether the resource a metadata document is for covers `server`: the same origin, and a
/// path that is `server`'s or above it. Another resource's metadata is refused before any
/// authorization is asked for (a token for it must not be sent to this server, nor one of this
/// server's to it).
pub(crate) fn covers(resource: &str, server: &reqwest::Url) -> bool {
    let Ok(resource) = reqwest::Url::parse(resource) else {
        return false;
    };
    if origin(&resource) != origin(server) {
        return false;
    }
    let above = path_of(&resource);
    let path = path_of(server);
    path == above || path.starts_with(&format!("{above}/")) || above.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> reqwest::Url {
        reqwest::Url::parse(text).unwrap()
    }

    #[test]
    fn a_challenge_s_parameters_are_read_quoted_or_not() {
        let c = challenge(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/.well-known/oauth-protected-resource""#,
        );
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert!(c.resource_metadata.unwrap().ends_with("protected-resource"));
        assert_eq!(
            challenge("Bearer scope=read").scope.as_deref(),
            Some("read")
        );
    }

    #[test]
    fn metadata_is_looked_for_where_the_specification_says() {
        let server = url("https://h.example/api/mcp");
        assert_eq!(
            resource_metadata_urls(&server, &Challenge::default()),
            [
                "https://h.example/.well-known/oauth-protected-resource/api/mcp",
                "https://h.example/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            server_metadata_urls(&url("https://as.example/tenant1")),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(server_metadata_urls(&url("https://as.example")).len(), 2);
    }

    #[test]
    fn a_resource_covers_its_own_server_only() {
        let server = url("http://127.0.0.1:3000/mcp");
        assert!(covers("http://127.0.0.1:3000/mcp", &server));
        assert!(covers("http://127.0.0.1:3000", &server));
        assert!(!covers("https://evil.example.com/mcp", &server));
        assert!(!covers("http://127.0.0.1:3000/other", &server));
        assert!(!covers("http://127.0.0.1:3000/mc", &server));
    }
}
