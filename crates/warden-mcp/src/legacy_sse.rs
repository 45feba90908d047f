//! The older HTTP+SSE transport (protocol 2024-11-05), for servers that still speak it: a `GET`
//! opens an event stream whose first event (`endpoint`) names where to `POST` messages; every
//! message of the server (answers, requests, notices) comes on the stream. Over warden's own
//! client, with the same limits as streamable HTTP; the address to post to must be the
//! server's own origin.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rmcp::RoleClient;
use rmcp::model::ServerJsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use crate::http::MAX_MESSAGE;

/// A session over the older transport.
pub(crate) struct LegacySse {
    client: reqwest::Client,
    /// Where messages are posted (the `endpoint` event's, resolved against the server's URL).
    endpoint: Arc<str>,
    headers: reqwest::header::HeaderMap,
    incoming: tokio::sync::mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl LegacySse {
    /// Opens the event stream at `url` and waits, within `wait`, for the address to post to.
    /// Run inside the runtime that will drive the session.
    pub(crate) async fn connect(
        url: &str,
        headers: reqwest::header::HeaderMap,
        wait: Duration,
    ) -> Result<LegacySse, String> {
        let base = reqwest::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(wait)
            .user_agent(concat!("warden/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        let response = client
            .get(url)
            .headers(headers.clone())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!(
                "the event stream answered HTTP {}",
                response.status()
            ));
        }
        let mut events = crate::http::bounded_events(response, MAX_MESSAGE);
        let first = tokio::time::timeout(wait, async {
            while let Some(event) = events.next().await {
                let event = event.map_err(|e| e.to_string())?;
                if event.event.as_deref() == Some("endpoint") {
                    return Ok(event.data.unwrap_or_default());
                }
            }
            Err("the event stream ended before it named where to post".to_owned())
        })
        .await
        .map_err(|_| "the server did not name where to post in time".to_owned())??;
        let endpoint = base
            .join(first.trim())
            .map_err(|e| format!("the endpoint {first:?}: {e}"))?;
        if endpoint.origin() != base.origin() {
            return Err(format!(
                "the server names {endpoint} to post to: not its own origin, so nothing is sent"
            ));
        }
        let (sender, incoming) = tokio::sync::mpsc::channel(64);
        let reader = tokio::spawn(async move {
            while let Some(Ok(event)) = events.next().await {
                let is_message = event.event.as_deref().is_none_or(|e| e == "message");
                let Some(data) = event.data.filter(|_| is_message) else {
                    continue;
                };
                // A message that is not JSON-RPC is dropped; the session goes on.
                if let Ok(message) = serde_json::from_str::<ServerJsonRpcMessage>(&data)
                    && sender.send(message).await.is_err()
                {
                    break;
                }
            }
        });
        Ok(LegacySse {
            client,
            endpoint: Arc::from(endpoint.as_str()),
            headers,
            incoming,
            reader,
        })
    }
}

impl Transport<RoleClient> for LegacySse {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (client, endpoint, headers) = (
            self.client.clone(),
            Arc::clone(&self.endpoint),
            self.headers.clone(),
        );
        async move {
            let body = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            let response = client
                .post(&*endpoint)
                .headers(headers)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await
                .map_err(std::io::Error::other)?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(std::io::Error::other(format!(
                    "posting a message: HTTP {}",
                    response.status()
                )))
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}
