//! Asking a person (SPEC P8): the prompt shows the tool, its arguments, what it touches, the
//! risk, the reason, the safer alternative and how to roll back; the answer is once, for this
//! session, always (a rule saved in the project's local settings), or no, with an optional word
//! for the model.

use std::io::{BufRead as _, Write as _};

use warden_protocol::Decision;

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Once,
    Session,
    Always,
    /// The wider rule offered as the second choice, for the session or always.
    Wider {
        always: bool,
    },
    Deny(Option<String>),
}

impl Answer {
    /// The answer without a denial's message, as events carry it.
    pub fn kind(&self) -> warden_protocol::Answer {
        match self {
            Self::Once => warden_protocol::Answer::Once,
            Self::Session | Self::Wider { always: false } => warden_protocol::Answer::Session,
            Self::Always | Self::Wider { always: true } => warden_protocol::Answer::Always,
            Self::Deny(_) => warden_protocol::Answer::Deny,
        }
    }

    pub fn as_str(&self) -> &'static str {
        self.kind().as_str()
    }
}

/// What is put to the person.
#[derive(Debug, Clone)]
pub struct Question<'a> {
    pub tool: &'a str,
    pub arguments: &'a str,
    pub decision: &'a Decision,
    /// The rule an answer of "session" or "always" would add; `None` when no rule narrow
    /// enough exists (then only once or no are offered).
    pub rule: Option<&'a str>,
    /// What the call would change (a unified diff, a patch's files) or, for a command, what it
    /// runs, reads and writes as the policy understood it; redacted and capped.
    pub preview: Option<&'a str>,
    /// A rule wider than `rule`, offered only as an explicit second choice, or the one a person
    /// might expect and why it is never remembered.
    pub wider: Option<&'a warden_policy::Wider>,
}

/// How many lines of a preview are shown before the person asks for the rest.
const PREVIEW_LINES: usize = 40;

/// A preview's lines for a terminal: removed lines red, added green, headers bold; every
/// character printable.
fn preview_lines(preview: &str, all: bool, tool: &str) -> (Vec<String>, usize) {
    let lines: Vec<&str> = preview.lines().collect();
    // A patch's files first; its hunks, after the blank line, on request.
    let first = if tool == "apply_patch" {
        lines
            .iter()
            .position(|l| l.is_empty())
            .unwrap_or(lines.len())
    } else {
        PREVIEW_LINES
    };
    let shown = if all {
        lines.len()
    } else {
        lines.len().min(first).min(PREVIEW_LINES)
    };
    let out = lines[..shown]
        .iter()
        .map(|line| {
            let text = warden_protocol::printable(line);
            if line.starts_with("+++") || line.starts_with("---") || line.starts_with("@@") {
                format!("\x1b[1m{text}\x1b[0m")
            } else if line.starts_with('+') {
                format!("\x1b[32m{text}\x1b[0m")
            } else if line.starts_with('-') {
                format!("\x1b[31m{text}\x1b[0m")
            } else {
                text
            }
        })
        .collect();
    (out, lines.len() - shown)
}

