//! The audit as text for a terminal and as Markdown for a pull request: the same sections, from
//! the same rows, as the JSON; every word from the trace made printable.

use std::fmt::Write as _;

use super::Audit;
use super::collect::SessionAudit;

/// One section of a session's audit: its rows, each a list of cells.
struct Section {
    title: &'static str,
    head: &'static [&'static str],
    rows: Vec<Vec<String>>,
}

fn p(text: &str) -> String {
    warden_protocol::printable(text)
}

fn opt(text: Option<&str>) -> String {
    text.map(p).unwrap_or_default()
}

/// The files a command changed, a few of them.
fn changed(files: Option<&[String]>) -> String {
    let Some(files) = files else {
        return String::new();
    };
    let shown: Vec<String> = files.iter().take(5).map(|f| p(f)).collect();
    let more = files.len().saturating_sub(5);
    if more > 0 {
        format!("{} (+{more})", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

fn seqs(calls: &[u64]) -> String {
    calls
        .iter()
        .map(|s| format!("#{s}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the session did, then what was decided about it.
fn sections(s: &SessionAudit) -> Vec<Section> {
    let mut out = vec![
        Section {
            title: "Files read",
            head: &["path", "lines", "by", "calls"],
            rows: s
                .files_read
                .iter()
                .map(|f| {
                    vec![
                        p(&f.path),
                        f.ranges.join(", "),
                        f.tool.clone(),
                        seqs(&f.calls),
                    ]
                })
                .collect(),
        },
        Section {
            title: "Files changed",
            head: &["path", "+", "-", "by", "calls", "note"],
            rows: s
                .files_changed
                .iter()
                .map(|f| {
                    let note = [
                        (f.created, "created"),
                        (f.deleted, "deleted"),
                        (f.undone, "undone"),
                    ]
                    .iter()
                    .filter(|(on, _)| *on)
                    .map(|(_, n)| *n)
                    .collect::<Vec<_>>()
                    .join(", ");
                    vec![
                        p(&f.path),
                        f.added.to_string(),
                        f.removed.to_string(),
                        f.tools.join(", "),
                        seqs(&f.calls),
                        note,
                    ]
                })
                .collect(),
        },
        Section {
            title: "Commands",
            head: &["#", "command", "exit", "ms", "sandbox", "changed"],
            rows: s
                .commands
                .iter()
                .map(|c| {
                    let exit = c
                        .exit_code
                        .map_or_else(|| c.status.clone(), |e| e.to_string());
                    vec![
                        format!("#{}", c.seq),
                        p(&c.command),
                        exit,
                        c.duration_ms.to_string(),
                        p(&c.sandbox_profile),
                        changed(c.changed_files.as_deref()),
                    ]
                })
                .collect(),
        },
        Section {
            title: "Network",
            head: &["kind", "host", "port", "request", "decision", "rule"],
            rows: s
                .network
                .iter()
                .map(|n| {
                    let request =
                        format!("{} {}", opt(n.method.as_deref()), opt(n.path.as_deref()));
                    vec![
                        n.kind.clone(),
                        p(&n.host),
                        n.port.to_string(),
                        request.trim().to_owned(),
                        n.decision.clone(),
                        p(&n.rule),
                    ]
                })
                .collect(),
        },
    ];
    out.extend(decided(s));
    out
}

/// What was refused, approved, active or summarised.
fn decided(s: &SessionAudit) -> Vec<Section> {
    let mut out = vec![
        Section {
            title: "Denied",
            head: &["#", "tool", "target", "layer", "rule", "reason"],
            rows: s
                .denied
                .iter()
                .map(|d| {
                    vec![
                        format!("#{}", d.seq),
                        d.tool.clone(),
                        p(&d.target),
                        d.layer.clone(),
                        opt(d.rule.as_deref()),
                        p(&d.reason),
                    ]
                })
                .collect(),
        },
        Section {
            title: "Approvals",
            head: &["when", "tool", "answer", "rule"],
            rows: s
                .approvals
                .iter()
                .map(|a| {
                    vec![
                        a.at.clone(),
                        p(&a.tool),
                        a.answer.clone(),
                        opt(a.rule.as_deref()),
                    ]
                })
                .collect(),
        },
        Section {
            title: "Skills",
            head: &["name", "version", "trust", "calls while active"],
            rows: s
                .skills
                .iter()
                .map(|k| {
                    vec![
                        p(&k.name),
                        opt(k.version.as_deref()),
                        opt(k.trust.as_deref()),
                        seqs(&k.calls_while_active),
                    ]
                })
                .collect(),
        },
        Section {
            title: "Compactions",
            head: &["when", "trigger", "messages", "identifiers restored"],
            rows: s
                .compactions
                .iter()
                .map(|c| {
                    vec![
                        c.at.clone(),
                        c.trigger.clone(),
                        c.messages.to_string(),
                        c.identifiers_restored.to_string(),
                    ]
                })
                .collect(),
        },
    ];
    out.extend(optional(s));
    out
}

/// The sections a session has only when it has something to say in them.
fn optional(s: &SessionAudit) -> Vec<Section> {
    let mut out = Vec::new();
    if !s.receipts.is_empty() {
        out.push(Section {
            title: "Receipts",
            head: &["run", "status", "checksums", "artifacts"],
            rows: s
                .receipts
                .iter()
                .map(|r| {
                    let artifacts = r
                        .artifacts
                        .iter()
                        .map(|a| format!("{} ({})", p(&a.path), a.check))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let checksums = if r.verified { "hold" } else { "DO NOT HOLD" };
                    vec![p(&r.run_id), p(&r.status), checksums.to_owned(), artifacts]
                })
                .collect(),
        });
    }
    if !s.hooks.is_empty() {
        out.push(Section {
            title: "Hooks",
            head: &["when", "event", "command sha256", "decision", "error"],
            rows: s
                .hooks
                .iter()
                .map(|h| {
                    let sha: String = h.command_sha256.chars().take(12).collect();
                    vec![
                        h.at.clone(),
                        h.event.clone(),
                        sha,
                        opt(h.decision.as_deref()),
                        opt(h.error.as_deref()),
                    ]
                })
                .collect(),
        });
    }
    out
}

/// The session's heading line: its id, times, status and client.
fn heading(s: &SessionAudit) -> String {
    let mut line = format!(
        "{} – {}",
        s.started_at.as_deref().unwrap_or("?"),
        s.ended_at.as_deref().unwrap_or("?")
    );
    if let Some(status) = &s.status {
        let _ = write!(line, ", {status}");
    }
    if let Some(client) = &s.client {
        let _ = write!(line, ", for the MCP client {}", p(&client.to_string()));
    }
    line
}

fn usage(s: &SessionAudit) -> Option<String> {
    s.usage.as_ref().map(|u| {
        let budget = u
            .budget
            .as_deref()
            .map(|b| format!(", the {b} budget ran out"))
            .unwrap_or_default();
        format!(
            "{} turns, {} tool calls, {} tokens in / {} out, ${:.4}, {} ms{budget}",
            u.turns, u.tool_calls, u.input_tokens, u.output_tokens, u.cost_usd, u.duration_ms
        )
    })
}

fn totals_line(audit: &Audit) -> String {
    let t = &audit.totals;
    format!(
        "{} session(s): {} files read, {} changed, {} commands, {} denied, {} approvals, {} \
         connections ({} refused)",
        t.sessions,
        t.files_read,
        t.files_changed,
        t.commands,
        t.denied,
        t.approvals,
        t.connections,
        t.connections_denied
    )
}

pub(super) fn text(audit: &Audit) -> String {
    let mut out = format!("warden audit — {}\n", totals_line(audit));
    for s in &audit.sessions {
        let _ = writeln!(out, "\nsession {} ({})", s.session_id, heading(s));
        for section in sections(s) {
            let none = if section.rows.is_empty() { " none" } else { "" };
            let _ = writeln!(out, "  {}:{none}", section.title.to_lowercase());
            for row in &section.rows {
                let cells: Vec<&str> = row
                    .iter()
                    .map(String::as_str)
                    .filter(|c| !c.is_empty())
                    .collect();
                let _ = writeln!(out, "    {}", cells.join("  "));
            }
        }
        if let Some(usage) = usage(s) {
            let _ = writeln!(out, "  usage: {usage}");
        }
    }
    out
}

/// A Markdown table cell: no pipes or line breaks.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

pub(super) fn markdown(audit: &Audit) -> String {
    let mut out = format!("# warden audit\n\n{}\n", totals_line(audit));
    for s in &audit.sessions {
        let _ = writeln!(out, "\n## Session `{}`\n\n{}\n", s.session_id, heading(s));
        for section in sections(s) {
            let _ = writeln!(out, "### {}\n", section.title);
            if section.rows.is_empty() {
                out.push_str("None.\n\n");
                continue;
            }
            let _ = writeln!(
                out,
                "| {} |\n|{}",
                section.head.join(" | "),
                "---|".repeat(section.head.len())
            );
            for row in &section.rows {
                let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
            out.push('\n');
        }
        for f in s.files_changed.iter().filter(|f| f.diff.is_some()) {
            let diff = warden_protocol::printable_text(f.diff.as_deref().unwrap_or_default());
            let _ = writeln!(
                out,
                "<details><summary>diff of {}</summary>\n\n```diff\n{}```\n</details>\n",
                cell(&p(&f.path)),
                diff.replace("```", "'''")
            );
        }
        if let Some(usage) = usage(s) {
            let _ = writeln!(out, "Usage: {usage}.\n");
        }
    }
    out
}
