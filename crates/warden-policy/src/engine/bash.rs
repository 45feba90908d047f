//! Shell commands through the layers, one simple command at a time.

use std::path::Path;

use warden_config::PermissionMode;
use warden_protocol::{PolicyLayer, Rewrite, RiskLevel};

use super::place::Place;
use super::{Engine, Part, Trail, outcome_word, verb};
use crate::modes::{Outcome, Row, cell};
use crate::paths::{self, Target};
use crate::rules::{Rule, RuleKind, RuleTool};
use crate::shell::{Analysis, SimpleCommand};
use crate::{hardblock, risk};

/// The files one command touches, resolved and sorted by where they are.
struct Files {
    reads: Vec<(String, Target)>,
    writes: Vec<(String, Target)>,
    unresolved_write: bool,
    unresolved_read: Option<String>,
    outside_reads: Vec<String>,
    outside_writes: Vec<String>,
    /// Every write is allowed by an `Edit(…)` rule.
    edits_allowed: bool,
}

impl Engine {
    pub(super) fn bash(
        &self,
        source: &str,
        analysis: &Analysis,
        trail: &mut Trail,
    ) -> (Part, Vec<String>, Option<Rewrite>) {
        let mut resources = Vec::new();
        if let Some(why) = hardblock::whole(source, analysis) {
            trail.note(PolicyLayer::HardBlock, || format!("blocked: {why}"));
            return (
                Part::new(
                    Outcome::Deny,
                    RiskLevel::L5,
                    format!("hard-blocked: {why}"),
                    PolicyLayer::HardBlock,
                ),
                resources,
                None,
            );
        }
        let mut place = Place::new(&self.anchors.cwd, &self.anchors.home, source, analysis);
        let mut worst: Option<Part> = None;
        for cmd in &analysis.commands {
            let cmd = place.seen(cmd);
            resources.extend(cmd.reads.iter().chain(&cmd.writes).cloned());
            let part = self.simple(&cmd, &place.cwd, trail);
            place.after(&cmd);
            worst = Some(match worst {
                Some(w)
                    if w.outcome > part.outcome
                        || (w.outcome == part.outcome && w.risk >= part.risk) =>
                {
                    Part {
                        risk: w.risk.max(part.risk),
                        ..w
                    }
                }
                Some(w) => Part {
                    risk: w.risk.max(part.risk),
                    ..part
                },
                None => part,
            });
        }
        let mut part = worst.unwrap_or_else(|| {
            Part::new(
                Outcome::Allow,
                RiskLevel::L0,
                "an empty command",
                PolicyLayer::Mode,
            )
        });
        if analysis.is_unknown() && part.outcome < Outcome::Approve {
            let why = analysis
                .unknown
                .first()
                .cloned()
                .unwrap_or_else(|| "part of it cannot be resolved before running".to_owned());
            let outcome = if self.mode == PermissionMode::Plan {
                Outcome::Deny
            } else {
                Outcome::Approve
            };
            trail.note(PolicyLayer::Mode, || {
                format!("not fully analysable ({why}): approval at best")
            });
            part = Part {
                outcome,
                reason: format!("cannot be fully analysed: {why}"),
                layer: PolicyLayer::Mode,
                rule: None,
                risk: part.risk.max(RiskLevel::L3),
            };
        }
        let rewrite = if part.outcome == Outcome::Approve {
            rewrite_for(analysis, |raw| {
                let target = self.target(&expand_home(raw), &self.anchors.cwd);
                [&target.lexical, &target.real]
                    .iter()
                    .all(|p| paths::within(p, &self.anchors.project_root))
            })
        } else {
            None
        };
        resources.sort();
        resources.dedup();
        (part, resources, rewrite)
    }

    /// One simple command through the layers.
    fn simple(&self, cmd: &SimpleCommand, cwd: &Path, trail: &mut Trail) -> Part {
        let line = cmd.line();
        let (risk, why) = risk::classify(cmd, &self.extra_risk);
        let (risk, why) = self.risk_floor(cmd, risk, why);
        if let Some(part) = self.hard_block(cmd, &line, risk, &why, cwd, trail) {
            return part;
        }
        let files = match self.files(cmd, &line, cwd, trail) {
            Ok(files) => files,
            Err(part) => return part,
        };
        if let Some(part) = self.rules_for_command(cmd, &line, &files, risk, trail) {
            return self.after_rule(cmd, &line, &files, part);
        }
        self.by_mode(cmd, &line, &files, risk, &why, trail)
    }

