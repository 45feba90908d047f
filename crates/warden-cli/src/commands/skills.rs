//! `warden skills` — a CLI contract: `list`, `show NAME`, `match "GOAL"`, `validate DIR`
//! (and `approve NAME`). With `--json`: the skills (name, description, path, root, version,
//! hash; for `match`, the score) and the problems found (file, line, reason).

use std::path::PathBuf;

use anyhow::anyhow;
use serde_json::{Value, json};
use warden_config::Settings;
use warden_skills::{Problem, Registry, Severity, Skill};

use super::{load_for_inspection, open_trace, print_json};
use crate::args::SkillsCommand;
use crate::{CliError, Exit};

/// Where the organisation's skills are.
const ORG_SKILLS: &str = "/etc/warden/skills";

/// The skills of the project the settings are for; `None` when `[skills] enabled = false`.
pub(super) fn registry(settings: &Settings) -> Option<Registry> {
    if !settings.skills.enabled {
        return None;
    }
    let user = warden_config::user_config_dir();
    let roots = warden_skills::standard_roots(
        &settings.project_root,
        user.as_deref(),
        std::path::Path::new(ORG_SKILLS),
        &settings.skills.roots,
        &settings.skills.trusted_roots,
    );
    Some(warden_skills::discover(&roots))
}

pub(super) fn run(dir: Option<PathBuf>, command: &SkillsCommand) -> Result<Exit, CliError> {
    if let SkillsCommand::Validate { dir: skill, json } = command {
        return validate(skill, *json);
    }
    let settings = load_for_inspection(dir)?;
    let registry = registry(&settings).ok_or_else(|| {
        CliError::usage(anyhow!("skills are turned off ([skills] enabled = false)"))
    })?;
    match command {
        SkillsCommand::List { json } => list(&registry, *json),
        SkillsCommand::Show { name, json } => show(&registry, name, *json),
        SkillsCommand::Match { goal, files, json } => matching(&registry, goal, files, *json),
        SkillsCommand::Approve { name } => approve(&registry, name),
        SkillsCommand::Validate { .. } => unreachable!("handled above"),
    }
}

fn skill_json(skill: &Skill) -> Value {
    json!({
        "name": skill.name().as_str(),
        "description": skill.meta.description,
        "path": skill.path,
        "root": skill.root,
        "trusted": skill.trusted,
        "version": skill.meta.version,
        "hash": skill.hash,
        "treeHash": warden_skills::tree_hash(&skill.path).ok(),
        "allowedTools": skill.meta.allowed_tools,
    })
}

fn problems_json(problems: &[Problem]) -> Value {
    json!(problems)
}

fn print_problems(problems: &[Problem]) {
    for p in problems {
        let at = p.line.map(|l| format!(":{l}")).unwrap_or_default();
        let severity = match p.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        eprintln!(
            "{}{at}: {severity}: {}",
            p.file.display(),
            warden_protocol::printable(&p.reason)
        );
    }
}

fn list(registry: &Registry, json: bool) -> Result<Exit, CliError> {
    if json {
        let skills: Vec<Value> = registry.skills.iter().map(skill_json).collect();
        print_json(&json!({"skills": skills, "problems": problems_json(&registry.problems)}))?;
        return Ok(Exit::Success);
    }
    for skill in &registry.skills {
        let version = skill.meta.version.as_deref().unwrap_or("-");
        let trust = if skill.trusted {
            "trusted"
        } else {
            "needs approval"
        };
        println!(
            "{:<28} {:<8} {:<13} {:<15} {}",
            skill.name().as_str(),
            version,
            skill.root,
            trust,
            skill.path.display()
        );
    }
    print_problems(&registry.problems);
    Ok(Exit::Success)
}

