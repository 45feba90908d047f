//! `warden mcp login|logout`: a server at a url logged in to (OAuth), its tokens kept in the
//! data directory for the user alone, and shown by `warden mcp list` as logged in or not.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use warden_config::{McpServer, Settings};
use warden_mcp::oauth::{self, store::TokenStore};

use super::load_settings;
use crate::{CliError, Exit};

/// How long the browser has to come back.
const WAIT: Duration = Duration::from_secs(300);

fn store_and_url(settings: &Settings, name: &str) -> Result<(TokenStore, String), CliError> {
    let Some(server) = settings.mcp.servers.get(name) else {
        return Err(CliError::usage(anyhow!(
            "no MCP server {name:?} in the settings"
        )));
    };
    let Some(url) = server.url.clone() else {
        return Err(CliError::usage(anyhow!(
            "the MCP server {name:?} is a program warden starts, not one at a url: it has no login"
        )));
    };
    let Some(data_dir) = settings.dirs.data_dir.as_deref() else {
        return Err(CliError::usage(anyhow!(
            "no data directory to keep the login in"
        )));
    };
    Ok((TokenStore::new(data_dir), url))
}

pub(super) fn login(
    dir: Option<PathBuf>,
    name: &str,
    no_browser: bool,
    paste: bool,
    scope: Option<&str>,
) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
    let (store, url) = store_and_url(&settings, name)?;
    let name_owned = name.to_owned();
    let show = move |address: &str| {
        eprintln!("warden: to log in to {name_owned}, open this address and authorize warden:");
        eprintln!("{}", warden_protocol::printable(address));
        if !no_browser {
            // The browser's own output is not warden's to show.
            let _ = std::process::Command::new("xdg-open")
                .arg(address)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
        }
    };
    let server = &settings.mcp.servers[name];
    let client = match &server.client_id {
        Some(client_id) => {
            let client_secret = match &server.client_secret_env {
                Some(variable) => Some(std::env::var(variable).map_err(|_| {
                    CliError::usage(anyhow!(
                        "the variable {variable} (client_secret_env of {name}) is not set"
                    ))
                })?),
                None => None,
            };
            Some(oauth::Client {
                client_id: client_id.clone(),
                client_secret,
            })
        }
        None => None,
    };
    let login = oauth::Login {
        client,
        client_metadata_url: server.client_metadata_url.clone(),
        redirect: if paste {
            oauth::Redirect::Paste {
                show: Box::new(show),
                read: Box::new(|| {
                    eprint!("warden: paste the address the browser ended on: ");
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line).ok()?;
                    Some(line.trim().to_owned()).filter(|l| !l.is_empty())
                }),
            }
        } else {
            oauth::Redirect::Loopback {
                show: Box::new(show),
                wait: WAIT,
            }
        },
        signing_key: None,
    };
    let tokens =
        oauth::login(&url, &login, None, scope).map_err(|e| CliError::failure(anyhow!(e)))?;
    let expiry = tokens
        .expires_in()
        .map(|left| format!(", for {} minutes", left / 60))
        .unwrap_or_default();
    store
        .put(name, Some(tokens))
        .map_err(|e| CliError::failure(anyhow!(e)))?;
    println!(
        "logged in to {name}{expiry}; the tokens are in {}",
        store.path().display()
    );
    Ok(Exit::Success)
}

pub(super) fn logout(dir: Option<PathBuf>, name: &str) -> Result<Exit, CliError> {
    let settings = load_settings(dir)?;
    let (store, _) = store_and_url(&settings, name)?;
    if store
        .put(name, None)
        .map_err(|e| CliError::failure(anyhow!(e)))?
    {
        println!("logged out of {name}");
        Ok(Exit::Success)
    } else {
        eprintln!("warden: there was no login to {name}");
        Ok(Exit::Failure)
    }
}

/// `logged in, expires in N min`, `login expired`, or `not logged in`, for a server at a url.
pub(super) fn state(settings: &Settings, name: &str, server: &McpServer) -> Option<String> {
    server.url.as_ref()?;
    let store = TokenStore::new(settings.dirs.data_dir.as_deref()?);
    Some(match store.get(name) {
        Ok(Some(tokens)) => match tokens.expires_in() {
            Some(0) if tokens.refresh_token.is_none() => "login expired".to_owned(),
            Some(left) if left > 0 => format!("logged in, expires in {} min", left / 60),
            _ => "logged in".to_owned(),
        },
        Ok(None) => "not logged in".to_owned(),
        Err(_) => "login unreadable".to_owned(),
    })
}
