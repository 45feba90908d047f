//! An MCP server's request for input (elicitation), asked on the terminal: the server's words
//! shown as its own (escaped: they cannot pass for warden's), each field of its form asked in
//! turn, then whether to send. Without a terminal nobody is asked and the server is told so.

use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal, Write};

use serde_json::{Map, Value};
use warden_mcp::{Answer, Asker, Question};
use warden_tools::ToolContext;

/// Tries a field takes before the whole form is cancelled.
const TRIES: usize = 3;

/// Lets `ctx`'s MCP servers ask the person, when warden runs on a terminal.
pub(super) fn on_terminal(ctx: &mut ToolContext) {
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        ctx.mcp_asker = Some(Asker::new(|question| {
            let stdin = std::io::stdin();
            let mut input = stdin.lock();
            let mut out = std::io::stderr().lock();
            ask(question, &mut input, &mut out)
        }));
        ctx.mcp_login = Some(warden_tools::ShowLogin(std::sync::Arc::new(
            |server: &str, address: &str| {
                let p = warden_protocol::printable;
                eprintln!(
                    "\nwarden: the MCP server {} wants more than its login allows; to allow it, \
                 open this address and authorize warden (or leave it, and the call fails):",
                    p(server)
                );
                eprintln!("{}", p(address));
            },
        )));
    }
}

/// Asks `question` on `out`, reading the answers from `input`. The end of input cancels.
pub(super) fn ask(question: &Question, input: &mut dyn BufRead, out: &mut dyn Write) -> Answer {
    let p = warden_protocol::printable;
    let _ = writeln!(out, "\n── an MCP server asks for input ─────────────────");
    let _ = writeln!(out, "server:    {}", p(&question.server));
    let _ = writeln!(out, "it says:   {}", p(&question.message));
    let _ = writeln!(
        out,
        "(the server's words, not warden's: give it only what you would give this server; \
         enter leaves a field to its default)"
    );
    let schema = &question.schema;
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut content = Map::new();
    for (name, field) in schema["properties"].as_object().into_iter().flatten() {
        let mut tries = 0;
        loop {
            let _ = write!(
                out,
                "{}: ",
                label(name, field, required.contains(&name.as_str()))
            );
            let _ = out.flush();
            let Some(line) = read_line(input) else {
                return Answer::Cancel;
            };
            if line.is_empty() {
                break;
            }
            match value(field, &line) {
                Ok(value) => {
                    content.insert(name.clone(), value);
                    break;
                }
                Err(why) => {
                    let _ = writeln!(out, "  {why}");
                    tries += 1;
                    if tries == TRIES {
                        return Answer::Cancel;
                    }
                }
            }
        }
    }
    loop {
        let _ = write!(out, "send? [y]es, [d]ecline, [c]ancel: ");
        let _ = out.flush();
        let Some(line) = read_line(input) else {
            return Answer::Cancel;
        };
        match line.to_ascii_lowercase().as_str() {
            "y" | "yes" => return Answer::Accept(content),
            "d" | "decline" | "n" | "no" => return Answer::Decline,
            "c" | "cancel" => return Answer::Cancel,
            _ => {}
        }
    }
}

fn read_line(input: &mut dyn BufRead) -> Option<String> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_owned()),
    }
}

/// `name (type, required) [default] — description`, every word of the server escaped.
fn label(name: &str, field: &Value, required: bool) -> String {
    let p = warden_protocol::printable;
    let several = field["type"] == "array";
    let kind = match choices(field) {
        Some(choices) if several => {
            format!("some of {}, with commas", p(&choices.join(", ")))
        }
        Some(choices) => format!("one of {}", p(&choices.join(", "))),
        None => match field["type"].as_str().unwrap_or("string") {
            "boolean" => "y/n".to_owned(),
            other => p(other),
        },
    };
    let title = field["title"].as_str().unwrap_or(name);
    let mut text = format!("{} ({kind}", p(title));
    if required {
        text.push_str(", required");
    }
    text.push(')');
    if let Some(default) = field.get("default") {
        let _ = write!(text, " [{}]", p(&shown(default)));
    }
    if let Some(description) = field["description"].as_str() {
        let _ = write!(text, " — {}", p(description));
    }
    text
}

