//! The five layers (SPEC P5): hard block → path sandbox → rules → mode → approval.

mod bash;
mod globs;
mod narrow;
mod place;
mod project;
mod remember;
mod tools;

pub use narrow::Narrowing;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use warden_config::{PermissionMode, RiskName, Settings};
use warden_protocol::{ApprovalRequest, Decision, DecisionKind, PolicyLayer, Rewrite, RiskLevel};

use crate::PolicyError;
use crate::modes::Outcome;
use crate::pathrules::PathRules;
use crate::paths::{self, Protection};
use crate::rules::{Anchors, Rule, RuleKind, RuleTool};
use crate::secrets::Secrets;
use crate::shell::{self, Analysis};

/// What is being asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Bash(String),
    Read(String),
    Write(String),
    Edit(String),
    Glob(String),
    Grep(String),
    Fetch(String),
    /// A custom or MCP tool, with whatever its target is.
    Tool {
        name: String,
        target: String,
    },
}

impl Action {
    /// From the CLI's `TOOL TARGET`.
    pub fn from_cli(tool: &str, target: &str) -> Self {
        let target = target.to_owned();
        match tool {
            "bash" => Self::Bash(target),
            "read" => Self::Read(target),
            "write" => Self::Write(target),
            "edit" => Self::Edit(target),
            "glob" => Self::Glob(target),
            "grep" => Self::Grep(target),
            "fetch" => Self::Fetch(target),
            other => Self::Tool {
                name: other.to_owned(),
                target,
            },
        }
    }

    fn tool_name(&self) -> &str {
        match self {
            Self::Bash(_) => "bash",
            Self::Read(_) => "read",
            Self::Write(_) => "write",
            Self::Edit(_) => "edit",
            Self::Glob(_) => "glob",
            Self::Grep(_) => "grep",
            Self::Fetch(_) => "fetch",
            Self::Tool { name, .. } => name,
        }
    }

    pub(crate) fn target(&self) -> &str {
        match self {
            Self::Bash(t)
            | Self::Read(t)
            | Self::Write(t)
            | Self::Edit(t)
            | Self::Glob(t)
            | Self::Grep(t)
            | Self::Fetch(t) => t,
            Self::Tool { target, .. } => target,
        }
    }
}

/// One layer's word in an explanation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Step {
    pub layer: PolicyLayer,
    pub said: String,
}

/// Shell analyses by command string. Bounded: emptied when it grows past its limit. Only the
/// parse is cached (a pure function of the string); paths are resolved afresh on every check.
#[derive(Debug, Clone, Default)]
struct AnalysisCache {
    map: Arc<Mutex<HashMap<String, Arc<Analysis>>>>,
}

impl AnalysisCache {
    const LIMIT: usize = 1024;

    fn get(&self, command: &str) -> Arc<Analysis> {
        if let Ok(map) = self.map.lock()
            && let Some(found) = map.get(command)
        {
            return Arc::clone(found);
        }
        let analysis = Arc::new(shell::analyze(command));
        if let Ok(mut map) = self.map.lock() {
            if map.len() >= Self::LIMIT {
                map.clear();
            }
            map.insert(command.to_owned(), Arc::clone(&analysis));
        }
        analysis
    }
}

/// What the layers said, when someone asked; formatting costs nothing when no one did.
pub(crate) struct Trail {
    steps: Option<Vec<Step>>,
}

impl Trail {
    pub(crate) fn note(&mut self, layer: PolicyLayer, said: impl FnOnce() -> String) {
        if let Some(steps) = &mut self.steps {
            steps.push(Step {
                layer,
                said: said(),
            });
        }
    }
}

/// A decision with every layer consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    pub trail: Vec<Step>,
    /// The shell analysis, for `bash` actions (filled by [`Engine::explain`]).
    pub analysis: Option<Analysis>,
}

