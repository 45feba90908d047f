//! What a run reports as it goes: one [`Event`] per step, produced by the agent loop and read by
//! the printers (`warden run --json` prints each as one line, `{"event": KIND, ...fields}`), the
//! trace and whatever else watches a run. `docs/run.md` lists every kind and field; the stream
//! of scripted sessions is recorded in the CLI's tests, so a change here shows there.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{DecisionKind, PolicyLayer, RiskLevel};

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "event",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    /// The session is ready: before the first request to the model.
    SessionStarted {
        session_id: String,
        /// `provider/model`.
        model: String,
        cwd: PathBuf,
        /// The permission mode (`default`, `plan`, `auto`, …).
        mode: String,
        /// A saved session goes on.
        resumed: bool,
    },
    /// A request to the model: its turn number (from 1) and how many items it carries.
    ModelRequest {
        turn: u64,
        items: usize,
    },
    /// The provider failed and the request is tried again after `wait_ms`.
    Retry {
        attempt: u32,
        wait_ms: u64,
        why: String,
    },
    /// The text of the model's answer, once it has all streamed.
    AssistantText {
        text: String,
    },
    /// The model asks for a tool; `arguments` is the JSON it sent, or its text when it is not
    /// JSON.
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    /// What the policy engine said of a call.
    PolicyDecision {
        id: String,
        decision: DecisionKind,
        risk: Option<RiskLevel>,
        reason: String,
        layer: PolicyLayer,
        rule: Option<String>,
    },
    /// A person (or `--on-ask`) is asked.
    ApprovalRequested {
        tool: String,
        #[serde(flatten)]
        asked: Asked,
    },
    /// The answer.
    ApprovalResolved {
        tool: String,
        answer: Answer,
        #[serde(flatten)]
        of: Resolved,
    },
    /// A call starts running (for progress lines; not printed by `--json`).
    ToolRunning {
        id: String,
        name: String,
    },
    /// A call's result: its status, a command's exit code, the error the model is sent.
    ToolResult {
        id: String,
        name: String,
        status: CallStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The older part of the conversation became a summary: why, how many messages it replaced,
    /// how many identifiers were put back.
    Compaction {
        trigger: Trigger,
        messages: usize,
        restored: usize,
    },
    /// A skill's instructions joined the system prompt.
    SkillLoaded {
        name: String,
        version: Option<String>,
        /// sha256 of its `SKILL.md`.
        hash: String,
        /// sha256 of every file of its directory (what an approval is pinned to).
        tree_hash: String,
        /// The root it was found in (`user`, `project`, …).
        root: String,
        path: PathBuf,
        /// `model` (a `Skill` call) or `auto` (the task called for it).
        by: String,
        /// How it was let in.
        approval: String,
    },
    SkillUnloaded {
        name: String,
        reason: String,
    },
    /// A skill the task called for could not be loaded.
    SkillNotLoaded {
        name: String,
        why: String,
    },
    /// The run is over.
    SessionFinished {
        status: RunStatus,
        usage: Usage,
        cost_usd: f64,
        turns: u64,
        tool_calls: u64,
        duration_ms: u64,
        session_id: String,
        /// The egress proxy's counts, when commands had an allowlist network.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        network: Option<NetworkCounts>,
        /// Which budget ran out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A hook ran (`[[hooks.EVENT]]`): which one (its command's SHA-256, never its output),
    /// how it ended and what it decided.
    Hook {
        /// The point of the session, as Claude Code names it (`PreToolUse`, …).
        hook_event: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        matcher: Option<String>,
        command_sha256: String,
        /// The settings file it came from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<PathBuf>,
        duration_ms: u64,
        exit: Option<i32>,
        timed_out: bool,
        /// `allow`, `ask`, `deny`, `block` or `stop`, when it decided.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<String>,
        /// How it failed, and what its `on_error` made of it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// What hooks say to the person: their system messages, a blocked prompt's reason, their
    /// failures.
    HookNotice {
        message: String,
    },
    /// A session under a manifest wrote its receipt.
    Receipt {
        run_id: String,
        status: String,
        path: PathBuf,
    },
}

impl Event {
    /// The kind, as the `event` field names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::SessionStarted { .. } => "session_started",
            Self::ModelRequest { .. } => "model_request",
            Self::Retry { .. } => "retry",
            Self::AssistantText { .. } => "assistant_text",
            Self::ToolCall { .. } => "tool_call",
            Self::PolicyDecision { .. } => "policy_decision",
            Self::ApprovalRequested { .. } => "approval_requested",
            Self::ApprovalResolved { .. } => "approval_resolved",
            Self::ToolRunning { .. } => "tool_running",
            Self::ToolResult { .. } => "tool_result",
            Self::Compaction { .. } => "compaction",
            Self::SkillLoaded { .. } => "skill_loaded",
            Self::SkillUnloaded { .. } => "skill_unloaded",
            Self::SkillNotLoaded { .. } => "skill_not_loaded",
            Self::SessionFinished { .. } => "session_finished",
            Self::Hook { .. } => "hook",
            Self::HookNotice { .. } => "hook_notice",
            Self::Receipt { .. } => "receipt",
        }
    }

    /// As one JSON object, `event` among its fields (keys in order, as every line prints).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|e| {
            // Every field is plain data: this cannot fail short of a bug, and the line says so.
            serde_json::json!({"event": self.kind(), "unprintable": e.to_string()})
        })
    }

    /// The fields without `event`: what the trace stores under the kind.
    pub fn fields(&self) -> Value {
        let mut value = self.to_value();
        if let Some(map) = value.as_object_mut() {
            map.remove("event");
        }
        value
    }
}

