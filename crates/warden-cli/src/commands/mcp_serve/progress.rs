//! Progress notifications for a call whose request asked for them.

use rmcp::RoleServer;
use rmcp::model::RequestMetaObject;
use rmcp::service::RequestContext;
use serde_json::json;

/// Progress notifications for a call whose request asked for them: each step (checked, running,
/// still running every few seconds), in order, so that a client waiting on a long command keeps
/// waiting.
#[derive(Clone)]
pub(super) struct Progress {
    to: Option<tokio::sync::mpsc::UnboundedSender<String>>,
}

impl Progress {
    /// The steps of a call, and the task that sends them, which ends once every copy of the
    /// steps is dropped.
    pub(super) fn new(
        context: &RequestContext<RoleServer>,
        meta: &RequestMetaObject,
    ) -> (Self, Option<tokio::task::JoinHandle<()>>) {
        let Some(token) = meta.get_progress_token() else {
            return (Self { to: None }, None);
        };
        let (to, mut steps) = tokio::sync::mpsc::unbounded_channel::<String>();
        let peer = context.peer.clone();
        // One sender, so the steps arrive in the order they were said.
        let sending = tokio::spawn(async move {
            let mut step = 0u32;
            while let Some(message) = steps.recv().await {
                step += 1;
                let Ok(params) = serde_json::from_value(json!({
                    "progressToken": token,
                    "progress": step,
                    "message": message,
                })) else {
                    return;
                };
                if peer.notify_progress(params).await.is_err() {
                    return;
                }
            }
        });
        (Self { to: Some(to) }, Some(sending))
    }

    /// Says a step, from any thread.
    pub(super) fn say(&self, message: &str) {
        if let Some(to) = &self.to {
            let _ = to.send(message.to_owned());
        }
    }

    /// Says "still running" every few seconds until aborted.
    pub(super) fn beat(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            if self.to.is_none() {
                return;
            }
            let mut seconds = 0;
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                seconds += 5;
                self.say(&format!("still running after {seconds} s"));
            }
        })
    }
}
