//! Tool calls arrive in fragments: an id and a name, then the arguments' JSON text in pieces,
//! several calls interleaved by index. They are put together here; a call is handed out only
//! when it is complete — its block closed, or the whole stream ended as the protocol says.

use std::collections::BTreeMap;

use crate::types::ToolCall;

/// Calls being assembled, by the index the provider gives them.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    open: BTreeMap<usize, Partial>,
    /// Closed calls, in the order they were opened.
    done: Vec<(usize, ToolCall)>,
    /// Ids handed out for calls the provider gave none (legacy `function_call`).
    made_ids: usize,
}

#[derive(Debug, Default)]
struct Partial {
    id: String,
    name: String,
    arguments: String,
}

impl Calls {
    /// Adds what one fragment says of call `index`: any of its id, name and a piece of its
    /// arguments. Returns true when this fragment opened the call.
    pub(crate) fn fragment(
        &mut self,
        index: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
    ) -> bool {
        let opened = !self.open.contains_key(&index);
        let call = self.open.entry(index).or_default();
        if let Some(id) = id.filter(|s| !s.is_empty()) {
            id.clone_into(&mut call.id);
        }
        if let Some(name) = name.filter(|s| !s.is_empty()) {
            // Some servers repeat the name in every fragment; others send it once.
            if call.name.is_empty() {
                name.clone_into(&mut call.name);
            }
        }
        if let Some(piece) = arguments {
            call.arguments.push_str(piece);
        }
        opened
    }

    /// Closes call `index` (its block ended).
    pub(crate) fn close(&mut self, index: usize) {
        if let Some(call) = self.open.remove(&index) {
            let call = self.finish(call);
            self.done.push((index, call));
        }
    }

    /// The stream ended normally: every call still open is complete too. Returns all calls in
    /// index order.
    pub(crate) fn finish_all(mut self) -> Vec<ToolCall> {
        let open = std::mem::take(&mut self.open);
        for (index, call) in open {
            let call = self.finish(call);
            self.done.push((index, call));
        }
        self.done.sort_by_key(|(index, _)| *index);
        self.done.into_iter().map(|(_, call)| call).collect()
    }

    fn finish(&mut self, call: Partial) -> ToolCall {
        let id = if call.id.is_empty() {
            self.made_ids += 1;
            format!("call_{}", self.made_ids)
        } else {
            call.id
        };
        // A call with no arguments at all means an empty object.
        let arguments = if call.arguments.trim().is_empty() {
            "{}".to_owned()
        } else {
            call.arguments
        };
        ToolCall {
            id,
            name: call.name,
            arguments,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_fragments_make_whole_calls_in_index_order() {
        let mut calls = Calls::default();
        assert!(calls.fragment(1, Some("b"), Some("glob"), Some("{\"pat")));
        assert!(calls.fragment(0, Some("a"), Some("readFile"), None));
        assert!(!calls.fragment(0, None, None, Some("{\"path\":")));
        calls.fragment(1, None, Some("glob"), Some("tern\":\"*.rs\"}"));
        calls.fragment(0, None, None, Some("\"x\"}"));
        calls.close(1);
        let all = calls.finish_all();
        assert_eq!(
            all,
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "readFile".into(),
                    arguments: "{\"path\":\"x\"}".into()
                },
                ToolCall {
                    id: "b".into(),
                    name: "glob".into(),
                    arguments: "{\"pattern\":\"*.rs\"}".into()
                },
            ]
        );
    }

    #[test]
    fn missing_ids_and_arguments_are_filled() {
        let mut calls = Calls::default();
        calls.fragment(0, None, Some("updatePlan"), None);
        let all = calls.finish_all();
        assert_eq!(all[0].id, "call_1");
        assert_eq!(all[0].arguments, "{}");
    }
}
