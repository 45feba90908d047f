//! Discovery (SPEC K3): roots in precedence order, `<root>/<name>/SKILL.md` in each. An invalid
//! skill is reported with its file, line and reason and skipped; a name found in two roots is
//! the higher root's, and the lower one is reported as shadowed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::SkillError;
use crate::frontmatter::{self, Frontmatter};
use crate::name::SkillName;
use crate::search::{Bm25, Globs};

/// The largest `SKILL.md` read.
const MAX_SKILL_FILE: u64 = 1024 * 1024;

/// A directory of skills.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Root {
    pub path: PathBuf,
    /// What it is, for reports: `project`, `user`, `organisation`, `settings`.
    pub label: String,
    /// Its skills load without a person's approval.
    pub trusted: bool,
}

impl Root {
    pub fn new(path: impl Into<PathBuf>, label: &str, trusted: bool) -> Self {
        Self {
            path: path.into(),
            label: label.to_owned(),
            trusted,
        }
    }
}

/// The standard roots, highest precedence first: the project's `.warden/skills`,
/// `.agents/skills` and `.claude/skills` (a repository's own, not trusted until approved), then
/// `extra` (from the settings, relative to the project root), then the user's `skills` in
/// `user_dir` (`~/.config/warden`) and the organisation's `org` (`/etc/warden/skills`), both
/// trusted. `trusted_extra` lists the extra roots to trust.
pub fn standard_roots(
    project_root: &Path,
    user_dir: Option<&Path>,
    org: &Path,
    extra: &[String],
    trusted_extra: &[String],
) -> Vec<Root> {
    let mut roots = vec![
        Root::new(project_root.join(".warden/skills"), "project", false),
        Root::new(project_root.join(".agents/skills"), "project", false),
        Root::new(project_root.join(".claude/skills"), "project", false),
    ];
    for entry in extra {
        let path = project_root.join(entry);
        let trusted = trusted_extra.iter().any(|t| project_root.join(t) == path);
        roots.push(Root::new(path, "settings", trusted));
    }
    if let Some(user) = user_dir {
        roots.push(Root::new(user.join("skills"), "user", true));
    }
    roots.push(Root::new(org, "organisation", true));
    roots
}

/// A problem found in a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub file: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    pub reason: String,
    /// `error`: the skill is skipped; `warning`: it loads, but something is off.
    pub severity: Severity,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

/// One discovered skill.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    #[serde(flatten)]
    pub meta: Frontmatter,
    /// The skill's directory.
    pub path: PathBuf,
    /// Its root's label (`project`, `user`, …) and directory.
    pub root: String,
    pub root_path: PathBuf,
    pub trusted: bool,
    /// SHA-256 of `SKILL.md`, as read at discovery.
    pub hash: String,
    #[serde(skip)]
    pub(crate) body_line: usize,
}

impl Skill {
    pub fn name(&self) -> &SkillName {
        &self.meta.name
    }

    pub fn file(&self) -> PathBuf {
        self.path.join("SKILL.md")
    }
}

/// Every skill found, what was wrong, and a search index over them.
#[derive(Debug, Clone)]
pub struct Registry {
    pub roots: Vec<Root>,
    /// Skills by precedence: the first root's first, each root's by name.
    pub skills: Vec<Skill>,
    pub problems: Vec<Problem>,
    pub(crate) bm25: Bm25,
    pub(crate) globs: std::sync::OnceLock<Globs>,
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Reads one skill directory: the skill, or the problems that keep it out.
pub(crate) fn read_skill(dir: &Path, root: &Root) -> Result<Skill, Vec<Problem>> {
    let file = dir.join("SKILL.md");
    let error = |line, reason: String| Problem {
        file: file.clone(),
        line,
        reason,
        severity: Severity::Error,
    };
    let meta = std::fs::metadata(&file).map_err(|e| vec![error(None, e.to_string())])?;
    if meta.len() > MAX_SKILL_FILE {
        return Err(vec![error(
            None,
            format!(
                "SKILL.md has {} bytes; at most {MAX_SKILL_FILE}",
                meta.len()
            ),
        )]);
    }
    let bytes = std::fs::read(&file).map_err(|e| vec![error(None, e.to_string())])?;
    let text = String::from_utf8(bytes.clone())
        .map_err(|e| vec![error(None, format!("SKILL.md is not UTF-8: {e}"))])?;
    let (fm, body_line) = frontmatter::parse(&text).map_err(|flaws| {
        flaws
            .into_iter()
            .map(|f| error(f.line, f.reason))
            .collect::<Vec<_>>()
    })?;
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if fm.name.as_str() != dir_name {
        let line = text
            .lines()
            .position(|l| l.starts_with("name:"))
            .map(|l| l + 1);
        return Err(vec![error(
            line,
            format!(
                "the name {:?} is not the directory's name {dir_name:?}; they must be the same",
                fm.name.as_str()
            ),
        )]);
    }
    Ok(Skill {
        meta: fm,
        path: dir.to_path_buf(),
        root: root.label.clone(),
        root_path: root.path.clone(),
        trusted: root.trusted,
        hash: hex(&Sha256::digest(&bytes)),
        body_line,
    })
}

/// Finds the skills of `roots`, highest precedence first.
pub fn discover(roots: &[Root]) -> Registry {
    let mut skills: Vec<Skill> = Vec::new();
    let mut problems = Vec::new();
    let mut taken: HashMap<String, usize> = HashMap::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root.path) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink()))
            .map(|e| e.path())
            .filter(|p| p.join("SKILL.md").is_file())
            .collect();
        dirs.sort();
        for dir in dirs {
            match read_skill(&dir, root) {
                Ok(skill) => {
                    let name = skill.meta.name.as_str().to_owned();
                    if let Some(&winner) = taken.get(&name) {
                        let winner: &Skill = &skills[winner];
                        problems.push(Problem {
                            file: skill.file(),
                            line: None,
                            reason: format!(
                                "shadowed: the skill {name:?} of the {} root ({}) is used instead",
                                winner.root,
                                winner.path.display()
                            ),
                            severity: Severity::Warning,
                        });
                        continue;
                    }
                    for (line, field) in &skill.meta.unknown {
                        problems.push(Problem {
                            file: skill.file(),
                            line: Some(*line),
                            reason: format!("unknown field `{field}`, ignored"),
                            severity: Severity::Warning,
                        });
                    }
                    taken.insert(name, skills.len());
                    skills.push(skill);
                }
                Err(found) => problems.extend(found),
            }
        }
    }
    let bm25 = Bm25::new(
        skills
            .iter()
            .map(|s| format!("{} {}", s.meta.name, s.meta.description)),
    );
    Registry {
        roots: roots.to_vec(),
        skills,
        problems,
        bm25,
        globs: std::sync::OnceLock::new(),
    }
}

