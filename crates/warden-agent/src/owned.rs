//! The tools the loop answers itself, in one table: `updatePlan` (the model keeps its plan and
//! what it has learned), `requestPermission` (the model asks for more; a person, or `--on-ask`,
//! answers) and `Skill` (load, read or unload a skill). Every other tool is the registry's.

use serde_json::json;
use warden_model::ToolDef;
use warden_tools::Registry;

pub(crate) const UPDATE_PLAN: &str = "updatePlan";
pub(crate) const REQUEST_PERMISSION: &str = "requestPermission";
pub(crate) const SKILL: &str = "Skill";

/// One of the loop's own tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owned {
    UpdatePlan,
    RequestPermission,
    Skill,
}

impl Owned {
    pub(crate) const ALL: [Self; 3] = [Self::UpdatePlan, Self::RequestPermission, Self::Skill];

    /// The loop's tool of this name, if it is one.
    pub(crate) fn of(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|owned| owned.name() == name)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::UpdatePlan => UPDATE_PLAN,
            Self::RequestPermission => REQUEST_PERMISSION,
            Self::Skill => SKILL,
        }
    }

    /// The definition the model sees.
    pub(crate) fn def(self) -> ToolDef {
        match self {
            Self::UpdatePlan => update_plan(),
            Self::RequestPermission => request_permission(),
            Self::Skill => skill(),
        }
    }
}

/// The tools the model is offered: the registry's and the loop's own (`Skill` when there are
/// skills).
pub fn tool_defs(registry: &Registry, skills: bool) -> Vec<ToolDef> {
    let mut defs: Vec<ToolDef> = registry
        .specs()
        .map(|s| ToolDef {
            name: s.name.to_string(),
            description: s.description.clone(),
            parameters: s.parameters.clone(),
        })
        .collect();
    defs.extend(
        Owned::ALL
            .into_iter()
            .filter(|owned| skills || *owned != Owned::Skill)
            .map(Owned::def),
    );
    defs
}

fn list(what: &str) -> serde_json::Value {
    json!({"type": "array", "items": {"type": "string"}, "description": what})
}

fn update_plan() -> ToolDef {
    ToolDef {
        name: UPDATE_PLAN.into(),
        description: "Keep your plan: the steps (done ones marked), and facts, decisions and \
                      open questions worth keeping. Each list given replaces the one kept; \
                      lists left out stay as they are."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "plan": list("The steps, in order."),
                "facts": list("What you found that stays true."),
                "decisions": list("What you decided, and why."),
                "openQuestions": list("What is still unclear."),
            },
            "additionalProperties": false,
        }),
    }
}

fn request_permission() -> ToolDef {
    ToolDef {
        name: REQUEST_PERMISSION.into(),
        description: "Ask the user for a permission you lack, as a rule: `Bash(npm install *)`, \
                      `Read(~/data/**)`, `Edit(docs/**)`, `WebFetch(domain:example.com)`. Say why. \
                      Granted, it holds for the rest of this session. The sandbox itself cannot be \
                      turned off."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "permission": {"type": "string", "description": "The rule asked for."},
                "reason": {"type": "string", "description": "Why it is needed."},
            },
            "required": ["permission", "reason"],
            "additionalProperties": false,
        }),
    }
}

fn skill() -> ToolDef {
    ToolDef {
        name: SKILL.into(),
        description: "Load a skill listed under Skills in the system prompt: its instructions \
                      then stand in the system prompt until the task ends, and its allowed tools \
                      limit what you may do. With `file`, read one of a loaded skill's other \
                      files (references/…). With `unload: true`, put it away. Run a skill's \
                      scripts with bash."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name."},
                "file": {"type": "string", "description": "A file of the loaded skill, relative to its directory."},
                "unload": {"type": "boolean", "description": "Unload the skill."},
            },
            "required": ["name"],
            "additionalProperties": false,
        }),
    }
}
