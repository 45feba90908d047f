//! What a run shows: JSON lines of events (`--json`), or text for a person — the answer as it
//! streams, each tool call with its decision and result, and a last line with the totals.

use std::io::Write as _;

use serde_json::{Value, json};

/// Where a run's events go.
pub trait Sink: Send {
    /// A piece of the model's answer, as it streams.
    fn text(&mut self, chunk: &str);
    /// One event (`session_started`, `model_request`, `assistant_text`, `tool_call`,
    /// `policy_decision`, `approval_requested`, `approval_resolved`, `tool_result`,
    /// `session_finished`, `retry`).
    fn event(&mut self, kind: &str, data: &Value);
}

/// One JSON object per line on standard output: `{"event": KIND, ...data}`.
#[derive(Debug, Default)]
pub struct JsonLines;

impl Sink for JsonLines {
    fn text(&mut self, _chunk: &str) {}

    fn event(&mut self, kind: &str, data: &Value) {
        if kind == "tool_running" {
            return;
        }
        let mut line = json!({"event": kind});
        if let (Some(line), Some(data)) = (line.as_object_mut(), data.as_object()) {
            line.extend(data.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// Text for a person: the answer on standard output, everything else on standard error, and a
/// progress line while a command runs long.
#[derive(Debug, Default)]
pub struct Human {
    mid_line: bool,
    /// Stops the progress line of the command running now.
    progress: Option<(
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        std::thread::JoinHandle<()>,
    )>,
}

/// After this long a running command gets a progress line, updated every second.
const PROGRESS_AFTER: std::time::Duration = std::time::Duration::from_secs(3);

impl Human {
    fn start_progress(&mut self, name: String) {
        self.stop_progress();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let ticker = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let mut shown = false;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(50));
                let elapsed = started.elapsed();
                if elapsed >= PROGRESS_AFTER && !stop.load(std::sync::atomic::Ordering::SeqCst) {
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
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            // The line is cleared before the next one is written.
            let _ = ticker.join();
        }
    }
}

impl Human {
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

fn short(value: &Value, max: usize) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut cut: String = text.chars().take(max).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut.replace('\n', " ")
}

impl Sink for Human {
    fn text(&mut self, chunk: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(chunk.as_bytes());
        let _ = out.flush();
        self.mid_line = !chunk.ends_with('\n');
    }

    fn event(&mut self, kind: &str, data: &Value) {
        match kind {
            "session_started" => self.note(&format!(
                "warden: session {} with {}",
                short(&data["sessionId"], 60),
                short(&data["model"], 60)
            )),
            "tool_call" => self.note(&format!(
                "→ {} {}",
                short(&data["name"], 40),
                short(&data["arguments"], 160)
            )),
            "policy_decision" if data["decision"] != "allow" => self.note(&format!(
                "  {} ({}): {}",
                short(&data["decision"], 30),
                short(&data["risk"], 4),
                short(&data["reason"], 200)
            )),
            "approval_resolved" => {
                self.note(&format!("  approval: {}", short(&data["answer"], 60)));
            }
            "tool_running" => {
                self.start_progress(short(&data["name"], 40));
            }
            "tool_result" => {
                self.stop_progress();
                let line = if data["status"] == "ok" {
                    match data.get("exitCode") {
                        Some(code) => format!("  exit {code}"),
                        None => "  ok".to_owned(),
                    }
                } else {
                    format!(
                        "  {}: {}",
                        short(&data["status"], 20),
                        short(&data["error"], 200)
                    )
                };
                self.note(&line);
            }
            "skill_loaded" => self.note(&format!(
                "  skill {} loaded ({})",
                short(&data["name"], 60),
                short(&data["approval"], 40)
            )),
            "skill_unloaded" => self.note(&format!(
                "  skill {} unloaded: {}",
                short(&data["name"], 60),
                short(&data["reason"], 60)
            )),
            "skill_not_loaded" => self.note(&format!(
                "  skill {} not loaded: {}",
                short(&data["name"], 60),
                short(&data["why"], 200)
            )),
            "retry" => self.note(&format!(
                "  (the model provider failed: {}; retrying in {} ms)",
                short(&data["why"], 200),
                data["waitMs"]
            )),
            "session_finished" => {
                let network = data.get("network").map_or_else(String::new, |n| {
                    format!(
                        ", network {} allowed / {} refused",
                        n["allowed"], n["denied"]
                    )
                });
                self.note(&format!(
                    "warden: {} — {} turns, {} tool calls, {} tokens in / {} out, ${:.4}, {:.1} s{network}",
                    short(&data["status"], 40),
                    data["turns"],
                    data["toolCalls"],
                    data["usage"]["inputTokens"],
                    data["usage"]["outputTokens"],
                    data["costUsd"].as_f64().unwrap_or(0.0),
                    data["durationMs"].as_f64().unwrap_or(0.0) / 1000.0,
                ));
            }
            _ => {}
        }
    }
}
