//! The engine's errors: a bad rule or pattern in the settings.

use warden_config::Settings;

use crate::paths::PatternError;
use crate::rules::{RuleError, RuleKind};

/// The settings hold something the engine cannot use. Never ignored: the engine does not start.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{place}permissions.{list}: {source}")]
    Rule {
        place: String,
        list: &'static str,
        source: RuleError,
    },
    #[error("{0}")]
    Pattern(PatternError),
}

impl PolicyError {
    /// A rule error, naming the file and line that hold the rule when they can be found.
    pub(crate) fn rule(settings: &Settings, kind: RuleKind, source: RuleError) -> Self {
        let place = settings
            .sources
            .iter()
            .find_map(|s| {
                let text = std::fs::read_to_string(&s.path).ok()?;
                let line = text.lines().position(|l| l.contains(&source.rule))?;
                Some(format!("{}:{}: ", s.path.display(), line + 1))
            })
            .unwrap_or_default();
        Self::Rule {
            place,
            list: kind.as_str(),
            source,
        }
    }
}
