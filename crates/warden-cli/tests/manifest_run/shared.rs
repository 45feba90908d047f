//! The commit's shared checkout: made once, shown read-only as `repo` and as the lower layer of
//! the workspace's overlay; whatever a command does in the workspace reaches only its run's
//! upper layer (and the patch), never the checkout the next run starts from.

use std::os::unix::fs::MetadataExt as _;

use super::*;

/// What the first run's command does in the workspace: a file changed, one removed, a directory
/// replaced by another of the same name, new files (one in new directories, one ignored); and,
/// beside it, the same write to `/repo` (the checkout itself), which must fail. git inside sees
/// the commit and the changes.
const CHANGES: &str = r#"set -u
cd /workspace
echo '# changed' >> test_slug.py
rm slug.py
rm -rf docs && mkdir docs && echo other > docs/new.md
mkdir -p n/d && echo deep > n/d/f
echo junk > build.log
echo added > added.txt
printf x > "$(printf 'caf\351')"
if echo evil >> /repo/test_slug.py 2>/dev/null; then exit 41; fi
grep -q evil /repo/test_slug.py && exit 42
test "$(git log -1 --format=%H)" = "$COMMIT" || exit 43
git status --porcelain | grep -q '^ D slug.py' || exit 44
exit 0
"#;

/// What the second run's command checks: the workspace is the commit again.
const PRISTINE: &str = r"cd /workspace
echo ignored > build.log
grep -q 'return s.lower()' slug.py || exit 51
test -f docs/keep.md || exit 52
test -e added.txt && exit 53
test -e docs/new.md && exit 54
grep -q changed test_slug.py && exit 55
exit 0
";

/// `path` written with `text` and committed.
fn committed(p: &Project, path: &str, text: &str, message: &str) {
    p.write(path, text);
    git(&p.root(), &["add", "."]);
    git(&p.root(), &["commit", "-q", "-m", message]);
}

#[test]
fn a_commits_checkout_is_made_once_and_nothing_a_command_does_reaches_it() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    committed(&p, ".gitignore", "*.log\n", "ignore logs");
    let commit = git(&p.root(), &["rev-parse", "HEAD"]).trim().to_owned();
    // Artifacts under the workspace are what the command left there: a new file, an edited one.
    let text = test_and_patch(&p).replace(
        "  collect:\n",
        "  collect:\n    - /workspace/added.txt\n    - /workspace/test_slug.py\n",
    );
    let file = manifest(&p, "m.yaml", &text);
    let script = format!("COMMIT={commit}\n{CHANGES}");
    let (first, receipt) = run(&p, &file, &[], &script);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert_eq!(receipt["exit_code"], 0, "{receipt}");

    let stored_text = |path: &str| {
        let a = artifact(&receipt, path);
        std::fs::read_to_string(a["stored"].as_str().unwrap_or_else(|| panic!("{a}"))).unwrap()
    };
    assert_eq!(stored_text("/workspace/added.txt"), "added\n");
    assert!(stored_text("/workspace/test_slug.py").ends_with("# changed\n"));

    // Every change is in the patch, which applies to the commit; the ignored file is not.
    let patch = artifact(&receipt, "patch");
    let stored = patch["stored"]
        .as_str()
        .unwrap_or_else(|| panic!("{patch}"));
    let bytes = std::fs::read(stored).unwrap();
    // A name that is not UTF-8 is in it as it is.
    assert!(
        bytes.windows(5).any(|w| w == b"caf\xe9\n"),
        "a name not UTF-8"
    );
    let diff = String::from_utf8_lossy(&bytes);
    for expected in [
        "diff --git a/slug.py b/slug.py\ndeleted file mode",
        "diff --git a/docs/keep.md b/docs/keep.md\ndeleted file mode",
        "diff --git a/docs/new.md b/docs/new.md\nnew file mode",
        "diff --git a/n/d/f b/n/d/f\nnew file mode",
        "diff --git a/added.txt b/added.txt\nnew file mode",
        "+# changed",
    ] {
        assert!(diff.contains(expected), "{expected:?} not in\n{diff}");
    }
    assert!(!diff.contains("build.log"), "{diff}");
    git(&p.root(), &["apply", "--check", stored]);

    // The checkout the run showed is the commit's still.
    let checkouts = runs_dir(&p).join(".checkouts");
    let kept: Vec<_> = std::fs::read_dir(&checkouts).unwrap().flatten().collect();
    assert_eq!(kept.len(), 1, "one checkout: {kept:?}");
    assert!(kept[0].file_name().to_string_lossy().starts_with(&commit));
    let tree = kept[0].path().join("tree");
    assert_eq!(
        std::fs::read_to_string(tree.join("slug.py")).unwrap(),
        "def slug(s):\n    return s.lower()\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("docs/keep.md")).unwrap(),
        "kept\n"
    );
    assert!(!tree.join("added.txt").exists() && !tree.join("docs/new.md").exists());
    let made = std::fs::metadata(&tree).unwrap().ino();

    // The next run of the commit starts from it as it was, made no second time.
    let (second, receipt) = run(&p, &file, &[], PRISTINE);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    assert_eq!(receipt["exit_code"], 0, "{receipt}");
    assert_eq!(artifact(&receipt, "patch")["bytes"], 0, "{receipt}");
    assert_eq!(std::fs::metadata(&tree).unwrap().ino(), made);

    // Each run's own layer and git directory are gone; nothing was registered with git.
    for entry in std::fs::read_dir(runs_dir(&p)).unwrap().flatten() {
        let run = entry.path();
        if entry.file_name() == ".checkouts" {
            continue;
        }
        for gone in ["workspace", "repo", "gitdir"] {
            assert!(
                !run.join(gone).exists(),
                "{} left",
                run.join(gone).display()
            );
        }
    }
    only_the_main_worktree(&p);
}

