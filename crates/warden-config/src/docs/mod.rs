//! Generated artefacts: the JSON schema of a settings file and the settings reference, both
//! derived from the [`RawSettings`] types and their doc comments.

mod markdown;

use serde_json::Value;

use crate::raw::RawSettings;

pub use markdown::{settings_markdown, trust_markdown};

/// The JSON schema of one settings file ([`RawSettings`]), object keys sorted so the output
/// does not depend on `serde_json` features enabled elsewhere in the build.
pub fn json_schema() -> Value {
    sorted(schemars::schema_for!(RawSettings).to_value())
}

fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Follow a `$ref` into `$defs`, and unwrap `Option`'s `anyOf [T, null]`.
pub(crate) fn deref<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    if let Some(variants) = schema.get("anyOf").and_then(Value::as_array) {
        let mut non_null = variants
            .iter()
            .filter(|v| v.get("type") != Some(&"null".into()));
        if let (Some(only), None) = (non_null.next(), non_null.next()) {
            return deref(root, only);
        }
    }
    let target = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix("#/$defs/"))
        .and_then(|name| root.get("$defs")?.get(name));
    match target {
        Some(target) => deref(root, target),
        None => schema,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn docs_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs")
    }

    #[test]
    fn generated_schema_and_reference_are_up_to_date() {
        let schema = serde_json::to_string_pretty(&json_schema()).unwrap() + "\n";
        let bless = std::env::var_os("WARDEN_BLESS").is_some();
        for (name, generated) in [
            ("settings.schema.json", schema),
            ("settings.md", settings_markdown()),
        ] {
            let path = docs_dir().join(name);
            if bless {
                std::fs::write(&path, &generated).unwrap();
                continue;
            }
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                committed == generated,
                "docs/{name} is stale: run `WARDEN_BLESS=1 cargo test -p warden-config` \
                 to regenerate it"
            );
        }
        // The table of docs/security-model.md, between its markers.
        let path = docs_dir().join("security-model.md");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let (start, end) = ("<!-- trust-table:start -->\n", "<!-- trust-table:end -->");
        let (Some(a), Some(b)) = (text.find(start), text.find(end)) else {
            panic!("docs/security-model.md has no {start} … {end} block");
        };
        let block = &text[a + start.len()..b];
        let generated = trust_markdown();
        if bless {
            let new = format!("{}{generated}{}", &text[..a + start.len()], &text[b..]);
            std::fs::write(&path, new).unwrap();
        } else {
            assert!(
                block == generated,
                "the trust table of docs/security-model.md is stale: run \
                 `WARDEN_BLESS=1 cargo test -p warden-config` to regenerate it"
            );
        }
    }

    /// Doc comments are the reference: every key must explain itself and its default.
    #[test]
    fn every_key_is_documented_with_its_default() {
        let root = json_schema();
        let mut missing = Vec::new();
        for (def_name, def) in root["$defs"].as_object().unwrap() {
            let Some(properties) = def.get("properties").and_then(Value::as_object) else {
                continue;
            };
            for (key, property) in properties {
                let description = property["description"].as_str().unwrap_or_default();
                let is_table = deref(&root, property).get("properties").is_some();
                let states_default =
                    description.contains("Default") || description.contains("Required");
                if description.is_empty() || !(is_table || states_default) {
                    missing.push(format!("{def_name}.{key}"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "undocumented keys or defaults: {missing:?}"
        );
    }

    #[test]
    fn schema_rejects_unknown_keys_everywhere() {
        let root = json_schema();
        assert_eq!(root["additionalProperties"], false);
        for (name, def) in root["$defs"].as_object().unwrap() {
            if def.get("properties").is_some() {
                assert_eq!(def["additionalProperties"], false, "{name}");
            }
        }
    }
}
