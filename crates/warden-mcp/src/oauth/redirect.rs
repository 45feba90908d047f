//! How the authorization code comes back: a redirect read without following it, or the one
//! request a browser makes to warden's loopback listener; its `state` checked.

use std::time::Duration;

use super::OAuthError;

/// The authorization server's redirect, read without following it.
pub(super) async fn immediate(client: &reqwest::Client, url: &str) -> Result<String, OAuthError> {
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| OAuthError::Authorization(e.to_string()))?;
    response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| {
            OAuthError::Authorization(format!(
                "the server answered HTTP {} without a redirect",
                response.status()
            ))
        })
}

/// The one request the browser makes to the loopback listener, within `wait`: its target.
pub(super) async fn receive(
    listener: tokio::net::TcpListener,
    wait: Duration,
) -> Result<String, OAuthError> {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    let accepted = tokio::time::timeout(wait, listener.accept())
        .await
        .map_err(|_| OAuthError::Authorization("no answer came back in time".to_owned()))?
        .map_err(|e| OAuthError::Authorization(e.to_string()))?;
    let (stream, _) = accepted;
    let mut reader = tokio::io::BufReader::new(stream);
    let mut line = String::new();
    reader
        .read_line(&mut line)
        .await
        .map_err(|e| OAuthError::Authorization(e.to_string()))?;
    let target = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let body = "warden is logged in; this tab can be closed.";
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = reader.get_mut().write_all(answer.as_bytes()).await;
    Ok(format!("http://127.0.0.1{target}"))
}

/// The code of a redirect to `callback`, its `state` checked.
pub(super) fn code_of(callback: &str, state: &str) -> Result<String, OAuthError> {
    let url = reqwest::Url::parse(callback)
        .map_err(|e| OAuthError::Authorization(format!("{callback}: {e}")))?;
    let get = |key: &str| {
        url.query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(error) = get("error") {
        return Err(OAuthError::Authorization(format!("refused: {error}")));
    }
    if get("state").as_deref() != Some(state) {
        return Err(OAuthError::Authorization(
            "the answer's state is not the one sent: it is not this login's".to_owned(),
        ));
    }
    get("code").ok_or_else(|| OAuthError::Authorization("the answer holds no code".to_owned()))
}
