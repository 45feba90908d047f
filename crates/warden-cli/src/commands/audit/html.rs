//! The audit as one self-contained HTML file: no network, no file beside it, readable from
//! `file://` and on paper. A summary of counts at the top, then each session's timeline — every
//! step expandable to its details, filtered by kind and decision — and the diffs of what changed.
//! Every word from the trace is escaped; the page's script only shows and hides.

use std::fmt::Write as _;

use super::Audit;
use super::collect::SessionAudit;

/// Text made safe for HTML: escaped, and every control character spelled out.
fn esc(text: &str) -> String {
    escape(&warden_protocol::printable(text))
}

/// As [`esc`], keeping line breaks (for `<pre>`).
fn esc_lines(text: &str) -> String {
    escape(&warden_protocol::printable_text(text))
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
:root { --fg: #1d1f23; --muted: #5b6270; --line: #d9dce1; --deny: #b42318; --ask: #9a6700;
  --allow: #1a7f37; --bg: #ffffff; --soft: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', sans-serif; color: var(--fg);
  background: var(--bg); margin: 0 auto; max-width: 1100px; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 6px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.muted, time { color: var(--muted); }
#summary { display: grid; grid-template-columns: repeat(6, 1fr); gap: 10px; margin: 18px 0; }
.count { border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; background: var(--soft); }
.count b { display: block; font-size: 24px; }
.count.bad b { color: var(--deny); }
#filters { border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; margin: 0 0 12px; }
#filters label { margin-right: 12px; white-space: nowrap; }
ol.timeline { list-style: none; padding: 0; margin: 0; border-left: 2px solid var(--line); }
ol.timeline li { margin: 0 0 4px 0; padding-left: 12px; position: relative; }
ol.timeline li::before { content: ''; position: absolute; left: -6px; top: 9px; width: 10px;
  height: 10px; border-radius: 50%; background: var(--line); }
ol.timeline li[data-decision=allow]::before { background: var(--allow); }
ol.timeline li[data-decision=deny]::before { background: var(--deny); }
ol.timeline li[data-decision=ask]::before { background: var(--ask); }
li.hidden { display: none; }
summary { cursor: pointer; }
.kind { display: inline-block; min-width: 84px; font-weight: 600; }
.decision-deny { color: var(--deny); font-weight: 600; } .decision-ask { color: var(--ask); }
dl { display: grid; grid-template-columns: 110px 1fr; gap: 2px 12px; margin: 6px 0 10px; }
dt { color: var(--muted); } dd { margin: 0; white-space: pre-wrap; word-break: break-word;
  font-family: ui-monospace, 'SFMono-Regular', Menlo, monospace; font-size: 12.5px; }
pre.diff { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 8px;
  overflow-x: auto; font-size: 12.5px; }
pre.diff .add { color: var(--allow); } pre.diff .del { color: var(--deny); }
pre.diff .hunk { color: var(--muted); }
table { border-collapse: collapse; width: 100%; margin: 4px 0 10px; }
td, th { border-bottom: 1px solid var(--line); text-align: left; padding: 4px 6px; vertical-align: top; }
@media print { #filters { display: none; } body { max-width: none; padding: 0; }
  li.hidden { display: list-item; } details > summary { list-style: none; } }
";

/// Shows and hides timeline steps by kind and decision (`#hide=command,deny` starts with those
/// hidden); opens every step for printing.
const SCRIPT: &str = "
(function () {
  var boxes = document.querySelectorAll('#filters input');
  function apply() {
    var off = {};
    boxes.forEach(function (b) { if (!b.checked) off[b.value] = true; });
    document.querySelectorAll('ol.timeline li').forEach(function (li) {
      var hide = off[li.dataset.kind] || (li.dataset.decision && off[li.dataset.decision]);
      li.classList.toggle('hidden', !!hide);
    });
  }
  var hash = decodeURIComponent(location.hash || '');
  if (hash.indexOf('#hide=') === 0) {
    var hidden = hash.slice(6).split(',');
    boxes.forEach(function (b) { if (hidden.indexOf(b.value) >= 0) b.checked = false; });
  }
  boxes.forEach(function (b) { b.addEventListener('change', apply); });
  apply();
  window.addEventListener('beforeprint', function () {
    document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  });
})();
";

const KINDS: &[&str] = &[
    "read",
    "write",
    "command",
    "search",
    "web",
    "mcp",
    "network",
    "approval",
    "skill",
    "compaction",
    "hook",
    "other",
];

pub(super) fn report(audit: &Audit) -> String {
    let mut out = String::from(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>warden audit</title>\n<style>",
    );
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body>\n<header>\n<h1>warden audit</h1>\n");
    let _ = writeln!(
        out,
        "<p class=\"muted\">Generated <time>{}</time> from warden's trace: {} session(s).</p>",
        esc(&audit.generated_at),
        audit.totals.sessions
    );
    out.push_str("</header>\n");
    summary(&mut out, audit);
    filters(&mut out);
    for session in &audit.sessions {
        session_html(&mut out, session);
    }
    out.push_str("<script>");
    out.push_str(SCRIPT);
    out.push_str("</script>\n</body>\n</html>\n");
    out
}

fn summary(out: &mut String, audit: &Audit) {
    let t = &audit.totals;
    out.push_str("<section id=\"summary\">\n");
    for (id, count, label, bad) in [
        ("reads", t.files_read, "files read", false),
        ("writes", t.files_changed, "files changed", false),
        ("commands", t.commands, "commands", false),
        ("denials", t.denied, "denied", t.denied > 0),
        ("approvals", t.approvals, "approvals", false),
        ("connections", t.connections, "connections", false),
    ] {
        let _ = writeln!(
            out,
            "<div class=\"count{}\" id=\"count-{id}\"><b>{count}</b>{label}</div>",
            if bad { " bad" } else { "" }
        );
    }
    out.push_str("</section>\n");
}

fn filters(out: &mut String) {
    out.push_str("<fieldset id=\"filters\"><legend>Show</legend>\n");
    for kind in KINDS {
        let _ = writeln!(
            out,
            "<label><input type=\"checkbox\" value=\"{kind}\" checked> {kind}</label>"
        );
    }
    out.push_str("<br>\n");
    for (decision, label) in [("allow", "allowed"), ("ask", "asked"), ("deny", "denied")] {
        let _ = writeln!(
            out,
            "<label><input type=\"checkbox\" value=\"{decision}\" checked> {label}</label>"
        );
    }
    out.push_str("</fieldset>\n");
}

fn session_html(out: &mut String, s: &SessionAudit) {
    let _ = writeln!(
        out,
        "<section class=\"session\" id=\"session-{0}\">\n<h2>Session <code>{0}</code></h2>",
        esc(&s.session_id)
    );
    let mut meta = format!(
        "{} – {}",
        s.started_at.as_deref().map_or_else(|| "?".to_owned(), esc),
        s.ended_at.as_deref().map_or_else(|| "?".to_owned(), esc)
    );
    if let Some(status) = &s.status {
        let _ = write!(meta, ", {}", esc(status));
    }
    if let Some(client) = &s.client {
        let _ = write!(meta, ", for the MCP client {}", esc(&client.to_string()));
    }
    if let Some(u) = &s.usage {
        let _ = write!(
            meta,
            " · {} turns, {} tool calls, {} tokens in / {} out, ${:.4}",
            u.turns, u.tool_calls, u.input_tokens, u.output_tokens, u.cost_usd
        );
    }
    let _ = writeln!(out, "<p class=\"muted\">{meta}</p>");
    out.push_str("<h3>Timeline</h3>\n<ol class=\"timeline\">\n");
    if s.timeline.is_empty() {
        out.push_str("<li class=\"empty\">Nothing was recorded.</li>\n");
    }
    for m in &s.timeline {
        let decision = if m.decision.is_empty() {
            String::new()
        } else {
            format!(" <span class=\"decision-{0}\">{0}</span>", m.decision)
        };
        // A refusal is what a reviewer looks for first: shown open.
        let open = if m.decision == "deny" { " open" } else { "" };
        let _ = writeln!(
            out,
            "<li data-kind=\"{}\" data-decision=\"{}\"><details{open}><summary><time>{}</time> \
             <span class=\"kind\">{}</span> {}{decision}</summary>\n<dl>",
            m.kind,
            m.decision,
            esc(&m.at),
            m.kind,
            esc(&m.title)
        );
        for (label, value) in &m.details {
            let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(label), esc_lines(value));
        }
        out.push_str("</dl></details></li>\n");
    }
    out.push_str("</ol>\n");
    changes(out, s);
    out.push_str("</section>\n");
}

fn changes(out: &mut String, s: &SessionAudit) {
    out.push_str("<h3>Files changed</h3>\n");
    if s.files_changed.is_empty() {
        out.push_str("<p class=\"muted\">None.</p>\n");
        return;
    }
    for f in &s.files_changed {
        let mut notes = Vec::new();
        if f.created {
            notes.push("created");
        }
        if f.deleted {
            notes.push("deleted");
        }
        if f.undone {
            notes.push("undone");
        }
        let _ = writeln!(
            out,
            "<details class=\"change\" open><summary><code>{}</code> +{} −{} by {} (calls {}){}</summary>",
            esc(&f.path),
            f.added,
            f.removed,
            esc(&f.tools.join(", ")),
            f.calls
                .iter()
                .map(|c| format!("#{c}"))
                .collect::<Vec<_>>()
                .join(", "),
            if notes.is_empty() {
                String::new()
            } else {
                format!(", {}", notes.join(", "))
            }
        );
        out.push_str("<pre class=\"diff\">");
        for line in f.diff.as_deref().unwrap_or_default().lines() {
            let class = if line.starts_with("@@") {
                "hunk"
            } else if line.starts_with('+') && !line.starts_with("+++") {
                "add"
            } else if line.starts_with('-') && !line.starts_with("---") {
                "del"
            } else {
                ""
            };
            let _ = writeln!(out, "<span class=\"{class}\">{}</span>", esc(line));
        }
        out.push_str("</pre></details>\n");
    }
}
