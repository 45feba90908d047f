//! What a run shows: JSON lines of events (`--json`), or text for a person — the answer as it
//! streams, each tool call with its decision and result, and a last line with the totals; and
//! the context report of a session as a table.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use warden_agent::{Event, Sink};
use warden_protocol::{CallStatus, DecisionKind, short};

/// One JSON object per line on standard output: `{"event": KIND, ...fields}`.
#[derive(Debug, Default)]
pub(crate) struct JsonLines;

impl Sink for JsonLines {
    fn text(&mut self, _chunk: &str) {}

    fn event(&mut self, event: &Event) {
        // Progress is for a person: a script has the result.
        if !matches!(event, Event::ToolRunning { .. }) {
            json_line(event);
        }
    }
}

/// Prints one event as a JSON line (keys in order).
pub(crate) fn json_line(event: &Event) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", event.to_value());
    let _ = out.flush();
}

/// Text for a person: the answer on standard output, everything else on standard error, and a
/// progress line while a command runs long.
#[derive(Debug, Default)]
pub(crate) struct Human {
    mid_line: bool,
    /// Stops the progress line of the command running now.
    progress: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    /// What the last command printed, whole, for `/last` in an interactive session.
    last: Option<Last>,
}

/// The whole of what the last command printed, kept for `/last`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Last(Arc<std::sync::Mutex<String>>);

impl Last {
    /// Prints it whole, or says there is nothing yet.
    pub(crate) fn show(&self) {
        let text = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut err = std::io::stderr().lock();
        if text.is_empty() {
            let _ = writeln!(err, "no command has printed anything yet");
        }
        for line in text.lines() {
            let _ = writeln!(err, "  │ {}", warden_protocol::printable(line));
        }
    }
}

/// How many lines of a command's output are shown from its start, and from its end.
const OUTPUT_HEAD: usize = 5;
const OUTPUT_TAIL: usize = 5;
/// How much of one line is shown.
const OUTPUT_WIDTH: usize = 200;

/// The lines shown of a command's output: the first and last few, each cut to one screen line
/// and every character printable, with a line saying how many were left out.
fn output_lines(text: &str, interactive: bool) -> Vec<String> {
    let lines: Vec<&str> = text.trim_end_matches('\n').lines().collect();
    let line = |l: &&str| {
        format!(
            "  │ {}",
            warden_protocol::printable(&short(l, OUTPUT_WIDTH))
        )
    };
    if lines.len() <= OUTPUT_HEAD + OUTPUT_TAIL + 1 {
        return lines.iter().map(line).collect();
    }
    let left = lines.len() - OUTPUT_HEAD - OUTPUT_TAIL;
    let mut shown: Vec<String> = lines[..OUTPUT_HEAD].iter().map(line).collect();
    shown.push(if interactive {
        format!("  │ … {left} more lines (/last shows them all)")
    } else {
        format!("  │ … {left} more lines")
    });
    shown.extend(lines[lines.len() - OUTPUT_TAIL..].iter().map(line));
    shown
}

impl Human {
    /// For an interactive session: a command's output left out is kept for `/last`.
    pub(crate) fn keeping(last: Last) -> Self {
        Self {
            last: Some(last),
            ..Self::default()
        }
    }
}

/// After this long a running command gets a progress line, updated every second.
const PROGRESS_AFTER: Duration = Duration::from_secs(3);

