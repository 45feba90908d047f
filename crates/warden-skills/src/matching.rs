//! Matching (SPEC K4): which skills a task calls for. A skill scores by its triggers (phrases
//! of the goal), its `file_globs` (files the session read or edited) and BM25 over its name and
//! description; the ranking says why each scored.

use std::collections::HashMap;

use serde::Serialize;

use crate::registry::Registry;
use crate::search::Globs;

/// What a trigger found in the goal adds.
const TRIGGER: f64 = 2.0;
/// What a file matching one of the skill's globs adds.
const FILE_GLOB: f64 = 1.5;
/// One skill's place in a ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ranked {
    pub name: String,
    pub score: f64,
    /// Why: `trigger "release"`, `file CHANGELOG.md matches CHANGELOG.md`, `bm25 1.42`.
    pub reasons: Vec<String>,
    /// One of the skill's own `triggers` or `file_globs` matched, not only words of its
    /// description.
    pub declared: bool,
    #[serde(skip)]
    pub index: usize,
}

/// Whether `phrase` stands in `text` as whole words (both lowercased).
fn contains_phrase(text: &str, phrase: &str) -> bool {
    if phrase.is_empty() {
        return false;
    }
    let mut from = 0;
    while let Some(at) = text[from..].find(phrase) {
        let start = from + at;
        let end = start + phrase.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        if !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric) {
            return true;
        }
        from = start + phrase.len().max(1);
        while !text.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

impl Registry {
    /// The skills `goal` and the files of the working set (`files`, relative to the project
    /// root) call for, best first; only those that scored.
    pub fn rank(&self, goal: &str, files: &[String]) -> Vec<Ranked> {
        let goal_lower = goal.to_lowercase();
        let mut ranked: HashMap<usize, Ranked> = HashMap::new();
        let entry = |ranked: &mut HashMap<usize, Ranked>, i: usize| {
            ranked.entry(i).or_insert_with(|| Ranked {
                name: self.skills[i].meta.name.to_string(),
                score: 0.0,
                reasons: Vec::new(),
                declared: false,
                index: i,
            });
        };
        for (i, skill) in self.skills.iter().enumerate() {
            for trigger in &skill.meta.triggers {
                if contains_phrase(&goal_lower, &trigger.to_lowercase()) {
                    entry(&mut ranked, i);
                    if let Some(r) = ranked.get_mut(&i) {
                        r.score += TRIGGER;
                        r.declared = true;
                        r.reasons.push(format!("trigger {trigger:?}"));
                    }
                }
            }
        }
        if !files.is_empty() && self.skills.iter().any(|s| !s.meta.file_globs.is_empty()) {
            let globs = self.globs.get_or_init(|| {
                Globs::new(self.skills.iter().map(|s| s.meta.file_globs.as_slice()))
            });
            let mut hit: HashMap<usize, &str> = HashMap::new();
            for file in files {
                let file_path = std::path::Path::new(file.trim_start_matches("./"));
                for owner in globs.owners(file_path) {
                    hit.entry(owner).or_insert(file.as_str());
                }
            }
            for (i, file) in hit {
                entry(&mut ranked, i);
                if let Some(r) = ranked.get_mut(&i) {
                    r.score += FILE_GLOB;
                    r.reasons
                        .push(format!("file {file} matches its file_globs"));
                }
            }
        }
        for (i, score) in self.bm25.scores(goal) {
            entry(&mut ranked, i);
            if let Some(r) = ranked.get_mut(&i) {
                r.score += score;
                r.reasons.push(format!("bm25 {score:.2}"));
            }
        }
        let mut list: Vec<Ranked> = ranked.into_values().filter(|r| r.score > 0.0).collect();
        list.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.name.cmp(&b.name))
        });
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_are_whole_words() {
        assert!(contains_phrase("please tag a release now", "release"));
        assert!(contains_phrase("release", "release"));
        assert!(!contains_phrase("prerelease notes", "release"));
        assert!(contains_phrase("a prerelease and a release", "release"));
        assert!(!contains_phrase("anything", ""));
    }
}
