//! A session's steps in the order they happened, for the HTML report's timeline: each call, each
//! connection, each answer of a person, each skill, compaction and hook, with what decided it.

use serde_json::Value;
use warden_protocol::{ToolEvent, ToolStatus};

/// One step of the timeline.
#[derive(Debug, Clone)]
pub(super) struct Moment {
    pub(super) at: String,
    /// `read`, `write`, `command`, `search`, `web`, `mcp`, `network`, `approval`, `skill`,
    /// `compaction`, `hook`, `other`.
    pub(super) kind: &'static str,
    /// `allow`, `deny`, `ask` or empty.
    pub(super) decision: &'static str,
    pub(super) title: String,
    /// Label and value, in order.
    pub(super) details: Vec<(String, String)>,
}

fn kind_of(tool: &str) -> &'static str {
    match tool {
        "readFile" => "read",
        "writeFile" | "editFile" | "apply_patch" => "write",
        "bash" => "command",
        "glob" | "grep" => "search",
        "webFetch" => "web",
        t if t.starts_with("mcp__") => "mcp",
        _ => "other",
    }
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .map(|v| match v {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

/// The timeline of a session's tool events, the loop's events and its connections.
pub(super) fn of(
    events: &[ToolEvent],
    agent: &[(String, String, Value)],
    network: &[(String, Value)],
) -> Vec<Moment> {
    let mut moments: Vec<Moment> = events.iter().map(call).collect();
    for (at, kind, data) in agent {
        if let Some(moment) = step(at, kind, data) {
            moments.push(moment);
        }
    }
    for (at, data) in network {
        let decision = if text(data, "decision") == "deny" {
            "deny"
        } else {
            "allow"
        };
        moments.push(Moment {
            at: at.clone(),
            kind: "network",
            decision,
            title: format!(
                "{} {}:{} {} {}",
                text(data, "kind"),
                text(data, "host"),
                text(data, "port"),
                text(data, "method"),
                text(data, "path")
            )
            .trim_end()
            .to_owned(),
            details: vec![
                ("decision".to_owned(), text(data, "decision")),
                ("rule".to_owned(), text(data, "reason")),
                ("bytes up".to_owned(), text(data, "bytesUp")),
                ("bytes down".to_owned(), text(data, "bytesDown")),
            ],
        });
    }
    moments.sort_by(|a, b| a.at.cmp(&b.at));
    moments
}

fn call(event: &ToolEvent) -> Moment {
    let tool = event.tool.to_string();
    let args = &event.arguments;
    let target = ["path", "command", "url", "pattern"]
        .iter()
        .map(|k| text(args, k))
        .find(|t| !t.is_empty())
        .unwrap_or_else(|| warden_protocol::short(&args.to_string(), 200));
    let decision = match (event.status, event.decision.decision.as_str()) {
        (ToolStatus::Denied, "require_approval" | "require_escalation" | "rewrite") => "ask",
        (ToolStatus::Denied, _) => "deny",
        _ => "allow",
    };
    let mut details = vec![
        ("call".to_owned(), format!("#{}", event.seq)),
        (
            "status".to_owned(),
            format!("{:?}", event.status).to_lowercase(),
        ),
        (
            "decision".to_owned(),
            event.decision.decision.as_str().to_owned(),
        ),
        ("layer".to_owned(), event.decision.layer.as_str().to_owned()),
        ("reason".to_owned(), event.decision.reason.clone()),
        ("duration".to_owned(), format!("{} ms", event.duration_ms)),
        ("sandbox".to_owned(), event.sandbox_profile.clone()),
        (
            "arguments".to_owned(),
            serde_json::to_string_pretty(args).unwrap_or_default(),
        ),
    ];
    if let Some(rule) = &event.decision.rule {
        details.push(("rule".to_owned(), rule.clone()));
    }
    if let Some(summary) = &event.summary {
        details.push((
            "result".to_owned(),
            serde_json::to_string_pretty(summary).unwrap_or_default(),
        ));
    }
    if let Some(error) = &event.error {
        details.push(("error".to_owned(), error.clone()));
    }
    Moment {
        at: event.timestamp.clone(),
        kind: kind_of(&tool),
        decision,
        title: format!("{tool} {target}"),
        details,
    }
}

/// A step of the loop, where it is one a reviewer reads.
fn step(at: &str, kind: &str, data: &Value) -> Option<Moment> {
    let (kind, decision, title) = match kind {
        "approval_resolved" => {
            let answer = text(data, "answer");
            let decision = if answer == "deny" { "deny" } else { "allow" };
            (
                "approval",
                decision,
                format!("{} answered {answer}", text(data, "tool")),
            )
        }
        "skill_loaded" => ("skill", "", format!("skill {} loaded", text(data, "name"))),
        "skill_unloaded" => (
            "skill",
            "",
            format!("skill {} unloaded", text(data, "name")),
        ),
        "compaction" => (
            "compaction",
            "",
            format!(
                "compaction ({}): {} messages summarised",
                text(data, "trigger"),
                text(data, "messages")
            ),
        ),
        "hook" => {
            let decision = match text(data, "decision").as_str() {
                "deny" | "block" | "stop" => "deny",
                "ask" => "ask",
                "allow" => "allow",
                _ => "",
            };
            (
                "hook",
                decision,
                format!("hook {}", text(data, "hookEvent")),
            )
        }
        _ => return None,
    };
    let details = data
        .as_object()
        .map(|map| {
            map.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => serde_json::to_string_pretty(other).unwrap_or_default(),
                    };
                    (k.clone(), v)
                })
                .collect()
        })
        .unwrap_or_default();
    Some(Moment {
        at: at.to_owned(),
        kind,
        decision,
        title,
        details,
    })
}
