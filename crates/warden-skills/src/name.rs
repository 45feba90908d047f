//! A skill's name, checked: lowercase letters, digits and single hyphens, at most 64 characters,
//! neither starting nor ending with a hyphen (the Agent Skills format).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// The most characters a name may have.
pub const MAX_NAME: usize = 64;

/// A valid skill name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SkillName(String);

/// Why a string is not a skill name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a skill name: {reason}")]
pub struct NameError {
    pub name: String,
    pub reason: &'static str,
}

impl FromStr for SkillName {
    type Err = NameError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let err = |reason| {
            Err(NameError {
                name: name.to_owned(),
                reason,
            })
        };
        if name.is_empty() {
            return err("it is empty");
        }
        if name.chars().count() > MAX_NAME {
            return err("longer than 64 characters");
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return err("only lowercase letters, digits and hyphens are allowed");
        }
        if name.starts_with('-') || name.ends_with('-') {
            return err("it may not start or end with a hyphen");
        }
        if name.contains("--") {
            return err("it may not hold two hyphens in a row");
        }
        Ok(Self(name.to_owned()))
    }
}

impl SkillName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SkillName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_format() {
        for good in ["pdf", "git-release", "a1", "x".repeat(64).as_str()] {
            assert!(good.parse::<SkillName>().is_ok(), "{good}");
        }
        for bad in [
            "",
            "PDF",
            "git_release",
            "-a",
            "a-",
            "a--b",
            "a b",
            "é",
            &"x".repeat(65),
        ] {
            assert!(bad.parse::<SkillName>().is_err(), "{bad}");
        }
    }
}
