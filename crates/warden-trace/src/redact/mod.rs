//! Secrets out of text and JSON before anything reaches the disk.
//!
//! Redaction is pattern-based and errs on the side of keeping ordinary text: it recognises the
//! formats of well-known credentials, `name=value` pairs whose name says "secret", and
//! random-looking values after names containing KEY, TOKEN or SECRET. It cannot find a secret
//! that looks like prose.

mod rules;

use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};

use regex::Regex;
use serde_json::Value;

use rules::{REDACTED, Rule};

struct Lazy {
    rule: Rule,
    /// Compiled on the first text that holds one of the rule's needles; `None` if the pattern
    /// does not compile (the tests compile every one).
    regex: OnceLock<Option<Regex>>,
}

/// The rules, each compiled only when first needed: most texts hold none of the needles, so a
/// one-shot process pays for no regex compilation at all.
struct Redactor {
    rules: Vec<Lazy>,
}

static REDACTOR: LazyLock<Redactor> = LazyLock::new(|| Redactor {
    rules: rules::rules()
        .into_iter()
        .map(|rule| Lazy {
            rule,
            regex: OnceLock::new(),
        })
        .collect(),
});

impl Redactor {
    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let lower = text.to_ascii_lowercase();
        let mut out = Cow::Borrowed(text);
        for lazy in &self.rules {
            if !lazy
                .rule
                .needles
                .iter()
                .any(|needle| lower.contains(needle))
            {
                continue;
            }
            let Some(regex) = lazy
                .regex
                .get_or_init(|| Regex::new(lazy.rule.pattern).ok())
            else {
                continue;
            };
            let accept = lazy.rule.accept;
            let replaced = regex.replace_all(&out, |caps: &regex::Captures<'_>| {
                rules::replace(caps, accept)
            });
            if let Cow::Owned(replaced) = replaced {
                out = Cow::Owned(replaced);
            }
        }
        out
    }
}

/// `text` with every secret found replaced by `[REDACTED]`; borrowed when there was none.
///
/// A recognisable prefix is kept as a hint (`ghp_[REDACTED]`, `password=[REDACTED]`,
/// `https://user:[REDACTED]@host`), never any part of the secret itself.
pub fn redact(text: &str) -> Cow<'_, str> {
    REDACTOR.redact(text)
}

/// `value` with [`redact`] applied to every string, and the whole value of every object key
/// named like a secret (`password`, `apiKey`, `Authorization`, `DB_SECRET`, …) replaced by
/// `"[REDACTED]"`. Null, booleans and empty strings under such keys are kept: they hide nothing.
pub fn redact_value(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(redact(text).into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let value = if is_secret_key(key) {
                        hide(value)
                    } else {
                        redact_value(value)
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
    }
}

fn hide(value: &Value) -> Value {
    match value {
        Value::Null | Value::Bool(_) => value.clone(),
        Value::String(text) if text.is_empty() => value.clone(),
        Value::String(_) | Value::Number(_) | Value::Array(_) | Value::Object(_) => {
            Value::String(REDACTED.to_owned())
        }
    }
}

/// Whether an object key names a secret: compared without case or separators, it ends with
/// one of the words below. `pwd` is left out on purpose: as a JSON key it is a directory.
fn is_secret_key(key: &str) -> bool {
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "apikey",
        "authorization",
        "privatekey",
        "accesskey",
        "secretkey",
        "credential",
        "credentials",
        "cookie",
    ];
    let normal: String = key
        .chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    WORDS.iter().any(|word| normal.ends_with(word))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_rule_compiles_and_has_lower_case_needles() {
        for rule in &rules::rules() {
            assert!(
                Regex::new(rule.pattern).is_ok(),
                "{} does not compile",
                rule.pattern
            );
            assert!(!rule.needles.is_empty(), "{} has no needles", rule.pattern);
            for needle in rule.needles {
                assert_eq!(*needle, needle.to_ascii_lowercase(), "{}", rule.pattern);
            }
        }
    }

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(
            redact("cargo test -p warden-trace"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn secret_keys_are_matched_by_their_ending() {
        for key in [
            "password",
            "apiKey",
            "API_KEY",
            "Authorization",
            "db-secret",
            "x_auth_token",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in [
            "path",
            "pwd",
            "max_tokens",
            "token_count",
            "password_field",
            "keyboard",
        ] {
            assert!(!is_secret_key(key), "{key}");
        }
    }

    #[test]
    fn secret_keys_hide_their_whole_value() {
        let value = json!({
            "path": "src/main.rs",
            "password": "hunter2",
            "token": null,
            "apiKey": 12345,
            "credentials": {"user": "me", "pin": 1},
            "nested": [{"Authorization": "Basic dXNlcjpwYXNz"}],
        });
        assert_eq!(
            redact_value(&value),
            json!({
                "path": "src/main.rs",
                "password": "[REDACTED]",
                "token": null,
                "apiKey": "[REDACTED]",
                "credentials": "[REDACTED]",
                "nested": [{"Authorization": "[REDACTED]"}],
            })
        );
    }

    #[test]
    fn strings_inside_values_are_redacted() {
        let value = json!({"command": "curl -u admin:x https://admin:hunter2@example.com/"});
        assert_eq!(
            redact_value(&value),
            json!({"command": "curl -u admin:x https://admin:[REDACTED]@example.com/"})
        );
    }
}