fn shown(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

/// A choice field's values (`enum`, or `oneOf`/`anyOf` with `const`s; a multiple choice's
/// under `items`).
fn choices(field: &Value) -> Option<Vec<String>> {
    let field = if field["type"] == "array" {
        &field["items"]
    } else {
        field
    };
    if let Some(values) = field["enum"].as_array() {
        return Some(values.iter().map(shown).collect());
    }
    let options = field["oneOf"]
        .as_array()
        .or_else(|| field["anyOf"].as_array())?;
    Some(options.iter().map(|o| shown(&o["const"])).collect())
}

/// What `line` means for `field`, or why it does not fit.
fn value(field: &Value, line: &str) -> Result<Value, String> {
    if field["type"] == "array" {
        let picked: Vec<&str> = line
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if let Some(choices) = choices(field)
            && let Some(odd) = picked.iter().find(|p| !choices.iter().any(|c| c == *p))
        {
            return Err(format!("{odd} is not one of: {}", choices.join(", ")));
        }
        return Ok(Value::Array(picked.into_iter().map(Value::from).collect()));
    }
    if let Some(choices) = choices(field) {
        return if choices.iter().any(|c| c == line) {
            Ok(Value::String(line.to_owned()))
        } else {
            Err(format!("not one of: {}", choices.join(", ")))
        };
    }
    match field["type"].as_str().unwrap_or("string") {
        "boolean" => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("y or n".to_owned()),
        },
        "integer" => line
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "a whole number".to_owned()),
        "number" => line
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| "a number".to_owned()),
        _ => Ok(Value::String(line.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn question() -> Question {
        Question {
            server: "srv".to_owned(),
            message: "Who are you?\u{1b}[2J".to_owned(),
            schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "title": "Name"},
                    "age": {"type": "integer", "default": 30},
                    "ok": {"type": "boolean"},
                    "colour": {"type": "string", "enum": ["red", "green"]},
                    "pets": {"type": "array", "items": {"enum": ["cat", "dog"]}},
                },
                "required": ["name"],
            }),
        }
    }

    fn answer(typed: &str) -> (Answer, String) {
        let mut out = Vec::new();
        let answer = ask(&question(), &mut typed.as_bytes(), &mut out);
        (answer, String::from_utf8(out).unwrap())
    }

    #[test]
    fn fields_are_asked_in_turn_and_a_wrong_one_again() {
        // Fields in the schema's order (serde_json's map is sorted): age, colour, name, ok, pets.
        let (got, shown) = answer("\nblue\nred\nAda\nmaybe\ny\ncat, fish\ncat, dog\ny\n");
        let Answer::Accept(content) = got else {
            panic!("{got:?}")
        };
        assert_eq!(
            Value::Object(content),
            json!({"colour": "red", "name": "Ada", "ok": true, "pets": ["cat", "dog"]})
        );
        assert!(shown.contains("fish is not one of: cat, dog"), "{shown}");
        assert!(shown.contains("age (integer) [30]"), "{shown}");
        assert!(shown.contains("not one of: red, green"), "{shown}");
        assert!(shown.contains("Name (string, required)"), "{shown}");
        // The server's escape sequence is shown, not obeyed.
        assert!(!shown.contains('\u{1b}'), "{shown}");
    }

    #[test]
    fn declining_cancelling_and_the_end_of_input_are_answers_too() {
        assert_eq!(answer("\n\n\n\n\nd\n").0, Answer::Decline);
        assert_eq!(answer("\n\n\n\n\nc\n").0, Answer::Cancel);
        assert_eq!(answer("\n\n").0, Answer::Cancel);
        assert_eq!(answer("x\nx\nx\n").0, Answer::Cancel);
    }
}
