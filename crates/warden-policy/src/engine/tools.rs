//! The file tools, web fetches and custom tools through the layers.

use std::path::Path;

use warden_config::PermissionMode;
use warden_protocol::{PolicyLayer, RiskLevel};

use super::{Action, Engine, Part, Trail, outcome_word, verb};
use crate::modes::{Outcome, Row, cell};
use crate::paths::{self, Target};
use crate::rules::{Rule, RuleKind, RuleTool};

impl Engine {
    pub(super) fn readable_target(&self, target: &Target) -> bool {
        let inside = |p: &Path| self.read_roots.iter().any(|r| paths::within(p, r));
        if inside(&target.lexical) && inside(&target.real) {
            return true;
        }
        self.path_allowed(&RuleTool::Read, target)
    }

    pub(super) fn writable_target(&self, target: &Target) -> bool {
        let inside = |p: &Path| self.writable.iter().any(|r| paths::within(p, r));
        inside(&target.lexical) && inside(&target.real)
    }

    pub(super) fn path_rules(&self, tools: &[RuleTool], target: &Target) -> Option<&Rule> {
        self.path_rule(tools, target)
    }

    /// Layers 1 and 2 for a file tool: nothing to block, and a refusal if the path is protected.
    fn protected_target(
        &self,
        raw: &str,
        target: &Target,
        write: bool,
        trail: &mut Trail,
    ) -> Option<Part> {
        trail.note(PolicyLayer::HardBlock, || {
            "not a command: nothing to block".to_owned()
        });
        let found = target
            .both()
            .into_iter()
            .find_map(|p| self.guarded(p, write));
        let pattern = found?;
        trail.note(PolicyLayer::PathSandbox, || {
            format!("{raw} is protected by {pattern:?}")
        });
        let verb = if write { "writes" } else { "reads" };
        Some(Part::new(
            Outcome::Deny,
            RiskLevel::L5,
            format!("{verb} the protected path {raw} ({pattern})"),
            PolicyLayer::PathSandbox,
        ))
    }

    pub(super) fn read_tool(&self, action: &Action, raw: &str, trail: &mut Trail) -> Part {
        let target = self.target(raw, &self.anchors.cwd);
        if let Some(part) = self.protected_target(raw, &target, false, trail) {
            return part;
        }
        trail.note(PolicyLayer::PathSandbox, || {
            format!("{raw} is not protected")
        });
        let specific = match action {
            Action::Glob(_) => RuleTool::Glob,
            Action::Grep(_) => RuleTool::Grep,
            _ => RuleTool::Read,
        };
        if let Some(rule) = self.path_rules(&[RuleTool::Read, specific], &target) {
            return rule_part(rule, raw, RiskLevel::L1, trail);
        }
        trail.note(PolicyLayer::Rules, || "no rule matches".to_owned());
        let inside = self.readable_target(&target);
        let row = if inside { Row::Info } else { Row::ReadOutside };
        let outcome = cell(self.mode, row, self.sandboxed);
        trail.note(PolicyLayer::Mode, || {
            format!(
                "{} mode, {} → {}",
                self.mode.as_str(),
                row.as_str(),
                outcome_word(outcome)
            )
        });
        let reason = if inside {
            format!("reads {raw} inside the workspace")
        } else {
            format!("reads {raw} outside the workspace")
        };
        Part::new(outcome, RiskLevel::L1, reason, PolicyLayer::Mode)
    }

    pub(super) fn write_tool(&self, raw: &str, trail: &mut Trail) -> Part {
        let target = self.target(raw, &self.anchors.cwd);
        if let Some(part) = self.protected_target(raw, &target, true, trail) {
            return part;
        }
        let inside = [&target.lexical, &target.real]
            .iter()
            .all(|p| paths::within(p, &self.anchors.project_root));
        trail.note(PolicyLayer::PathSandbox, || {
            format!(
                "{raw} is not protected; {}",
                if inside {
                    "inside the workspace"
                } else {
                    "outside the workspace"
                }
            )
        });
        if let Some(rule) = self.path_rules(&[RuleTool::Edit], &target) {
            if rule.kind == RuleKind::Allow && !inside {
                return Part::new(
                    Outcome::Escalate,
                    RiskLevel::L3,
                    format!(
                        "allowed by {}, but the file tools never write outside the workspace",
                        rule.text()
                    ),
                    PolicyLayer::PathSandbox,
                );
            }
            return rule_part(rule, raw, RiskLevel::L2, trail);
        }
        trail.note(PolicyLayer::Rules, || "no rule matches".to_owned());
        if !inside {
            let outcome = if self.mode == PermissionMode::Plan {
                Outcome::Deny
            } else {
                Outcome::Escalate
            };
            return Part::new(
                outcome,
                RiskLevel::L3,
                format!("writes {raw} outside the workspace"),
                PolicyLayer::PathSandbox,
            );
        }
        let outcome = cell(self.mode, Row::Edit, self.sandboxed);
        trail.note(PolicyLayer::Mode, || {
            format!(
                "{} mode, workspace edits → {}",
                self.mode.as_str(),
                outcome_word(outcome)
            )
        });
        Part::new(
            outcome,
            RiskLevel::L2,
            format!("edits {raw} in the workspace"),
            PolicyLayer::Mode,
        )
    }