/// What an approval is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub enum Asked {
    /// A tool call the policy wants approved: `rule` is what "session" or "always" would
    /// remember (`null` when no rule is narrow enough).
    Call {
        arguments: Value,
        decision: DecisionKind,
        reason: String,
        rule: Option<String>,
        /// What it would change: a unified diff for `editFile`/`writeFile`, each file's lines
        /// for `apply_patch`, what a `bash` command runs, reads and writes as the policy
        /// understood it; redacted, at most 16 KiB.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview: Option<String>,
        /// The preview was cut at its 16 KiB.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview_truncated: Option<bool>,
        /// A rule wider than `rule`: offered only as an explicit second choice, or, with
        /// `widerRefused`, the one a person might expect and never remembered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wider: Option<String>,
        /// Why `wider` is broader than the call's risk allows.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wider_refused: Option<String>,
    },
    /// A skill from an untrusted root, pinned to the hash of its files.
    Skill {
        skill: String,
        tree_hash: String,
        reason: String,
    },
    /// A tool an MCP server added during the session, offered to the model only once
    /// approved: its server and what it says of itself.
    McpTool {
        server: String,
        description: String,
        reason: String,
    },
    /// The model's `requestPermission`: the rule it asks for.
    Permission { rule: String, reason: String },
}

/// What an answer was about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Resolved {
    Skill {
        skill: String,
    },
    /// A tool an MCP server added: offered from now on when approved.
    McpTool {
        server: String,
    },
    /// A call or a permission: the rule remembered by "session" or "always" (`null` when none).
    Rule {
        rule: Option<String>,
    },
}

/// A person's answer (or `--on-ask`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Once,
    Session,
    Always,
    Deny,
}

impl Answer {
    /// The word the event says.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Session => "session",
            Self::Always => "always",
            Self::Deny => "deny",
        }
    }
}

/// How a call ended, as its result says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    Ok,
    Denied,
    Error,
    /// Ctrl-C came before it ran.
    Interrupted,
}

impl CallStatus {
    /// The word the event says.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Denied => "denied",
            Self::Error => "error",
            Self::Interrupted => "interrupted",
        }
    }
}

impl From<crate::ToolStatus> for CallStatus {
    fn from(status: crate::ToolStatus) -> Self {
        match status {
            crate::ToolStatus::Ok => Self::Ok,
            crate::ToolStatus::Denied => Self::Denied,
            crate::ToolStatus::Error => Self::Error,
        }
    }
}

/// Why a compaction ran (SPEC C5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The context passed its threshold and pruning was not enough.
    Threshold,
    /// `/compact` or `warden compact`.
    Manual,
    /// The run goes on with a model whose window is smaller.
    ModelSwitch,
    /// The whole run is handed to another agent (`warden handoff`).
    Handoff,
    /// Tool results took more than their share of the window, or were too many
    /// (`[context] tool_results_share`, `tool_results_count`).
    ToolResults,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Threshold => "threshold",
            Self::Manual => "manual",
            Self::ModelSwitch => "model_switch",
            Self::Handoff => "handoff",
            Self::ToolResults => "tool_results",
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model gave its final answer.
    Finished,
    BudgetExhausted,
    /// Ctrl-C.
    Interrupted,
    Error,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Finished => "finished",
            Self::BudgetExhausted => "budget_exhausted",
            Self::Interrupted => "interrupted",
            Self::Error => "error",
        }
    }
}

