//! The audit of one session, gathered from its trace: the answers to the audit questions
//! (SPEC R2), each a list a reviewer can read down.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use warden_protocol::{SessionId, ToolEvent, ToolStatus};
use warden_trace::TraceStore;

/// What one session did.
#[derive(Debug, Default, Serialize)]
pub(super) struct SessionAudit {
    pub(super) session_id: String,
    /// The first and last events' times (RFC 3339).
    pub(super) started_at: Option<String>,
    pub(super) ended_at: Option<String>,
    /// The MCP client the session served (`warden mcp serve`).
    pub(super) client: Option<Value>,
    /// How the run ended (`finished`, `budget_exhausted`, …), when it was an agent run.
    pub(super) status: Option<String>,
    pub(super) files_read: Vec<FileRead>,
    pub(super) files_changed: Vec<FileChanged>,
    /// The files commands changed in the workspace, each with the commands that did.
    pub(super) files_changed_by_commands: Vec<ChangedByCommand>,
    pub(super) commands: Vec<CommandRun>,
    pub(super) network: Vec<Connection>,
    pub(super) denied: Vec<Denied>,
    pub(super) approvals: Vec<Approval>,
    pub(super) skills: Vec<SkillUse>,
    pub(super) compactions: Vec<Compaction>,
    /// What the context left out of a request to the model for want of room, layer by layer:
    /// messages dropped whole (gone from what the model saw unless summarised) and trimmed.
    pub(super) context_cuts: Vec<ContextCut>,
    pub(super) hooks: Vec<HookRun>,
    pub(super) usage: Option<Usage>,
    /// The receipts of the runs under a manifest the session was (or worked in), each with
    /// whether its artifacts' checksums still hold.
    pub(super) receipts: Vec<ReceiptAudit>,
    /// Every step in order, for the HTML report (not part of the JSON).
    #[serde(skip)]
    pub(super) timeline: Vec<super::timeline::Moment>,
}

#[derive(Debug, Serialize)]
pub(super) struct FileRead {
    pub(super) path: String,
    /// The line ranges read (`1-200`), in order.
    pub(super) ranges: Vec<String>,
    /// The calls that read it (their `seq`).
    pub(super) calls: Vec<u64>,
    pub(super) tool: String,
}

#[derive(Debug, Serialize)]
pub(super) struct FileChanged {
    pub(super) path: String,
    pub(super) added: usize,
    pub(super) removed: usize,
    /// The calls that changed it (their `seq`): `warden undo` takes them back.
    pub(super) calls: Vec<u64>,
    pub(super) tools: Vec<String>,
    pub(super) created: bool,
    pub(super) deleted: bool,
    /// Every change to it was undone since (`warden undo`).
    pub(super) undone: bool,
    /// The changes as a unified diff, from the trace's kept contents (text files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) diff: Option<String>,
}

#[derive(Debug, Serialize)]
pub(super) struct ReceiptAudit {
    pub(super) run_id: String,
    /// The run's status (`succeeded`, `failed`, `quarantined`, …).
    pub(super) status: String,
    /// Every artifact kept checks against its checksum.
    pub(super) verified: bool,
    pub(super) artifacts: Vec<ArtifactCheck>,
    /// The receipt as it was written.
    pub(super) receipt: Value,
}

#[derive(Debug, Serialize)]
pub(super) struct ArtifactCheck {
    pub(super) path: String,
    pub(super) stored: Option<String>,
    /// `verified` (its SHA-256 is the receipt's), `changed`, `missing`, or `not kept`.
    pub(super) check: String,
}

#[derive(Debug, Serialize)]
pub(super) struct ChangedByCommand {
    pub(super) path: String,
    pub(super) commands: Vec<u64>,
}

#[derive(Debug, Serialize)]
pub(super) struct CommandRun {
    pub(super) seq: u64,
    pub(super) at: String,
    pub(super) command: String,
    /// `ok`, `error` or `denied` (never ran).
    pub(super) status: String,
    pub(super) exit_code: Option<i64>,
    pub(super) timed_out: bool,
    pub(super) duration_ms: u64,
    pub(super) sandbox_profile: String,
    /// The sandbox's layers that were up, and the limits it ran into (time, output, memory,
    /// processes), where the trace has them.
    pub(super) sandbox_layers: Vec<String>,
    pub(super) limits_hit: Vec<String>,
    /// Its output's first lines (at most three, secrets redacted), where the trace has them.
    pub(super) output_head: Option<String>,
    /// The files of the workspace it changed (relative to the project, at most 1,000), as a
    /// session's watch of the workspace saw them; `null` where nothing watched.
    pub(super) changed_files: Option<Vec<String>>,
    /// The policy's decision and why.
    pub(super) decision: String,
    pub(super) reason: String,
}

