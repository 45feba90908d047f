//! Every key that could widen the user's grants, from each of a project's two files: honoured
//! from the user's own settings, set aside (and reported at its line) from an untrusted
//! project, honoured once trusted, set aside again once the project's files change.

use serde_json::Value;

use super::Machine;
use super::samples::{SAMPLES, Sample};
use crate::Settings;
use crate::trust::*;

/// The value a sample sets, as the resolved settings would hold it.
fn sample_value(sample: &Sample) -> Value {
    let raw: Value =
        serde_json::to_value(toml::from_str::<toml::Value>(sample.text).unwrap()).unwrap();
    at(&raw, sample.key).clone()
}

fn at<'v>(value: &'v Value, key: &str) -> &'v Value {
    key.split('.').fold(value, |v, k| &v[k])
}

/// Whether `actual` holds what `wanted` sets: every entry of a list (an entry holding at least
/// what the wanted one sets), every key of a table.
fn holds(actual: &Value, wanted: &Value) -> bool {
    match wanted {
        Value::Array(items) => items.iter().all(|item| {
            actual
                .as_array()
                .is_some_and(|list| list.iter().any(|a| holds(a, item)))
        }),
        Value::Object(map) => map.iter().all(|(k, v)| holds(&actual[k], v)),
        other => actual == other,
    }
}

fn applied(settings: &Settings, sample: &Sample) -> bool {
    let json = serde_json::to_value(settings).unwrap();
    holds(at(&json, sample.key), &sample_value(sample))
}

fn expected_line(sample: &Sample) -> usize {
    let last = sample.key.rsplit('.').next().unwrap_or(sample.key);
    let name = match sample.key {
        "model.providers" => "corp",
        "model.prices" => "gpt-4.1",
        "sandbox.env.set" => "LD_PRELOAD",
        _ => last,
    };
    sample
        .text
        .lines()
        .position(|l| l.contains(name))
        .map(|i| i + 1)
        .unwrap()
}

#[test]
fn every_widening_key_is_set_aside_until_trusted_and_again_after_a_change() {
    for sample in SAMPLES {
        for (name, other) in [
            ("settings.toml", "settings.local.toml"),
            ("settings.local.toml", "settings.toml"),
        ] {
            let what = format!("{} from {name}", sample.key);
            // The key works from the user's own settings.
            let m = Machine::new();
            m.user(sample.text);
            assert!(
                applied(&m.load(), sample),
                "{what}: not applied from the user"
            );

            // From an untrusted project it is set aside, and reported at its line.
            let m = Machine::new();
            if let Some(base) = sample.base {
                m.user(base);
            }
            let path = m.project(name, sample.text);
            let settings = m.load();
            assert!(!settings.trust.trusted, "{what}");
            assert!(!applied(&settings, sample), "{what}: applied untrusted");
            let report = settings
                .trust
                .ignored
                .iter()
                .find(|i| i.key == sample.key || i.key.starts_with(&format!("{}.", sample.key)))
                .unwrap_or_else(|| panic!("{what}: not reported: {:?}", settings.trust.ignored));
            assert_eq!(report.file, path, "{what}");
            assert_eq!(report.line, Some(expected_line(sample)), "{what}: {report}");
            assert!(report.to_string().contains("not applied"), "{report}");

            // Trusted, it is honoured (but for what no project may set).
            m.trust();
            let settings = m.load();
            let user_only = key_trust()
                .iter()
                .any(|k| k.key == sample.key && k.trust == KeyTrust::UserOnly);
            assert!(settings.trust.trusted, "{what}");
            assert_eq!(applied(&settings, sample), !user_only, "{what}: trusted");

            // A change to the project's files ends the trust.
            m.project(other, "[permissions]\nallow = [\"Bash(echo changed)\"]\n");
            let settings = m.load();
            assert!(
                matches!(settings.trust.basis, TrustBasis::Changed { .. }),
                "{what}: {:?}",
                settings.trust.basis
            );
            assert!(
                !applied(&settings, sample),
                "{what}: applied after a change"
            );
        }
    }
}

#[test]
fn every_key_declares_what_a_project_may_do_and_every_widening_one_is_sampled() {
    let keys = key_trust();
    // Every key of the schema has a rule, and every rule a key of the schema.
    let schema = crate::json_schema();
    let mut schema_keys = Vec::new();
    let tables: Vec<&str> = keys
        .iter()
        .filter(|k| k.trust == KeyTrust::Table)
        .map(|k| k.key.as_str())
        .collect();
    schema_paths(&schema, &schema, "", &tables, &mut schema_keys);
    let mut declared: Vec<String> = keys.iter().map(|k| k.key.clone()).collect();
    schema_keys.sort();
    declared.sort();
    assert_eq!(schema_keys, declared);
    for key in &keys {
        let sampled = SAMPLES.iter().any(|s| s.key == key.key);
        let needs = matches!(
            key.trust,
            KeyTrust::IgnoredWhenUntrusted
                | KeyTrust::UserOnly
                | KeyTrust::MayOnlyTighten(
                    Tighten::Lower
                        | Tighten::OnlyTrue
                        | Tighten::OnlyFalse
                        | Tighten::StricterMode
                        | Tighten::StricterNetwork
                        | Tighten::Subset
                )
        );
        assert_eq!(sampled, needs, "{}: {:?}", key.key, key.trust);
        assert!(!key.what.is_empty(), "{}", key.key);
    }
}

/// Every property path of the settings schema, tables included, below the keys that are
/// tables to the gate (a key governed whole, like `org`, has no rules below it).
fn schema_paths(
    root: &Value,
    schema: &Value,
    prefix: &str,
    tables: &[&str],
    out: &mut Vec<String>,
) {
    let schema = crate::docs::deref(root, schema);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        out.push(path.clone());
        if tables.contains(&path.as_str()) {
            schema_paths(root, property, &path, tables, out);
        }
    }
}
