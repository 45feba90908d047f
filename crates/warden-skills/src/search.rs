//! The search structures matching ranks skills with, knowing nothing of skills: BM25 over
//! documents, and glob sets whose globs each belong to an owner.

use std::collections::HashMap;

use globset::{Glob, GlobSet, GlobSetBuilder};

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

/// A BM25 index over documents (each skill's name and description).
#[derive(Debug, Clone, Default)]
pub(crate) struct Bm25 {
    /// For each term, the skills holding it and how often.
    postings: HashMap<String, Vec<(usize, u32)>>,
    lengths: Vec<u32>,
    average: f64,
}

impl Bm25 {
    /// The index of `documents`, each known by its place in the list.
    pub(crate) fn new(documents: impl IntoIterator<Item = String>) -> Self {
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        let mut lengths = Vec::new();
        for (i, text) in documents.into_iter().enumerate() {
            let mut counts: HashMap<String, u32> = HashMap::new();
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

    /// Each document's score for `query`.
    #[allow(clippy::cast_precision_loss)]
    pub(crate) fn scores(&self, query: &str) -> HashMap<usize, f64> {
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

/// Every skill's file globs in one set (compiled on first use).
#[derive(Debug, Clone)]
pub(crate) struct Globs {
    set: GlobSet,
    /// The owner (a skill's place) of each glob in the set.
    owner: Vec<usize>,
}

impl Globs {
    /// The globs of each owner, in order.
    pub(crate) fn new<'a>(owners: impl IntoIterator<Item = &'a [String]>) -> Self {
        let mut builder = GlobSetBuilder::new();
        let mut owner = Vec::new();
        for (i, patterns) in owners.into_iter().enumerate() {
            for pattern in patterns {
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

    /// The owners of the globs `path` matches (an owner once per glob).
    pub(crate) fn owners(&self, path: &std::path::Path) -> impl Iterator<Item = usize> + '_ {
        self.set.matches(path).into_iter().map(|g| self.owner[g])
    }
}