/// The policy engine for one session's settings. Pure: it reads no file after construction but
/// to resolve paths.
#[derive(Debug, Clone)]
pub struct Engine {
    mode: PermissionMode,
    rules: Vec<Rule>,
    /// Command rules by the program their pattern names, so a check reads only its own.
    by_program: HashMap<String, Vec<usize>>,
    /// Command rules whose pattern starts with a wildcard.
    general: Vec<usize>,
    /// Every path rule, compiled.
    path_rules: PathRules,
    /// The names the deny and ask path rules are written in, which a glob could match.
    ruled_names: Vec<String>,
    /// Recent shell analyses: parsing is pure, and sessions repeat their commands.
    analyses: AnalysisCache,
    protection: Protection,
    /// The one secret list: what its names say, the engine refuses; what only content tells,
    /// the tools and the sandbox mask.
    secrets: Secrets,
    anchors: Anchors,
    read_roots: Vec<PathBuf>,
    writable: Vec<PathBuf>,
    sandboxed: bool,
    network_off: bool,
    /// Risk levels the settings add to the built-in table.
    extra_risk: Vec<(String, RiskLevel)>,
    /// An untrusted project's ask rules, which only tighten.
    project_asks: Vec<Rule>,
    /// An untrusted project's risk levels, floors under a program's own.
    risk_floors: Vec<(String, RiskLevel)>,
    /// What active skills let through.
    narrowings: Vec<Narrowing>,
    /// MCP tools whose server says they only read, from a server whose hints the settings
    /// trust: allowed like a read when no rule decides.
    read_only_hinted: std::collections::HashSet<String>,
}

/// One part's verdict before combining.
#[derive(Debug, Clone)]
struct Part {
    outcome: Outcome,
    risk: RiskLevel,
    reason: String,
    layer: PolicyLayer,
    rule: Option<String>,
}

impl Part {
    fn new(
        outcome: Outcome,
        risk: RiskLevel,
        reason: impl Into<String>,
        layer: PolicyLayer,
    ) -> Self {
        Self {
            outcome,
            risk,
            reason: reason.into(),
            layer,
            rule: None,
        }
    }
}

impl Engine {
    /// Builds the engine from resolved settings. A malformed rule or pattern is an error naming
    /// the rule and, where it can be found, the file and line that hold it.
    pub fn from_settings(settings: &Settings) -> Result<Self, PolicyError> {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
        Self::with_home(settings, &home)
    }

