//! Approvals put to the client's user as an MCP form (elicitation): the call, what it would do,
//! its risk and why, and the rule each answer would remember — the same question `warden run`
//! asks on a terminal, answered the same ways (once, for this connection, always, no).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warden_agent::{Answer, Approver, Question};
use warden_policy::Wider;

/// The key of the approval among a 2026-07-28 result's input requests.
pub(super) const KEY: &str = "approval";

/// How many lines of a preview the form shows.
const PREVIEW_LINES: usize = 60;

/// The elicitation (`elicitation/create` parameters) that asks `q`.
pub(super) fn form(q: &Question<'_>) -> Value {
    let p = warden_protocol::printable;
    let d = q.decision;
    let mut message = format!(
        "warden asks before running {}: {}\n",
        p(q.tool),
        p(&warden_protocol::short(q.arguments, 400))
    );
    if let Some(request) = &d.approval {
        let _ = writeln!(message, "why: {}", p(&request.why));
        let _ = writeln!(message, "risk: {:?}", request.risk);
        if !request.resources.is_empty() {
            let _ = writeln!(message, "touches: {}", p(&request.resources.join(", ")));
        }
        if let Some(alternative) = &request.alternative {
            let _ = writeln!(message, "safer: {}", p(alternative));
        }
        let _ = writeln!(message, "undo: {}", p(&request.rollback));
    } else {
        let _ = writeln!(message, "why: {}", p(&d.reason));
    }
    if let Some(rewrite) = &d.rewrite {
        let _ = writeln!(
            message,
            "instead (what \"once\" runs): {} {} ({})",
            p(&rewrite.tool),
            p(&rewrite.target),
            p(&rewrite.reason)
        );
    }
    if let Some(preview) = q.preview {
        message.push_str("what it would do:\n");
        let lines: Vec<&str> = preview.lines().collect();
        for line in lines.iter().take(PREVIEW_LINES) {
            let _ = writeln!(message, "  {}", p(line));
        }
        if lines.len() > PREVIEW_LINES {
            let _ = writeln!(message, "  … {} more lines", lines.len() - PREVIEW_LINES);
        }
    }
    let mut choices = vec![json!({"const": "once", "title": "Run it once"})];
    if let Some(rule) = q.rule {
        let _ = writeln!(
            message,
            "\"for this connection\" and \"always\" remember the rule {}",
            p(rule)
        );
        choices.push(
            json!({"const": "session", "title": format!("Allow {} for this connection", p(rule))}),
        );
        choices.push(json!({"const": "always", "title": format!("Always allow {} (saved in warden's settings)", p(rule))}));
    }
    match q.wider {
        Some(Wider::Offered(wider)) => {
            choices.push(json!({"const": "wider-session", "title": format!("Allow the wider {} for this connection", p(wider))}));
            choices.push(json!({"const": "wider-always", "title": format!("Always allow the wider {}", p(wider))}));
        }
        Some(Wider::Refused { rule, why }) => {
            let _ = writeln!(message, "never remembered: {} ({})", p(rule), p(why));
        }
        None => {}
    }
    choices.push(json!({"const": "deny", "title": "Do not run it"}));
    json!({
        "mode": "form",
        "message": message.trim_end(),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "answer": {
                    "type": "string",
                    "title": "Your answer",
                    "oneOf": choices,
                },
                "message": {
                    "type": "string",
                    "title": "Why not (passed to the agent)",
                },
            },
            "required": ["answer"],
        },
    })
}

/// The answer in a client's reply (`action` and `content` of an elicitation result): anything
/// but an accepted, known choice is a refusal.
pub(super) fn answer(reply: &Value) -> Answer {
    let content = &reply["content"];
    let message = content["message"]
        .as_str()
        .filter(|m| !m.trim().is_empty())
        .map(|m| warden_protocol::short(m, 500));
    if reply["action"] != "accept" {
        return Answer::Deny(message);
    }
    match content["answer"].as_str() {
        Some("once") => Answer::Once,
        Some("session") => Answer::Session,
        Some("always") => Answer::Always,
        Some("wider-session") => Answer::Wider { always: false },
        Some("wider-always") => Answer::Wider { always: true },
        _ => Answer::Deny(message),
    }
}

/// Asks the client's user while the call waits: a client of a protocol revision before
/// 2026-07-28, which takes requests from the server during a call.
pub(super) struct Asked {
    pub(super) peer: rmcp::Peer<rmcp::RoleServer>,
    pub(super) handle: tokio::runtime::Handle,
}

impl Approver for Asked {
    fn ask(&self, q: &Question<'_>) -> Answer {
        let Ok(params) = serde_json::from_value::<rmcp::model::ElicitRequestParams>(form(q)) else {
            return Answer::Deny(None);
        };
        match self.handle.block_on(self.peer.create_elicitation(params)) {
            Ok(reply) => serde_json::to_value(reply).map_or(Answer::Deny(None), |r| answer(&r)),
            Err(_) => Answer::Deny(Some("the client could not ask its user".to_owned())),
        }
    }
}

/// Keeps the question instead of asking it, for a client that answers in a second request
/// (2026-07-28's input-required results); until then the call is not run.
#[derive(Default)]
pub(super) struct Kept(Mutex<Option<Value>>);