#[derive(Debug, Serialize)]
pub(super) struct Connection {
    pub(super) at: String,
    pub(super) kind: String,
    pub(super) host: String,
    pub(super) port: u64,
    pub(super) method: Option<String>,
    pub(super) path: Option<String>,
    /// `allow` or `deny`.
    pub(super) decision: String,
    /// The entry that allowed it, or why it was refused.
    pub(super) rule: String,
    pub(super) bytes_up: u64,
    pub(super) bytes_down: u64,
}

#[derive(Debug, Serialize)]
pub(super) struct Denied {
    pub(super) seq: u64,
    pub(super) at: String,
    pub(super) tool: String,
    /// What it was aimed at: a path, a command, a URL.
    pub(super) target: String,
    /// The layer that refused it (`rules`, `tool`, `hook`, `approval`, …).
    pub(super) layer: String,
    pub(super) rule: Option<String>,
    pub(super) reason: String,
}

#[derive(Debug, Serialize)]
pub(super) struct Approval {
    pub(super) at: String,
    pub(super) tool: String,
    /// What was asked about: the call's arguments, or the permission's rule.
    pub(super) asked: Value,
    /// `once`, `session`, `always` or `deny`.
    pub(super) answer: String,
    /// The rule an answer of `session` or `always` remembered.
    pub(super) rule: Option<String>,
}

#[derive(Debug, Serialize)]
pub(super) struct SkillUse {
    pub(super) name: String,
    pub(super) version: Option<String>,
    pub(super) hash: Option<String>,
    /// How it was let in (`trusted root`, `approved now`, …).
    pub(super) trust: Option<String>,
    pub(super) loaded_at: String,
    pub(super) unloaded_at: Option<String>,
    /// The calls made while it was active (their `seq`).
    pub(super) calls_while_active: Vec<u64>,
}

#[derive(Debug, Serialize)]
pub(super) struct Compaction {
    pub(super) at: String,
    pub(super) trigger: String,
    /// How many messages the summary replaced.
    pub(super) messages: u64,
    /// Identifiers the model's summary dropped and warden put back.
    pub(super) identifiers_restored: u64,
}

#[derive(Debug, Serialize)]
pub(super) struct ContextCut {
    pub(super) at: String,
    pub(super) layer: String,
    pub(super) dropped: u64,
    pub(super) trimmed: u64,
    /// Why, in the context builder's words.
    pub(super) reasons: Vec<String>,
}

#[derive(Debug, Serialize)]
pub(super) struct HookRun {
    pub(super) at: String,
    pub(super) event: String,
    pub(super) command_sha256: String,
    pub(super) exit: Option<i64>,
    pub(super) decision: Option<String>,
    pub(super) error: Option<String>,
}