    /// As [`Engine::from_settings`], with the home directory given rather than read from `HOME`.
    pub fn with_home(settings: &Settings, home: &Path) -> Result<Self, PolicyError> {
        let home = paths::real_path(home);
        let anchors = Anchors {
            project_root: settings.project_root.clone(),
            cwd: settings.cwd.clone(),
            home,
        };
        let perms = &settings.permissions;
        let mut rules = Vec::new();
        for (kind, list) in [
            (RuleKind::Deny, &perms.deny),
            (RuleKind::Ask, &perms.ask),
            (RuleKind::Allow, &perms.allow),
        ] {
            for text in list {
                let rule = Rule::parse(text, kind, &anchors)
                    .map_err(|source| PolicyError::rule(settings, kind, source))?;
                rules.push(rule);
            }
        }
        let cargo = std::env::var_os("CARGO_HOME")
            .filter(|c| !c.is_empty())
            .map_or_else(|| anchors.home.join(".cargo"), PathBuf::from);
        let secrets = Secrets::new(settings, &anchors.home, &paths::real_path(&cargo))
            .map_err(PolicyError::Pattern)?;
        let project_asks = perms
            .project_ask
            .iter()
            .map(|text| Rule::parse(text, RuleKind::Ask, &anchors))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| PolicyError::rule(settings, RuleKind::Ask, source))?;
        let fs = &settings.sandbox.filesystem;
        let protection = protection(settings, &anchors)?;
        let expand =
            |entry: &String| paths::resolve(entry, &anchors.project_root, &anchors.home).real;
        let mut read_roots = vec![anchors.project_root.clone()];
        read_roots.extend(fs.allow_read.iter().map(expand));
        let mut writable = vec![
            anchors.project_root.clone(),
            PathBuf::from("/tmp"),
            paths::real_path(Path::new("/tmp")),
        ];
        if let Some(tmp) = std::env::var_os("TMPDIR") {
            writable.push(paths::real_path(Path::new(&tmp)));
        }
        writable.extend(fs.allow_write.iter().map(expand));
        let mut by_program: HashMap<String, Vec<usize>> = HashMap::new();
        let mut general = Vec::new();
        for (index, rule) in rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.tool == RuleTool::Bash)
        {
            match rule.command_program() {
                Some(program) => by_program
                    .entry(program.to_owned())
                    .or_default()
                    .push(index),
                None => general.push(index),
            }
        }
        let path_rules = PathRules::new(&rules).map_err(PolicyError::Pattern)?;
        let ruled_names = globs::ruled_names(&rules);
        Ok(Self {
            mode: perms.mode,
            rules,
            by_program,
            general,
            path_rules,
            ruled_names,
            analyses: AnalysisCache::default(),
            protection,
            secrets,
            anchors,
            read_roots,
            writable,
            sandboxed: settings.sandbox.enabled,
            network_off: settings.sandbox.network.mode == warden_config::NetworkMode::Off,
            extra_risk: perms
                .risk
                .iter()
                .map(|(name, level)| (name.clone(), risk_level(*level)))
                .collect(),
            project_asks,
            risk_floors: perms
                .project_risk
                .iter()
                .map(|(name, level)| (name.clone(), risk_level(*level)))
                .collect(),
            narrowings: Vec::new(),
            read_only_hinted: std::collections::HashSet::new(),
        })
    }

    /// What keeps `path` from being read (or, `write`, written): a protected-path pattern, or
    /// its name on the secret list.
    pub(super) fn guarded(&self, path: &Path, write: bool) -> Option<String> {
        let pattern = if write {
            self.protection.write(path)
        } else {
            self.protection.read(path)
        };
        if let Some(pattern) = pattern {
            return Some(pattern.to_owned());
        }
        match self.secrets.by_name(path) {
            crate::secrets::ByName::Secret(secret) => Some(format!("a secret: {secret}")),
            _ => None,
        }
    }

    /// The secret list the tools and the sandbox enforce.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Resolves a path a command or tool names, relative to `cwd`.
    pub(super) fn target(&self, raw: &str, cwd: &Path) -> crate::paths::Target {
        let anchors = &self.anchors;
        let canonical = [
            anchors.project_root.as_path(),
            anchors.home.as_path(),
            anchors.cwd.as_path(),
        ];
        paths::resolve_under(raw, cwd, &anchors.home, &canonical)
    }

    /// The strictest path rule of `tools` for `target`.
    pub(super) fn path_rule(
        &self,
        tools: &[RuleTool],
        target: &crate::paths::Target,
    ) -> Option<&Rule> {
        self.path_rules.strictest(&self.rules, tools, target)
    }

    /// Whether an allow rule of `tool` covers `target`.
    pub(super) fn path_allowed(&self, tool: &RuleTool, target: &crate::paths::Target) -> bool {
        self.path_rules.allows(&self.rules, tool, target)
    }

    /// The command rules that can match a command running `program`.
    pub(super) fn candidate_rules<'a>(
        &'a self,
        program: &str,
    ) -> impl Iterator<Item = &'a Rule> + 'a {
        let own = self
            .by_program
            .get(program)
            .map(Vec::as_slice)
            .unwrap_or_default();
        self.general.iter().chain(own).map(|&i| &self.rules[i])
    }

    /// Takes an MCP tool's server at its word that the tool only reads (its `readOnlyHint`),
    /// because the settings trust that server's hints (`trust_hints`): with no rule for it, it
    /// is allowed like a read. Rules still decide first.
    pub fn trust_read_only_hint(&mut self, tool: &str) {
        self.read_only_hinted.insert(tool.to_owned());
    }

    /// Adds an allow rule for the rest of this engine's life: a "for this session" answer.
    pub fn allow_for_session(&mut self, rule: &str) -> Result<(), PolicyError> {
        let rule = Rule::parse(rule, RuleKind::Allow, &self.anchors).map_err(|source| {
            PolicyError::Rule {
                place: "session approval: ".to_owned(),
                list: "allow",
                source,
            }
        })?;
        let index = self.rules.len();
        let bash = rule.tool == RuleTool::Bash;
        let program = rule.command_program().map(str::to_owned);
        self.rules.push(rule);
        match (bash, program) {
            (true, Some(program)) => self.by_program.entry(program).or_default().push(index),
            (true, None) => self.general.push(index),
            (false, _) => {
                self.path_rules = PathRules::new(&self.rules).map_err(PolicyError::Pattern)?;
            }
        }
        Ok(())
    }

    /// The mode in force.
    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// Decides one action. The verdict's trail is empty: use [`Engine::explain`] for it.
    pub fn check(&self, action: &Action) -> Verdict {
        self.decide(action, Trail { steps: None })
    }

    /// Decides one action and records what every layer said.
    pub fn explain(&self, action: &Action) -> Verdict {
        self.decide(
            action,
            Trail {
                steps: Some(Vec::new()),
            },
        )
    }

    fn decide(&self, action: &Action, mut trail: Trail) -> Verdict {
        let mut parsed = None;
        let (part, analysis, resources, rewrite) = match action {
            Action::Bash(command) => {
                let analysis = self.analyses.get(command);
                let (part, resources, rewrite) = self.bash(command, &analysis, &mut trail);
                let kept = trail.steps.is_some().then(|| Analysis::clone(&analysis));
                parsed = Some(analysis);
                (part, kept, resources, rewrite)
            }
            Action::Read(t) | Action::Glob(t) | Action::Grep(t) => {
                let part = self.read_tool(action, t, &mut trail);
                (part, None, vec![t.clone()], None)
            }
            Action::Write(t) | Action::Edit(t) => {
                (self.write_tool(t, &mut trail), None, vec![t.clone()], None)
            }
            Action::Fetch(url) => (self.fetch(url, &mut trail), None, vec![url.clone()], None),
            Action::Tool { name, target } => (
                self.custom(name, target, &mut trail),
                None,
                vec![name.clone()],
                None,
            ),
        };
        let part = self.project_asks(action, parsed.as_deref(), part, &mut trail);
        let decision = finish(action, part, resources, rewrite, &mut trail);
        let before = decision.decision;
        let decision = self.narrow(action, parsed.as_deref(), decision);
        if decision.decision != before {
            trail.note(PolicyLayer::Skill, || decision.reason.clone());
        }
        Verdict {
            decision,
            trail: trail.steps.unwrap_or_default(),
            analysis,
        }
    }
}