fn found<'r>(registry: &'r Registry, name: &str) -> Result<&'r Skill, CliError> {
    registry.get(name).ok_or_else(|| {
        let known: Vec<&str> = registry.skills.iter().map(|s| s.name().as_str()).collect();
        CliError::failure(anyhow!(
            "no skill {name:?}; the skills here are: {}",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        ))
    })
}

fn show(registry: &Registry, name: &str, json: bool) -> Result<Exit, CliError> {
    found(registry, name)?;
    let loaded = registry.load(name).map_err(CliError::failure)?;
    if json {
        let mut value = skill_json(&loaded.skill);
        value["body"] = json!(loaded.body);
        value["triggers"] = json!(loaded.skill.meta.triggers);
        value["fileGlobs"] = json!(loaded.skill.meta.file_globs);
        value["permissions"] = json!(loaded.skill.meta.permissions);
        print_json(&value)?;
        return Ok(Exit::Success);
    }
    let skill = &loaded.skill;
    let meta = &skill.meta;
    let p = warden_protocol::printable;
    println!("name:        {}", p(meta.name.as_str()));
    println!("description: {}", p(&meta.description));
    println!("path:        {}", skill.path.display());
    println!(
        "root:        {} ({})",
        skill.root,
        if skill.trusted {
            "trusted"
        } else {
            "needs approval"
        }
    );
    if let Some(version) = &meta.version {
        println!("version:     {}", p(version));
    }
    if let Some(tools) = &meta.allowed_tools {
        println!("tools:       {}", p(&tools.join(" ")));
    }
    if !meta.triggers.is_empty() {
        println!("triggers:    {}", p(&meta.triggers.join(", ")));
    }
    if !meta.file_globs.is_empty() {
        println!("file globs:  {}", p(&meta.file_globs.join(", ")));
    }
    println!("sha256:      {}", skill.hash);
    // A project's skill is the repository's text: shown, never obeyed by the terminal.
    println!("\n{}", warden_protocol::printable_text(&loaded.body));
    Ok(Exit::Success)
}

fn matching(
    registry: &Registry,
    goal: &str,
    files: &[String],
    json: bool,
) -> Result<Exit, CliError> {
    let ranked = registry.rank(goal, files);
    if json {
        let skills: Vec<Value> = ranked
            .iter()
            .map(|r| {
                let mut value = skill_json(&registry.skills[r.index]);
                value["score"] = json!(r.score);
                value["reasons"] = json!(r.reasons);
                value
            })
            .collect();
        print_json(&json!({"skills": skills, "problems": problems_json(&registry.problems)}))?;
        return Ok(Exit::Success);
    }
    if ranked.is_empty() {
        println!("no skill matches");
    }
    for r in &ranked {
        println!("{:>7.2}  {:<28} {}", r.score, r.name, r.reasons.join(", "));
    }
    print_problems(&registry.problems);
    Ok(Exit::Success)
}

fn validate(dir: &std::path::Path, json: bool) -> Result<Exit, CliError> {
    if !dir.is_dir() {
        return Err(CliError::usage(anyhow!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let problems = warden_skills::validate(dir);
    let valid = !problems.iter().any(|p| p.severity == Severity::Error);
    if json {
        print_json(&json!({"valid": valid, "problems": problems_json(&problems)}))?;
    } else {
        print_problems(&problems);
        if valid {
            println!("{}: valid", dir.display());
        }
    }
    Ok(if valid { Exit::Success } else { Exit::Failure })
}

fn approve(registry: &Registry, name: &str) -> Result<Exit, CliError> {
    let skill = found(registry, name)?;
    let hash = warden_skills::tree_hash(&skill.path).map_err(CliError::failure)?;
    let store = open_trace()?;
    store
        .approve_skill(&skill.path, name, &hash, &warden_protocol::SessionId::new())
        .map_err(CliError::failure)?;
    println!(
        "approved {name} ({}), pinned to sha256 {hash}: a change to any of its files asks again",
        skill.path.display()
    );
    Ok(Exit::Success)
}