impl Registry {
    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.meta.name.as_str() == name)
    }

    /// The skill called `name`, or an error listing the ones there are.
    fn find(&self, name: &str) -> Result<&Skill, SkillError> {
        self.get(name).ok_or_else(|| SkillError::Unknown {
            name: name.to_owned(),
            known: self
                .skills
                .iter()
                .map(|s| s.meta.name.to_string())
                .collect(),
        })
    }

    /// The skill, read again: its metadata, its instructions and its hash as they are now.
    pub fn load(&self, name: &str) -> Result<Loaded, SkillError> {
        let found = self.find(name)?;
        let root = Root {
            path: found.root_path.clone(),
            label: found.root.clone(),
            trusted: found.trusted,
        };
        let skill = read_skill(&found.path, &root).map_err(|problems| SkillError::Invalid {
            name: name.to_owned(),
            reasons: problems.into_iter().map(|p| p.reason).collect(),
        })?;
        let text = std::fs::read_to_string(skill.file()).map_err(|e| SkillError::Io {
            path: skill.file(),
            error: e.to_string(),
        })?;
        let body = frontmatter::body(&text, skill.body_line);
        Ok(Loaded { skill, body })
    }

    /// A file of the skill (`references/api.md`): inside its directory, text, at most 256 KiB.
    pub fn read_file(&self, name: &str, relative: &str) -> Result<String, SkillError> {
        let skill = self.find(name)?;
        let outside = || SkillError::Outside {
            name: name.to_owned(),
            path: relative.to_owned(),
        };
        let rel = Path::new(relative);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(outside());
        }
        let io = |path: &Path, e: std::io::Error| SkillError::Io {
            path: path.to_path_buf(),
            error: e.to_string(),
        };
        let base = skill.path.canonicalize().map_err(|e| io(&skill.path, e))?;
        let wanted = skill.path.join(rel);
        let resolved = wanted.canonicalize().map_err(|e| io(&wanted, e))?;
        if !resolved.starts_with(&base) {
            return Err(outside());
        }
        let bytes = std::fs::read(&resolved).map_err(|e| io(&resolved, e))?;
        if bytes.len() > 256 * 1024 {
            return Err(SkillError::Io {
                path: resolved,
                error: format!("{} bytes; at most 262144 are read", bytes.len()),
            });
        }
        String::from_utf8(bytes).map_err(|_| SkillError::Io {
            path: resolved,
            error: "not a text file".to_owned(),
        })
    }
}

/// A skill read for use.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub skill: Skill,
    /// The instructions: `SKILL.md` after its frontmatter.
    pub body: String,
}

/// SHA-256 over every file of a skill's directory (paths and contents, in path order; a
/// symbolic link by its target): what a person approves, so that any change asks again.
pub fn tree_hash(dir: &Path) -> Result<String, SkillError> {
    let io = |path: &Path, e: std::io::Error| SkillError::Io {
        path: path.to_path_buf(),
        error: e.to_string(),
    };
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).map_err(|e| io(&at, e))? {
            let entry = entry.map_err(|e| io(&at, e))?;
            let kind = entry.file_type().map_err(|e| io(&entry.path(), e))?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else {
                files.push((entry.path(), kind.is_symlink()));
            }
        }
    }
    files.sort();
    let mut hash = Sha256::new();
    let mut total = 0u64;
    for (path, link) in files {
        let rel = path.strip_prefix(dir).unwrap_or(&path);
        hash.update(rel.to_string_lossy().as_bytes());
        hash.update([0]);
        let content = if link {
            std::fs::read_link(&path)
                .map_err(|e| io(&path, e))?
                .to_string_lossy()
                .into_owned()
                .into_bytes()
        } else {
            std::fs::read(&path).map_err(|e| io(&path, e))?
        };
        total += content.len() as u64;
        if total > 64 * 1024 * 1024 {
            return Err(SkillError::Io {
                path: dir.to_path_buf(),
                error: "the skill holds more than 64 MiB".to_owned(),
            });
        }
        hash.update((content.len() as u64).to_le_bytes());
        hash.update(&content);
        // The executable bit is part of what was approved.
        #[cfg(unix)]
        if !link {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path)
                .map_err(|e| io(&path, e))?
                .permissions()
                .mode();
            hash.update([u8::from(mode & 0o111 != 0)]);
        }
    }
    Ok(hex(&hash.finalize()))
}