/// The protected paths of `settings`: the built-in ones, the settings' own, and warden's own
/// files (the trust records, the remembered rules, the trace, the user's configuration),
/// which no tool changes whatever the settings allow.
fn protection(settings: &Settings, anchors: &Anchors) -> Result<Protection, PolicyError> {
    let perms = &settings.permissions;
    let fs = &settings.sandbox.filesystem;
    let mut read_protected = perms.protected_paths.clone();
    read_protected.extend(fs.deny_read.iter().cloned());
    read_protected.extend(settings.tools.read.deny.iter().cloned());
    let own = |paths: Vec<PathBuf>| paths.iter().map(|p| literal_pattern(p)).collect::<Vec<_>>();
    read_protected.extend(own(settings.dirs.state_files()));
    let mut write_protected = fs.deny_write.clone();
    write_protected.extend(own(settings.dirs.protected()));
    // The repository's submodules' hooks and configuration, and the hooks path it names.
    write_protected.extend(own(warden_config::repository_auto_run(
        &anchors.project_root,
    )));
    Protection::new(
        &anchors.project_root,
        &anchors.home,
        &read_protected,
        &write_protected,
    )
    .map_err(PolicyError::Pattern)
}

/// An absolute path as a protected-path pattern that matches it and nothing else.
fn literal_pattern(path: &Path) -> String {
    let mut out = String::from("/");
    for c in path.to_string_lossy().chars() {
        match c {
            '*' | '?' | '[' | ']' | '{' | '}' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

fn risk_level(name: RiskName) -> RiskLevel {
    match name {
        RiskName::L0 => RiskLevel::L0,
        RiskName::L1 => RiskLevel::L1,
        RiskName::L2 => RiskLevel::L2,
        RiskName::L3 => RiskLevel::L3,
        RiskName::L4 => RiskLevel::L4,
        RiskName::L5 => RiskLevel::L5,
    }
}

fn verb(kind: RuleKind) -> &'static str {
    match kind {
        RuleKind::Allow => "allowed",
        RuleKind::Ask => "needs approval",
        RuleKind::Deny => "denied",
    }
}

fn outcome_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Allow => "allow",
        Outcome::Rewrite => "rewrite",
        Outcome::Approve => "require_approval",
        Outcome::Escalate => "require_escalation",
        Outcome::Deny => "deny",
    }
}

