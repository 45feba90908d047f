//! One definition per tool: the schema the model sees is the schema that validates its arguments.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use warden_protocol::{ToolError, ToolErrorKind, ToolName};

use crate::ToolContext;

/// A tool: typed arguments whose schema is derived, and a body that runs on them.
pub trait Tool: Send + Sync {
    /// The arguments; their derived JSON Schema is what the model sees.
    type Args: DeserializeOwned + JsonSchema;
    /// The name the model calls.
    const NAME: &'static str;
    /// One paragraph for the model: what the tool does and its limits.
    const DESCRIPTION: &'static str;
    /// Whether the tool only reads (read-only calls may run concurrently).
    const READ_ONLY: bool;

    /// Runs the tool on validated arguments.
    fn run(&self, ctx: &ToolContext, args: Self::Args) -> Result<Value, ToolError>;
}

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: ToolName,
    pub description: String,
    /// The JSON Schema of the arguments.
    pub parameters: Value,
    pub read_only: bool,
}

/// A tool could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("tool {name:?} is registered twice")]
    Duplicate { name: String },
    #[error("tool name {0}")]
    Name(#[from] warden_protocol::IdError),
}

trait ErasedTool: Send + Sync {
    fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError>;

    fn held(&self) -> Option<String> {
        None
    }
}

/// A tool known only when warden runs (an MCP server's): its spec comes with it, and its
/// arguments are checked against that schema like any tool's.
pub trait DynamicTool: Send + Sync {
    /// Runs the tool on arguments its schema accepted.
    fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError>;

    /// Why a call must be approved by a person whatever the rules say (an MCP tool whose
    /// definition changed since it was pinned), if it must.
    fn held(&self) -> Option<String> {
        None
    }
}

struct Dynamic(Box<dyn DynamicTool>);

impl ErasedTool for Dynamic {
    fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        self.0.call(ctx, args)
    }

    fn held(&self) -> Option<String> {
        self.0.held()
    }
}

struct Typed<T>(T);

impl<T: Tool> ErasedTool for Typed<T> {
    fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        // The validator already accepted these arguments; a failure here means the schema and the
        // type disagree, which is still reported as the caller's error rather than a crash.
        let args = serde_json::from_value(args).map_err(|err| {
            ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("invalid arguments for {}: {err}", T::NAME),
            )
        })?;
        self.0.run(ctx, args)
    }
}

struct Entry {
    spec: ToolSpec,
    /// The schema as given, its `$schema` naming its draft, for a tool whose schema was not
    /// derived here; `None` for the built-ins (2020-12, `spec.parameters`).
    given: Option<Value>,
    /// Compiled on first use: a one-shot process runs one tool and should not pay for all.
    validator: OnceLock<jsonschema::Validator>,
    tool: Box<dyn ErasedTool>,
}

impl Entry {
    fn validator(&self) -> Result<&jsonschema::Validator, ToolError> {
        if let Some(validator) = self.validator.get() {
            return Ok(validator);
        }
        let compiled = match &self.given {
            Some(schema) => jsonschema::validator_for(schema).map_err(|err| err.to_string()),
            None => compile(&self.spec.parameters),
        }
        .map_err(|message| {
            ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!(
                    "the schema of {} does not compile: {message}",
                    self.spec.name
                ),
            )
        })?;
        Ok(self.validator.get_or_init(|| compiled))
    }
}

fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|err| err.to_string())
}

/// The set of tools a session offers, by name.
#[derive(Default)]
pub struct Registry {
    entries: BTreeMap<String, Entry>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in tools: `readFile`, `glob`, `grep`, `bash`, `writeFile`, `editFile` and `apply_patch`.
    pub fn builtin() -> Result<Self, RegistryError> {
        let mut registry = Self::new();
        registry.register(crate::bash::Bash)?;
        registry.register(crate::write::WriteFile)?;
        registry.register(crate::edit::EditFile)?;
        registry.register(crate::patch::ApplyPatch)?;
        registry.register(crate::read::ReadFile)?;
        registry.register(crate::glob::Glob)?;
        registry.register(crate::grep::Grep)?;
        registry.register(crate::fetch::WebFetch)?;
        Ok(registry)
    }

