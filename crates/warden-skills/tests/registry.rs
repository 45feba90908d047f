use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use warden_skills::{Root, Severity, discover, standard_roots, tree_hash, validate};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn roots() -> Vec<Root> {
    let base = fixtures();
    standard_roots(
        &base.join("project"),
        Some(&base.join("user/warden")),
        &base.join("no-org"),
        &[],
        &[],
    )
}

#[test]
fn valid_skills_load_and_invalid_ones_are_reported_with_file_line_and_reason() {
    let registry = discover(&roots());
    let names: Vec<&str> = registry.skills.iter().map(|s| s.name().as_str()).collect();
    assert_eq!(names, ["db-migrations", "git-release", "pdf-forms"]);
    let errors: Vec<(String, Option<usize>, &str)> = registry
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .map(|p| {
            let dir = p
                .file
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (dir, p.line, p.reason.as_str())
        })
        .collect();
    let find = |dir: &str| {
        errors
            .iter()
            .find(|(d, _, _)| d == dir)
            .unwrap_or_else(|| panic!("no problem for {dir}: {errors:?}"))
    };
    assert!(find("bad-yaml").2.starts_with("invalid YAML"));
    assert_eq!(find("bad-yaml").1, Some(3));
    assert!(
        find("missing-description")
            .2
            .contains("missing required field `description`")
    );
    assert!(
        find("name-mismatch")
            .2
            .contains("is not the directory's name \"name-mismatch\"")
    );
    assert_eq!(find("name-mismatch").1, Some(2));
    assert!(find("long-description").2.contains("at most 1024"));
    assert_eq!(errors.len(), 4, "{errors:?}");
}

#[test]
fn the_higher_root_wins_a_name_and_the_shadowing_is_reported() {
    let registry = discover(&roots());
    let release = registry.get("git-release").unwrap();
    assert!(release.path.ends_with(".warden/skills/git-release"));
    assert_eq!((release.root.as_str(), release.trusted), ("project", false));
    let migrations = registry.get("db-migrations").unwrap();
    assert_eq!(
        migrations.root, "project",
        "the project's copy beats the user's"
    );
    let pdf = registry.get("pdf-forms").unwrap();
    assert_eq!((pdf.root.as_str(), pdf.trusted), ("user", true));
    let shadowed: Vec<&Path> = registry
        .problems
        .iter()
        .filter(|p| p.reason.starts_with("shadowed"))
        .map(|p| p.file.as_path())
        .collect();
    assert_eq!(shadowed.len(), 2, "{:?}", registry.problems);
    assert!(
        shadowed
            .iter()
            .any(|f| f.ends_with(".claude/skills/git-release/SKILL.md"))
    );
    assert!(
        shadowed
            .iter()
            .any(|f| f.ends_with("user/warden/skills/db-migrations/SKILL.md"))
    );
}

#[test]
fn every_field_of_a_skill_is_there() {
    let registry = discover(&roots());
    let release = registry.get("git-release").unwrap();
    let meta = &release.meta;
    assert_eq!(meta.version.as_deref(), Some("1.4.0"));
    assert_eq!(
        meta.allowed_tools.as_deref().unwrap(),
        [
            "Read",
            "Grep",
            "Bash(git log:*)",
            "Bash(git tag:*)",
            "Edit(CHANGELOG.md)"
        ]
    );
    assert_eq!(meta.permissions.network, Some(false));
    assert_eq!(meta.metadata["owner"], "release-team");
    assert_eq!(release.hash.len(), 64);
    let loaded = registry.load("git-release").unwrap();
    assert!(
        loaded.body.starts_with("# Cutting a release"),
        "{}",
        loaded.body
    );
    assert!(
        !loaded.body.contains("allowed-tools"),
        "the frontmatter is not the body"
    );
}

