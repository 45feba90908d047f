//! Counting tokens: exactly with the model's own encoding where warden has it (`OpenAI`
//! models, through `tiktoken-rs`), else an estimate of four bytes a token, calibrated against
//! the provider's reported usage as a session goes. Counts of long texts are cached by content.

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher as _};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tiktoken_rs::CoreBPE;

/// Texts shorter than this are counted again rather than looked up.
const CACHE_FROM: usize = 256;

/// Counts by encoding and content hash, for the whole process: an item is counted once,
/// however many turns see it.
static COUNTED: OnceLock<Mutex<HashMap<(u8, u64), u64>>> = OnceLock::new();

/// How tokens are counted for one model.
#[derive(Clone)]
pub struct Tokens {
    /// The encoding, and its number in the cache.
    bpe: Option<(Arc<CoreBPE>, u8)>,
    /// Real tokens per estimated token (estimates only).
    calibration: f64,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("exact", &self.bpe.is_some())
            .field("calibration", &self.calibration)
            .finish_non_exhaustive()
    }
}

fn o200k() -> Option<Arc<CoreBPE>> {
    static BPE: OnceLock<Option<Arc<CoreBPE>>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().ok().map(Arc::new))
        .clone()
}

fn cl100k() -> Option<Arc<CoreBPE>> {
    static BPE: OnceLock<Option<Arc<CoreBPE>>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().ok().map(Arc::new))
        .clone()
}

impl Tokens {
    /// Estimates only, with `calibration` (1.0 for none).
    pub fn estimate(calibration: f64) -> Self {
        Self {
            bpe: None,
            calibration: if calibration > 0.0 { calibration } else { 1.0 },
        }
    }

    /// The counter for `model` (the id sent to the provider): exact for `OpenAI`'s families,
    /// estimated, with `calibration`, for the rest.
    pub fn for_model(model: &str, calibration: f64) -> Self {
        let id = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let o200k_family = [
            "gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt",
        ];
        let bpe = if o200k_family.iter().any(|p| id.starts_with(p)) {
            o200k().map(|b| (b, 1))
        } else if id.starts_with("gpt-4") || id.starts_with("gpt-3.5") {
            cl100k().map(|b| (b, 2))
        } else {
            None
        };
        Self {
            bpe,
            ..Self::estimate(calibration)
        }
    }

    /// Whether counts are the model's own.
    pub fn exact(&self) -> bool {
        self.bpe.is_some()
    }

    pub fn calibration(&self) -> f64 {
        self.calibration
    }

    /// Tokens of `text`.
    pub fn count(&self, text: &str) -> u64 {
        let Some((bpe, encoding)) = &self.bpe else {
            return estimate(text, self.calibration);
        };
        if text.len() < CACHE_FROM {
            return bpe.encode_ordinary(text).len() as u64;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let key = (*encoding, hasher.finish());
        let cache = COUNTED.get_or_init(Mutex::default);
        let cached = cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .copied();
        if let Some(count) = cached {
            return count;
        }
        let count = bpe.encode_ordinary(text).len() as u64;
        cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, count);
        count
    }
}

/// The calibration after a request estimated at `estimated` tokens (with `previous`, 0 for
/// none) that the provider counted as `reported`: a running average of what the provider says,
/// each report clamped to ×0.5–×2 (a server that counts differently, or not at all, teaches
/// nothing).
pub fn calibrate(previous: f64, estimated: u64, reported: u64) -> f64 {
    if estimated == 0 || reported == 0 {
        return previous;
    }
    let used = if previous > 0.0 { previous } else { 1.0 };
    #[allow(clippy::cast_precision_loss)]
    let seen = (reported as f64 / (estimated as f64 / used)).clamp(0.5, 2.0);
    if previous > 0.0 {
        0.5 * previous + 0.5 * seen
    } else {
        seen
    }
}

/// Estimated tokens of a text: four bytes a token, times the calibration.
pub fn estimate(text: &str, calibration: f64) -> u64 {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let tokens = ((text.len() as f64 / 4.0) * calibration).ceil() as u64;
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_models_are_counted_exactly_and_others_estimated() {
        let exact = Tokens::for_model("openai/gpt-4o-mini", 1.0);
        assert!(exact.exact());
        assert_eq!(exact.count("Hello world"), 2);
        let long = "fn main() { println!(\"hello\"); }\n".repeat(20);
        assert_eq!(exact.count(&long), exact.count(&long), "cached");
        assert!(Tokens::for_model("gpt-4-turbo", 1.0).exact());
        let other = Tokens::for_model("claude-sonnet-4-5", 1.5);
        assert!(!other.exact());
        assert_eq!(other.count("abcdefgh"), 3);
    }
}

#[cfg(test)]
mod calibration {
    use super::*;

    /// Texts of one kind, cut in pieces of a few kilobytes.
    fn pieces(text: &str) -> Vec<String> {
        let lines: Vec<&str> = text.lines().collect();
        lines.chunks(60).map(|c| c.join("\n")).collect()
    }

    #[test]
    fn calibrated_estimates_come_within_ten_percent_of_the_real_count() {
        let exact = Tokens::for_model("gpt-4o", 1.0);
        for (kind, corpus) in [
            ("code", include_str!("builder.rs")),
            ("prose", include_str!("../../../docs/security-model.md")),
            ("json", include_str!("../tests/fixtures/corpus/dev.json")),
        ] {
            let all = pieces(corpus);
            let (learn, check) = all.split_at(all.len() / 2);
            // A session whose provider reports the real count of each request.
            let mut calibration = 0.0;
            for piece in learn.iter().take(6) {
                let estimated = Tokens::estimate(calibration).count(piece);
                calibration = calibrate(calibration, estimated, exact.count(piece));
            }
            // Then each request is estimated before it is sent, and corrected by its report.
            let (mut est, mut real) = (0u64, 0u64);
            for piece in check {
                let estimated = Tokens::estimate(calibration).count(piece);
                let reported = exact.count(piece);
                est += estimated;
                real += reported;
                calibration = calibrate(calibration, estimated, reported);
            }
            #[allow(clippy::cast_precision_loss)]
            let error = (est as f64 - real as f64).abs() / real as f64;
            assert!(
                error <= 0.10,
                "{kind}: estimate {est}, real {real}, error {error:.3}"
            );
        }
    }
}
