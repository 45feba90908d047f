//! A call's result as MCP has it, and what a refused call's client is told to do instead.

use serde_json::{Value, json};
use warden_policy::Engine;
use warden_protocol::{DecisionKind, ToolResult, ToolStatus};
use warden_tools::Checked;

use rmcp::model::{CallToolResult, ContentBlock};

/// What a refused call's client can ask for instead: the safer way the policy named, the
/// rewrite it suggested, or the rule a person could add.
pub(super) fn instead(engine: &Engine, checked: &Checked) -> Option<String> {
    let decision = &checked.decision;
    if decision.decision == DecisionKind::Allow {
        return None;
    }
    if let Some(alternative) = decision
        .approval
        .as_ref()
        .and_then(|a| a.alternative.clone())
    {
        return Some(alternative);
    }
    if let Some(rewrite) = &decision.rewrite {
        return Some(format!(
            "{} {} ({})",
            rewrite.tool, rewrite.target, rewrite.reason
        ));
    }
    if decision.layer == warden_protocol::PolicyLayer::Approval {
        return Some(
            "the user refused it (their words, if any, are in the message): do not try it again \
             as it is; ask them what they want instead"
                .to_owned(),
        );
    }
    if decision.decision == DecisionKind::Deny {
        return Some(
            "nothing warden will run as given: a deny rule is not lifted by an approval; do it \
             another way, or ask the user"
                .to_owned(),
        );
    }
    let rule = warden_agent::remembered(engine, &checked.name, &checked.args).rule;
    Some(match rule {
        Some(rule) => format!(
            "ask the user to approve it (a client that shows forms is asked by warden), or to \
             allow it with the rule {rule} in warden's settings"
        ),
        None => {
            "ask the user to approve it; a client that shows forms is asked by warden".to_owned()
        }
    })
}

/// A call's result as MCP has it: the tool's output; or, refused or failed, an error whose
/// structured content says what happened and what to ask for instead.
pub(super) fn answer(result: ToolResult, instead: Option<String>) -> CallToolResult {
    match (result.status, result.output, result.error) {
        (ToolStatus::Ok, Some(output), _) => {
            let text = match &output {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let mut ok = CallToolResult::success(vec![ContentBlock::text(text)]);
            if output.is_object() {
                ok.structured_content = Some(output);
            }
            ok
        }
        (_, _, error) => {
            let error = error.map_or_else(
                || json!({"kind": "failed", "message": "the tool returned nothing"}),
                |e| json!(e),
            );
            let mut text = error["message"].as_str().unwrap_or("failed").to_owned();
            if let Some(instead) = &instead {
                text.push_str("\ninstead: ");
                text.push_str(instead);
            }
            let mut structured = json!({ "error": error });
            if let Some(instead) = instead {
                structured["instead"] = Value::String(instead);
            }
            let mut failed = CallToolResult::error(vec![ContentBlock::text(text)]);
            failed.structured_content = Some(structured);
            failed
        }
    }
}
