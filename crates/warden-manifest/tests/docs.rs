use std::path::PathBuf;

fn docs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let generated = serde_json::to_string_pretty(&warden_manifest::json_schema()).unwrap() + "\n";
    let path = docs_dir().join("manifest.schema.json");
    if std::env::var_os("WARDEN_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/manifest.schema.json is stale: run `WARDEN_BLESS=1 cargo test -p warden-manifest`"
    );
}

/// `docs/manifest.md` documents every field: each appears in a row of its section's table.
#[test]
fn every_field_is_in_the_reference() {
    let docs = std::fs::read_to_string(docs_dir().join("manifest.md")).unwrap();
    let schema = warden_manifest::json_schema();
    let mut defs: Vec<(String, &serde_json::Value)> = vec![("Manifest".to_owned(), &schema)];
    for (name, def) in schema["$defs"].as_object().unwrap() {
        defs.push((name.clone(), def));
    }
    let mut missing = Vec::new();
    for (def, value) in defs {
        let Some(properties) = value.get("properties").and_then(|p| p.as_object()) else {
            continue;
        };
        for field in properties.keys() {
            let row = format!("| `{field}` |");
            if !docs.lines().any(|l| l.starts_with(&row)) {
                missing.push(format!("{def}.{field}"));
            }
        }
    }
    assert!(missing.is_empty(), "not in docs/manifest.md: {missing:?}");
}
