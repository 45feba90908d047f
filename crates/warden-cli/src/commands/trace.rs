//! `warden trace list|show|export|network`.

use anyhow::anyhow;
use warden_protocol::SessionId;

use super::{open_trace, print_json};
use crate::args::TraceCommand;
use crate::{CliError, Exit};

pub(super) fn run(command: &TraceCommand) -> Result<Exit, CliError> {
    let store = open_trace()?;
    match command {
        TraceCommand::List { json } => {
            let sessions = store.sessions().map_err(CliError::failure)?;
            if *json {
                print_json(&sessions)?;
            } else if sessions.is_empty() {
                eprintln!("no sessions recorded in {}", store.path().display());
            } else {
                println!(
                    "{:<36}  {:>6}  {:>6}  {:>6}  {:<24}",
                    "SESSION", "EVENTS", "DENIED", "ERRORS", "LAST"
                );
                for s in &sessions {
                    println!(
                        "{:<36}  {:>6}  {:>6}  {:>6}  {:<24}",
                        s.session_id, s.events, s.denied, s.errors, s.last_timestamp
                    );
                }
            }
        }
        TraceCommand::Show { session, json } => {
            let events = events(&store, session)?;
            if *json {
                print_json(&events)?;
            } else {
                println!(
                    "{:>4}  {:<24}  {:<9}  {:<7}  {:<16}  {:>6}  ARGUMENTS",
                    "SEQ", "TIME", "TOOL", "STATUS", "DECISION", "MS"
                );
                for e in &events {
                    let args = e.arguments.to_string();
                    let args: String = if args.chars().count() > 60 {
                        format!("{}…", args.chars().take(59).collect::<String>())
                    } else {
                        args
                    };
                    println!(
                        "{:>4}  {:<24}  {:<9}  {:<7}  {:<16}  {:>6}  {args}",
                        e.seq,
                        e.timestamp,
                        e.tool,
                        e.status.as_str(),
                        format!(
                            "{}/{}",
                            e.decision.decision.as_str(),
                            e.decision.layer.as_str()
                        ),
                        e.duration_ms
                    );
                }
            }
        }
        TraceCommand::Export { session } => {
            for event in events(&store, session)? {
                print_json(&event)?;
            }
        }
        TraceCommand::Network { session, json } => {
            let id: SessionId = session.parse().map_err(CliError::usage)?;
            let connections = store.network_events(&id).map_err(CliError::failure)?;
            for (time, data) in &connections {
                if *json {
                    let mut line = data.clone();
                    line["timestamp"] = serde_json::json!(time);
                    print_json(&line)?;
                } else {
                    let field = |k: &str| data[k].as_str().unwrap_or("").to_owned();
                    println!(
                        "{time}  {:<7}  {:<5}  {}:{}  {}",
                        field("kind"),
                        field("decision"),
                        field("host"),
                        data["port"],
                        field("reason")
                    );
                }
            }
        }
    }
    Ok(Exit::Success)
}

fn events(
    store: &warden_trace::TraceStore,
    session: &str,
) -> Result<Vec<warden_protocol::ToolEvent>, CliError> {
    let id: SessionId = session.parse().map_err(CliError::usage)?;
    let events = store.events(&id).map_err(CliError::failure)?;
    if events.is_empty() {
        return Err(CliError::usage(anyhow!(
            "no session {session} in {}",
            store.path().display()
        )));
    }
    Ok(events)
}