#[test]
fn a_workspace_writable_only_in_part_is_a_worktree_of_its_own() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    let text = test_and_patch(&p).replace(
        "  writable_paths:\n    - /workspace\n",
        "  writable_paths:\n    - /workspace/docs\n",
    );
    assert!(text.contains("    - /workspace/docs\n"), "{text}");
    let file = manifest(&p, "m.yaml", &text);
    let script = "cd /workspace && echo more >> docs/keep.md && \
                  if echo x >> slug.py 2>/dev/null; then exit 41; fi";
    let (run, receipt) = run(&p, &file, &[], script);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let patch = artifact(&receipt, "patch");
    let diff = std::fs::read_to_string(patch["stored"].as_str().unwrap()).unwrap();
    assert!(
        diff.contains("+more") && !diff.contains("slug.py"),
        "{diff}"
    );
    let mounts = receipt["grants"]["mounts"].as_array().unwrap();
    let at = |target: &str| {
        mounts
            .iter()
            .find(|m| m["target"] == target)
            .and_then(|m| m["resolved"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(!at("/workspace").contains(".checkouts"), "{mounts:?}");
    assert!(at("/repo").contains(".checkouts"), "{mounts:?}");
}

/// Runs `script` under `text` (a manifest), then a run of the plain template checks that the
/// commit's checkout is as committed.
fn then_pristine(p: &Project, text: &str, script: &str) {
    let file = manifest(p, "other.yaml", text);
    let (first, receipt) = run(p, &file, &[], script);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert_eq!(receipt["exit_code"], 0, "{receipt}");
    let plain = manifest(p, "m.yaml", &test_and_patch(p));
    let (again, receipt) = run(p, &plain, &[], PRISTINE);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert_eq!(
        receipt["exit_code"], 0,
        "the checkout was changed: {receipt}"
    );
}

#[test]
fn a_workspace_mounted_twice_is_a_worktree_and_the_checkout_is_not_written() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    // The checkout made first, by a run of its own.
    let plain = manifest(&p, "m.yaml", &test_and_patch(&p));
    assert_eq!(run(&p, &plain, &[], "true").0.code, 0);
    let text = test_and_patch(&p).replace(
        "    - source: workspace\n",
        "    - source: workspace\n      target: /seen\n      mode: read_only\n    - source: workspace\n",
    );
    assert!(text.contains("target: /seen"), "{text}");
    then_pristine(
        &p,
        &text,
        "echo '# x' >> /workspace/slug.py && echo x > /workspace/added.txt && \
         if echo x >> /seen/slug.py 2>/dev/null; then exit 41; fi",
    );
}

#[test]
fn a_forbidden_file_of_the_checkout_is_hidden_in_the_workspace_and_in_the_repository() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    committed(&p, "deploy.key", "the deploy key\n", "a key");
    let read = "cat /workspace/deploy.key /repo/deploy.key";
    // Not forbidden, both are read.
    let plain = manifest(&p, "m.yaml", &test_and_patch(&p));
    let (open, receipt) = run(&p, &plain, &[], read);
    assert_eq!(receipt["exit_code"], 0, "{}{}", open.stdout, open.stderr);
    // Forbidden, neither is, and the rest of the checkout still is.
    let text = test_and_patch(&p).replace(
        "  forbidden_paths:\n",
        "  forbidden_paths:\n    - /workspace/deploy.key\n    - /repo/deploy.key\n",
    );
    assert!(text.contains("- /repo/deploy.key"), "{text}");
    let file = manifest(&p, "forbidden.yaml", &text);
    for probe in ["cat /workspace/deploy.key", "cat /repo/deploy.key"] {
        let script = format!("{probe} && exit 41; cat /workspace/slug.py /repo/slug.py >/dev/null");
        let (hidden, receipt) = run(&p, &file, &[], &script);
        assert_eq!(
            receipt["exit_code"], 0,
            "{probe}: {}{}",
            hidden.stdout, hidden.stderr
        );
    }
}