    /// Layer 1: refused outright.
    fn hard_block(
        &self,
        cmd: &SimpleCommand,
        line: &str,
        risk: RiskLevel,
        why: &str,
        cwd: &Path,
        trail: &mut Trail,
    ) -> Option<Part> {
        let blocked = hardblock::part(cmd, cwd, &self.anchors.home, &self.anchors.project_root)
            .map(|why| (RiskLevel::L5, format!("hard-blocked: {why}")))
            .or_else(|| (risk == RiskLevel::L5).then(|| (risk, format!("{line}: {why}"))));
        let Some((risk, reason)) = blocked else {
            trail.note(PolicyLayer::HardBlock, || format!("{line}: not blocked"));
            return None;
        };
        trail.note(PolicyLayer::HardBlock, || {
            format!("{line}: blocked: {reason}")
        });
        Some(Part::new(
            Outcome::Deny,
            risk,
            reason,
            PolicyLayer::HardBlock,
        ))
    }

    /// Layer 2: the files the command touches; a protected one refuses it.
    fn files(
        &self,
        cmd: &SimpleCommand,
        line: &str,
        cwd: &Path,
        trail: &mut Trail,
    ) -> Result<Files, Part> {
        let home = &self.anchors.home;
        // A glob is every name it could match (`cat .e*` reads `.env`); a program that only
        // lists names (`ls -la .*`) reads no file's content.
        let lists = matches!(
            cmd.program.as_str(),
            "ls" | "du" | "tree" | "stat" | "realpath" | "readlink" | "dir" | "vdir" | "test" | "["
        );
        let resolve = |raw: &String| -> Vec<(String, Target)> {
            if !lists && super::globs::is_glob(raw) {
                super::globs::candidates(&expand_home(raw), cwd, home, &self.ruled_names)
                    .iter()
                    .map(|name| (raw.clone(), self.target(&expand_home(name), cwd)))
                    .collect()
            } else {
                vec![(raw.clone(), self.target(&expand_home(raw), cwd))]
            }
        };
        let reads: Vec<(String, Target)> = cmd
            .reads
            .iter()
            .filter(|r| resolvable(r))
            .flat_map(&resolve)
            .collect();
        let writes: Vec<(String, Target)> = cmd
            .writes
            .iter()
            .filter(|w| resolvable(w) && !paths::is_harmless_device(w))
            .flat_map(&resolve)
            .collect();
        let protected = |list: &[(String, Target)], unknown: &[String], write: bool| {
            list.iter()
                .chain(unresolved(unknown, cwd, home).iter())
                .find_map(|(raw, target)| {
                    let hit = target
                        .both()
                        .into_iter()
                        .find_map(|p| self.guarded(p, write));
                    hit.map(|pattern| (raw.clone(), pattern))
                })
        };
        for (write, list, unknown) in [(false, &reads, &cmd.reads), (true, &writes, &cmd.writes)] {
            if let Some((raw, pattern)) = protected(list, unknown, write) {
                let verb = if write { "writes" } else { "reads" };
                trail.note(PolicyLayer::PathSandbox, || {
                    format!("{line}: {verb} {raw}, protected by {pattern:?}")
                });
                return Err(Part::new(
                    Outcome::Deny,
                    RiskLevel::L5,
                    format!("{verb} the protected path {raw} ({pattern})"),
                    PolicyLayer::PathSandbox,
                ));
            }
        }
        let edit_allowed = |t: &Target| self.path_allowed(&RuleTool::Edit, t);
        let files = Files {
            // What xargs reads from a pipe no lister fills (`<stdin>`) is as unknown as `$X`.
            unresolved_write: cmd.writes.iter().any(|w| !resolvable(w)),
            unresolved_read: cmd.reads.iter().find(|r| !resolvable(r)).cloned(),
            outside_writes: writes
                .iter()
                .filter(|(_, t)| !self.writable_target(t))
                .map(|(r, _)| r.clone())
                .collect(),
            outside_reads: reads
                .iter()
                .filter(|(_, t)| !self.readable_target(t))
                .map(|(r, _)| r.clone())
                .collect(),
            edits_allowed: !writes.is_empty() && writes.iter().all(|(_, t)| edit_allowed(t)),
            reads,
            writes,
        };
        trail.note(PolicyLayer::PathSandbox, || format!(
                "{line}: no protected path; {} read(s) outside the workspace, {} write(s) outside the writable roots",
                files.outside_reads.len(),
                files.outside_writes.len()
            ));
        Ok(files)
    }

