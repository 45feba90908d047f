//! One tool of one server as the registry holds it: held while its definition is not the one
//! offered or pinned, called through the server's session, its structured result held to its
//! schema; a token that expired renewed, and a missing scope asked of a person, mid-session.

use std::sync::Arc;

use serde_json::{Value, json};
use warden_mcp::{Launch, McpError, Server};
use warden_protocol::{ToolError, ToolErrorKind};

use super::Running;
use crate::ToolContext;
use crate::mcp_pins::Pins;
use crate::registry::DynamicTool;

/// One tool of one server.
pub(super) struct McpCall {
    pub(super) running: Arc<Running>,
    /// The server's name in the settings.
    pub(super) server: String,
    pub(super) tool: String,
    /// Its definition as offered to the model at the start.
    pub(super) offered: Value,
    pub(super) pins: Arc<Pins>,
}

impl DynamicTool for McpCall {
    fn held(&self) -> Option<String> {
        let Some(now) = self.running.definition(&self.tool) else {
            return Some(format!(
                "the MCP server {} no longer lists its tool {}",
                self.server, self.tool
            ));
        };
        if now != self.offered {
            return Some(format!(
                "the MCP server {} changed the definition of its tool {} during the session \
                 (after telling warden its tools changed); what the model was shown is not \
                 what the server has now",
                self.server, self.tool
            ));
        }
        self.pins.held(&self.server, &self.tool, &now)
    }

    fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        // What was decided on is the definition the model was shown: a change since (the
        // server said its list changed after the decision) is not run, and what is pinned is
        // what was shown, never what the server has now.
        if self.running.definition(&self.tool).as_ref() != Some(&self.offered) {
            return Err(ToolError::new(
                ToolErrorKind::Unavailable,
                format!(
                    "the MCP server {} changed its tool {} during the session: it is not called \
                     until the session starts again and a person approves the new definition",
                    self.server, self.tool
                ),
            ));
        }
        let unpinned = self.pins.pin(&self.server, &self.tool, &self.offered).err();
        let mut outcome = self.running.call(&self.tool, args.clone());
        let mut renewal = None;
        if let Err(error) = &outcome {
            // A token that expired during the session is renewed, and the call made again;
            // one that lacks a scope is a step-up, when a person can log in again.
            let again = match error {
                McpError::LoginNeeded { .. } => match self.renew(ctx) {
                    Ok(()) => true,
                    Err(why) => {
                        renewal = Some(why);
                        false
                    }
                },
                McpError::MoreScope { challenge, .. } => self.step_up(ctx, challenge),
                _ => false,
            };
            if again {
                outcome = self.running.call(&self.tool, args);
            }
        }
        let outcome = outcome.map_err(|error| self.refused(&error, renewal.as_deref()))?;
        if outcome.is_error {
            return Err(ToolError::new(
                ToolErrorKind::Failed,
                format!(
                    "the MCP tool {} of {} failed: {}",
                    self.tool, self.server, outcome.text
                ),
            ));
        }
        let mut out = json!({
            "server": self.server,
            "tool": self.tool,
            "content": outcome.text,
        });
        if let Some(structured) = outcome.structured {
            // A tool that declares the shape of its result is held to it: what does not fit is
            // not passed on as if it did.
            if let Some(schema) = self.offered.get("outputSchema").filter(|s| s.is_object())
                && let Some(why) = misfit(schema, &structured)
            {
                return Err(ToolError::new(
                    ToolErrorKind::Failed,
                    format!(
                        "the MCP tool {} of {} answered with structured content that does not \
                         match its outputSchema: {why}",
                        self.tool, self.server
                    ),
                ));
            }
            out["structuredContent"] = structured;
        }
        if let Some(warning) = unpinned {
            out["warning"] = Value::String(warning);
        }
        Ok(out)
    }
}

/// The most times a person is asked to log in again to one server in a session.
const MOST_STEP_UPS: usize = 3;

