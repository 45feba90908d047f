//! `warden undo`: the files a session's tools changed, put back as they were — unless someone
//! changed them after the tools did, which is never overwritten.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::anyhow;
use serde_json::json;
use warden_protocol::{Decision, SessionId, ToolEvent, ToolStatus};
use warden_trace::{StoredChange, TraceStore, sha256_hex};

use super::{open_trace, print_json};
use crate::args::UndoArgs;
use crate::{CliError, Exit};

pub(super) fn run(args: &UndoArgs) -> Result<Exit, CliError> {
    let store = open_trace()?;
    let session = match &args.session {
        Some(id) => id.parse::<SessionId>().map_err(CliError::usage)?,
        None => store
            .sessions()
            .map_err(CliError::failure)?
            .into_iter()
            .next()
            .map(|s| s.session_id)
            .ok_or_else(|| CliError::usage(anyhow!("no session in the trace to undo")))?,
    };
    let after = args.to.unwrap_or(0);
    let changes: Vec<StoredChange> = store
        .changes(&session)
        .map_err(CliError::failure)?
        .into_iter()
        .filter(|c| c.turn > after)
        .collect();
    if changes.is_empty() {
        return Err(CliError::usage(anyhow!(
            "session {session} has no changes to undo after turn {after}"
        )));
    }
    // Per file: the state before its first change, and the state its last change left.
    let mut files: BTreeMap<PathBuf, (Option<String>, Option<String>)> = BTreeMap::new();
    for change in &changes {
        let entry = files
            .entry(change.path.clone())
            .or_insert((change.before_sha256.clone(), None));
        entry.1.clone_from(&change.after_sha256);
    }
    let touched: Vec<String> = files
        .iter()
        .filter(|(path, (_, left))| current(path) != *left)
        .map(|(path, _)| path.display().to_string())
        .collect();
    if !touched.is_empty() {
        return Err(CliError::failure(anyhow!(
            "refusing to undo: changed since the agent changed them: {}; nothing was restored",
            touched.join(", ")
        )));
    }
    // Checked for all before any is put back, and again for each as it is.
    for path in files.keys() {
        same_place(path)?;
    }
    let mut restored = Vec::new();
    for (path, (before, _)) in &files {
        restore(&store, path, before.as_deref())?;
        restored.push(
            json!({"path": path, "action": if before.is_some() { "restored" } else { "removed" }}),
        );
    }
    let ids: Vec<i64> = changes.iter().map(|c| c.id).collect();
    store.mark_undone(&ids).map_err(CliError::failure)?;
    record(&store, &session, after, &restored)?;
    if args.json {
        print_json(&json!({"session": session, "toTurn": after, "files": restored}))?;
    } else {
        for file in &restored {
            println!(
                "{:<9} {}",
                file["action"].as_str().unwrap_or_default(),
                file["path"].as_str().unwrap_or_default()
            );
        }
    }
    Ok(Exit::Success)
}

fn current(path: &PathBuf) -> Option<String> {
    std::fs::read(path).ok().map(|bytes| sha256_hex(&bytes))
}

fn restore(store: &TraceStore, path: &PathBuf, before: Option<&str>) -> Result<(), CliError> {
    same_place(path)?;
    let failed = |e: std::io::Error| CliError::failure(anyhow!("{}: {e}", path.display()));
    let Some(sha) = before else {
        return std::fs::remove_file(path).map_err(failed);
    };
    let bytes = store.blob(sha).map_err(CliError::failure)?.ok_or_else(|| {
        CliError::failure(anyhow!(
            "{}: the kept content is missing from the trace",
            path.display()
        ))
    })?;
    warden_tools::replace_file(path, &bytes).map_err(failed)
}

/// The recorded path is the real one the tool wrote: if its directory now leads elsewhere (a
/// directory swapped for a link), putting the file back would write there instead.
fn same_place(path: &std::path::Path) -> Result<(), CliError> {
    let parent = path.parent().unwrap_or(std::path::Path::new("/"));
    match parent.canonicalize() {
        Ok(real) if real == parent => Ok(()),
        Ok(real) => Err(CliError::failure(anyhow!(
            "{}: not put back: its directory now leads to {}",
            path.display(),
            real.display()
        ))),
        Err(e) => Err(CliError::failure(anyhow!("{}: {e}", path.display()))),
    }
}

/// Undo is itself an event of the session.
fn record(
    store: &TraceStore,
    session: &SessionId,
    after: u64,
    files: &[serde_json::Value],
) -> Result<(), CliError> {
    let event = ToolEvent {
        session_id: session.clone(),
        seq: store.next_seq(session).map_err(CliError::failure)?,
        tool: "undo".parse().map_err(CliError::failure)?,
        arguments: json!({"toTurn": after, "files": files.len()}),
        decision: Decision {
            reason: "run by the user (warden undo)".to_owned(),
            ..Decision::unchecked()
        },
        sandbox_profile: "none".to_owned(),
        status: ToolStatus::Ok,
        error: None,
        duration_ms: 0,
        timestamp: warden_trace::now_rfc3339(),
        bytes_in: 0,
        bytes_out: 0,
        summary: Some(json!({"files": files})),
    };
    store.record(&event).map_err(CliError::failure)
}
