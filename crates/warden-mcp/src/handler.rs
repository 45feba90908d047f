//! What warden tells a server about itself and how it answers the server's requests (forms,
//! never sampling or roots), and the transport wrapper that notes a changed tool list in the
//! order the stream brings it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation,
    InitializeRequestParams, JsonRpcMessage, ListRootsRequestMethod, ServerNotification,
};
use rmcp::service::{NotificationContext, RequestContext, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;

use crate::elicit::{Answer, Asker, Question, misfit, with_defaults};

/// What warden tells a server about itself, and what it hears back.
pub(crate) struct Handler {
    /// The server's name in the settings.
    pub(crate) server: String,
    /// Set when the server says its tools changed; the list is read again before the next use.
    pub(crate) tools_changed: Arc<AtomicBool>,
    /// Who answers the server's questions; none when warden runs headless.
    pub(crate) asker: Option<Asker>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> InitializeRequestParams {
        // No sampling and no roots: a server asking for them is told the method is not there. Forms are answered when someone can answer them.
        let mut capabilities = ClientCapabilities::default();
        if self.asker.is_some() {
            let mut elicitation = ElicitationCapability::new();
            elicitation.form = Some(FormElicitationCapability::new());
            capabilities.elicitation = Some(elicitation);
        }
        // The newest version with an `initialize`; a server answering an older one (back to
        // 2024-11-05) is spoken to in that one.
        InitializeRequestParams::new(
            capabilities,
            Implementation::new("warden", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    /// Roots are not offered: a server that asks anyway is told the method is not there (the
    /// SDK would answer with an empty list). The protocol deprecates roots; servers of its
    /// earlier versions still ask.
    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        Err(ErrorData::method_not_found::<ListRootsRequestMethod>())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (message, schema) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message,
                serde_json::to_value(&requested_schema).unwrap_or_default(),
            ),
            _ => {
                return Err(ErrorData::invalid_request(
                    "warden does not open a server's address for input: only forms are \
                     answered",
                    None,
                ));
            }
        };
        let Some(asker) = self.asker.clone() else {
            return Err(ErrorData::invalid_request(
                "warden runs without a person to answer (headless): the request for input \
                 was refused",
                None,
            ));
        };
        let question = Question {
            server: self.server.clone(),
            message,
            schema,
        };
        let answer = tokio::task::spawn_blocking(move || {
            match asker.ask(&question) {
                // A field left alone is answered with its default (SEP-1034).
                Answer::Accept(content) => {
                    let content = with_defaults(&question.schema, content);
                    match misfit(&question.schema, &content) {
                        Some(why) => {
                            Answer::Refuse(format!("the answer does not fit the form: {why}"))
                        }
                        None => Answer::Accept(content),
                    }
                }
                other => other,
            }
        })
        .await
        .unwrap_or_else(|_| Answer::Refuse("asking the person failed".to_owned()));
        match answer {
            Answer::Accept(content) => {
                Ok(ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(content)))
            }
            Answer::Decline => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Answer::Cancel => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Answer::Refuse(why) => Err(ErrorData::invalid_request(why, None)),
        }
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.tools_changed.store(true, Ordering::SeqCst);
        std::future::ready(())
    }
}

/// A transport that notes `notifications/tools/list_changed` as it is read, in the order of the
/// stream: the SDK hands notifications to the handler on tasks of their own, so an answer read
/// after the notice could otherwise reach its caller before the handler has marked the list
/// changed (and a changed tool pass for the one offered).
pub(crate) struct Watched<T> {
    pub(crate) inner: T,
    pub(crate) tools_changed: Arc<AtomicBool>,
    /// Counts the server's progress notices: a call that hears one waits longer.
    pub(crate) progress: tokio::sync::watch::Sender<u64>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(notice)) = &message
            && matches!(
                notice.notification,
                ServerNotification::ToolListChangedNotification(_)
            )
        {
            self.tools_changed.store(true, Ordering::SeqCst);
        }
        if let Some(JsonRpcMessage::Notification(notice)) = &message
            && matches!(
                notice.notification,
                ServerNotification::ProgressNotification(_)
            )
        {
            self.progress.send_modify(|n| *n = n.wrapping_add(1));
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