/// Tokens used, by one request or a whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// What the egress proxy let through and refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkCounts {
    pub allowed: u64,
    pub denied: u64,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_kind_round_trips_and_names_itself() {
        let events = [
            Event::ModelRequest { turn: 1, items: 3 },
            Event::ApprovalRequested {
                tool: "bash".into(),
                asked: Asked::Call {
                    arguments: json!({"command": "rm -rf src"}),
                    decision: DecisionKind::Rewrite,
                    reason: "destructive".into(),
                    rule: None,
                    preview: None,
                    preview_truncated: None,
                    wider: None,
                    wider_refused: None,
                },
            },
            Event::ApprovalRequested {
                tool: "Skill".into(),
                asked: Asked::Skill {
                    skill: "notes".into(),
                    tree_hash: "ab".into(),
                    reason: "untrusted".into(),
                },
            },
            Event::ApprovalRequested {
                tool: "requestPermission".into(),
                asked: Asked::Permission {
                    rule: "Bash(npm install *)".into(),
                    reason: "deps".into(),
                },
            },
            Event::ApprovalResolved {
                tool: "Skill".into(),
                answer: Answer::Once,
                of: Resolved::Skill {
                    skill: "notes".into(),
                },
            },
            Event::ApprovalResolved {
                tool: "bash".into(),
                answer: Answer::Deny,
                of: Resolved::Rule { rule: None },
            },
            Event::ToolResult {
                id: "t1".into(),
                name: "bash".into(),
                status: CallStatus::Ok,
                exit_code: Some(1),
                error: None,
            },
            Event::SessionFinished {
                status: RunStatus::BudgetExhausted,
                usage: Usage::default(),
                cost_usd: 0.5,
                turns: 2,
                tool_calls: 2,
                duration_ms: 10,
                session_id: "s".into(),
                network: Some(NetworkCounts::default()),
                budget: Some("max_turns (2)".into()),
                error: None,
            },
        ];
        for event in events {
            let value = event.to_value();
            assert_eq!(value["event"], event.kind(), "{value}");
            let back: Event = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(back, event, "{value}");
            assert!(event.fields().get("event").is_none());
        }
    }

    #[test]
    fn fields_are_camel_case_and_absent_options_say_so_or_are_left_out() {
        let call = Event::ApprovalRequested {
            tool: "bash".into(),
            asked: Asked::Call {
                arguments: json!({}),
                decision: DecisionKind::RequireApproval,
                reason: "r".into(),
                rule: None,
                preview: Some("-a\n+b\n".into()),
                preview_truncated: Some(false),
                wider: None,
                wider_refused: None,
            },
        };
        // A call without a rule to remember says so; its preview comes with whether it was cut.
        assert_eq!(call.to_value()["rule"], Value::Null);
        assert_eq!(call.to_value()["preview"], "-a\n+b\n");
        assert_eq!(call.to_value()["previewTruncated"], false);
        let result = Event::ToolResult {
            id: "a".into(),
            name: "readFile".into(),
            status: CallStatus::Interrupted,
            exit_code: None,
            error: None,
        };
        let value = result.to_value();
        assert!(value.get("exitCode").is_none() && value.get("error").is_none());
        assert_eq!(value["status"], "interrupted");
        // The words said by hand are serde's.
        for status in [
            CallStatus::Ok,
            CallStatus::Denied,
            CallStatus::Error,
            CallStatus::Interrupted,
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        for answer in [Answer::Once, Answer::Session, Answer::Always, Answer::Deny] {
            assert_eq!(serde_json::to_value(answer).unwrap(), answer.as_str());
        }
        let skill = Event::ApprovalRequested {
            tool: "Skill".into(),
            asked: Asked::Skill {
                skill: "s".into(),
                tree_hash: "h".into(),
                reason: "r".into(),
            },
        };
        assert_eq!(skill.to_value()["treeHash"], "h");
        let retry = Event::Retry {
            attempt: 1,
            wait_ms: 1000,
            why: "busy".into(),
        };
        assert_eq!(retry.to_value()["waitMs"], 1000);
    }
}
