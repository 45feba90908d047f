//! `docs/architecture.md`'s table of crate dependencies is the code's: compared with what
//! `cargo metadata` says of every crate of the workspace.

use std::collections::BTreeMap;
use std::process::Command;

/// Per crate: the warden crates it depends on, and those its tests also use.
type Table = BTreeMap<String, (Vec<String>, Vec<String>)>;

fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The table as `cargo metadata` gives it.
fn from_cargo() -> Table {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut table = Table::new();
    for package in metadata["packages"].as_array().unwrap() {
        let ours = |kind: Option<&str>| {
            let mut names: Vec<String> = package["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].as_str() == kind)
                .filter_map(|d| d["name"].as_str())
                .filter(|n| n.starts_with("warden-"))
                .map(str::to_owned)
                .collect();
            names.sort();
            names.dedup();
            names
        };
        let name = package["name"].as_str().unwrap().to_owned();
        table.insert(name, (ours(None), ours(Some("dev"))));
    }
    table
}

/// The table as the document gives it.
fn from_doc() -> Table {
    let doc = std::fs::read_to_string(workspace_root().join("docs/architecture.md")).unwrap();
    let section = doc
        .split("## Crate dependencies")
        .nth(1)
        .expect("docs/architecture.md has a section \"Crate dependencies\"");
    let cells = |cell: &str| -> Vec<String> {
        let mut names: Vec<String> = cell
            .split(',')
            .map(|n| n.trim().trim_matches('`').to_owned())
            .filter(|n| n.starts_with("warden-"))
            .collect();
        names.sort();
        names
    };
    let mut table = Table::new();
    for line in section.lines().take_while(|l| !l.starts_with("## ")) {
        let row: Vec<&str> = line.split('|').map(str::trim).collect();
        if let [_, krate, uses, tests, _] = row.as_slice()
            && krate.starts_with("`warden-")
        {
            let name = krate.trim_matches('`').to_owned();
            assert!(
                table
                    .insert(name.clone(), (cells(uses), cells(tests)))
                    .is_none(),
                "{name} is listed twice"
            );
        }
    }
    table
}

#[test]
fn the_documented_crate_dependencies_are_the_codes() {
    let (cargo, doc) = (from_cargo(), from_doc());
    assert!(cargo.len() > 10, "{cargo:?}");
    for (name, deps) in &cargo {
        assert_eq!(
            doc.get(name),
            Some(deps),
            "docs/architecture.md's row for {name} (depends on, its tests also use)"
        );
    }
    for name in doc.keys() {
        assert!(
            cargo.contains_key(name),
            "{name} is documented but not a crate"
        );
    }
}