impl Kept {
    pub(super) fn question(self) -> Option<Value> {
        self.0.into_inner().ok().flatten()
    }
}

impl Approver for Kept {
    fn ask(&self, q: &Question<'_>) -> Answer {
        if let Ok(mut kept) = self.0.lock() {
            *kept = Some(form(q));
        }
        Answer::Deny(None)
    }
}

/// An answer the client's user gave already.
pub(super) struct Given(pub(super) Answer);

impl Approver for Given {
    fn ask(&self, _: &Question<'_>) -> Answer {
        self.0.clone()
    }
}

/// How long a question waits for a 2026-07-28 client's answer.
const WAITS: Duration = Duration::from_secs(15 * 60);

/// How many questions may wait at once; the oldest goes first.
const MOST: usize = 256;

/// The questions put to 2026-07-28 clients, by the opaque handle each was given as its
/// `requestState`: what was asked about, so that an answer applies only to the same call.
#[derive(Default)]
pub(super) struct Waiting(Mutex<HashMap<String, (String, Value, Instant)>>);

impl Waiting {
    /// Keeps the call `name(args)` waiting; its handle.
    pub(super) fn keep(&self, name: &str, args: &Value) -> Option<String> {
        let handle = super::http::random_text(24)?;
        let mut map = self.0.lock().ok()?;
        map.retain(|_, (_, _, at)| at.elapsed() < WAITS);
        if map.len() >= MOST
            && let Some(oldest) = map
                .iter()
                .min_by_key(|(_, (_, _, at))| *at)
                .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(
            handle.clone(),
            (name.to_owned(), args.clone(), Instant::now()),
        );
        Some(handle)
    }

    /// Whether `handle` was given for `name(args)` and is still waiting; it waits no more.
    pub(super) fn answered(&self, handle: &str, name: &str, args: &Value) -> bool {
        let Ok(mut map) = self.0.lock() else {
            return false;
        };
        map.remove(handle)
            .is_some_and(|(n, a, at)| n == name && a == *args && at.elapsed() < WAITS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warden_protocol::{Decision, DecisionKind};

    fn question<'a>(decision: &'a Decision, rule: Option<&'a str>) -> Question<'a> {
        Question {
            tool: "bash",
            arguments: "{\"command\":\"git push\"}",
            decision,
            rule,
            preview: Some("runs: git push\n\u{1b}[2Jwrites: nothing"),
            wider: None,
        }
    }

    #[test]
    fn the_form_is_an_elicitation_the_sdk_takes_and_shows_the_rule() {
        let decision = Decision {
            decision: DecisionKind::RequireApproval,
            reason: "pushing needs approval".to_owned(),
            ..Decision::unchecked()
        };
        let form = form(&question(&decision, Some("Bash(git push:*)")));
        let params: rmcp::model::ElicitRequestParams =
            serde_json::from_value(form.clone()).unwrap();
        let again = serde_json::to_value(params).unwrap();
        let message = again["message"].as_str().unwrap();
        assert!(message.contains("Bash(git push:*)"), "{message}");
        assert!(message.contains("runs: git push"), "{message}");
        // A preview cannot drive the client's terminal.
        assert!(!message.contains('\u{1b}'), "{message}");
        let choices = &again["requestedSchema"]["properties"]["answer"]["oneOf"];
        let consts: Vec<&str> = choices
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["const"].as_str().unwrap())
            .collect();
        assert_eq!(consts, ["once", "session", "always", "deny"]);
        // Without a rule narrow enough, only once or no.
        let form = super::form(&question(&decision, None));
        assert_eq!(
            form["requestedSchema"]["properties"]["answer"]["oneOf"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn only_an_accepted_known_choice_approves() {
        let reply = |action: &str, content: Value| json!({"action": action, "content": content});
        assert_eq!(
            answer(&reply("accept", json!({"answer": "once"}))),
            Answer::Once
        );
        assert_eq!(
            answer(&reply("accept", json!({"answer": "session"}))),
            Answer::Session
        );
        assert_eq!(
            answer(&reply("accept", json!({"answer": "wider-always"}))),
            Answer::Wider { always: true }
        );
        for refused in [
            reply("decline", json!({"answer": "once"})),
            reply("cancel", json!(null)),
            reply("accept", json!({"answer": "yes please"})),
            reply("accept", json!({"approve": true})),
            json!({}),
        ] {
            assert!(matches!(answer(&refused), Answer::Deny(_)), "{refused}");
        }
        assert_eq!(
            answer(&reply(
                "accept",
                json!({"answer": "deny", "message": "use the staging branch"})
            )),
            Answer::Deny(Some("use the staging branch".to_owned()))
        );
    }

    #[test]
    fn an_answer_applies_only_to_the_call_it_was_asked_about() {
        let waiting = Waiting::default();
        let args = json!({"command": "git push"});
        let handle = waiting.keep("bash", &args).unwrap();
        assert!(!waiting.answered("nope", "bash", &args));
        let other = waiting.keep("bash", &args).unwrap();
        assert!(!waiting.answered(&other, "bash", &json!({"command": "rm -rf ~"})));
        // Spent by the mismatch: it cannot be tried again.
        assert!(!waiting.answered(&other, "bash", &args));
        assert!(waiting.answered(&handle, "bash", &args));
        assert!(!waiting.answered(&handle, "bash", &args));
    }
}
