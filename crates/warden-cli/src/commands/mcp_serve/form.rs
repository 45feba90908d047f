//! Approvals put to the client's user as an MCP form (elicitation): the call, what it would do,
//! its risk and why, and the rule each answer would remember — the same question `warden run`
//! asks on a terminal, answered the same ways (once, for this connection, always, no). An answer
//! counts only as a choice the form offered.

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
const PREVIEW_LINES: usize = 200;

/// How many characters of the arguments the form shows (a form has no "view the rest").
const ARGUMENT_CHARS: usize = 8000;

/// What a question says before its choices: the call, why, its risk, what it would do.
fn message(q: &Question<'_>) -> String {
    let p = warden_protocol::printable;
    let d = q.decision;
    let mut message = format!(
        "warden asks before running {}: {}\n",
        p(q.tool),
        p(&warden_protocol::short(q.arguments, ARGUMENT_CHARS))
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
    message
}

/// The elicitation (`elicitation/create` parameters) that asks `q`; `connection`: whether the
/// client has a connection an answer "for this connection" can hold for (not a 2026-07-28
/// client, whose requests stand alone).
pub(super) fn form(q: &Question<'_>, connection: bool) -> Value {
    let p = warden_protocol::printable;
    let mut message = message(q);
    let once = if q.decision.rewrite.is_some() {
        "Run the suggested way, once"
    } else {
        "Run it once"
    };
    let mut choices = vec![json!({"const": "once", "title": once})];
    if let Some(rule) = q.rule {
        let _ = writeln!(
            message,
            "an answer other than once remembers the rule {}",
            p(rule)
        );
        if connection {
            let title = format!("Allow {} for this connection", p(rule));
            choices.push(json!({"const": "session", "title": title}));
        }
        let title = format!("Always allow {} (saved in warden's settings)", p(rule));
        choices.push(json!({"const": "always", "title": title}));
    }
    match q.wider {
        Some(Wider::Offered(wider)) => {
            if connection {
                let title = format!("Allow the wider {} for this connection", p(wider));
                choices.push(json!({"const": "wider-session", "title": title}));
            }
            let title = format!("Always allow the wider {}", p(wider));
            choices.push(json!({"const": "wider-always", "title": title}));
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

/// `answer` as the form for `q` allows it: a choice the form did not offer (an answer "for
/// this connection" without one, a rule where none was offered) is a refusal, whatever the
/// client sent.
pub(super) fn offered(q: &Question<'_>, connection: bool, answer: Answer) -> Answer {
    let wider = matches!(q.wider, Some(Wider::Offered(_)));
    let fits = match &answer {
        Answer::Once | Answer::Deny(_) => true,
        Answer::Session => connection && q.rule.is_some(),
        Answer::Always => q.rule.is_some(),
        Answer::Wider { always } => wider && (*always || connection),
    };
    if fits {
        answer
    } else {
        Answer::Deny(Some("an answer the form did not offer".to_owned()))
    }
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

/// How long a question waits for the client's user.
const ANSWER_WITHIN: Duration = Duration::from_secs(10 * 60);

/// Asks the client's user while the call waits: a client of a protocol revision before
/// 2026-07-28, which takes requests from the server during a call.
pub(super) struct Asked {
    pub(super) peer: rmcp::Peer<rmcp::RoleServer>,
    pub(super) handle: tokio::runtime::Handle,
}

impl Approver for Asked {
    fn ask(&self, q: &Question<'_>) -> Answer {
        let Ok(params) = serde_json::from_value::<rmcp::model::ElicitRequestParams>(form(q, true))
        else {
            return Answer::Deny(None);
        };
        let asked = tokio::time::timeout(ANSWER_WITHIN, self.peer.create_elicitation(params));
        match self.handle.block_on(asked) {
            Ok(Ok(reply)) => serde_json::to_value(reply)
                .map_or(Answer::Deny(None), |r| offered(q, true, answer(&r))),
            Ok(Err(_)) => Answer::Deny(Some("the client could not ask its user".to_owned())),
            Err(_) => Answer::Deny(Some("no answer came in time".to_owned())),
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
            *kept = Some(form(q, false));
        }
        Answer::Deny(None)
    }
}

/// An answer the client's user gave already (in a second request): taken only as the form
/// offered it.
pub(super) struct Given(pub(super) Answer);

impl Approver for Given {
    fn ask(&self, q: &Question<'_>) -> Answer {
        offered(q, false, self.0.clone())
    }
}

/// How long a question waits for a 2026-07-28 client's answer.
const WAITS: Duration = Duration::from_secs(15 * 60);

/// How many questions may wait at once; the oldest goes first.
const MOST: usize = 256;

/// The digest of a call's arguments.
fn digest(args: &Value) -> [u8; 32] {
    ring::digest::digest(&ring::digest::SHA256, args.to_string().as_bytes())
        .as_ref()
        .try_into()
        .unwrap_or([0; 32])
}

/// The questions put to 2026-07-28 clients, by the opaque handle each was given as its
/// `requestState`: which call was asked about (its name and its arguments' digest), so that an
/// answer applies only to the same call.
#[derive(Default)]
pub(super) struct Waiting(Mutex<HashMap<String, AskedAbout>>);

/// A call a question was about: its tool, its arguments' digest, and when it was asked.
type AskedAbout = (String, [u8; 32], Instant);

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
            (name.to_owned(), digest(args), Instant::now()),
        );
        Some(handle)
    }

    /// Whether `handle` was given for `name(args)` and is still waiting; it waits no more.
    pub(super) fn answered(&self, handle: &str, name: &str, args: &Value) -> bool {
        let Ok(mut map) = self.0.lock() else {
            return false;
        };
        map.remove(handle)
            .is_some_and(|(n, a, at)| n == name && a == digest(args) && at.elapsed() < WAITS)
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
        let form = form(&question(&decision, Some("Bash(git push:*)")), true);
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
        let form = super::form(&question(&decision, None), true);
        assert_eq!(
            form["requestedSchema"]["properties"]["answer"]["oneOf"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn an_answer_the_form_did_not_offer_is_a_refusal() {
        let decision = Decision {
            decision: DecisionKind::RequireApproval,
            reason: "asks".to_owned(),
            ..Decision::unchecked()
        };
        let without_rule = question(&decision, None);
        for answer in [
            Answer::Session,
            Answer::Always,
            Answer::Wider { always: true },
        ] {
            assert!(
                matches!(
                    offered(&without_rule, true, answer.clone()),
                    Answer::Deny(_)
                ),
                "{answer:?}"
            );
        }
        let with_rule = question(&decision, Some("Bash(git push:*)"));
        assert_eq!(offered(&with_rule, true, Answer::Session), Answer::Session);
        // A client without a connection was not offered "for this connection".
        assert!(matches!(
            offered(&with_rule, false, Answer::Session),
            Answer::Deny(_)
        ));
        assert_eq!(offered(&with_rule, false, Answer::Always), Answer::Always);
        let stateless = form(&with_rule, false);
        let consts: Vec<&str> = stateless["requestedSchema"]["properties"]["answer"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["const"].as_str().unwrap())
            .collect();
        assert_eq!(consts, ["once", "always", "deny"]);
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
