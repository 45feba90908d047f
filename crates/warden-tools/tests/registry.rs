use serde_json::json;
use warden_protocol::ToolErrorKind;
use warden_tools::Registry;

use crate::support::Workspace;

#[test]
fn every_builtin_tool_has_a_closed_object_schema() {
    let registry = Registry::builtin().unwrap();
    let names: Vec<String> = registry.specs().map(|s| s.name.to_string()).collect();
    assert_eq!(
        names,
        [
            "apply_patch",
            "bash",
            "editFile",
            "glob",
            "grep",
            "readFile",
            "webFetch",
            "writeFile"
        ]
    );
    for spec in registry.specs() {
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
        assert_eq!(
            spec.parameters["additionalProperties"], false,
            "{}",
            spec.name
        );
        assert!(spec.parameters.get("$schema").is_none());
        let reads = ["readFile", "glob", "grep", "webFetch"].contains(&spec.name.as_str());
        assert_eq!(spec.read_only, reads, "{}", spec.name);
        // `bash` takes `command` or `jobId`; providers refuse a top-level `anyOf`, so the tool
        // checks that itself, naming the field.
        if spec.name.as_str() == "bash" {
            let err = registry
                .call(&Workspace::new().ctx(), "bash", json!({}))
                .unwrap_err();
            assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
            assert_eq!(err.field.as_deref(), Some("/command"));
            continue;
        }
        assert!(
            spec.parameters["required"]
                .as_array()
                .is_some_and(|r| !r.is_empty()),
            "{}",
            spec.name
        );
        // The schema compiles: validation runs and names the missing argument.
        let err = registry
            .validate(spec.name.as_str(), &json!({}))
            .unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments, "{}", spec.name);
        assert!(err.field.is_some());
    }
}

#[test]
fn the_schema_the_model_sees_is_the_one_that_validates() {
    // A property the schema declares an integer with a minimum is refused by that same schema.
    let registry = Registry::builtin().unwrap();
    let read = registry.spec("readFile").unwrap();
    assert_eq!(read.parameters["properties"]["startLine"]["minimum"], 1);
    let err = registry
        .validate("readFile", &json!({"path": "a", "startLine": 0}))
        .unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
    assert_eq!(err.field.as_deref(), Some("/startLine"));
    assert!(err.expected.unwrap().contains("\"minimum\":1"));
}

#[test]
fn wrong_type_names_the_field_and_what_was_expected() {
    let ws = Workspace::new();
    let err = ws.err("readFile", json!({"path": "a", "startLine": "ten"}));
    assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
    assert_eq!(err.field.as_deref(), Some("/startLine"));
    assert!(err.message.contains("startLine"), "{}", err.message);
    assert!(err.expected.unwrap().contains("integer"));
}

#[test]
fn missing_and_unknown_arguments_are_named() {
    let ws = Workspace::new();
    let err = ws.err("grep", json!({"path": "src"}));
    assert_eq!(err.field.as_deref(), Some("/pattern"));
    let err = ws.err("glob", json!({"pattern": "*.rs", "recursive": true}));
    assert_eq!(err.field.as_deref(), Some("/recursive"));
    assert!(err.expected.unwrap().contains("pattern"));
}

#[test]
fn arguments_must_be_an_object() {
    let ws = Workspace::new();
    let err = ws.err("glob", json!(["*.rs"]));
    assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
    assert_eq!(err.field.as_deref(), Some("/"));
}

#[test]
fn unknown_tools_are_refused_with_the_known_list() {
    let ws = Workspace::new();
    let err = ws.err("deleteEverything", json!({}));
    assert_eq!(err.kind, ToolErrorKind::UnknownTool);
    assert!(err.message.contains("readFile"));
}
