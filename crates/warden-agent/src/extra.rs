//! The tools the loop answers itself: `updatePlan` (the model keeps its plan and what it has
//! learned) and `requestPermission` (the model asks for more; a person, or `--on-ask`, answers).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::state::State;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlanArgs {
    plan: Option<Vec<String>>,
    facts: Option<Vec<String>>,
    decisions: Option<Vec<String>>,
    open_questions: Option<Vec<String>>,
}

/// Applies an `updatePlan` call; the result for the model, or the reason it was refused.
pub(crate) fn update_plan(state: &mut State, args: &Value) -> Result<Value, String> {
    let args: PlanArgs = serde_json::from_value(args.clone())
        .map_err(|e| format!("updatePlan: invalid arguments: {e}"))?;
    if let Some(plan) = args.plan {
        state.plan = plan;
    }
    let ws = &mut state.working_set;
    if let Some(facts) = args.facts {
        ws.facts = facts;
    }
    if let Some(decisions) = args.decisions {
        ws.decisions = decisions;
    }
    if let Some(questions) = args.open_questions {
        ws.open_questions = questions;
    }
    Ok(json!({"planSteps": state.plan.len(), "kept": true}))
}

/// A permission request's rule and reason, if the arguments are well formed.
pub(crate) fn permission(args: &Value) -> Result<(String, String), String> {
    let field = |name: &str| {
        args.get(name)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| format!("requestPermission: `{name}` is required"))
    };
    let rule = field("permission")?;
    let known = ["Bash(", "Read(", "Edit(", "Write(", "WebFetch("];
    if !known.iter().any(|k| rule.starts_with(k)) || !rule.ends_with(')') {
        return Err(format!(
            "requestPermission: {rule:?} is not a permission rule; ask for one like \
             `Bash(npm install *)` or `Read(~/data/**)` — the sandbox cannot be turned off"
        ));
    }
    Ok((rule, field("reason")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_and_what_was_learned_are_kept() {
        let mut state = State::default();
        update_plan(
            &mut state,
            &json!({"plan": ["read", "fix"], "facts": ["slugify splits on \\s"]}),
        )
        .unwrap();
        update_plan(&mut state, &json!({"decisions": ["use \\s+"]})).unwrap();
        assert_eq!(state.plan, ["read", "fix"]);
        assert_eq!(state.working_set.facts.len(), 1);
        assert_eq!(state.working_set.decisions, ["use \\s+"]);
        assert!(update_plan(&mut state, &json!({"steps": []})).is_err());
    }

    #[test]
    fn only_rules_can_be_asked_for() {
        assert!(
            permission(&json!({"permission": "Bash(npm install *)", "reason": "deps"})).is_ok()
        );
        assert!(permission(&json!({"permission": "disable the sandbox", "reason": "x"})).is_err());
        assert!(permission(&json!({"permission": "Read(~/x)"})).is_err());
    }
}