    pub(super) fn fetch(&self, url: &str, trail: &mut Trail) -> Part {
        trail.note(PolicyLayer::HardBlock, || {
            "not a command: nothing to block".to_owned()
        });
        let Some(host) = host_of(url) else {
            return Part::new(
                Outcome::Deny,
                RiskLevel::L3,
                format!("{url:?} is not an http(s) URL"),
                PolicyLayer::PathSandbox,
            );
        };
        trail.note(PolicyLayer::PathSandbox, || format!("host {host}"));
        let rule = self
            .rules
            .iter()
            .filter(|r| r.tool == RuleTool::WebFetch && r.matches_host(&host))
            .max_by_key(|r| r.kind);
        if let Some(rule) = rule {
            return rule_part(rule, url, RiskLevel::L3, trail);
        }
        trail.note(PolicyLayer::Rules, || "no rule matches".to_owned());
        let mut outcome = cell(self.mode, Row::L3, self.sandboxed);
        let mut reason = format!("fetches {url}: network access");
        if self.sandboxed && self.network_off && outcome != Outcome::Deny {
            outcome = Outcome::Escalate;
            reason = format!("fetches {url}: needs the network, which this sandbox has off");
        }
        trail.note(PolicyLayer::Mode, || {
            format!(
                "{} mode, {} → {}",
                self.mode.as_str(),
                Row::L3.as_str(),
                outcome_word(outcome)
            )
        });
        Part::new(outcome, RiskLevel::L3, reason, PolicyLayer::Mode)
    }

    /// The strictest `Skill(…)` rule for loading the skill `name`, and its text: a deny keeps
    /// it out, an ask puts it to a person, an allow loads it without asking.
    pub fn skill_rule(&self, name: &str) -> Option<(RuleKind, &str)> {
        self.rules
            .iter()
            .filter(|r| r.tool == RuleTool::Skill && r.matches_text(name))
            .max_by_key(|r| r.kind)
            .map(|r| (r.kind, r.text()))
    }

    pub(super) fn custom(&self, name: &str, target: &str, trail: &mut Trail) -> Part {
        trail.note(PolicyLayer::HardBlock, || {
            "not a command: nothing to block".to_owned()
        });
        trail.note(PolicyLayer::PathSandbox, || "no path to check".to_owned());
        let rule = self
            .rules
            .iter()
            .filter(|r| {
                r.covers_tool(name, target)
                    || (r.tool == RuleTool::Skill
                        && name.eq_ignore_ascii_case("skill")
                        && r.matches_text(target))
            })
            .max_by_key(|r| r.kind);
        if let Some(rule) = rule {
            return rule_part(rule, target, RiskLevel::L3, trail);
        }
        trail.note(PolicyLayer::Rules, || "no rule matches".to_owned());
        if self.read_only_hinted.contains(name) {
            let outcome = cell(self.mode, Row::Info, self.sandboxed);
            trail.note(PolicyLayer::Mode, || {
                format!("a read, by its server's word → {}", outcome_word(outcome))
            });
            let reason = format!(
                "{name}'s server says it only reads (readOnlyHint), and the settings trust that \
                 server's hints (trust_hints)"
            );
            return Part::new(outcome, RiskLevel::L1, reason, PolicyLayer::Mode);
        }
        let outcome = cell(self.mode, Row::L3, self.sandboxed);
        trail.note(PolicyLayer::Mode, || {
            format!(
                "{} mode, {} → {}",
                self.mode.as_str(),
                Row::L3.as_str(),
                outcome_word(outcome)
            )
        });
        let reason = match crate::rules::mcp_parts(name) {
            Some((server, _)) => format!(
                "{name} is a tool of the MCP server {server}: what a server says of its tools is \
                 not trusted, so a call runs only when a rule allows it (Mcp({server}), {name})"
            ),
            None if name == "readMcpResource" => format!(
                "{name} reads a resource of an MCP server: asked unless a rule allows it \
                 (Mcp(SERVER), readMcpResource)"
            ),
            None => format!("{name} is a tool the policy does not know"),
        };
        Part::new(outcome, RiskLevel::L3, reason, PolicyLayer::Mode)
    }
}

pub(super) fn host_of(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?.to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

pub(super) fn rule_part(rule: &Rule, target: &str, risk: RiskLevel, trail: &mut Trail) -> Part {
    trail.note(PolicyLayer::Rules, || {
        format!("{} rule {}", rule.kind.as_str(), rule.text())
    });
    let outcome = match rule.kind {
        RuleKind::Deny => Outcome::Deny,
        RuleKind::Ask => Outcome::Approve,
        RuleKind::Allow => Outcome::Allow,
    };
    Part {
        outcome,
        risk,
        reason: format!("{target}: {} by the rule {}", verb(rule.kind), rule.text()),
        layer: PolicyLayer::Rules,
        rule: Some(rule.text().to_owned()),
    }
}
