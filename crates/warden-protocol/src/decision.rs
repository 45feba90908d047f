//! What the policy engine says about a call.

use serde::{Deserialize, Serialize};

/// Risk of an action (SPEC P4). Ordered: `L0 < L5`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RiskLevel {
    /// Information only: `pwd`, `ls`, `git status`.
    L0,
    /// Reads: `cat`, `rg`, `git diff`, the read-only tools.
    L1,
    /// Build and test: `cargo test`, `npm test`.
    L2,
    /// Installs, network, containers, code execution, unknown programs.
    L3,
    /// Destructive or publishing: `rm`, `git push`.
    L4,
    /// Privilege, secrets, critical deletion.
    L5,
}

/// The verdict itself (SPEC P2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    Allow,
    Deny,
    RequireApproval,
    /// The action needs a wider sandbox than the session has.
    RequireEscalation,
    /// A safer equivalent is offered instead.
    Rewrite,
}

impl DecisionKind {
    /// How much it restricts: `allow` < `rewrite` < `require_approval` < `require_escalation`
    /// < `deny`.
    pub fn strictness(self) -> u8 {
        match self {
            Self::Allow => 0,
            Self::Rewrite => 1,
            Self::RequireApproval => 2,
            Self::RequireEscalation => 3,
            Self::Deny => 4,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::RequireApproval => "require_approval",
            Self::RequireEscalation => "require_escalation",
            Self::Rewrite => "rewrite",
        }
    }
}

/// The layer of the decision chain that decided (SPEC P5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyLayer {
    /// No policy layer was consulted (the engine is not wired in).
    None,
    /// A built-in guard of the tool itself: path roots, protected files.
    Tool,
    HardBlock,
    PathSandbox,
    Rules,
    Mode,
    Approval,
    /// An active skill narrows what may be done (its allowed tools and permissions).
    Skill,
    /// A hook (`[[hooks.PreToolUse]]`, `[[hooks.PermissionRequest]]`) refused the call, asked
    /// about it, or answered the question the policy would have asked.
    Hook,
}

impl PolicyLayer {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Tool => "tool",
            Self::HardBlock => "hard_block",
            Self::PathSandbox => "path_sandbox",
            Self::Rules => "rules",
            Self::Mode => "mode",
            Self::Approval => "approval",
            Self::Skill => "skill",
            Self::Hook => "hook",
        }
    }
}

/// A decision with its explanation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub decision: DecisionKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk: Option<RiskLevel>,
    pub reason: String,
    pub layer: PolicyLayer,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The safer equivalent offered, with `decision: rewrite`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<Rewrite>,
    /// What a person is asked, with `decision: require_approval` (and `rewrite`, `require_escalation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalRequest>,
}

/// A safer action offered in place of the one asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewrite {
    /// The tool to call instead (`bash`, `readFile`, `editFile`).
    pub tool: String,
    /// Its target: the rewritten command, or the path.
    pub target: String,
    pub reason: String,
}

/// What an approval prompt shows (SPEC P8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    pub tool: String,
    pub arguments: String,
    /// Files, hosts and programs the action touches.
    pub resources: Vec<String>,
    pub risk: RiskLevel,
    /// Why approval is needed.
    pub why: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alternative: Option<String>,
    /// How to undo it.
    pub rollback: String,
}

impl Decision {
    /// The placeholder used while no policy engine is wired in: allow, decided by no layer.
    pub fn unchecked() -> Self {
        Self {
            decision: DecisionKind::Allow,
            risk: None,
            reason: "no policy engine consulted".to_owned(),
            layer: PolicyLayer::None,
            rule: None,
            rewrite: None,
            approval: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn risk_levels_order_and_serialise() {
        assert!(RiskLevel::L0 < RiskLevel::L5);
        assert_eq!(serde_json::to_string(&RiskLevel::L3).unwrap(), "\"L3\"");
    }

    #[test]
    fn decision_kinds_serialise_snake_case() {
        let json = serde_json::to_string(&DecisionKind::RequireEscalation).unwrap();
        assert_eq!(json, "\"require_escalation\"");
        assert_eq!(
            DecisionKind::RequireEscalation.as_str(),
            "require_escalation"
        );
    }
}