    /// Adds a tool; its argument schema is derived and compiled once, here.
    pub fn register<T: Tool + 'static>(&mut self, tool: T) -> Result<(), RegistryError> {
        let name: ToolName = T::NAME.parse()?;
        if self.entries.contains_key(T::NAME) {
            return Err(RegistryError::Duplicate {
                name: T::NAME.to_owned(),
            });
        }
        let parameters = model_schema::<T::Args>();
        let spec = ToolSpec {
            name,
            description: T::DESCRIPTION.to_owned(),
            parameters,
            read_only: T::READ_ONLY,
        };
        self.entries.insert(
            T::NAME.to_owned(),
            Entry {
                spec,
                given: None,
                validator: OnceLock::new(),
                tool: Box::new(Typed(tool)),
            },
        );
        Ok(())
    }

    /// Adds a tool known only at run time: `schema` validates its arguments (its `$schema`, if
    /// any, names the draft), and the model sees it without `$schema`. A schema that does not
    /// compile makes every call of the tool fail, never pass unchecked.
    pub fn register_dynamic(
        &mut self,
        name: &str,
        description: String,
        schema: Value,
        tool: Box<dyn DynamicTool>,
    ) -> Result<(), RegistryError> {
        let parsed: ToolName = name.parse()?;
        if self.entries.contains_key(name) {
            return Err(RegistryError::Duplicate {
                name: name.to_owned(),
            });
        }
        let mut parameters = schema.clone();
        if let Some(object) = parameters.as_object_mut() {
            object.remove("$schema");
        }
        self.entries.insert(
            name.to_owned(),
            Entry {
                spec: ToolSpec {
                    name: parsed,
                    description,
                    parameters,
                    read_only: false,
                },
                given: Some(schema),
                validator: OnceLock::new(),
                tool: Box::new(Dynamic(tool)),
            },
        );
        Ok(())
    }

    /// Every tool's spec, by name.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.entries.values().map(|entry| &entry.spec)
    }

    /// The spec of one tool.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.entries.get(name).map(|entry| &entry.spec)
    }

    /// Checks the arguments against the tool's schema without running it.
    pub fn validate(&self, name: &str, args: &Value) -> Result<(), ToolError> {
        let entry = self.entry(name)?;
        match entry.validator()?.iter_errors(args).next() {
            None => Ok(()),
            Some(err) => Err(argument_error(name, &entry.spec.parameters, &err)),
        }
    }

    /// Why a call of `name` must be approved by a person whatever the rules say, if it must
    /// ([`DynamicTool::held`]).
    pub fn held(&self, name: &str) -> Option<String> {
        self.entries.get(name).and_then(|entry| entry.tool.held())
    }

    /// Validates and runs one call. Every failure is a structured [`ToolError`].
    pub fn call(&self, ctx: &ToolContext, name: &str, args: Value) -> Result<Value, ToolError> {
        self.validate(name, &args)?;
        self.entry(name)?.tool.call(ctx, args)
    }

    fn entry(&self, name: &str) -> Result<&Entry, ToolError> {
        self.entries.get(name).ok_or_else(|| {
            let known = self
                .entries
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ");
            ToolError::new(
                ToolErrorKind::UnknownTool,
                format!("unknown tool {name:?}; known tools: {known}"),
            )
        })
    }
}

/// The schema as the model sees it: derived from the type, without the generator's metadata.
fn model_schema<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema
}

fn argument_error(tool: &str, schema: &Value, err: &jsonschema::ValidationError<'_>) -> ToolError {
    let mut field = err.instance_path().as_str().to_owned();
    match err.kind() {
        ValidationErrorKind::Required { property } => {
            if let Some(name) = property.as_str() {
                field = format!("{field}/{name}");
            }
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            if let Some(name) = unexpected.first() {
                field = format!("{field}/{name}");
            }
        }
        _ => {}
    }
    let top = field
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    let expected = match err.kind() {
        ValidationErrorKind::AdditionalProperties { .. } => {
            let known = schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            Some(format!("one of the known arguments: {known}"))
        }
        _ => schema.pointer(&format!("/properties/{top}")).map(compact),
    };
    let shown = if field.is_empty() {
        "arguments".to_owned()
    } else {
        field.clone()
    };
    let mut error = ToolError::new(
        ToolErrorKind::InvalidArguments,
        format!("invalid arguments for {tool}: {shown}: {err}"),
    )
    .with_field(if field.is_empty() {
        "/".to_owned()
    } else {
        field
    });
    if let Some(expected) = expected {
        error = error.with_expected(expected);
    }
    error
}

fn compact(schema: &Value) -> String {
    let mut schema = schema.clone();
    if let Some(object) = schema.as_object_mut() {
        object.remove("description");
    }
    schema.to_string()
}