    /// What a rule decided still meets the sandbox: an allowed command that needs more than the
    /// sandbox gives is escalated, and a rule on the command does not cover its redirections.
    fn after_rule(&self, cmd: &SimpleCommand, line: &str, files: &Files, part: Part) -> Part {
        if part.outcome != Outcome::Allow {
            return part;
        }
        let rule = part.rule.clone().unwrap_or_default();
        let needs_network = cmd.flags.network && self.network_off;
        if self.sandboxed && (!files.outside_writes.is_empty() || needs_network) {
            let what = if files.outside_writes.is_empty() {
                "needs the network, which this sandbox has off"
            } else {
                "writes outside the sandbox's writable roots"
            };
            return Part {
                outcome: Outcome::Escalate,
                reason: format!("{line}: allowed by {rule}, but {what}"),
                layer: PolicyLayer::PathSandbox,
                ..part
            };
        }
        if !cmd.redirected.is_empty() && !files.edits_allowed {
            let outcome = cell(self.mode, Row::Edit, self.sandboxed);
            if outcome > Outcome::Allow {
                let reason = format!(
                    "{line}: allowed by {rule}, but it also writes {}",
                    cmd.redirected.join(", ")
                );
                return Part {
                    outcome,
                    reason,
                    layer: PolicyLayer::Mode,
                    ..part
                };
            }
        }
        part
    }

    /// Layer 4: the mode's cell for each row the command falls in; the strictest wins.
    fn by_mode(
        &self,
        cmd: &SimpleCommand,
        line: &str,
        files: &Files,
        risk: RiskLevel,
        why: &str,
        trail: &mut Trail,
    ) -> Part {
        let mut rows = vec![match risk {
            RiskLevel::L0 | RiskLevel::L1 => Row::Info,
            RiskLevel::L2 => Row::L2,
            RiskLevel::L3 => Row::L3,
            RiskLevel::L4 => Row::L4,
            RiskLevel::L5 => Row::L5,
        }];
        if !files.outside_reads.is_empty() {
            rows.push(Row::ReadOutside);
        }
        let writes = !files.writes.is_empty() || files.unresolved_write;
        if writes && !files.edits_allowed {
            rows.push(Row::Edit);
        }
        let mut outcome = rows
            .iter()
            .map(|row| cell(self.mode, *row, self.sandboxed))
            .max()
            .unwrap_or(Outcome::Allow);
        let mut reason = format!("{line}: {why}");
        if outcome > Outcome::Allow && risk <= RiskLevel::L1 && !files.outside_reads.is_empty() {
            reason = format!(
                "{line}: reads {} outside the workspace",
                files.outside_reads[0]
            );
        } else if outcome > Outcome::Allow && risk <= RiskLevel::L2 && writes {
            reason = format!("{line}: edits files in the workspace");
        }
        let lenient = self.mode == PermissionMode::Bypass;
        if files.unresolved_write && outcome < Outcome::Approve && !lenient {
            outcome = Outcome::Approve;
            reason = format!("{line}: writes a path not known before running");
        }
        if let Some(path) = &files.unresolved_read
            && outcome < Outcome::Approve
            && !lenient
        {
            outcome = Outcome::Approve;
            reason = format!("{line}: reads {path}, a path not known before running");
        }
        let needs_network = cmd.flags.network && self.sandboxed && self.network_off;
        if !files.outside_writes.is_empty() || needs_network {
            reason = match files.outside_writes.first() {
                Some(path) => format!("{line}: writes {path} outside the writable roots"),
                None => format!("{line}: needs the network, which this sandbox has off"),
            };
            outcome = if self.mode == PermissionMode::Plan {
                Outcome::Deny
            } else if self.sandboxed {
                outcome.max(Outcome::Escalate)
            } else {
                outcome.max(cell(self.mode, Row::L3, false))
            };
        }
        let rows_text: Vec<&str> = rows.iter().map(|r| r.as_str()).collect();
        trail.note(PolicyLayer::Mode, || {
            format!(
                "{line}: {} mode, {} → {}",
                self.mode.as_str(),
                rows_text.join(" + "),
                outcome_word(outcome)
            )
        });
        Part {
            outcome,
            risk,
            reason,
            layer: PolicyLayer::Mode,
            rule: None,
        }
    }

