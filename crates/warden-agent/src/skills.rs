//! Skills in the loop (SPEC K3–K6): the index and the loaded skills are layers of every call's
//! system prompt, so compaction cannot lose them; the `Skill` tool loads one (a person approves
//! a skill from an untrusted root once, pinned to the hash of its directory), reads its other
//! files, or unloads it; while a skill is active the policy engine narrows what may be done to
//! what it declares. A skill stays active until the task it was loaded for ends.

use std::fmt::Write as _;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use warden_policy::{Narrowing, RuleKind};
use warden_protocol::{Asked, Decision, Event, Resolved};
use warden_skills::Registry;

use crate::agent::Agent;
use crate::approve::Answer;
use crate::owned::SKILL;
use crate::state::{ActiveSkill, State};

/// The most bytes of a skill's instructions put into the prompt.
const BODY_CAP: usize = 16 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillArgs {
    name: String,
    file: Option<String>,
    unload: Option<bool>,
}

/// The skills layers of the system prompt: the index of what can be loaded (most relevant
/// first, within `budget` tokens), then the instructions of each loaded skill.
pub fn layer(
    registry: Option<&Registry>,
    state: &State,
    base: &std::path::Path,
    budget: u64,
    count: &dyn Fn(&str) -> u64,
) -> String {
    let mut p = String::new();
    if let Some(registry) = registry {
        let goal = latest_request(state);
        let files = files_of(state);
        let mut order: Vec<usize> = registry
            .rank(goal, &files)
            .iter()
            .map(|r| r.index)
            .collect();
        for i in 0..registry.skills.len() {
            if !order.contains(&i) {
                order.push(i);
            }
        }
        p.push_str(&registry.index(&order, budget, base, count).text);
    }
    for skill in &state.skills {
        let version = skill
            .version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        let _ = writeln!(
            p,
            "\n## Loaded skill: {}{version} (from {}, sha256 {}…; active until the task ends)",
            skill.name,
            skill.path,
            &skill.hash[..12.min(skill.hash.len())]
        );
        if let Some(tools) = &skill.allowed_tools {
            let _ = writeln!(
                p,
                "While it is active you may use only: {}.",
                tools.join(", ")
            );
        }
        let body = &skill.body;
        if body.len() > BODY_CAP {
            let mut end = BODY_CAP;
            while !body.is_char_boundary(end) {
                end -= 1;
            }
            let _ = writeln!(
                p,
                "{}\n[… cut: the instructions have {} bytes, the first {BODY_CAP} are shown]",
                &body[..end],
                body.len()
            );
        } else {
            let _ = writeln!(p, "{body}");
        }
    }
    p
}