impl McpCall {
    /// What the model is told of a call the server did not answer; `renewal`: why a login
    /// that expired could not be renewed.
    fn refused(&self, error: &McpError, renewal: Option<&str>) -> ToolError {
        let kind = match error {
            McpError::Timeout { .. } => ToolErrorKind::Timeout,
            McpError::Arguments(_) => ToolErrorKind::InvalidArguments,
            McpError::NoTool { .. } => ToolErrorKind::UnknownTool,
            _ => ToolErrorKind::Unavailable,
        };
        // A login that expired or was revoked during the session, and could not be
        // renewed: a person logs in again.
        if let McpError::LoginNeeded { .. } = error {
            return ToolError::new(
                ToolErrorKind::Unavailable,
                format!(
                    "the MCP server {} refused {}: its login expired or was revoked, and {}; \
                     a person can log in again with `warden mcp login {}`",
                    self.server,
                    self.tool,
                    renewal.unwrap_or("could not be renewed"),
                    self.server
                ),
            );
        }
        // A server at a url that wants more scope than the login gave names it: a person
        // can log in again asking for it.
        if let McpError::MoreScope { scope, .. } = error {
            return ToolError::new(
                ToolErrorKind::Unavailable,
                format!(
                    "the MCP server {} refused {}: its login lacks the scope it needs{}; a \
                     person can grant it with `warden mcp login {}{}`",
                    self.server,
                    self.tool,
                    scope
                        .as_deref()
                        .map(|s| format!(" ({s})"))
                        .unwrap_or_default(),
                    self.server,
                    scope
                        .as_deref()
                        .map(|s| format!(" --scope '{s}'"))
                        .unwrap_or_default()
                ),
            );
        }
        ToolError::new(kind, error.to_string())
    }

    /// A person logs in again asking for what `challenge` names, and the server's session is
    /// replaced by one with the new token: whether it was (no one to ask, a server that is not
    /// at a url, a login that failed or was left, or the [`MOST_STEP_UPS`]th time: not).
    fn step_up(&self, ctx: &ToolContext, challenge: &str) -> bool {
        let running = &self.running;
        let (Some(show), Some(url), Some(data_dir)) = (
            ctx.mcp_login.clone(),
            running.config.url.clone(),
            ctx.settings.dirs.data_dir.clone(),
        ) else {
            return false;
        };
        let tries = running
            .step_ups
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if tries >= MOST_STEP_UPS {
            return false;
        }
        let server = running.name.clone();
        let login =
            warden_mcp::oauth::Login {
                client: running.config.client_id.clone().map(|client_id| {
                    warden_mcp::oauth::Client {
                        client_id,
                        client_secret: running
                            .config
                            .client_secret_env
                            .as_deref()
                            .and_then(|v| std::env::var(v).ok()),
                    }
                }),
                client_metadata_url: running.config.client_metadata_url.clone(),
                redirect: warden_mcp::oauth::Redirect::Loopback {
                    show: Box::new(move |address| (show.0)(&server, address)),
                    wait: std::time::Duration::from_secs(300),
                },
                signing_key: None,
            };
        let Ok(tokens) = warden_mcp::oauth::login(&url, &login, Some(challenge), None) else {
            return false;
        };
        let bearer = tokens.access_token.clone();
        let store = warden_mcp::oauth::store::TokenStore::new(&data_dir);
        let _ = store.put(&running.name, Some(tokens));
        self.replace_session(ctx, bearer)
    }

    /// Renews the server's token with its refresh token and replaces the session with one that
    /// sends it; why it could not, if it could not.
    fn renew(&self, ctx: &ToolContext) -> Result<(), String> {
        let running = &self.running;
        let Some(data_dir) = ctx.settings.dirs.data_dir.clone() else {
            return Err("warden has no data directory to keep a login in".to_owned());
        };
        let store = warden_mcp::oauth::store::TokenStore::new(&data_dir);
        let tokens = match store.get(&running.name) {
            Ok(Some(tokens)) => tokens,
            Ok(None) => return Err("warden holds no login for it".to_owned()),
            Err(why) => return Err(format!("its login could not be read ({why})")),
        };
        let renewed = warden_mcp::oauth::refresh(&tokens)
            .map_err(|why| format!("its renewal was refused ({why})"))?;
        let bearer = renewed.access_token.clone();
        let _ = store.put(&running.name, Some(renewed));
        if self.replace_session(ctx, bearer) {
            Ok(())
        } else {
            Err("no new session could be started with the renewed token".to_owned())
        }
    }

    /// Starts a new session with the server sending `bearer`, in place of the one it has.
    fn replace_session(&self, ctx: &ToolContext, bearer: String) -> bool {
        let running = &self.running;
        let mut launch =
            Launch::from_settings(&running.name, &running.config, &ctx.settings.project_root);
        launch.asker.clone_from(&ctx.mcp_asker);
        launch.bearer = Some(bearer);
        let Ok(renewed) = Server::start(launch) else {
            return false;
        };
        match running.server.write() {
            Ok(mut session) => {
                *session = renewed;
                true
            }
            Err(_) => false,
        }
    }
}

/// Why `value` does not match `schema`, if it does not (a schema that does not compile: said).
fn misfit(schema: &Value, value: &Value) -> Option<String> {
    match jsonschema::validator_for(schema) {
        Ok(validator) => validator
            .iter_errors(value)
            .next()
            .map(|error| format!("{error} (at {})", error.instance_path())),
        Err(error) => Some(format!("its outputSchema does not compile: {error}")),
    }
}
