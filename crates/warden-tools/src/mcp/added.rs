//! Tools a server adds during a session: not offered to the model until a person approves
//! them (each put to them once), then registered and pinned like those listed at the start.

use std::sync::Arc;

use serde_json::Value;

use super::{McpCall, McpServers, describe};
use crate::registry::{Registry, RegistryError};

/// A tool a running server lists now that it did not at its start.
pub struct AddedTool {
    /// `mcp__SERVER__TOOL`.
    pub name: String,
    /// The server's name in the settings.
    pub server: String,
    /// What the model would be told of it (the server's words, and whose they are).
    pub description: String,
    schema: Value,
    call: McpCall,
}

impl std::fmt::Debug for AddedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddedTool")
            .field("name", &self.name)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl AddedTool {
    /// Offers it from now on: in `registry`, its definition pinned as it is now. `Some` says
    /// the pin could not be written (a later change of it would not be noticed).
    pub fn register(self, registry: &mut Registry) -> Result<Option<String>, RegistryError> {
        let AddedTool {
            name,
            description,
            schema,
            call,
            ..
        } = self;
        let pinned = call
            .pins
            .pin_new(&call.server, &[(call.tool.clone(), call.offered.clone())]);
        registry.register_dynamic(&name, description, schema, Box::new(call))?;
        Ok(pinned.err())
    }
}

impl McpServers {
    /// The tools the running servers list now that were neither offered nor put to a person
    /// yet (each returned once), among those their settings offer. The caller asks a person
    /// and registers the approved ones ([`AddedTool::register`]).
    pub fn added(&self) -> Vec<AddedTool> {
        let Some(pins) = &self.pins else {
            return Vec::new();
        };
        let mut added = Vec::new();
        for running in &self.servers {
            let Ok(mut current) = running.current.lock() else {
                continue;
            };
            running.refresh(&mut current);
            let Ok(mut seen) = running.seen.lock() else {
                continue;
            };
            for (tool, definition) in current.iter() {
                if seen.contains(tool) || !running.config.offers(tool) {
                    continue;
                }
                seen.insert(tool.clone());
                let listed = warden_mcp::McpTool {
                    name: tool.clone(),
                    title: definition["title"].as_str().map(str::to_owned),
                    description: definition["description"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    input_schema: definition["inputSchema"].clone(),
                    output_schema: None,
                    annotations: None,
                };
                added.push(AddedTool {
                    name: warden_mcp::tool_name(&running.name, tool),
                    server: running.name.clone(),
                    description: describe(&running.name, &listed),
                    schema: listed.input_schema,
                    call: McpCall {
                        running: Arc::clone(running),
                        server: running.name.clone(),
                        tool: tool.clone(),
                        offered: definition.clone(),
                        pins: Arc::clone(pins),
                    },
                });
            }
        }
        added
    }
}
