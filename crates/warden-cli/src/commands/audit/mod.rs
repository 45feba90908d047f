//! `warden audit`: the audit questions (SPEC R2) answered from the trace — which files the agent
//! read and changed, which commands it ran, where it connected, what was denied, what a person
//! approved, which skills were active, what compaction summarised — per session and in total, as
//! text, JSON (the contract: `docs/audit.md`) or Markdown for a pull request.

mod collect;
mod html;
mod render;
mod timeline;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::anyhow;
use serde::Serialize;
use warden_protocol::SessionId;

use crate::args::AuditArgs;
use crate::{CliError, Exit};

/// The JSON report's version; a field is added, never renamed or removed, within it.
const SCHEMA: &str = "warden.audit/1";

/// The whole report.
#[derive(Debug, Serialize)]
struct Audit {
    schema: &'static str,
    generated_at: String,
    totals: Totals,
    sessions: Vec<collect::SessionAudit>,
}

#[derive(Debug, Default, Serialize)]
struct Totals {
    sessions: usize,
    files_read: usize,
    files_changed: usize,
    commands: usize,
    denied: usize,
    approvals: usize,
    connections: usize,
    connections_denied: usize,
}

pub(super) fn run(args: &AuditArgs) -> Result<Exit, CliError> {
    let path = warden_trace::default_path().map_err(CliError::failure)?;
    // Nothing is made where nothing was recorded: a missing trace is said, not created.
    if !path.exists() {
        return Err(CliError::failure(anyhow!(
            "no trace at {}: nothing has been recorded yet",
            path.display()
        )));
    }
    let store = warden_trace::TraceStore::open(&path)
        .map_err(|e| CliError::failure(anyhow!("the trace at {}: {e}", path.display())))?;
    let listed = known(&store)
        .map_err(|e| CliError::failure(anyhow!("the trace at {}: {e}", path.display())))?;
    let chosen: Vec<&Known> = match (&args.session, &args.since, args.all) {
        (Some(wanted), _, _) => {
            let found: Vec<_> = listed
                .iter()
                .filter(|s| s.id.as_str().starts_with(wanted.as_str()))
                .collect();
            match found.len() {
                0 => {
                    return Err(CliError::usage(anyhow!(
                        "no session {wanted:?} in the trace"
                    )));
                }
                1 => found,
                n => {
                    return Err(CliError::usage(anyhow!(
                        "{wanted:?} names {n} sessions: give more of its id"
                    )));
                }
            }
        }
        (None, Some(since), _) => {
            let cutoff = since_cutoff(since)?;
            listed.iter().filter(|s| s.last >= cutoff).collect()
        }
        (None, None, true) => listed.iter().collect(),
        // The latest session.
        (None, None, false) => listed.iter().take(1).collect(),
    };
    let mut sessions = Vec::new();
    // Oldest first: a report reads in the order things happened.
    for known in chosen.iter().rev() {
        let audit = collect::session(&store, &known.id, known.client.clone())
            .map_err(|e| CliError::failure(anyhow!("the trace at {}: {e}", path.display())))?;
        sessions.push(audit);
    }
    let audit = Audit {
        schema: SCHEMA,
        generated_at: warden_trace::now_rfc3339(),
        totals: totals(&sessions),
        sessions,
    };
    let text = match args.format.as_str() {
        "json" => {
            serde_json::to_string_pretty(&audit).map_err(|e| CliError::failure(anyhow!(e)))? + "\n"
        }
        "md" => render::markdown(&audit),
        "html" => html::report(&audit),
        _ => render::text(&audit),
    };
    match &args.output {
        Some(file) => write_file(file, &text)?,
        None => print!("{text}"),
    }
    Ok(Exit::Success)
}

/// A session the trace knows: by its tool events, or by a run of the agent that made none.
struct Known {
    id: SessionId,
    /// When it was last active (RFC 3339).
    last: String,
    client: Option<serde_json::Value>,
}

/// Every session of the trace, the latest first.
fn known(store: &warden_trace::TraceStore) -> Result<Vec<Known>, warden_trace::TraceError> {
    let mut all: Vec<Known> = store
        .sessions()?
        .into_iter()
        .map(|s| Known {
            id: s.session_id,
            last: s.last_timestamp,
            client: s.client,
        })
        .collect();
    // A run under a manifest is a session too, named by its run id.
    for (run, started) in store.manifest_runs()? {
        let Ok(id) = run.parse::<SessionId>() else {
            continue;
        };
        if !all.iter().any(|k| k.id == id) {
            all.push(Known {
                id,
                last: started,
                client: None,
            });
        }
    }
    for run in store.agent_sessions()? {
        match all.iter_mut().find(|k| k.id == run.session_id) {
            Some(known) if run.updated_at > known.last => known.last = run.updated_at,
            Some(_) => {}
            None => all.push(Known {
                id: run.session_id,
                last: run.updated_at,
                client: None,
            }),
        }
    }
    all.sort_by(|a, b| b.last.cmp(&a.last));
    Ok(all)
}

fn totals(sessions: &[collect::SessionAudit]) -> Totals {
    let mut t = Totals {
        sessions: sessions.len(),
        ..Totals::default()
    };
    for s in sessions {
        t.files_read += s.files_read.len();
        t.files_changed += s.files_changed.len();
        t.commands += s.commands.len();
        t.denied += s.denied.len();
        t.approvals += s.approvals.len();
        t.connections += s.network.len();
        t.connections_denied += s.network.iter().filter(|n| n.decision == "deny").count();
    }
    t
}

/// `--since`: a time (RFC 3339) or a span back from now (`2h`, `3days`).
fn since_cutoff(since: &str) -> Result<String, CliError> {
    if humantime::parse_rfc3339_weak(since).is_ok() {
        return Ok(since.to_owned());
    }
    let span: Duration = humantime::parse_duration(since).map_err(|e| {
        CliError::usage(anyhow!(
            "--since {since:?}: a time (2026-12-01T09:00:00Z) or a span (2h, 3days): {e}"
        ))
    })?;
    let at = SystemTime::now()
        .checked_sub(span)
        .ok_or_else(|| CliError::usage(anyhow!("--since {since:?} is before any time")))?;
    Ok(humantime::format_rfc3339_millis(at).to_string())
}

/// Writes the report whole or not at all.
fn write_file(file: &PathBuf, text: &str) -> Result<(), CliError> {
    let temporary = file.with_extension(format!("partial.{}", std::process::id()));
    std::fs::write(&temporary, text)
        .and_then(|()| std::fs::rename(&temporary, file))
        .map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            CliError::failure(anyhow!("{}: {e}", file.display()))
        })
}
