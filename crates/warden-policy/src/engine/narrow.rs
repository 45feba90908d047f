//! Narrowing (SPEC K5): while a skill is active, what it declares — its allowed tools as rules,
//! whether it uses the network, where it may write, whether its scripts may run — limits what
//! may be done. A narrowing turns an allowed (or askable) action into a refusal; it never turns
//! a refusal into anything else, so it cannot widen the session's policy. Several active
//! narrowings intersect: each must let an action through.

use std::path::{Path, PathBuf};

use warden_protocol::{Decision, DecisionKind, PolicyLayer};

use super::{Action, Engine};
use crate::PolicyError;
use crate::rules::{Rule, RuleKind, RuleTool};
use crate::shell::Analysis;

/// What one active skill lets through.
#[derive(Debug, Clone)]
pub struct Narrowing {
    /// Who narrows, for the reasons given (`skill git-release`).
    pub source: String,
    /// The only tools it may use, as allow rules; `None` when it does not restrict them.
    tools: Option<Vec<Rule>>,
    /// `false`: no fetch, and no command gets the network.
    network: bool,
    /// The only places it may write, as path rules.
    writes: Option<Vec<Rule>>,
    /// Its `scripts/` directory, when they may not be run.
    no_scripts: Option<PathBuf>,
}

/// The tool names of warden's own tools, as the rules name them.
fn rule_name(tool: &str) -> String {
    let (name, rest) = tool.find('(').map_or((tool, ""), |at| tool.split_at(at));
    let name = match name {
        "readFile" => "Read",
        "writeFile" => "Write",
        "editFile" | "apply_patch" => "Edit",
        "bash" => "Bash",
        "glob" => "Glob",
        "grep" => "Grep",
        other => other,
    };
    format!("{name}{rest}")
}

