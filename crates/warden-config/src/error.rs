//! The one error type of this crate.

use std::io;
use std::path::{Path, PathBuf};

/// Why settings could not be loaded. Every message names the file (or the command line), and
/// where known the line, column and dotted key at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The working directory does not exist or cannot be resolved.
    #[error("working directory {}: {source}", path.display())]
    WorkingDirectory {
        /// The directory as given.
        path: PathBuf,
        /// Why canonicalising it failed.
        source: io::Error,
    },
    /// A settings file exists but cannot be read.
    #[error("{}: cannot read settings: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A settings file cannot be written (remembering an approval).
    #[error("{}: cannot write settings: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A settings file is not valid TOML.
    #[error("{}: {message}", location(path, *line, *column))]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line, when the parser reported a position.
        line: Option<usize>,
        /// 1-based column in characters, when the parser reported a position.
        column: Option<usize>,
        /// What the parser expected.
        message: String,
    },
    /// A key is unknown or its value has the wrong type.
    #[error("{}: {key}: {message}", location(path, *line, *column))]
    Key {
        /// The file.
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column in characters, when known.
        column: Option<usize>,
        /// Dotted key path, e.g. `sandbox.limits.timeout_seconds`.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// `[org]` appears outside the managed settings file.
    #[error(
        "{origin}: {key}: the [org] table may only be set in the managed settings file ({})",
        managed.display()
    )]
    OrgOutsideManaged {
        /// The file (with line when found) or `command line`.
        origin: String,
        /// The offending key, `org`.
        key: String,
        /// Where the managed file is expected.
        managed: PathBuf,
    },
    /// A value is well-typed but not allowed (a zero limit, shares not summing to 100, ...).
    #[error("{origin}: {key}: {message}")]
    Value {
        /// The highest-priority file (or `command line`) that set the key.
        origin: String,
        /// Dotted key path.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// The project root is `/`, the home directory or an ancestor of it: all of it would be
    /// the writable workspace.
    #[error(
        "{}: the project root is the home directory, `/` or an ancestor of the home directory, \
         and all of it would be the writable workspace; run warden in a project (a directory \
         with .git or .warden), or pass --allow-home-workspace if that is really meant",
        root.display()
    )]
    HomeWorkspace {
        /// The project root found.
        root: PathBuf,
    },
    /// There is nowhere to keep warden's state.
    #[error("no data directory: none of WARDEN_HOME, XDG_DATA_HOME or HOME is set")]
    NoDataDir,
    /// A permission mode name not in `plan`, `default`, `accept-edits`, `auto`, `bypass`.
    #[error("unknown permission mode `{0}` (expected plan, default, accept-edits, auto or bypass)")]
    UnknownPermissionMode(String),
}

/// `path:line:column`, or just as much of it as is known.
pub(crate) fn location(path: &Path, line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!("{}:{line}:{column}", path.display()),
        (Some(line), None) => format!("{}:{line}", path.display()),
        (None, _) => path.display().to_string(),
    }
}

/// 1-based line and character column of byte `offset` in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_from_one_in_characters() {
        let text = "a = 1\nbé = x\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        assert_eq!(line_column(text, text.find('x').unwrap_or(0)), (2, 6));
        assert_eq!(line_column(text, 999), (3, 1));
    }

    #[test]
    fn location_shows_what_is_known() {
        let path = Path::new("/p/s.toml");
        assert_eq!(location(path, Some(3), Some(1)), "/p/s.toml:3:1");
        assert_eq!(location(path, None, None), "/p/s.toml");
    }
}