    /// Layer 3: the strictest rule that matches the command or the files it touches.
    fn rules_for_command(
        &self,
        cmd: &SimpleCommand,
        line: &str,
        files: &Files,
        risk: RiskLevel,
        trail: &mut Trail,
    ) -> Option<Part> {
        let mut found: Option<&Rule> = None;
        for rule in self.candidate_rules(&cmd.program) {
            // Execution smuggled in by configuration is not what a command rule was written for.
            let allow_ok = !cmd.flags.hidden_exec;
            if (rule.kind != RuleKind::Allow || allow_ok)
                && found.is_none_or(|f| rule.kind > f.kind)
                && rule.matches_command(line)
            {
                found = Some(rule);
            }
        }
        // Path rules on what it reads and writes: their deny and ask apply; their allow only
        // covers file access, never running the command.
        let reads = files.reads.iter().map(|(_, t)| (RuleTool::Read, t));
        let writes = files.writes.iter().map(|(_, t)| (RuleTool::Edit, t));
        for (tool, target) in reads.chain(writes) {
            if let Some(rule) = self.path_rule(std::slice::from_ref(&tool), target)
                && rule.kind != RuleKind::Allow
                && found.is_none_or(|f| rule.kind > f.kind)
            {
                found = Some(rule);
            }
        }
        let Some(rule) = found else {
            trail.note(PolicyLayer::Rules, || format!("{line}: no rule matches"));
            return None;
        };
        let outcome = match rule.kind {
            RuleKind::Deny => Outcome::Deny,
            RuleKind::Ask => Outcome::Approve,
            RuleKind::Allow => Outcome::Allow,
        };
        trail.note(PolicyLayer::Rules, || {
            format!("{line}: {} rule {}", rule.kind.as_str(), rule.text())
        });
        let reason = format!("{line}: {} by the rule {}", verb(rule.kind), rule.text());
        Some(Part {
            outcome,
            risk,
            reason,
            layer: PolicyLayer::Rules,
            rule: Some(rule.text().to_owned()),
        })
    }
}

/// `$HOME/…` is the home directory, whatever the variable holds elsewhere.
pub(super) fn expand_home(raw: &str) -> String {
    match raw.strip_prefix("$HOME") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~{rest}"),
        _ => raw.to_owned(),
    }
}

/// Paths with an unknown part, with that part stood in for by a placeholder directory, so that
/// a protected name after it (`$(…)/.env`, `$DIR/.ssh/id_rsa`) is still recognised.
fn unresolved(raw: &[String], cwd: &Path, home: &Path) -> Vec<(String, Target)> {
    raw.iter()
        .filter(|r| !resolvable(r) && r.contains('/'))
        .map(|r| {
            let mut stand_in = String::new();
            for part in r.split('/') {
                if !stand_in.is_empty() || r.starts_with('/') {
                    stand_in.push('/');
                }
                stand_in.push_str(
                    if part.contains('$')
                        || part.contains("(…)")
                        || part.starts_with('~') && part.len() > 1
                    {
                        "__unknown__"
                    } else {
                        part
                    },
                );
            }
            (r.clone(), paths::resolve(&stand_in, cwd, home))
        })
        .collect()
}

/// Paths that are known before running (not `$X`, `$(…)`, standard input or `find`'s `{}`).
pub(super) fn resolvable(path: &str) -> bool {
    let home = expand_home(path);
    !(home.contains('$')
        || path == crate::shell::STDIN
        || path == "{}"
        || path.contains("<(…)")
        || path.is_empty())
        && !(path.starts_with('~') && !path.starts_with("~/") && path != "~")
}

/// A safer equivalent for a command that would otherwise need approval.
/// `in_workspace` tells whether a path the command names lies inside the workspace: only there
/// is moving to a trash directory a safer equivalent of deleting.
fn rewrite_for(analysis: &Analysis, in_workspace: impl Fn(&str) -> bool) -> Option<Rewrite> {
    let mut real = analysis.commands.iter().filter(|c| c.via.is_empty());
    let cmd = real.next()?;
    if real.next().is_some() || analysis.compound {
        return None;
    }
    let args: Vec<&str> = cmd.arg_texts().collect();
    match cmd.program.as_str() {
        "git"
            if args.first() == Some(&"push")
                && args.iter().any(|a| *a == "--force" || *a == "-f") =>
        {
            let fixed: Vec<&str> = args
                .iter()
                .map(|a| {
                    if *a == "--force" || *a == "-f" {
                        "--force-with-lease"
                    } else {
                        a
                    }
                })
                .collect();
            Some(Rewrite {
                tool: "bash".to_owned(),
                target: format!("git {}", fixed.join(" ")),
                reason: "--force-with-lease refuses to overwrite commits someone else pushed"
                    .to_owned(),
            })
        }
        "sed"
            if cmd
                .args
                .iter()
                .any(|a| a.text.starts_with("-i") || a.text.starts_with("--in-place")) =>
        {
            let file = cmd.writes.first()?;
            Some(Rewrite { tool: "editFile".to_owned(), target: file.clone(), reason: "editFile shows a diff, matches exactly once and refuses a file changed since it was read".to_owned() })
        }
        "rm" if cmd.writes.len() == 1
            && args.iter().any(|a| a.starts_with('-') && a.contains('r'))
            && in_workspace(&cmd.writes[0]) =>
        {
            let target = &cmd.writes[0];
            Some(Rewrite {
                tool: "bash".to_owned(),
                // In the workspace: a sandboxed command's /tmp is private and gone when it ends.
                target: format!("mkdir -p .warden-trash && mv {target} .warden-trash/"),
                reason: "moving to .warden-trash in the workspace can be undone".to_owned(),
            })
        }
        _ => None,
    }
}
