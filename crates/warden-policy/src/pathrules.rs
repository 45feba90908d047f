//! Every path rule compiled once, into one glob set per tool and list, so a check costs one set
//! match per path however many rules are loaded.

use std::path::Path;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::paths::{PatternError, Target};
use crate::rules::{Rule, RuleKind, RuleTool};

#[derive(Debug, Clone)]
struct Entry {
    tool: RuleTool,
    kind: RuleKind,
    set: GlobSet,
    /// The rule each glob of the set came from.
    owner: Vec<usize>,
}

/// The compiled path rules (`Read`, `Edit`, `Glob`, `Grep`).
#[derive(Debug, Clone, Default)]
pub(crate) struct PathRules {
    entries: Vec<Entry>,
}

impl PathRules {
    pub(crate) fn new(rules: &[Rule]) -> Result<Self, PatternError> {
        let mut entries = Vec::new();
        for tool in [
            RuleTool::Read,
            RuleTool::Edit,
            RuleTool::Glob,
            RuleTool::Grep,
        ] {
            for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
                let mut builder = GlobSetBuilder::new();
                let mut owner = Vec::new();
                for (index, rule) in rules
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.tool == tool && r.kind == kind)
                {
                    // A bare `Read` or `Edit` covers every path.
                    let any = [Glob::new("**").map_err(|source| PatternError::new("**", source))?];
                    for glob in rule.path_globs().unwrap_or(&any) {
                        builder.add(glob.clone());
                        owner.push(index);
                    }
                }
                if owner.is_empty() {
                    continue;
                }
                let set = builder
                    .build()
                    .map_err(|source| PatternError::new("path rules", source))?;
                entries.push(Entry {
                    tool: tool.clone(),
                    kind,
                    set,
                    owner,
                });
            }
        }
        Ok(Self { entries })
    }

    /// The strictest rule of `tools` that applies to `target`: a deny or ask matching either
    /// spelling (or, for a directory read, what is inside it), an allow matching both.
    pub(crate) fn strictest<'r>(
        &self,
        rules: &'r [Rule],
        tools: &[RuleTool],
        target: &Target,
    ) -> Option<&'r Rule> {
        for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
            for entry in self
                .entries
                .iter()
                .filter(|e| e.kind == kind && tools.contains(&e.tool))
            {
                let hit = if kind == RuleKind::Allow {
                    let real = entry.set.matches(&target.real);
                    entry
                        .set
                        .matches(&target.lexical)
                        .into_iter()
                        .find(|i| real.iter().any(|j| entry.owner[*j] == entry.owner[*i]))
                } else {
                    target.both().into_iter().find_map(|p| {
                        first(&entry.set, p).or_else(|| first(&entry.set, &p.join("…")))
                    })
                };
                if let Some(glob) = hit {
                    return Some(&rules[entry.owner[glob]]);
                }
            }
        }
        None
    }

    /// Whether an allow rule of `tool` covers `target` (both spellings).
    pub(crate) fn allows(&self, rules: &[Rule], tool: &RuleTool, target: &Target) -> bool {
        let _ = rules;
        self.entries
            .iter()
            .filter(|e| e.kind == RuleKind::Allow && e.tool == *tool)
            .any(|e| {
                let real = e.set.matches(&target.real);
                e.set
                    .matches(&target.lexical)
                    .iter()
                    .any(|i| real.iter().any(|j| e.owner[*j] == e.owner[*i]))
            })
    }
}

fn first(set: &GlobSet, path: &Path) -> Option<usize> {
    set.matches(path).first().copied()
}