#[derive(Debug, Serialize)]
pub(super) struct Usage {
    pub(super) turns: u64,
    pub(super) tool_calls: u64,
    pub(super) input_tokens: u64,
    pub(super) output_tokens: u64,
    pub(super) cost_usd: f64,
    pub(super) duration_ms: u64,
    /// Which budget ran out, if one did.
    pub(super) budget: Option<String>,
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn number(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// What a call was aimed at, as a reviewer names it.
fn target(event: &ToolEvent) -> String {
    let args = &event.arguments;
    ["path", "command", "url", "pattern", "rule"]
        .iter()
        .find_map(|k| text(args, k))
        .unwrap_or_else(|| warden_protocol::short(&args.to_string(), 200))
}

/// The audit of `session` in `store`.
pub(super) fn session(
    store: &TraceStore,
    session: &SessionId,
    client: Option<Value>,
) -> Result<SessionAudit, String> {
    let events = store.events(session).map_err(|e| e.to_string())?;
    let agent = store
        .agent_events_timed(session)
        .map_err(|e| e.to_string())?;
    let network = store.network_events(session).map_err(|e| e.to_string())?;
    let changes = store.all_changes(session).map_err(|e| e.to_string())?;
    let mut audit = SessionAudit {
        session_id: session.as_str().to_owned(),
        started_at: events.first().map(|e| e.timestamp.clone()),
        ended_at: events.last().map(|e| e.timestamp.clone()),
        client,
        ..SessionAudit::default()
    };
    let tool_of: BTreeMap<u64, String> =
        events.iter().map(|e| (e.seq, e.tool.to_string())).collect();
    reads_commands_denials(&events, &mut audit);
    audit.files_changed = changed(store, &changes, &tool_of);
    audit.network = network
        .iter()
        .map(|(at, data)| Connection {
            at: at.clone(),
            kind: text(data, "kind").unwrap_or_default(),
            host: text(data, "host").unwrap_or_default(),
            port: number(data, "port"),
            method: text(data, "method"),
            path: text(data, "path"),
            decision: text(data, "decision").unwrap_or_default(),
            rule: text(data, "reason").unwrap_or_default(),
            bytes_up: number(data, "bytesUp"),
            bytes_down: number(data, "bytesDown"),
        })
        .collect();
    from_agent_events(&agent, &events, &mut audit);
    // A run under a manifest: the session is the run (`warden manifest run`), or names it.
    let mut runs = vec![session.as_str().to_owned()];
    runs.extend(
        agent
            .iter()
            .filter(|(_, kind, _)| kind == "manifest_run")
            .map(|(_, _, data)| text(data, "runId").unwrap_or_default()),
    );
    for run in runs {
        if let Ok(Some((status, Some(receipt)))) = store.manifest_run(&run) {
            audit.receipts.push(checked_receipt(run, status, receipt));
        }
    }
    audit.timeline = super::timeline::of(&events, &agent, &network);
    // A run that made no call is known by its own events.
    let times = agent.iter().map(|(at, _, _)| at);
    if let Some(first) = times.clone().min()
        && audit.started_at.as_ref().is_none_or(|s| first < s)
    {
        audit.started_at = Some(first.clone());
    }
    if let Some(last) = times.max()
        && audit.ended_at.as_ref().is_none_or(|e| last > e)
    {
        audit.ended_at = Some(last.clone());
    }
    Ok(audit)
}

fn reads_commands_denials(events: &[ToolEvent], audit: &mut SessionAudit) {
    let mut reads: BTreeMap<String, FileRead> = BTreeMap::new();
    for event in events {
        let tool = event.tool.to_string();
        let summary = event.summary.clone().unwrap_or(Value::Null);
        if event.status == ToolStatus::Denied {
            audit.denied.push(Denied {
                seq: event.seq,
                at: event.timestamp.clone(),
                tool: tool.clone(),
                target: target(event),
                layer: event.decision.layer.as_str().to_owned(),
                rule: event.decision.rule.clone(),
                reason: event.decision.reason.clone(),
            });
        }
        if tool == "readFile" && event.status == ToolStatus::Ok {
            let path = text(&summary, "path").unwrap_or_else(|| target(event));
            let read = reads.entry(path.clone()).or_insert_with(|| FileRead {
                path,
                ranges: Vec::new(),
                calls: Vec::new(),
                tool: tool.clone(),
            });
            read.calls.push(event.seq);
            if let Some(range) = text(&summary, "range") {
                read.ranges.push(range);
            }
        }
        if tool == "bash" {
            let status = match event.status {
                ToolStatus::Ok => "ok",
                ToolStatus::Error => "error",
                ToolStatus::Denied => "denied",
            };
            audit.commands.push(CommandRun {
                seq: event.seq,
                at: event.timestamp.clone(),
                command: text(&event.arguments, "command").unwrap_or_else(|| target(event)),
                status: status.to_owned(),
                exit_code: summary.get("exitCode").and_then(Value::as_i64),
                timed_out: summary
                    .get("timedOut")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                duration_ms: summary
                    .get("durationMs")
                    .and_then(Value::as_u64)
                    .unwrap_or(event.duration_ms),
                sandbox_profile: event.sandbox_profile.clone(),
                sandbox_layers: strings(&summary["sandbox"]["layers"]),
                limits_hit: strings(&summary["sandbox"]["limitsHit"]),
                output_head: text(&summary, "outputHead"),
                changed_files: summary["sandbox"]["changedFiles"]
                    .as_array()
                    .map(|_| strings(&summary["sandbox"]["changedFiles"])),
                decision: event.decision.decision.as_str().to_owned(),
                reason: event.decision.reason.clone(),
            });
        }
    }
    audit.files_read = reads.into_values().collect();
    let mut by_commands: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for command in &audit.commands {
        for path in command.changed_files.iter().flatten() {
            by_commands
                .entry(path.clone())
                .or_default()
                .push(command.seq);
        }
    }
    audit.files_changed_by_commands = by_commands
        .into_iter()
        .map(|(path, commands)| ChangedByCommand { path, commands })
        .collect();
}

/// A receipt, its artifacts checked against their checksums as they are on disk now.
fn checked_receipt(run_id: String, status: String, receipt: Value) -> ReceiptAudit {
    let artifacts: Vec<ArtifactCheck> = receipt["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|artifact| {
            let stored = text(artifact, "stored");
            let check = match (&stored, text(artifact, "sha256")) {
                (Some(file), Some(sha)) => match std::fs::read(file) {
                    Ok(bytes) if warden_trace::sha256_hex(&bytes) == sha => "verified",
                    Ok(_) => "changed",
                    Err(_) => "missing",
                },
                _ => "not kept",
            };
            ArtifactCheck {
                path: text(artifact, "path").unwrap_or_default(),
                stored,
                check: check.to_owned(),
            }
        })
        .collect();
    ReceiptAudit {
        run_id,
        status,
        verified: artifacts
            .iter()
            .all(|a| a.check == "verified" || a.check == "not kept"),
        artifacts,
        receipt,
    }
}

/// Each file's changes, with their line counts and diff from the kept contents.
fn changed(
    store: &TraceStore,
    changes: &[(warden_trace::StoredChange, bool)],
    tool_of: &BTreeMap<u64, String>,
) -> Vec<FileChanged> {
    let mut files: BTreeMap<String, FileChanged> = BTreeMap::new();
    let mut undone_all: BTreeMap<String, bool> = BTreeMap::new();
    for (change, undone) in changes {
        let path = change.path.display().to_string();
        let blob = |sha: &Option<String>| {
            sha.as_ref()
                .and_then(|s| store.blob(s).ok().flatten())
                .unwrap_or_default()
        };
        let (before, after) = (blob(&change.before_sha256), blob(&change.after_sha256));
        let (before, after) = (
            String::from_utf8_lossy(&before),
            String::from_utf8_lossy(&after),
        );
        let diff = similar::TextDiff::from_lines(before.as_ref(), after.as_ref());
        let (mut added, mut removed) = (0, 0);
        for op in diff.iter_all_changes() {
            match op.tag() {
                similar::ChangeTag::Insert => added += 1,
                similar::ChangeTag::Delete => removed += 1,
                similar::ChangeTag::Equal => {}
            }
        }
        let unified = diff
            .unified_diff()
            .context_radius(3)
            .header(
                &format!("a/{}", path.trim_start_matches('/')),
                &format!("b/{}", path.trim_start_matches('/')),
            )
            .to_string();
        let file = files.entry(path.clone()).or_insert_with(|| FileChanged {
            path: path.clone(),
            added: 0,
            removed: 0,
            calls: Vec::new(),
            tools: Vec::new(),
            created: change.before_sha256.is_none(),
            deleted: false,
            undone: true,
            diff: None,
        });
        file.added += added;
        file.removed += removed;
        file.calls.push(change.turn);
        if let Some(tool) = tool_of.get(&change.turn)
            && !file.tools.contains(tool)
        {
            file.tools.push(tool.clone());
        }
        file.deleted = change.after_sha256.is_none();
        if !unified.is_empty() {
            let joined = file.diff.take().map_or(unified.clone(), |d| d + &unified);
            // A reviewer reads a diff, not a dump: at most 64 KiB of it per file.
            file.diff = Some(cap(joined, 64 * 1024));
        }
        let all = undone_all.entry(path).or_insert(true);
        *all = *all && *undone;
    }
    for (path, all) in undone_all {
        if let Some(file) = files.get_mut(&path) {
            file.undone = all;
        }
    }
    files.into_values().collect()
}

fn cap(text: String, most: usize) -> String {
    if text.len() <= most {
        return text;
    }
    let mut end = most;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… (cut: {} more bytes)\n",
        &text[..end],
        text.len() - end
    )
}

