//! Recording throughput: one transaction per event against a baseline of one transaction for
//! all, measured in the same run. `cargo bench -p warden-trace`.
//!
//! The target (SPEC R1) is 20,000 events a second with a commit per event.

use std::error::Error;
use std::time::{Duration, Instant};

use serde_json::json;
use warden_protocol::{Decision, SessionId, ToolEvent, ToolStatus};
use warden_trace::{TraceStore, now_rfc3339};

const EVENTS: u64 = 20_000;

fn events(session: &SessionId) -> Result<Vec<ToolEvent>, Box<dyn Error>> {
    let timestamp = now_rfc3339();
    let tool: warden_protocol::ToolName = "bash".parse()?;
    Ok((1..=EVENTS)
        .map(|seq| ToolEvent {
            session_id: session.clone(),
            seq,
            tool: tool.clone(),
            arguments: json!({
                "command": format!("cargo test -p warden-trace --test all -- case_{seq}"),
                "cwd": "/work/project",
                "timeoutMs": 120_000,
            }),
            decision: Decision::unchecked(),
            sandbox_profile: "workspace-write".to_owned(),
            status: ToolStatus::Ok,
            error: None,
            duration_ms: seq % 700,
            timestamp: timestamp.clone(),
            bytes_in: 90,
            bytes_out: 4_000,
            summary: None,
        })
        .collect())
}

fn measure(per_event: bool) -> Result<Duration, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let store = TraceStore::open(&dir.path().join("trace.db"))?;
    let events = events(&SessionId::new())?;
    let start = Instant::now();
    if per_event {
        for event in &events {
            store.record(event)?;
        }
    } else {
        store.record_batch(&events)?;
    }
    Ok(start.elapsed())
}

fn rate(elapsed: Duration) -> f64 {
    // Exact for any realistic count.
    #[allow(clippy::cast_precision_loss)]
    let events = EVENTS as f64;
    events / elapsed.as_secs_f64()
}

fn main() -> Result<(), Box<dyn Error>> {
    let baseline = measure(false)?;
    let per_event = measure(true)?;
    println!(
        "record_batch (one transaction): {:>9.0} events/s",
        rate(baseline)
    );
    println!(
        "record (one per event):         {:>9.0} events/s",
        rate(per_event)
    );
    println!(
        "cost of a commit per event:     {:>9.2}x",
        per_event.as_secs_f64() / baseline.as_secs_f64()
    );
    Ok(())
}
