//! Checked identifiers.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An identifier failed its check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error(
        "invalid tool name {0:?}: expected 1-64 ASCII letters, digits, '_', '-' or '.', starting with a letter"
    )]
    ToolName(String),
    #[error("invalid session id {0:?}: expected 1-64 ASCII letters, digits or '-'")]
    SessionId(String),
}

/// The id of one session. New ids are `UUIDv7`, so they sort by creation time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    /// A fresh, time-ordered id.
    pub fn new() -> Self {
        Self(uuid::Uuid::now_v7().to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for SessionId {
    fn default() -> Self {
        Self::new()
    }
}

impl FromStr for SessionId {
    type Err = IdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(IdError::SessionId(s.to_owned()))
        }
    }
}

impl TryFrom<String> for SessionId {
    type Error = IdError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> Self {
        id.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The name of a registered tool (`readFile`, `grep`, an MCP tool's name).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ToolName(String);

impl ToolName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for ToolName {
    type Err = IdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut bytes = s.bytes();
        let ok = s.len() <= 64
            && bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
            && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(IdError::ToolName(s.to_owned()))
        }
    }
}

impl TryFrom<String> for ToolName {
    type Error = IdError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<ToolName> for String {
    fn from(name: ToolName) -> Self {
        name.0
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_checked() {
        assert!("readFile".parse::<ToolName>().is_ok());
        assert!("mcp.github_search-2".parse::<ToolName>().is_ok());
        for bad in ["", "1abc", "a b", "a/b", &"x".repeat(65)] {
            assert!(bad.parse::<ToolName>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn session_ids_are_time_ordered_and_round_trip() {
        let a = SessionId::new();
        let b = SessionId::new();
        assert!(a < b);
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<SessionId>(&json).unwrap(), a);
        assert!(serde_json::from_str::<SessionId>("\"../etc\"").is_err());
    }
}
