//! What an untrusted project's settings add that can only tighten: its ask rules make a match
//! ask without ever loosening what the rest of the policy decided (a refusal stays one), and
//! its risk levels are floors under a program's own.

use warden_protocol::{PolicyLayer, RiskLevel};

use super::{Action, Engine, Part, Trail};
use crate::modes::Outcome;
use crate::rules::{Rule, RuleTool};
use crate::shell::{Analysis, SimpleCommand};

impl Engine {
    /// `part` with the project's ask rules applied: an allowed action one of them matches
    /// asks instead.
    pub(super) fn project_asks(
        &self,
        action: &Action,
        analysis: Option<&Analysis>,
        part: Part,
        trail: &mut Trail,
    ) -> Part {
        if self.project_asks.is_empty() || part.outcome != Outcome::Allow {
            return part;
        }
        let Some(rule) = self.project_ask_for(action, analysis) else {
            return part;
        };
        trail.note(PolicyLayer::Rules, || {
            format!(
                "the untrusted project's ask rule {} matches: approval (it only tightens)",
                rule.text()
            )
        });
        Part {
            outcome: Outcome::Approve,
            reason: format!(
                "{}: needs approval by the project's rule {} ({})",
                action.target(),
                rule.text(),
                part.reason
            ),
            layer: PolicyLayer::Rules,
            rule: Some(rule.text().to_owned()),
            risk: part.risk,
        }
    }

    /// The project's ask rule `action` matches, if one does.
    fn project_ask_for(&self, action: &Action, analysis: Option<&Analysis>) -> Option<&Rule> {
        let on_path = |tools: &[RuleTool], raw: &str| {
            let target = self.target(raw, &self.anchors.cwd);
            self.project_asks.iter().find(|r| {
                tools.contains(&r.tool) && target.both().iter().any(|p| r.matches_path(p))
            })
        };
        match action {
            Action::Bash(_) => analysis?.commands.iter().find_map(|cmd| {
                let line = cmd.line();
                self.project_asks
                    .iter()
                    .find(|r| r.tool == RuleTool::Bash && r.matches_command(&line))
                    .or_else(|| {
                        cmd.reads
                            .iter()
                            .find_map(|raw| on_path(&[RuleTool::Read], raw))
                    })
                    .or_else(|| {
                        cmd.writes
                            .iter()
                            .find_map(|raw| on_path(&[RuleTool::Edit], raw))
                    })
            }),
            Action::Read(raw) => on_path(&[RuleTool::Read], raw),
            Action::Glob(raw) => on_path(&[RuleTool::Read, RuleTool::Glob], raw),
            Action::Grep(raw) => on_path(&[RuleTool::Read, RuleTool::Grep], raw),
            Action::Write(raw) | Action::Edit(raw) => on_path(&[RuleTool::Edit], raw),
            Action::Fetch(url) => {
                let host = super::tools::host_of(url).unwrap_or_default();
                self.project_asks
                    .iter()
                    .find(|r| r.tool == RuleTool::WebFetch && r.matches_host(&host))
            }
            Action::Tool { name, target } => {
                let tool = if name == "Skill" {
                    RuleTool::Skill
                } else {
                    RuleTool::Other(name.clone())
                };
                self.project_asks.iter().find(|r| {
                    (r.tool == tool && r.matches_text(target)) || r.covers_tool(name, target)
                })
            }
        }
    }

    /// `risk` (and its reason) raised to the project's floor for the program, if it sets one.
    pub(super) fn risk_floor(
        &self,
        cmd: &SimpleCommand,
        risk: RiskLevel,
        why: String,
    ) -> (RiskLevel, String) {
        match self
            .risk_floors
            .iter()
            .find(|(name, _)| *name == cmd.program)
        {
            Some((name, floor)) if *floor > risk => (
                *floor,
                format!("{name} is at least {floor:?} by the project's settings"),
            ),
            _ => (risk, why),
        }
    }
}
