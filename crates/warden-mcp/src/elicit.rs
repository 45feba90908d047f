//! A server asking the person for input (elicitation): the question as it is shown, the person's
//! answer, and what is checked before the answer goes back. With no one to ask (warden headless)
//! the request is refused with the reason; a form is the only kind answered (a server's URL is
//! not opened for it).

use std::sync::Arc;

use serde_json::{Map, Value};

/// A server's request for input.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The server's name in the settings.
    pub server: String,
    /// What it says it needs, as it wrote it (untrusted text).
    pub message: String,
    /// The form: an object schema whose properties are strings, numbers, booleans or choices,
    /// each maybe with a `default`.
    pub schema: Value,
}

/// What the person answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The form's values.
    Accept(Map<String, Value>),
    /// They would not give it; the server may go on without.
    Decline,
    /// They stopped the whole operation.
    Cancel,
    /// No one could be asked; the reason goes to the server as an error.
    Refuse(String),
}

/// Who answers questions: a terminal prompt, a script's fixed answers.
#[derive(Clone)]
pub struct Asker(Arc<dyn Fn(&Question) -> Answer + Send + Sync>);

impl Asker {
    pub fn new(ask: impl Fn(&Question) -> Answer + Send + Sync + 'static) -> Asker {
        Asker(Arc::new(ask))
    }

    pub fn ask(&self, question: &Question) -> Answer {
        (self.0)(question)
    }
}

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Asker")
    }
}

/// `content` with every property of `schema` that it lacks and that has a `default` set to that
/// default: a form's defaults are what a person who leaves a field alone answers.
pub fn with_defaults(schema: &Value, mut content: Map<String, Value>) -> Map<String, Value> {
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        if let Some(default) = property.get("default")
            && !content.contains_key(name)
        {
            content.insert(name.clone(), default.clone());
        }
    }
    content
}

/// Why `content` does not fill `schema`'s form, if it does not: a required field missing, a
/// value of the wrong type or not among its choices, a field the form does not have.
pub(crate) fn misfit(schema: &Value, content: &Map<String, Value>) -> Option<String> {
    let properties = schema["properties"].as_object();
    for name in schema["required"].as_array().into_iter().flatten() {
        if let Some(name) = name.as_str()
            && !content.contains_key(name)
        {
            return Some(format!("the required field {name:?} has no value"));
        }
    }
    for (name, value) in content {
        let Some(property) = properties.and_then(|p| p.get(name)) else {
            return Some(format!("the form has no field {name:?}"));
        };
        let fits = match property["type"].as_str() {
            Some("string") => value.is_string(),
            Some("number") => value.is_number(),
            Some("integer") => value.is_i64() || value.is_u64(),
            Some("boolean") => value.is_boolean(),
            Some("array") => value.is_array(),
            _ => true,
        };
        if !fits {
            return Some(format!("{name:?} must be a {}", property["type"]));
        }
        let choices = property["enum"]
            .as_array()
            .or_else(|| property["items"]["enum"].as_array());
        if let Some(choices) = choices {
            let allowed = |v: &Value| choices.contains(v);
            let ok = match value {
                Value::Array(items) => items.iter().all(allowed),
                other => allowed(other),
            };
            if !ok {
                return Some(format!("{value} is not one of {name:?}'s choices"));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "Ada"},
                "age": {"type": "integer"},
                "colour": {"type": "string", "enum": ["red", "green"], "default": "green"},
            },
            "required": ["age"],
        })
    }

    #[test]
    fn defaults_fill_only_what_was_left_alone() {
        let given = Map::from_iter([("name".to_owned(), json!("Grace"))]);
        let filled = with_defaults(&form(), given);
        assert_eq!(filled["name"], "Grace");
        assert_eq!(filled["colour"], "green");
        assert!(!filled.contains_key("age"));
    }

    #[test]
    fn an_answer_that_does_not_fill_the_form_is_named() {
        let fits = |v: Value| misfit(&form(), v.as_object().unwrap());
        assert_eq!(fits(json!({"age": 3, "colour": "red"})), None);
        assert!(fits(json!({})).unwrap().contains("age"));
        assert!(fits(json!({"age": "3"})).unwrap().contains("integer"));
        assert!(
            fits(json!({"age": 3, "colour": "blue"}))
                .unwrap()
                .contains("choices")
        );
        assert!(
            fits(json!({"age": 3, "extra": 1}))
                .unwrap()
                .contains("extra")
        );
    }
}