/// Who answers approval requests.
pub trait Approver: Send + Sync {
    fn ask(&self, question: &Question<'_>) -> Answer;
}

/// Asks on the terminal: the question on standard error, the answer from standard input.
#[derive(Debug, Default)]
pub struct Terminal;

impl Approver for Terminal {
    fn ask(&self, q: &Question<'_>) -> Answer {
        let mut err = std::io::stderr().lock();
        let d = q.decision;
        // Every word here may come from the model, a command or a repository: a terminal must
        // not obey what it holds (a forged question above the real one).
        let p = warden_protocol::printable;
        let _ = writeln!(err, "\n── approval needed ──────────────────────────────");
        let _ = writeln!(err, "tool:      {}", p(q.tool));
        let _ = writeln!(err, "arguments: {}", p(q.arguments));
        if let Some(request) = &d.approval {
            if !request.resources.is_empty() {
                let _ = writeln!(err, "touches:   {}", p(&request.resources.join(", ")));
            }
            let _ = writeln!(err, "risk:      {:?}", request.risk);
            let _ = writeln!(err, "why:       {}", p(&request.why));
            if let Some(alternative) = &request.alternative {
                let _ = writeln!(err, "safer:     {}", p(alternative));
            }
            let _ = writeln!(err, "undo:      {}", p(&request.rollback));
        } else {
            let _ = writeln!(err, "why:       {}", p(&d.reason));
        }
        if let Some(rewrite) = &d.rewrite {
            let _ = writeln!(
                err,
                "instead:   {} {} ({})",
                p(&rewrite.tool),
                p(&rewrite.target),
                p(&rewrite.reason)
            );
        }
        let offered = rule_lines(&mut err, q);
        let choices = match (q.rule.is_some(), offered.is_some()) {
            (true, true) => "[o]nce, [s]ession, [a]lways, [w]ider rule, [d]eny",
            (true, false) => "[o]nce, [s]ession, [a]lways, [d]eny",
            _ => "[o]nce, [d]eny",
        };
        let mut left = 0;
        if let Some(preview) = q.preview {
            let what = if q.tool == "bash" {
                "as understood:"
            } else {
                "change:"
            };
            let _ = writeln!(err, "{what}");
            let (lines, more) = preview_lines(preview, false, q.tool);
            for line in lines {
                let _ = writeln!(err, "  {line}");
            }
            if more > 0 {
                let _ = if q.tool == "apply_patch" {
                    writeln!(err, "  … its hunks, {more} lines ([v]iew them)")
                } else {
                    writeln!(err, "  … {more} more lines ([v]iew them all)")
                };
            }
            left = more;
        }
        loop {
            // One write: whoever answers sees the whole question at once.
            let _ = err.write_all(format!("allow? {choices}: ").as_bytes());
            let _ = err.flush();
            let mut line = String::new();
            if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
                return Answer::Deny(None);
            }
            match line.trim().to_ascii_lowercase().as_str() {
                "v" | "view" if left > 0 => {
                    let (lines, _) = preview_lines(q.preview.unwrap_or_default(), true, q.tool);
                    for line in lines {
                        let _ = writeln!(err, "  {line}");
                    }
                }
                "o" | "once" | "y" | "yes" => return Answer::Once,
                "s" | "session" if q.rule.is_some() => return Answer::Session,
                "a" | "always" if q.rule.is_some() => return Answer::Always,
                "w" | "wider" => {
                    if let Some(answer) = offered.and_then(|rule| wider(&mut err, rule)) {
                        return answer;
                    }
                }
                "d" | "deny" | "n" | "no" => {
                    let _ = write!(err, "a word for the model (enter for none): ");
                    let _ = err.flush();
                    let mut why = String::new();
                    let _ = std::io::stdin().lock().read_line(&mut why);
                    let why = why.trim();
                    return Answer::Deny((!why.is_empty()).then(|| why.to_owned()));
                }
                _ => {}
            }
        }
    }
}

/// The rule an answer of session or always remembers, and the wider one offered (returned) or
/// named and refused, with why.
fn rule_lines<'q>(err: &mut std::io::StderrLock<'_>, q: &Question<'q>) -> Option<&'q str> {
    let p = warden_protocol::printable;
    if let Some(rule) = q.rule {
        let _ = writeln!(err, "rule:      {} (for session or always)", p(rule));
    }
    match q.wider {
        Some(warden_policy::Wider::Offered(rule)) if q.rule.is_some() => {
            let _ = writeln!(err, "wider:     {} ([w], then session or always)", p(rule));
            Some(rule.as_str())
        }
        Some(warden_policy::Wider::Refused { rule, why }) => {
            let _ = writeln!(err, "not:       {} — {}", p(rule), p(why));
            None
        }
        _ => None,
    }
}

/// The second question of a wider rule: for the session, always, or back to the first.
fn wider(err: &mut std::io::StderrLock<'_>, rule: &str) -> Option<Answer> {
    loop {
        let question = format!(
            "the wider rule {}: [s]ession, [a]lways, [b]ack: ",
            warden_protocol::printable(rule)
        );
        let _ = err.write_all(question.as_bytes());
        let _ = err.flush();
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
            return Some(Answer::Deny(None));
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "s" | "session" => return Some(Answer::Wider { always: false }),
            "a" | "always" => return Some(Answer::Wider { always: true }),
            "b" | "back" => return None,
            _ => {}
        }
    }
}
