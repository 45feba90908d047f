//! A tool call's result as warden hands it on: the text of its content, its structured content,
//! and whether the server called it an error.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

/// What one `tools/call` gave back.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallOutcome {
    /// The content blocks as text (`text_of`).
    pub text: String,
    /// `structuredContent`, when the server sent it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// `isError`: the tool ran and failed.
    pub is_error: bool,
    /// How many content blocks there were.
    pub blocks: usize,
}

/// The most text of one result kept; past it the rest is dropped and said to be. (The agent
/// caps what the model sees again, by its own budget.)
pub const MAX_TEXT: usize = 1 << 20;

impl CallOutcome {
    /// Reads a `CallToolResult` as JSON.
    pub fn from_result(result: &Value) -> CallOutcome {
        let blocks = result
            .get("content")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let mut text = text_of(blocks);
        cap(&mut text);
        // Structured content as large as the text's cap is dropped, and said to be.
        let structured = result.get("structuredContent").map(|value| {
            if value.to_string().len() > MAX_TEXT {
                Value::String(format!(
                    "[structured content of more than {MAX_TEXT} bytes not kept]"
                ))
            } else {
                value.clone()
            }
        });
        CallOutcome {
            text,
            structured,
            is_error: result
                .get("isError")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            blocks: blocks.len(),
        }
    }
}

/// Keeps at most [`MAX_TEXT`] of `text`, saying how much more there was.
pub(crate) fn cap(text: &mut String) {
    if text.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let dropped = text.len() - end;
        text.truncate(end);
        let _ = write!(text, "\n[{dropped} more bytes of the result not kept]");
    }
}

/// Content blocks as text: text as it is; an image or audio as a line naming its type and size
/// (the bytes are not text); an embedded resource's text, or a line naming it; a link as its URI.
pub fn text_of(blocks: &[Value]) -> String {
    let field = |block: &Value, key: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let mut parts = Vec::new();
    for block in blocks {
        let part = match block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "text" => field(block, "text"),
            kind @ ("image" | "audio") => format!(
                "[{kind}: {}, {} bytes of base64]",
                field(block, "mimeType"),
                field(block, "data").len()
            ),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or_default();
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => text.to_owned(),
                    None => format!("[resource {}]", field(&resource, "uri")),
                }
            }
            "resource_link" => format!("[link {}]", field(block, "uri")),
            other => format!("[{other} content]"),
        };
        parts.push(part);
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn content_blocks_become_text_and_an_error_is_kept() {
        let outcome = CallOutcome::from_result(&json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "mimeType": "image/png", "data": "aGk="},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"}
            ],
            "isError": true,
            "structuredContent": {"n": 1}
        }));
        assert_eq!(
            outcome.text,
            "hello\n[image: image/png, 4 bytes of base64]\nbody\n[link file:///b]"
        );
        assert!(outcome.is_error);
        assert_eq!(outcome.structured, Some(json!({"n": 1})));
        assert_eq!(outcome.blocks, 4);
    }
}
