//! The token endpoint: the code or the client's own credentials exchanged for tokens, the
//! client authenticated as it registered (a secret in a header or the body, a signed assertion,
//! or nothing), and tokens renewed.

use base64::Engine as _;
use serde_json::{Value, json};

use super::discovery::Endpoints;
use super::{
    Client, Login, OAuthError, Tokens, block_on, http, json_of, method_for, now, random_text,
};

/// A token request of `form`, the client authenticated by `method`.
pub(super) async fn token_request(
    client: &reqwest::Client,
    endpoint: &str,
    who: &Client,
    method: &str,
    form: &mut Vec<(&str, String)>,
) -> Result<Value, OAuthError> {
    let mut request = client.post(endpoint);
    match (method, &who.client_secret) {
        ("client_secret_basic", Some(secret)) => {
            let encode = |s: &str| {
                reqwest::Url::parse_with_params("x:", [("v", s)])
                    .ok()
                    .and_then(|u| u.query().map(|q| q.trim_start_matches("v=").to_owned()))
                    .unwrap_or_default()
            };
            let pair = format!("{}:{}", encode(&who.client_id), encode(secret));
            let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
            request = request.header(reqwest::header::AUTHORIZATION, format!("Basic {encoded}"));
        }
        ("client_secret_post", Some(secret)) => {
            form.push(("client_id", who.client_id.clone()));
            form.push(("client_secret", secret.clone()));
        }
        // `none`, or an assertion in the form already: the client names itself.
        _ => form.push(("client_id", who.client_id.clone())),
    }
    let response = request
        .form(&*form)
        .send()
        .await
        .map_err(|e| OAuthError::Token(e.to_string()))?;
    let status = response.status();
    let answer = json_of(response)
        .await
        .map_err(|e| OAuthError::Token(format!("HTTP {status}: {e}")))?;
    if !status.is_success() {
        let error = answer["error"].as_str().unwrap_or("an error");
        return Err(OAuthError::Token(format!("HTTP {status}: {error}")));
    }
    Ok(answer)
}

pub(super) fn tokens(
    answer: &Value,
    resource: &str,
    token_endpoint: &str,
    client: Client,
    auth_method: String,
) -> Result<Tokens, OAuthError> {
    let Some(access_token) = answer["access_token"].as_str() else {
        return Err(OAuthError::Token(
            "the answer holds no access_token".to_owned(),
        ));
    };
    Ok(Tokens {
        access_token: access_token.to_owned(),
        refresh_token: answer["refresh_token"].as_str().map(str::to_owned),
        expires_at: answer["expires_in"].as_u64().map(|s| now() + s),
        scope: answer["scope"].as_str().map(str::to_owned),
        resource: resource.to_owned(),
        token_endpoint: token_endpoint.to_owned(),
        client,
        auth_method,
    })
}

/// The client credentials grant: the given client, authenticated by its secret or by an
/// assertion signed with its key (whose audience is the authorization server).
pub(super) async fn client_credentials(
    client: &reqwest::Client,
    endpoints: &Endpoints,
    login: &Login,
    resource: &str,
    scope: Option<String>,
) -> Result<Tokens, OAuthError> {
    let Some(who) = login.client.clone() else {
        return Err(OAuthError::Registration(
            "the server takes only a client's own credentials, and none is set (client_id)"
                .to_owned(),
        ));
    };
    let mut form = vec![
        ("grant_type", "client_credentials".to_owned()),
        ("resource", resource.to_owned()),
    ];
    if let Some(scope) = scope {
        form.push(("scope", scope));
    }
    let method = match &login.signing_key {
        Some(pem) => {
            let audience = endpoints
                .issuer
                .clone()
                .unwrap_or_else(|| endpoints.token.clone());
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
            ));
            form.push((
                "client_assertion",
                assertion(pem, &who.client_id, &audience)?,
            ));
            "private_key_jwt".to_owned()
        }
        None => method_for(&who, endpoints, None),
    };
    let answer = token_request(client, &endpoints.token, &who, &method, &mut form).await?;
    tokens(&answer, resource, &endpoints.token, who, method)
}

/// A JWT (ES256) saying that `client_id` is asking `audience`, for a minute.
fn assertion(pem: &str, client_id: &str, audience: &str) -> Result<String, OAuthError> {
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    let refused = |why: &str| OAuthError::Token(format!("the client's key: {why}"));
    let body: String = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body.trim())
        .map_err(|_| refused("not PEM"))?;
    let rng = ring::rand::SystemRandom::new();
    let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
        .map_err(|_| refused("not a P-256 key in PKCS #8"))?;
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let issued = now();
    let header = url.encode(json!({"alg": "ES256", "typ": "JWT"}).to_string());
    let claims = url.encode(
        json!({
            "iss": client_id, "sub": client_id, "aud": audience,
            "iat": issued, "exp": issued + 60, "jti": random_text(16)?,
        })
        .to_string(),
    );
    let signed = format!("{header}.{claims}");
    let signature = key
        .sign(&rng, signed.as_bytes())
        .map_err(|_| refused("it would not sign"))?;
    Ok(format!("{signed}.{}", url.encode(signature.as_ref())))
}

/// New tokens for `tokens` from its refresh token.
pub fn refresh(tokens: &Tokens) -> Result<Tokens, OAuthError> {
    let Some(refresh_token) = tokens.refresh_token.clone() else {
        return Err(OAuthError::Token(
            "there is no refresh token: log in again".to_owned(),
        ));
    };
    block_on(async {
        let client = http()?;
        let mut form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.clone()),
            ("resource", tokens.resource.clone()),
        ];
        let answer = token_request(
            &client,
            &tokens.token_endpoint,
            &tokens.client,
            &tokens.auth_method,
            &mut form,
        )
        .await?;
        let mut renewed = self::tokens(
            &answer,
            &tokens.resource,
            &tokens.token_endpoint,
            tokens.client.clone(),
            tokens.auth_method.clone(),
        )?;
        // A server that does not rotate refresh tokens keeps the one it gave.
        if renewed.refresh_token.is_none() {
            renewed.refresh_token = Some(refresh_token);
        }
        Ok(renewed)
    })?
}
