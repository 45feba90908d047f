//! Matching (SPEC K4): which skills a task calls for. A skill scores by its triggers (phrases
//! of the goal), its `file_globs` (files the session read or edited) and BM25 over its name and
//! description; the ranking says why each scored.

use std::collections::HashMap;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Serialize;

use crate::registry::{Registry, Skill};

/// What a trigger found in the goal adds.
const TRIGGER: f64 = 2.0;
/// What a file matching one of the skill's globs adds.
const FILE_GLOB: f64 = 1.5;
/// BM25's parameters, as usual.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Words too common to rank by.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "for", "from", "how", "i", "in", "is",
    "it", "me", "my", "of", "on", "or", "please", "so", "that", "the", "this", "to", "use", "when",
    "with", "you", "your", "can", "should", "will", "what", "we",
];

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
}

/// A BM25 index over each skill's name and description.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bm25 {
    /// For each term, the skills holding it and how often.
    postings: HashMap<String, Vec<(usize, u32)>>,
    lengths: Vec<u32>,
    average: f64,
}

impl Bm25 {
    pub(crate) fn new(skills: &[Skill]) -> Self {
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(skills.len());
        for (i, skill) in skills.iter().enumerate() {
            let mut counts: HashMap<String, u32> = HashMap::new();
            let text = format!("{} {}", skill.meta.name, skill.meta.description);
            let mut length = 0;
            for word in words(&text) {
                *counts.entry(word).or_default() += 1;
                length += 1;
            }
            lengths.push(length);
            for (word, n) in counts {
                postings.entry(word).or_default().push((i, n));
            }
        }
        #[allow(clippy::cast_precision_loss)]
        let average = if lengths.is_empty() {
            0.0
        } else {
            f64::from(lengths.iter().sum::<u32>()) / lengths.len() as f64
        };
        Self {
            postings,
            lengths,
            average,
        }
    }

    /// Each skill's score for `query`.
    #[allow(clippy::cast_precision_loss)]
    fn scores(&self, query: &str) -> HashMap<usize, f64> {
        let n = self.lengths.len() as f64;
        let mut seen = Vec::new();
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for term in words(query) {
            if seen.contains(&term) {
                continue;
            }
            let Some(list) = self.postings.get(&term) else {
                seen.push(term);
                continue;
            };
            let df = list.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(doc, tf) in list {
                let tf = f64::from(tf);
                let length = f64::from(self.lengths[doc]);
                let norm = K1 * (1.0 - B + B * length / self.average.max(1.0));
                *scores.entry(doc).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
            seen.push(term);
        }
        scores
    }
}

/// Every skill's file globs in one set, compiled on first use.
#[derive(Debug, Clone)]
pub(crate) struct Globs {
    set: GlobSet,
    /// The skill of each glob in the set.
    owner: Vec<usize>,
}

impl Globs {
    fn new(skills: &[Skill]) -> Self {
        let mut builder = GlobSetBuilder::new();
        let mut owner = Vec::new();
        for (i, skill) in skills.iter().enumerate() {
            for pattern in &skill.meta.file_globs {
                // A bare pattern matches at any depth, as in .gitignore.
                let pattern = if pattern.contains('/') {
                    pattern.trim_start_matches('/').to_owned()
                } else {
                    format!("**/{pattern}")
                };
                if let Ok(glob) = Glob::new(&pattern) {
                    builder.add(glob);
                    owner.push(i);
                }
            }
        }
        Self {
            set: builder.build().unwrap_or_else(|_| GlobSet::empty()),
            owner,
        }
    }
}

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
            let globs = self.globs.get_or_init(|| Globs::new(&self.skills));
            let mut hit: HashMap<usize, &str> = HashMap::new();
            for file in files {
                let file_path = std::path::Path::new(file.trim_start_matches("./"));
                for g in globs.set.matches(file_path) {
                    hit.entry(globs.owner[g]).or_insert(file.as_str());
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