impl Human {
    fn start_progress(&mut self, name: String) {
        self.stop_progress();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let ticker = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let mut shown = false;
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
                let elapsed = started.elapsed();
                if elapsed >= PROGRESS_AFTER && !stop.load(Ordering::SeqCst) {
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r  {name} running… {} s", elapsed.as_secs());
                    let _ = err.flush();
                    shown = true;
                }
            }
            if shown {
                let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            }
        });
        self.progress = Some((flag, ticker));
    }

    fn stop_progress(&mut self) {
        if let Some((stop, ticker)) = self.progress.take() {
            stop.store(true, Ordering::SeqCst);
            // The line is cleared before the next one is written.
            let _ = ticker.join();
        }
    }

    fn note(&mut self, line: &str) {
        if self.mid_line {
            // The answer's line ends where it was written.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out);
            let _ = out.flush();
            self.mid_line = false;
        }
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// A JSON value shortened: a string as itself, anything else as JSON.
fn short_value(value: &Value, max: usize) -> String {
    match value {
        Value::String(s) => short(s, max),
        other => short(&other.to_string(), max),
    }
}

impl Sink for Human {
    fn output(&mut self, _tool: &str, text: &str) {
        if let Some(last) = &self.last {
            text.clone_into(
                &mut last
                    .0
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
        }
        for line in output_lines(text, self.last.is_some()) {
            self.note(&line);
        }
    }

    fn text(&mut self, chunk: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(chunk.as_bytes());
        let _ = out.flush();
        self.mid_line = !chunk.ends_with('\n');
    }

    fn event(&mut self, event: &Event) {
        match event {
            Event::SessionStarted {
                session_id, model, ..
            } => self.note(&format!(
                "warden: session {} with {}",
                short(session_id, 60),
                short(model, 60)
            )),
            Event::ToolCall {
                name, arguments, ..
            } => self.note(&format!(
                "→ {} {}",
                short(name, 40),
                short_value(arguments, 160)
            )),
            Event::PolicyDecision {
                decision,
                risk,
                reason,
                ..
            } if *decision != DecisionKind::Allow => self.note(&format!(
                "  {} ({}): {}",
                decision.as_str(),
                risk.map_or_else(|| "null".to_owned(), |r| format!("{r:?}")),
                warden_protocol::printable(&short(reason, 200))
            )),
            Event::ApprovalResolved { answer, .. } => {
                self.note(&format!("  approval: {}", answer.as_str()));
            }
            Event::ToolRunning { name, .. } => self.start_progress(short(name, 40)),
            Event::ToolResult {
                status,
                exit_code,
                error,
                ..
            } => {
                self.stop_progress();
                let line = match (status, error) {
                    (CallStatus::Ok, _) => match exit_code {
                        Some(code) => format!("  exit {code}"),
                        None => "  ok".to_owned(),
                    },
                    (status, Some(error)) => {
                        format!("  {}: {}", status.as_str(), short(error, 200))
                    }
                    (status, None) => format!("  {}", status.as_str()),
                };
                self.note(&line);
            }
            Event::SkillLoaded { .. }
            | Event::SkillUnloaded { .. }
            | Event::SkillNotLoaded { .. }
            | Event::Hook { .. }
            | Event::HookNotice { .. } => self.side_note(event),
            Event::Retry { wait_ms, why, .. } => self.note(&format!(
                "  (the model provider failed: {}; retrying in {wait_ms} ms)",
                short(why, 200)
            )),
            Event::SessionFinished {
                status,
                usage,
                cost_usd,
                turns,
                tool_calls,
                duration_ms,
                network,
                ..
            } => {
                let network = network.map_or_else(String::new, |n| {
                    format!(", network {} allowed / {} refused", n.allowed, n.denied)
                });
                #[allow(clippy::cast_precision_loss)]
                let seconds = *duration_ms as f64 / 1000.0;
                self.note(&format!(
                    "warden: {} — {turns} turns, {tool_calls} tool calls, {} tokens in / {} out, \
                     ${cost_usd:.4}, {seconds:.1} s{network}",
                    status.as_str(),
                    usage.input_tokens,
                    usage.output_tokens,
                ));
            }
            // Shown elsewhere (the answer streams as text), or not for a person.
            Event::PolicyDecision { .. }
            | Event::ModelRequest { .. }
            | Event::AssistantText { .. }
            | Event::ApprovalRequested { .. }
            | Event::Compaction { .. }
            | Event::Receipt { .. } => {}
        }
    }
}

impl Human {
    /// The lines for skills and hooks.
    fn side_note(&mut self, event: &Event) {
        match event {
            Event::SkillLoaded { name, approval, .. } => self.note(&format!(
                "  skill {} loaded ({})",
                short(name, 60),
                short(approval, 40)
            )),
            Event::SkillUnloaded { name, reason } => self.note(&format!(
                "  skill {} unloaded: {}",
                short(name, 60),
                short(reason, 60)
            )),
            Event::SkillNotLoaded { name, why } => self.note(&format!(
                "  skill {} not loaded: {}",
                short(name, 60),
                short(why, 200)
            )),
            Event::Hook {
                hook_event,
                decision,
                error,
                ..
            } if decision.is_some() || error.is_some() => self.note(&format!(
                "  hook ({hook_event}): {}",
                error.as_deref().map_or_else(
                    || decision.clone().unwrap_or_default(),
                    |e| { warden_protocol::printable(&short(e, 200)) }
                )
            )),
            Event::HookNotice { message } => self.note(&format!(
                "  hook: {}",
                warden_protocol::printable(&short(message, 400))
            )),
            // The rest are printed by `event`.
            _ => {}
        }
    }
}

/// A context report as a table, a line per layer and its reasons.
pub(crate) fn print_report(report: &warden_context::Report) {
    println!(
        "window {} tokens, budget {}, this context {}{}",
        report.window,
        report.budget,
        report.total,
        if report.over_budget {
            " (over budget)"
        } else {
            ""
        }
    );
    println!(
        "{:<18} {:>8} {:>8} {:>6} {:>8} {:>8}",
        "layer", "budget", "used", "kept", "trimmed", "dropped"
    );
    for layer in &report.layers {
        println!(
            "{:<18} {:>8} {:>8} {:>6} {:>8} {:>8}",
            layer.name, layer.budget, layer.used, layer.kept, layer.trimmed, layer.dropped
        );
        for reason in &layer.reasons {
            println!("    {reason}");
        }
    }
}