fn rollback(action: &Action, risk: RiskLevel) -> String {
    match action {
        Action::Write(_) | Action::Edit(_) => "restore the file from version control (git restore PATH) or from the recorded diff".to_owned(),
        Action::Fetch(_) => "nothing to undo locally; what was sent cannot be recalled".to_owned(),
        Action::Bash(_) if risk >= RiskLevel::L4 => "may not be reversible: check version control and backups before approving".to_owned(),
        Action::Bash(_) => "undo the changes it makes: git status and git restore for files in the workspace; uninstall what it installs".to_owned(),
        Action::Read(_) | Action::Glob(_) | Action::Grep(_) | Action::Tool { .. } => "nothing to undo: it only reads".to_owned(),
    }
}

fn finish(
    action: &Action,
    part: Part,
    resources: Vec<String>,
    rewrite: Option<Rewrite>,
    trail: &mut Trail,
) -> Decision {
    let (kind, rewrite) = match (part.outcome, rewrite) {
        (Outcome::Allow, _) => (DecisionKind::Allow, None),
        (Outcome::Deny, _) => (DecisionKind::Deny, None),
        (Outcome::Escalate, _) => (DecisionKind::RequireEscalation, None),
        (Outcome::Approve | Outcome::Rewrite, Some(rewrite)) => {
            (DecisionKind::Rewrite, Some(rewrite))
        }
        (Outcome::Approve | Outcome::Rewrite, None) => (DecisionKind::RequireApproval, None),
    };
    let approval = matches!(
        kind,
        DecisionKind::RequireApproval | DecisionKind::Rewrite | DecisionKind::RequireEscalation
    )
    .then(|| ApprovalRequest {
        tool: action.tool_name().to_owned(),
        arguments: action.target().to_owned(),
        resources,
        risk: part.risk,
        why: part.reason.clone(),
        alternative: rewrite
            .as_ref()
            .map(|r| format!("{}: {}", r.tool, r.target)),
        rollback: rollback(action, part.risk),
    });
    trail.note(PolicyLayer::Approval, || match kind {
        DecisionKind::Allow | DecisionKind::Deny => "not needed".to_owned(),
        DecisionKind::RequireApproval | DecisionKind::Rewrite => {
            "a person must approve (or take the rewrite)".to_owned()
        }
        DecisionKind::RequireEscalation => {
            "needs a wider sandbox, which only a person can grant".to_owned()
        }
    });
    Decision {
        decision: kind,
        risk: Some(part.risk),
        reason: part.reason,
        layer: part.layer,
        rule: part.rule,
        rewrite,
        approval,
    }
}
