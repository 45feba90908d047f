//! A rule's pattern of an MCP tool's arguments (`mcp__gh__search(...)`), matched on the
//! arguments' top-level fields, not on whatever text a nested value holds.
//!
//! Two spellings:
//! - fields: `repo:warden` or `owner:me, repo:war*`: each named field at the top level, its
//!   value (a string as it is, anything else as its JSON) matched by the wildcard;
//! - JSON text: `*"repo":"warden"*`, matched on the arguments' JSON with every nested object
//!   and array written as a string, so that `{"x": {"repo": "warden"}}` (or a string holding
//!   `"repo":"warden"`) cannot pass for a top-level `repo`. A deny or ask rule also matches the
//!   plain JSON text: matching more only refuses more.

use serde_json::Value;
use warden_protocol::wildcard;

/// Whether `pattern` covers the arguments whose JSON text is `target`; `broad` (deny and ask
/// rules) also lets the plain JSON text match.
pub(crate) fn covers(pattern: &str, target: &str, broad: bool) -> bool {
    let arguments = serde_json::from_str::<Value>(target).ok();
    if let Some(fields) = fields(pattern) {
        return arguments.as_ref().is_some_and(|args| {
            fields.iter().all(|(name, want)| {
                args.get(name)
                    .is_some_and(|value| wildcard(want, &value_text(value)))
            })
        });
    }
    let top_level = arguments.as_ref().map(top_level_text);
    top_level.is_some_and(|text| wildcard(pattern, &text)) || (broad && wildcard(pattern, target))
}

/// `name:pattern` pairs, when the whole pattern is written so.
fn fields(pattern: &str) -> Option<Vec<(&str, &str)>> {
    pattern
        .split(',')
        .map(|part| {
            let (name, want) = part.trim().split_once(':')?;
            let mut chars = name.chars();
            let first = chars.next()?;
            let named = (first.is_ascii_alphabetic() || first == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            named.then_some((name, want))
        })
        .collect()
}

fn value_text(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

/// The arguments' JSON with every value below the top level written as a string.
fn top_level_text(arguments: &Value) -> String {
    let Value::Object(fields) = arguments else {
        return arguments.to_string();
    };
    let flat: serde_json::Map<String, Value> = fields
        .iter()
        .map(|(name, value)| {
            let value = match value {
                Value::Object(_) | Value::Array(_) => Value::String(value.to_string()),
                other => other.clone(),
            };
            (name.clone(), value)
        })
        .collect();
    Value::Object(flat).to_string()
}

#[cfg(test)]
mod tests {
    use super::covers;

    #[test]
    fn fields_are_matched_at_the_top_level_only() {
        let pattern = "owner:me, repo:war*";
        assert!(covers(
            pattern,
            r#"{"owner":"me","repo":"warden","q":1}"#,
            false
        ));
        assert!(!covers(pattern, r#"{"owner":"me","repo":"infra"}"#, false));
        assert!(!covers(pattern, r#"{"repo":"warden"}"#, false));
        // Nested, or in another field's text: not the field.
        let nested = r#"{"x":{"owner":"me","repo":"warden"},"owner":"you","repo":"infra"}"#;
        assert!(!covers(pattern, nested, false));
        assert!(covers("n:3", r#"{"n":3}"#, false));
    }

    #[test]
    fn a_json_pattern_cannot_be_met_by_a_nested_value_when_it_allows() {
        let pattern = r#"*"repo":"warden"*"#;
        assert!(covers(pattern, r#"{"q":"x","repo":"warden"}"#, false));
        let nested = r#"{"extra":{"repo":"warden"},"repo":"secret-infra"}"#;
        assert!(!covers(pattern, nested, false));
        let quoted = r#"{"q":"\"repo\":\"warden\"","repo":"secret-infra"}"#;
        assert!(!covers(pattern, quoted, false));
        // Deny and ask match the plain text as well: more is refused, never less.
        assert!(covers(pattern, nested, true));
    }
}