/// Approvals, skills, compactions, hooks and the run's usage, from the loop's events.
fn from_agent_events(
    agent: &[(String, String, Value)],
    events: &[ToolEvent],
    audit: &mut SessionAudit,
) {
    let mut asked: Vec<(String, Value)> = Vec::new();
    for (at, kind, data) in agent {
        match kind.as_str() {
            "approval_requested" => {
                let mut what = data.clone();
                if let Some(map) = what.as_object_mut() {
                    map.remove("tool");
                    map.remove("preview");
                }
                asked.push((text(data, "tool").unwrap_or_default(), what));
            }
            "approval_resolved" => {
                let tool = text(data, "tool").unwrap_or_default();
                let what = asked
                    .iter()
                    .position(|(t, _)| *t == tool)
                    .map_or(Value::Null, |i| asked.remove(i).1);
                audit.approvals.push(Approval {
                    at: at.clone(),
                    tool,
                    asked: what,
                    answer: text(data, "answer").unwrap_or_default(),
                    rule: text(data, "rule"),
                });
            }
            "skill_loaded" => audit.skills.push(SkillUse {
                name: text(data, "name").unwrap_or_default(),
                version: text(data, "version"),
                hash: text(data, "hash"),
                trust: text(data, "approval"),
                loaded_at: at.clone(),
                unloaded_at: None,
                calls_while_active: Vec::new(),
            }),
            "skill_unloaded" => {
                let name = text(data, "name").unwrap_or_default();
                if let Some(skill) = audit
                    .skills
                    .iter_mut()
                    .rev()
                    .find(|s| s.name == name && s.unloaded_at.is_none())
                {
                    skill.unloaded_at = Some(at.clone());
                }
            }
            "compaction" => audit.compactions.push(Compaction {
                at: at.clone(),
                trigger: text(data, "trigger").unwrap_or_default(),
                messages: number(data, "messages"),
                identifiers_restored: number(data, "restored"),
            }),
            "context" => {
                for layer in data["layers"].as_array().into_iter().flatten() {
                    let (dropped, trimmed) = (number(layer, "dropped"), number(layer, "trimmed"));
                    if dropped + trimmed > 0 {
                        audit.context_cuts.push(ContextCut {
                            at: at.clone(),
                            layer: text(layer, "name").unwrap_or_default(),
                            dropped,
                            trimmed,
                            reasons: strings(&layer["reasons"]),
                        });
                    }
                }
            }
            "hook" => audit.hooks.push(HookRun {
                at: at.clone(),
                event: text(data, "hookEvent").unwrap_or_default(),
                command_sha256: text(data, "commandSha256").unwrap_or_default(),
                exit: data.get("exit").and_then(Value::as_i64),
                decision: text(data, "decision"),
                error: text(data, "error"),
            }),
            "session_finished" => {
                audit.status = text(data, "status");
                let usage = &data["usage"];
                audit.usage = Some(Usage {
                    turns: number(data, "turns"),
                    tool_calls: number(data, "toolCalls"),
                    input_tokens: number(usage, "inputTokens"),
                    output_tokens: number(usage, "outputTokens"),
                    cost_usd: data.get("costUsd").and_then(Value::as_f64).unwrap_or(0.0),
                    duration_ms: number(data, "durationMs"),
                    budget: text(data, "budget"),
                });
            }
            _ => {}
        }
    }
    skill_calls(audit, events);
}

/// The calls each skill was active for: between its loading and its unloading.
fn skill_calls(audit: &mut SessionAudit, events: &[ToolEvent]) {
    for skill in &mut audit.skills {
        skill.calls_while_active = events
            .iter()
            .filter(|e| {
                e.timestamp >= skill.loaded_at
                    && skill
                        .unloaded_at
                        .as_ref()
                        .is_none_or(|end| e.timestamp <= *end)
            })
            .map(|e| e.seq)
            .collect();
    }
}