impl Engine {
    /// The narrowing of a skill: `tools` its allowed tools (`Read`, `Bash(git:*)`; warden's tool
    /// names too), `network` whether it uses the network (default yes), `writes` where it may
    /// write (path patterns, anchored like rules), `scripts` its scripts directory and whether
    /// they may run. A malformed entry is an error naming it: the skill is not loaded.
    pub fn narrowing(
        &self,
        source: &str,
        tools: Option<&[String]>,
        network: Option<bool>,
        writes: Option<&[String]>,
        scripts: Option<(&Path, bool)>,
    ) -> Result<Narrowing, PolicyError> {
        let rule_error = |source| PolicyError::Rule {
            place: format!("{source_name}: ", source_name = "allowed-tools"),
            list: "allow",
            source,
        };
        let tools = tools
            .map(|list| {
                list.iter()
                    .map(|t| Rule::parse(&rule_name(t), RuleKind::Allow, &self.anchors))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()
            .map_err(rule_error)?;
        let writes = writes
            .map(|list| {
                list.iter()
                    .map(|p| Rule::parse(&format!("Edit({p})"), RuleKind::Allow, &self.anchors))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()
            .map_err(rule_error)?;
        Ok(Narrowing {
            source: source.to_owned(),
            tools,
            network: network.unwrap_or(true),
            writes,
            no_scripts: scripts.and_then(|(dir, allowed)| (!allowed).then(|| dir.to_path_buf())),
        })
    }

    /// Replaces the active narrowings (a skill loaded or unloaded).
    pub fn set_narrowings(&mut self, list: Vec<Narrowing>) {
        self.narrowings = list;
    }

    /// The active narrowings.
    pub fn narrowings(&self) -> &[Narrowing] {
        &self.narrowings
    }

    /// `decision` after every active narrowing: a refusal naming the skill where one does not
    /// let the action through.
    pub(super) fn narrow(
        &self,
        action: &Action,
        analysis: Option<&Analysis>,
        decision: Decision,
    ) -> Decision {
        if decision.decision == DecisionKind::Deny {
            return decision;
        }
        for narrowing in &self.narrowings {
            if let Some(why) = self.outside(narrowing, action, analysis, decision.decision) {
                return Decision {
                    decision: DecisionKind::Deny,
                    reason: format!(
                        "{why}; the active {} does not allow it (it only narrows, never widens: \
                         finish its task or unload it to do more)",
                        narrowing.source
                    ),
                    layer: PolicyLayer::Skill,
                    rule: None,
                    rewrite: None,
                    approval: None,
                    ..decision
                };
            }
        }
        decision
    }

    /// Why `action` falls outside `n`, if it does.
    fn outside(
        &self,
        n: &Narrowing,
        action: &Action,
        analysis: Option<&Analysis>,
        kind: DecisionKind,
    ) -> Option<String> {
        let path_ok = |tools: &[RuleTool], raw: &str| {
            let target = self.target(raw, &self.anchors.cwd);
            n.allows(tools, &|r| r.matches_path(&target.real))
        };
        match action {
            Action::Bash(command) => self.outside_bash(n, command, analysis?, kind),
            Action::Read(raw) => (!path_ok(&[RuleTool::Read], raw))
                .then(|| format!("reading {raw} is not among its tools ({})", n.listed())),
            Action::Glob(raw) => (!path_ok(&[RuleTool::Read, RuleTool::Glob], raw))
                .then(|| format!("listing {raw} is not among its tools ({})", n.listed())),
            Action::Grep(raw) => (!path_ok(&[RuleTool::Read, RuleTool::Grep], raw))
                .then(|| format!("searching {raw} is not among its tools ({})", n.listed())),
            Action::Write(raw) | Action::Edit(raw) => {
                if !path_ok(&[RuleTool::Edit], raw) {
                    Some(format!(
                        "changing {raw} is not among its tools ({})",
                        n.listed()
                    ))
                } else if !self.writable(n, raw) {
                    Some(format!("{raw} is outside the paths it may write"))
                } else {
                    None
                }
            }
            Action::Fetch(url) => {
                if !n.network {
                    return Some(format!(
                        "fetching {url} needs the network, which it does not use"
                    ));
                }
                let host = super::tools::host_of(url).unwrap_or_default();
                (!n.allows(&[RuleTool::WebFetch], &|r| r.matches_host(&host)))
                    .then(|| format!("fetching {url} is not among its tools ({})", n.listed()))
            }
            // Loading another skill only narrows further.
            Action::Tool { name, .. } if name == "Skill" => None,
            Action::Tool { name, target } => {
                let other = RuleTool::Other(name.clone());
                let mcp = RuleTool::Other("Mcp".to_owned());
                let server = crate::rules::mcp_parts(name)
                    .map(|(server, _)| RuleTool::Other(format!("mcp__{server}")));
                let kinds: Vec<RuleTool> = [Some(other), Some(mcp), server]
                    .into_iter()
                    .flatten()
                    .collect();
                (!n.allows(&kinds, &|r| r.covers_tool(name, target)))
                    .then(|| format!("the tool {name} is not among its tools ({})", n.listed()))
            }
        }
    }

    /// Why a shell command falls outside `n`: every simple command in it must be among the
    /// skill's tools, write where it may, and not run its scripts when they may not run.
    fn outside_bash(
        &self,
        n: &Narrowing,
        command: &str,
        analysis: &Analysis,
        kind: DecisionKind,
    ) -> Option<String> {
        if !n.allows(&[RuleTool::Bash], &|_| true) {
            return Some(format!(
                "shell commands are not among its tools ({})",
                n.listed()
            ));
        }
        if !n.network && kind == DecisionKind::RequireEscalation {
            return Some("the command needs the network, which it does not use".to_owned());
        }
        // Unless any command is allowed, what cannot be analysed is not let through.
        let restricted = n
            .tools
            .as_ref()
            .is_some_and(|rules| !rules.iter().any(|r| r.tool == RuleTool::Bash && r.is_any()));
        if restricted && analysis.is_unknown() {
            return Some(format!(
                "`{command}` cannot be fully analysed, and its tools allow only some commands ({})",
                n.listed()
            ));
        }
        for cmd in &analysis.commands {
            let line = cmd.line();
            if !n.allows(&[RuleTool::Bash], &|r| r.matches_command(&line)) {
                return Some(format!("`{line}` is not among its tools ({})", n.listed()));
            }
            if let Some(raw) = cmd.writes.iter().find(|w| !self.writable(n, w)) {
                return Some(format!(
                    "`{line}` writes {raw}, outside the paths it may write"
                ));
            }
            if let Some(scripts) = &n.no_scripts {
                let runs_script = std::iter::once(cmd.program.as_str())
                    .chain(cmd.arg_texts())
                    .any(|word| {
                        self.target(word, &self.anchors.cwd)
                            .real
                            .starts_with(scripts)
                    });
                if runs_script {
                    return Some(format!(
                        "`{line}` runs one of its scripts, which it may not run"
                    ));
                }
            }
        }
        None
    }

    /// Whether `n` lets a write to `raw` through.
    fn writable(&self, n: &Narrowing, raw: &str) -> bool {
        let target = self.target(raw, &self.anchors.cwd);
        // Writing into a directory writes below it.
        let into = (raw.ends_with('/') || target.real.is_dir()).then(|| target.real.join("_"));
        n.writes.as_ref().is_none_or(|rules| {
            rules.iter().any(|r| {
                r.matches_path(&target.real) || into.as_ref().is_some_and(|p| r.matches_path(p))
            })
        })
    }
}

impl Narrowing {
    /// Whether a rule of one of `tools` that `matches` is among the skill's tools (or its tools
    /// are not restricted).
    fn allows(&self, tools: &[RuleTool], matches: &dyn Fn(&Rule) -> bool) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|rules| rules.iter().any(|r| tools.contains(&r.tool) && matches(r)))
    }

    /// The skill's tools, for reasons.
    fn listed(&self) -> String {
        self.tools.as_ref().map_or_else(String::new, |rules| {
            rules.iter().map(Rule::text).collect::<Vec<_>>().join(", ")
        })
    }
}