#[test]
fn the_index_holds_name_description_and_path_within_its_budget() {
    let registry = discover(&roots());
    let base = fixtures().join("project");
    let order: Vec<usize> = (0..registry.skills.len()).collect();
    let count = |t: &str| t.len() as u64 / 4;
    let roomy = registry.index(&order, 2_000, &base, &count);
    assert_eq!((roomy.listed, roomy.shortened, roomy.omitted), (3, 0, 0));
    assert!(roomy.text.contains(
        "- git-release: Cut a release of this project. Use when asked to tag a version, write the \
         changelog or publish a release. (.warden/skills/git-release/SKILL.md)"
    ));
    assert!(
        !roomy.text.contains("Cutting a release"),
        "only the metadata, not the body"
    );
    // Tighter: descriptions are shortened first.
    let full = count(&roomy.text);
    let tight = registry.index(&order, full - 10, &base, &count);
    assert!(count(&tight.text) <= full - 10, "{}", tight.text);
    assert!(tight.shortened > 0 && tight.omitted == 0, "{tight:?}");
    // Tighter still: some are left out, and the index says how many.
    let (budget, tiny) = (1..full)
        .rev()
        .map(|b| (b, registry.index(&order, b, &base, &count)))
        .find(|(_, index)| index.omitted > 0)
        .unwrap();
    assert!(count(&tiny.text) <= budget, "{}", tiny.text);
    assert!(tiny.omitted > 0 && tiny.listed > 0, "{tiny:?}");
    assert!(
        tiny.text
            .contains(&format!("[{} more skills not listed", tiny.omitted))
    );
}

#[test]
fn a_skill_whose_globs_match_an_edited_file_ranks_above_unrelated_ones() {
    let registry = discover(&roots());
    let ranked = registry.rank(
        "the users table needs an email column",
        &["migrations/004_users.sql".to_owned()],
    );
    assert_eq!(ranked[0].name, "db-migrations", "{ranked:?}");
    assert!(ranked[0].reasons.iter().any(|r| r.contains("file_globs")));
    assert!(ranked.iter().all(|r| r.name != "pdf-forms"), "{ranked:?}");
    // A trigger phrase in the goal.
    let release = registry.rank("please tag a version for Friday", &[]);
    assert_eq!(release[0].name, "git-release");
    assert!(
        release[0]
            .reasons
            .contains(&"trigger \"tag a version\"".to_owned())
    );
    // BM25 alone, over names and descriptions.
    let pdf = registry.rank("fill the PDF form fields", &[]);
    assert_eq!(pdf[0].name, "pdf-forms");
    assert!(registry.rank("make coffee", &[]).is_empty());
}

#[test]
fn files_are_read_from_inside_the_skill_only() {
    let registry = discover(&roots());
    let format = registry
        .read_file("git-release", "references/changelog-format.md")
        .unwrap();
    assert!(format.starts_with("# Changelog format"));
    for outside in [
        "../db-migrations/SKILL.md",
        "/etc/passwd",
        "references/../../x",
    ] {
        let err = registry.read_file("git-release", outside).unwrap_err();
        assert!(
            err.to_string().contains("is not a file of the skill"),
            "{err}"
        );
    }
    let unknown = registry.load("nope").unwrap_err().to_string();
    assert!(
        unknown.contains("db-migrations, git-release, pdf-forms"),
        "{unknown}"
    );
}

#[test]
fn the_directory_hash_changes_with_any_file_of_the_skill() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tool");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: tool\ndescription: d\n---\n",
    )
    .unwrap();
    std::fs::write(dir.join("scripts/run.sh"), "#!/bin/sh\necho one\n").unwrap();
    let first = tree_hash(&dir).unwrap();
    assert_eq!(first, tree_hash(&dir).unwrap(), "stable");
    std::fs::write(dir.join("scripts/run.sh"), "#!/bin/sh\necho two\n").unwrap();
    let second = tree_hash(&dir).unwrap();
    assert_ne!(first, second, "a script changed");
    std::fs::set_permissions(
        dir.join("scripts/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert_ne!(second, tree_hash(&dir).unwrap(), "made executable");
}

#[test]
fn validate_lints_references_scripts_and_fields() {
    let good = fixtures().join("project/.warden/skills/git-release");
    assert!(validate(&good).is_empty(), "{:?}", validate(&good));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("broken");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: broken\ndescription: d\nmodel: fast\n---\nSee references/missing.md and run scripts/go.sh.\n",
    )
    .unwrap();
    std::fs::write(dir.join("scripts/go.sh"), "echo no interpreter line\n").unwrap();
    let problems = validate(&dir);
    let reasons: Vec<&str> = problems.iter().map(|p| p.reason.as_str()).collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("references/missing.md is referenced")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.starts_with("not executable")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.starts_with("no interpreter line")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("unknown field `model`")),
        "{reasons:?}"
    );
    let missing_line = problems
        .iter()
        .find(|p| p.reason.contains("missing.md"))
        .unwrap();
    assert_eq!(missing_line.line, Some(6));
    let mismatch = fixtures().join("project/.warden/skills/name-mismatch");
    assert!(
        validate(&mismatch)[0]
            .reason
            .contains("is not the directory's name")
    );
}
