//! The audit of a 2,000-event session, whole process: `warden audit SESSION` as JSON and as HTML
//! against `warden trace export SESSION` of the same session (one process that opens the same
//! trace and reads the same events) as the baseline from the same run. The session: 2,000 calls
//! (reads, edits with their kept contents, commands with sandbox summaries, searches, some
//! refused), 200 of the loop's events (approvals, a skill, compactions, hooks) and 100
//! connections.
//!
//! `cargo bench -p warden-cli --bench audit -- [--runs N]`

use std::error::Error;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use warden_protocol::{Decision, DecisionKind, PolicyLayer, SessionId, ToolEvent, ToolStatus};
use warden_trace::{FileChange, TraceStore};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const CALLS: u64 = 2_000;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut runs = 15;
    while let Some(arg) = args.next() {
        if arg == "--runs" {
            runs = args.next().ok_or("--runs needs a number")?.parse()?;
        }
    }
    let home = tempfile::tempdir()?;
    let session = session(&home.path().join("trace.db"))?;
    let id = session.as_str();
    let export = time(home.path(), &["trace", "export", id], runs)?;
    let json = time(home.path(), &["audit", id, "--format", "json"], runs)?;
    let html = time(home.path(), &["audit", id, "--format", "html"], runs)?;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("audit of a {CALLS}-call session, median of {runs} runs, whole process:");
    println!("  trace export (baseline)  {:8.1} ms", ms(export));
    println!(
        "  audit --format json      {:8.1} ms  ({:.2}x the export)",
        ms(json),
        json.as_secs_f64() / export.as_secs_f64()
    );
    println!(
        "  audit --format html      {:8.1} ms  ({:.2}x the export)",
        ms(html),
        html.as_secs_f64() / export.as_secs_f64()
    );
    Ok(())
}

/// The median time of `warden ARGS` with the trace in `home`.
fn time(home: &Path, args: &[&str], runs: usize) -> Result<Duration> {
    let mut samples = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let status = Command::new(env!("CARGO_BIN_EXE_warden"))
            .args(args)
            .env("WARDEN_HOME", home)
            .stdout(Stdio::null())
            .status()?;
        samples.push(started.elapsed());
        if !status.success() {
            return Err(format!("warden {args:?} failed").into());
        }
    }
    samples.sort();
    Ok(samples[samples.len() / 2])
}

/// Writes the session into the trace at `path`.
fn session(path: &Path) -> Result<SessionId> {
    let store = TraceStore::open(path)?;
    let session = SessionId::new();
    store.record_batch(&calls(&session)?)?;
    // Each edit's kept contents: a file of 200 lines, one of them changed.
    let before = (0..200).fold(String::new(), |mut text, i| {
        use std::fmt::Write as _;
        let _ = writeln!(text, "line {i}");
        text
    });
    for seq in (1..=CALLS).filter(|s| s % 5 == 1).take(400) {
        let after = before.replacen("line 100\n", &format!("line 100, edit {seq}\n"), 1);
        store.record_changes(
            &session,
            seq,
            &[FileChange {
                path: format!("/work/project/src/module{}.rs", seq % 300).into(),
                before: Some(before.clone().into_bytes()),
                after: Some(after.into_bytes()),
            }],
            "2026-12-04T10:00:00.000Z",
        )?;
    }
    for n in 0..200 {
        let (kind, data) = match n % 4 {
            0 => (
                "approval_resolved",
                json!({"tool": "bash", "answer": "once", "rule": null}),
            ),
            1 => (
                "hook",
                json!({"hookEvent": "PreToolUse", "commandSha256": "ab", "exit": 0, "decision": "allow"}),
            ),
            2 => (
                "compaction",
                json!({"trigger": "threshold", "messages": 40, "restored": 3}),
            ),
            _ => (
                "skill_loaded",
                json!({"name": "release", "version": "1", "hash": "cd", "approval": "trusted root"}),
            ),
        };
        store.record_agent_event(&session, kind, &data)?;
    }
    for n in 0..100 {
        store.record_network(
            &session,
            &json!({"kind": "connect", "host": format!("registry{n}.example"), "port": 443,
                    "decision": if n % 10 == 0 { "deny" } else { "allow" }, "reason": "allowlist",
                    "bytesUp": 100, "bytesDown": 2000}),
        )?;
    }
    Ok(session)
}

/// The session's calls: reads, edits, commands, searches, and a refused read of a key.
fn calls(session: &SessionId) -> Result<Vec<ToolEvent>> {
    let mut events = Vec::new();
    for seq in 1..=CALLS {
        let (tool, arguments, summary) = match seq % 5 {
            0 => (
                "readFile",
                json!({"path": format!("src/module{}.rs", seq % 300)}),
                json!({"path": format!("src/module{}.rs", seq % 300), "range": "1-200", "truncated": false}),
            ),
            1 => (
                "editFile",
                json!({"path": format!("src/module{}.rs", seq % 300), "oldString": "a", "newString": "b"}),
                json!({"path": format!("src/module{}.rs", seq % 300), "applied": 1, "diffSummary": "+1 -1"}),
            ),
            2 => (
                "bash",
                json!({"command": format!("cargo test -p crate{}", seq % 40)}),
                json!({"exitCode": 0, "durationMs": 900, "truncated": false,
                       "sandbox": {"layers": ["user-namespace", "seccomp", "landlock-abi-7"], "limitsHit": []}}),
            ),
            3 => (
                "grep",
                json!({"pattern": format!("fn item{seq}")}),
                json!({"totalMatches": 3, "truncated": false}),
            ),
            _ => ("bash", json!({"command": "cat ~/.ssh/id_rsa"}), json!(null)),
        };
        let denied = seq % 5 == 4;
        events.push(ToolEvent {
            session_id: session.clone(),
            seq,
            tool: tool.parse()?,
            arguments,
            decision: Decision {
                decision: if denied {
                    DecisionKind::Deny
                } else {
                    DecisionKind::Allow
                },
                risk: None,
                reason: "decided".to_owned(),
                layer: if denied {
                    PolicyLayer::PathSandbox
                } else {
                    PolicyLayer::Rules
                },
                rule: None,
                rewrite: None,
                approval: None,
            },
            sandbox_profile: "workspace-write".to_owned(),
            status: if denied {
                ToolStatus::Denied
            } else {
                ToolStatus::Ok
            },
            error: None,
            duration_ms: 12,
            timestamp: format!(
                "2026-12-04T10:{:02}:{:02}.{:03}Z",
                seq / 3600 % 60,
                seq / 60 % 60,
                seq % 1000
            ),
            bytes_in: 64,
            bytes_out: 512,
            summary: (!summary.is_null()).then_some(summary),
        });
    }
    Ok(events)
}
