//! One settings file's text into [`RawSettings`], with the file, line, column and key of any
//! error.

use std::path::Path;

use crate::error::{ConfigError, line_column};
use crate::raw::RawSettings;

/// Parse one settings file's text; `origin` names the file in errors.
///
/// Errors carry the file, line, column and dotted key: malformed TOML, unknown keys and values
/// of the wrong type all fail.
pub fn parse_str(text: &str, origin: &Path) -> Result<RawSettings, ConfigError> {
    let position = |span: Option<std::ops::Range<usize>>| {
        span.map(|span| line_column(text, span.start))
            .map_or((None, None), |(line, column)| (Some(line), Some(column)))
    };
    let deserializer = toml::Deserializer::parse(text).map_err(|err| {
        let (line, column) = position(err.span());
        ConfigError::Syntax {
            path: origin.to_owned(),
            line,
            column,
            // A repository's file: what it holds is shown, never obeyed by the terminal.
            message: warden_protocol::printable(err.message().trim_end()),
        }
    })?;
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let key = err.path().to_string();
        let inner = err.into_inner();
        let (line, column) = position(inner.span());
        ConfigError::Key {
            path: origin.to_owned(),
            line,
            column,
            key: if key == "." {
                "(top level)".to_owned()
            } else {
                warden_protocol::printable(&key)
            },
            message: warden_protocol::printable(inner.message().trim_end()),
        }
    })
}
