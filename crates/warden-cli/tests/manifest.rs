//! Sandbox manifests end to end: the `warden manifest validate` contract (exit codes, the
//! problems with path, line and reason), templates, and approvals bound to a manifest.

use serde_json::Value;

use crate::support::Project;

const SEED: &str = include_str!("../../warden-manifest/tests/fixtures/seed-003.yaml");

#[test]
fn validate_exits_0_when_valid_1_when_not_and_2_on_usage_errors() {
    let p = Project::new();
    p.write("seed.yaml", SEED);
    let ok = p.run(&["manifest", "validate", "seed.yaml"]);
    assert_eq!(ok.code, 0, "{}{}", ok.stdout, ok.stderr);
    assert!(ok.stdout.contains("valid"), "{}", ok.stdout);

    p.write(
        "bad.yaml",
        &SEED
            .replace("max_duration_seconds: 900", "max_duration: 900")
            .replace("mode: read_only", "mode: read_write"),
    );
    let bad = p.run(&["manifest", "validate", "bad.yaml", "--json"]);
    assert_eq!(bad.code, 1, "{}{}", bad.stdout, bad.stderr);
    let out = bad.json();
    assert_eq!(out["valid"], false);
    let problems = out["problems"].as_array().unwrap();
    assert_eq!(problems[0]["path"], "run");
    assert_eq!(problems[0]["line"], 4);
    assert!(
        problems[0]["reason"]
            .as_str()
            .unwrap()
            .contains("max_duration")
    );

    // The schema is fine, preflight is not: a writable repository.
    p.write(
        "rw.yaml",
        &SEED.replace("mode: read_only", "mode: read_write"),
    );
    let rw = p.run(&["manifest", "validate", "rw.yaml"]);
    assert_eq!(rw.code, 1);
    assert!(
        rw.stdout
            .contains("rw.yaml:13: filesystem.mounts[0].mode: the repository is the run's input"),
        "{}",
        rw.stdout
    );

    assert_eq!(p.run(&["manifest", "validate", "missing.yaml"]).code, 2);
    assert_eq!(p.run(&["manifest", "validate"]).code, 2);
    p.write("no-org.toml", "[sandbox]\nenabled = true\n");
    let no_org = p.run(&[
        "manifest",
        "validate",
        "seed.yaml",
        "--org-policy",
        "no-org.toml",
    ]);
    assert_eq!(no_org.code, 2, "{}", no_org.stderr);
    assert!(
        no_org.stderr.contains("no [org] table"),
        "{}",
        no_org.stderr
    );
}

#[test]
fn an_organisation_policy_asks_more_of_the_seed() {
    let p = Project::new();
    p.write("seed.yaml", SEED);
    p.write("org.toml", "[org.manifest]\nmax_cpu = 1.0\n");
    let run = p.run(&[
        "manifest",
        "validate",
        "seed.yaml",
        "--org-policy",
        "org.toml",
        "--json",
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let out = run.json();
    assert_eq!(out["orgPolicy"], true);
    let paths: Vec<&str> = out["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["run.owner", "run.expires_at", "run.resources.cpu"]);
}

#[test]
fn every_template_is_written_and_valid_under_the_default_organisation_policy() {
    let p = Project::new();
    p.write("org.toml", "[org]\n");
    for name in ["explain", "test-and-patch", "create-pr"] {
        let file = format!("{name}.yaml");
        let init = p.run(&["manifest", "init", "--template", name, "-o", &file]);
        assert_eq!(init.code, 0, "{}", init.stderr);
        let text = std::fs::read_to_string(p.root().join(&file)).unwrap();
        assert!(text.starts_with("# "), "commented: {text}");
        assert_eq!(p.run(&["manifest", "validate", &file]).code, 0, "{name}");
        let org = p.run(&[
            "manifest",
            "validate",
            &file,
            "--org-policy",
            "org.toml",
            "--json",
        ]);
        let problems = org.json()["problems"].clone();
        let only_approval = problems
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["path"].as_str().unwrap().ends_with("approval_ref"));
        assert!(only_approval, "{name}: {problems}");
        // Not written over unless asked.
        assert_eq!(
            p.run(&["manifest", "init", "--template", name, "-o", &file])
                .code,
            2
        );
    }
    assert_eq!(p.run(&["manifest", "init", "--template", "deploy"]).code, 2);
}

#[test]
fn an_approval_holds_for_the_manifest_it_was_given_to_and_no_other() {
    let p = Project::new();
    p.write("org.toml", "[org]\n");
    assert_eq!(
        p.run(&[
            "manifest",
            "init",
            "--template",
            "create-pr",
            "-o",
            "pr.yaml"
        ])
        .code,
        0
    );
    let before = p.run(&[
        "manifest",
        "validate",
        "pr.yaml",
        "--org-policy",
        "org.toml",
    ]);
    assert_eq!(before.code, 1);
    assert!(
        before.stdout.contains("requires an approval"),
        "{}",
        before.stdout
    );

    let approve = p.run(&[
        "manifest", "approve", "pr.yaml", "--ttl", "1h", "--by", "alice", "--json",
    ]);
    assert_eq!(approve.code, 0, "{}", approve.stderr);
    let approval: Value = approve.json();
    let id = approval["id"].as_str().unwrap().to_owned();
    assert_eq!(approval["approved_by"], "alice");
    let text = std::fs::read_to_string(p.root().join("pr.yaml")).unwrap();
    let with_ref = text.replace(
        "      # approval_ref: \"appr_...\"",
        &format!("      approval_ref: {id}"),
    );
    assert_ne!(with_ref, text, "the template names where the approval goes");
    p.write("pr.yaml", &with_ref);
    let after = p.run(&[
        "manifest",
        "validate",
        "pr.yaml",
        "--org-policy",
        "org.toml",
    ]);
    assert_eq!(after.code, 0, "{}", after.stdout);

    // Asking for more after the approval: it no longer holds.
    p.write("pr.yaml", &with_ref.replace("cpu: 2", "cpu: 3"));
    let changed = p.run(&[
        "manifest",
        "validate",
        "pr.yaml",
        "--org-policy",
        "org.toml",
    ]);
    assert_eq!(changed.code, 1);
    assert!(
        changed.stdout.contains("another manifest"),
        "{}",
        changed.stdout
    );

    // An approval of the wrong id, and of a manifest that breaks a built-in rule.
    p.write("pr.yaml", &with_ref.replace(&id, "appr_ffffffffffffffff"));
    let unknown = p.run(&[
        "manifest",
        "validate",
        "pr.yaml",
        "--org-policy",
        "org.toml",
    ]);
    assert!(
        unknown.stdout.contains("no approval of that id"),
        "{}",
        unknown.stdout
    );
    p.write(
        "broken.yaml",
        &with_ref.replace("mode: read_only", "mode: read_write"),
    );
    assert_eq!(p.run(&["manifest", "approve", "broken.yaml"]).code, 1);
}

#[test]
fn the_schema_is_printed() {
    let p = Project::new();
    let run = p.run(&["manifest", "schema"]);
    assert_eq!(run.code, 0);
    let schema: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(schema["properties"]["network"].is_object());
}