/// What the user asked for last (the task, or a later message).
fn latest_request(state: &State) -> &str {
    state
        .items
        .iter()
        .rev()
        .find_map(|item| match item {
            warden_model::Item::User { text } if !text.starts_with('[') => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or(&state.goal)
}

fn files_of(state: &State) -> Vec<String> {
    let ws = &state.working_set;
    ws.files_read
        .iter()
        .chain(&ws.files_edited)
        .cloned()
        .collect()
}

impl Agent<'_> {
    /// A `Skill` call: load, read a file of, or unload a skill.
    pub(crate) fn skill_call(&mut self, state: &mut State, args: &Value) -> Result<Value, String> {
        let args: SkillArgs = serde_json::from_value(args.clone())
            .map_err(|e| format!("Skill: invalid arguments: {e}"))?;
        let Some(registry) = self.skills else {
            return Err("no skills are available in this session".to_owned());
        };
        let active = state.skills.iter().position(|s| s.name == args.name);
        if args.unload == Some(true) {
            let at = active.ok_or_else(|| format!("the skill {} is not loaded", args.name))?;
            let gone = state.skills.remove(at);
            self.apply_narrowings(state)?;
            self.publish(&Event::SkillUnloaded {
                name: gone.name.clone(),
                reason: "unloaded by the model".to_owned(),
            });
            return Ok(json!({"unloaded": gone.name}));
        }
        if let Some(file) = &args.file {
            if active.is_none() {
                return Err(format!(
                    "load the skill {} first (Skill with its name), then read its files",
                    args.name
                ));
            }
            let text = registry
                .read_file(&args.name, file)
                .map_err(|e| e.to_string())?;
            let source = format!("the skill {}'s file {file}", args.name);
            return Ok(
                json!({"skill": args.name, "file": file, "content": self.shield.wrap(&source, &text)}),
            );
        }
        self.load_skill(state, registry, &args.name, "model")
    }

    /// Loads a skill: the policy's `Skill(…)` rules first, then a person's approval for one
    /// from an untrusted root (once per hash of its directory), then its narrowing.
    pub(crate) fn load_skill(
        &mut self,
        state: &mut State,
        registry: &Registry,
        name: &str,
        by: &str,
    ) -> Result<Value, String> {
        if let Some(skill) = state.skills.iter().find(|s| s.name == name) {
            return Ok(json!({"loaded": name, "already": true, "version": skill.version}));
        }
        let rule = self.engine.skill_rule(name).map(|(k, t)| (k, t.to_owned()));
        if let Some((RuleKind::Deny, text)) = &rule {
            return Err(format!("the skill {name} is refused by the rule {text}"));
        }
        let loaded = registry.load(name).map_err(|e| e.to_string())?;
        let skill = &loaded.skill;
        let tree_hash = warden_skills::tree_hash(&skill.path).map_err(|e| e.to_string())?;
        let approval = self.approval(name, skill, &tree_hash, rule.as_ref().map(|(k, _)| *k))?;
        let meta = &skill.meta;
        let active = ActiveSkill {
            name: name.to_owned(),
            version: meta.version.clone(),
            hash: skill.hash.clone(),
            tree_hash: tree_hash.clone(),
            path: skill.path.display().to_string(),
            body: loaded.body.clone(),
            allowed_tools: meta.allowed_tools.clone(),
            network: meta.permissions.network,
            write_paths: meta.permissions.write_paths.clone(),
            scripts: meta.permissions.scripts,
            by: by.to_owned(),
        };
        // A skill whose declarations do not parse is not loaded: nothing is assumed.
        self.narrowing_of(&active)?;
        state.skills.push(active);
        self.apply_narrowings(state)?;
        let known: Vec<String> = crate::owned::tool_defs(&self.registry, true)
            .into_iter()
            .map(|d| d.name)
            .collect();
        let missing: Vec<&String> = meta
            .required_tools
            .iter()
            .filter(|t| !known.iter().any(|k| k.eq_ignore_ascii_case(t)))
            .collect();
        self.publish(&Event::SkillLoaded {
            name: name.to_owned(),
            version: meta.version.clone(),
            hash: skill.hash.clone(),
            tree_hash,
            root: skill.root.clone(),
            path: skill.path.clone(),
            by: by.to_owned(),
            approval: approval.to_owned(),
        });
        let mut result = json!({
            "loaded": name,
            "version": meta.version,
            "hash": skill.hash,
            "note": "its instructions now stand in the system prompt under 'Loaded skill'; they \
                     hold until the task ends",
        });
        if let Some(tools) = &meta.allowed_tools {
            result["allowedTools"] = json!(tools);
        }
        if !missing.is_empty() {
            result["missingTools"] = json!(missing);
        }
        Ok(result)
    }

    /// Whether the skill may load without asking, else a person's answer (`--on-ask` without a
    /// terminal); how it was let in, or why not.
    fn approval(
        &mut self,
        name: &str,
        skill: &warden_skills::Skill,
        tree_hash: &str,
        rule: Option<RuleKind>,
    ) -> Result<&'static str, String> {
        let approved_before = self
            .store
            .skill_approval(&skill.path, tree_hash)
            .map_err(|e| e.to_string())?;
        // An allow rule does not stand in for the approval: the project's own settings could
        // hold one.
        let ask = rule == Some(RuleKind::Ask) || (!skill.trusted && approved_before.is_none());
        if !ask {
            return Ok(if skill.trusted {
                "trusted root"
            } else {
                "approved before, same files"
            });
        }
        let why = format!(
            "the skill {name} comes from the {} root ({}), which is not trusted: its \
             instructions and scripts come with the project. An approval is pinned to the \
             hash of its files (sha256 {}…); any change asks again.",
            skill.root,
            skill.path.display(),
            &tree_hash[..12]
        );
        self.publish(&Event::ApprovalRequested {
            tool: SKILL.to_owned(),
            asked: Asked::Skill {
                skill: name.to_owned(),
                tree_hash: tree_hash.to_owned(),
                reason: why.clone(),
            },
        });
        let decision = Decision {
            reason: why.clone(),
            ..Decision::unchecked()
        };
        let answer = self.put(SKILL, name, &decision, Answer::Once);
        self.publish(&Event::ApprovalResolved {
            tool: SKILL.to_owned(),
            answer: answer.kind(),
            of: Resolved::Skill {
                skill: name.to_owned(),
            },
        });
        if let Answer::Deny(message) = answer {
            let how = if self.approver.is_some() {
                "the user did not approve it"
            } else {
                "there is no one to ask (no terminal; --on-ask deny)"
            };
            return Err(format!(
                "the skill {name} needs a person's approval, and {how}{}",
                message.map(|m| format!(": {m}")).unwrap_or_default()
            ));
        }
        // Remembered (pinned to the hash) only when a person answered: `--on-ask allow` lets it
        // through for this run, and a later run asks again.
        if self.approver.is_none() {
            return Ok("approved for this run (--on-ask allow)");
        }
        self.store
            .approve_skill(&skill.path, name, tree_hash, &self.session)
            .map_err(|e| e.to_string())?;
        Ok("approved now")
    }

    fn narrowing_of(&self, skill: &ActiveSkill) -> Result<Narrowing, String> {
        let scripts = std::path::Path::new(&skill.path).join("scripts");
        self.engine
            .narrowing(
                &format!("skill {}", skill.name),
                skill.allowed_tools.as_deref(),
                skill.network,
                skill.write_paths.as_deref(),
                Some((&scripts, skill.scripts.unwrap_or(true))),
            )
            .map_err(|e| {
                format!(
                    "the skill {} declares what cannot be enforced: {e}",
                    skill.name
                )
            })
    }

    /// Makes the engine narrow by exactly the active skills.
    pub(crate) fn apply_narrowings(&mut self, state: &State) -> Result<(), String> {
        let list = state
            .skills
            .iter()
            .map(|s| self.narrowing_of(s))
            .collect::<Result<Vec<_>, _>>()?;
        Arc::make_mut(&mut self.engine).set_narrowings(list);
        if let Ok(mut dirs) = self.ctx.skill_dirs.write() {
            *dirs = state.skills.iter().map(|s| s.path.clone().into()).collect();
        }
        Ok(())
    }

    /// Loads the best-matching skill for the latest request when one of its triggers or file
    /// globs matched and it scores at least the settings' `auto_load_score`. A match on words of
    /// a description alone is left to the model, which sees the index.
    pub(crate) fn auto_load(&mut self, state: &mut State) {
        let threshold = self.settings.skills.auto_load_score;
        let Some(registry) = self.skills else {
            return;
        };
        if threshold <= 0.0 {
            return;
        }
        let ranked = registry.rank(latest_request(state), &files_of(state));
        let Some(best) = ranked
            .iter()
            .find(|r| r.declared)
            .filter(|r| r.score >= threshold)
        else {
            return;
        };
        if state.skills.iter().any(|s| s.name == best.name) {
            return;
        }
        let name = best.name.clone();
        if let Err(why) = self.load_skill(state, registry, &name, "auto") {
            self.publish(&Event::SkillNotLoaded { name, why });
        }
    }

    /// The task ended: its skills go.
    pub(crate) fn unload_all(&mut self, state: &mut State) {
        if state.skills.is_empty() {
            return;
        }
        for skill in std::mem::take(&mut state.skills) {
            self.publish(&Event::SkillUnloaded {
                name: skill.name,
                reason: "the task ended".to_owned(),
            });
        }
        let _ = self.apply_narrowings(state);
    }
}
