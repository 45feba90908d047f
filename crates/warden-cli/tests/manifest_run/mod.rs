//! `warden manifest run` end to end: a test-and-patch run on a small repository (patch, test
//! report, a receipt whose checksums the test recomputes, a destroyed workspace), the seed's
//! example as it is, the scratch space's size, forbidden paths, the allowlist and its budget,
//! a capability whose credential appears nowhere, repository settings that would run programs,
//! a lease reaped after `kill -9`, report-only mode, and a quarantined run.

mod leases;
mod network;
mod session;
mod shared;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::support::{Project, Run, finish, git, sandbox_available};

const SEED: &str = include_str!("../../../warden-manifest/tests/fixtures/seed-003.yaml");

/// The credential of the capability test.
const TOKEN: &str = "ghs_CapabilityToken0123456789abcdefXYZ";

/// A git repository in the project: a slug function with a failing test, committed.
pub(crate) fn repo(p: &Project) -> String {
    let root = p.root();
    std::fs::remove_dir_all(root.join(".git")).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["config", "user.email", "t@example.com"]);
    git(&root, &["config", "user.name", "t"]);
    p.write("slug.py", "def slug(s):\n    return s.lower()\n");
    p.write(
        "test_slug.py",
        "import slug\nassert slug.slug('A B') == 'a-b', slug.slug('A B')\nprint('1 passed')\n",
    );
    p.write("docs/keep.md", "kept\n");
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "slug"]);
    git(&root, &["rev-parse", "HEAD"]).trim().to_owned()
}

pub(crate) fn manifest(p: &Project, name: &str, text: &str) -> String {
    let path = p.tmp().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn run(p: &Project, file: &str, extra: &[&str], script: &str) -> (Run, Value) {
    let mut args = vec!["manifest", "run", file, "--json"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    let run = p.run(&args);
    let receipt = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    (run, receipt)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn sha256_file(path: &str) -> String {
    hex(&Sha256::digest(std::fs::read(path).unwrap()))
}

fn artifact<'a>(receipt: &'a Value, path: &str) -> &'a Value {
    receipt["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"] == path)
        .unwrap_or_else(|| panic!("no artifact {path}: {receipt}"))
}

fn runs_dir(p: &Project) -> PathBuf {
    p.home.join("warden/runs")
}

/// The test-and-patch template, the network left out (no proxy is needed).
pub(crate) fn test_and_patch(p: &Project) -> String {
    let init = p.run(&[
        "manifest",
        "init",
        "--template",
        "test-and-patch",
        "-o",
        "-",
    ]);
    assert_eq!(init.code, 0);
    init.stdout
        .replace(
            "  allow:\n    # Downloading packages, not publishing them.\n    - host: registry.npmjs.org\n      ports: [443]\n      methods: [GET, HEAD]\n",
            "  allow: []\n",
        )
        .replace("    - /scratch/diff.patch\n", "")
}

#[test]
fn a_test_and_patch_run_gives_a_patch_a_report_a_true_receipt_and_no_workspace() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let commit = repo(&p);
    let text = test_and_patch(&p);
    assert!(!text.contains("registry.npmjs.org"), "{text}");
    let file = manifest(&p, "m.yaml", &text);
    let receipt_copy = p.tmp().join("receipt.json");
    let script = "cd /workspace && sed -i 's/s.lower()/s.lower().replace(\" \", \"-\")/' slug.py \
                  && python3 test_slug.py > /scratch/test-results.xml \
                  && echo 'api_key = sk-live-0123456789' >> /scratch/test-results.xml \
                  && id -u && git status --short";
    let (run, receipt) = run(
        &p,
        &file,
        &["--receipt", receipt_copy.to_str().unwrap()],
        script,
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(receipt["status"], "succeeded", "{receipt}");
    assert_eq!(receipt["input"]["commit"], commit.as_str());
    assert_eq!(receipt["grants"]["uid"], 1000);
    assert_eq!(receipt["grants"]["network"]["mode"], "none");
    // The receipt's checksums are the files'.
    let report = artifact(&receipt, "/scratch/test-results.xml");
    let stored = report["stored"].as_str().unwrap();
    assert_eq!(report["sha256"].as_str().unwrap(), sha256_file(stored));
    let text = std::fs::read_to_string(stored).unwrap();
    assert!(text.contains("1 passed"), "{text}");
    assert!(!text.contains("sk-live-0123456789"), "redacted: {text}");
    assert_eq!(report["redactions"], 1);
    let patch = artifact(&receipt, "patch");
    let patch_file = patch["stored"]
        .as_str()
        .unwrap_or_else(|| panic!("{patch}"));
    assert_eq!(patch["sha256"].as_str().unwrap(), sha256_file(patch_file));
    let diff = std::fs::read_to_string(patch_file).unwrap();
    assert!(
        diff.contains("-    return s.lower()\n+    return s.lower().replace(\" \", \"-\")"),
        "{diff}"
    );
    // The patch applies to the pinned commit and makes the test pass.
    git(&p.root(), &["apply", "--check", patch_file]);
    let mut hasher = Sha256::new();
    for arg in ["sh", "-c", script] {
        hasher.update(arg.as_bytes());
        hasher.update([0]);
    }
    let command = hex(&hasher.finalize());
    assert_eq!(receipt["commands"][0]["sha256"], command.as_str());
    // No command output in the receipt, and the copy is the same receipt.
    assert!(!receipt.to_string().contains("1 passed"));
    let copy: Value =
        serde_json::from_str(&std::fs::read_to_string(&receipt_copy).unwrap()).unwrap();
    assert_eq!(copy, receipt);
    // The workspace is gone, and git no longer lists it; the user's copy is untouched.
    assert_eq!(receipt["cleanup"]["workspace_destroyed"], true);
    assert_eq!(receipt["cleanup"]["capabilities_revoked"], true);
    let dir = runs_dir(&p).join(receipt["run_id"].as_str().unwrap());
    for alias in ["workspace", "repo", "run-scratch", "cache"] {
        assert!(!dir.join(alias).exists(), "{alias} left behind");
    }
    only_the_main_worktree(&p);
    assert_eq!(
        std::fs::read_to_string(p.root().join("slug.py")).unwrap(),
        "def slug(s):\n    return s.lower()\n"
    );
}

#[test]
fn the_seeds_example_runs_as_it_is_with_the_repository_read_only() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let commit = repo(&p);
    // The probe writes where a writable worktree is mounted instead of the repository.
    let writable = SEED
        .replace(
            "source: repo\n      target: /workspace\n      mode: read_only",
            "source: workspace\n      target: /workspace\n      mode: read_write",
        )
        .replace(
            "  writable_paths:\n    - /scratch\n",
            "  writable_paths:\n    - /scratch\n    - /workspace\n",
        );
    assert_ne!(writable, SEED);
    let probe = manifest(&p, "probe.yaml", &writable);
    let wrote = p.run(&[
        "manifest",
        "run",
        &probe,
        "--",
        "sh",
        "-c",
        "echo x > /workspace/slug.py && echo WROTE",
    ]);
    assert!(
        wrote.stdout.contains("WROTE"),
        "the probe works: {}{}",
        wrote.stdout,
        wrote.stderr
    );
    let file = manifest(&p, "seed.yaml", SEED);
    let receipt_file = p.tmp().join("seed-receipt.json");
    let run = p.run(&[
        "manifest",
        "run",
        &file,
        "--receipt",
        receipt_file.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "cat /workspace/slug.py | head -1; git -C /workspace log --format=%H; \
         echo x > /workspace/slug.py && echo WROTE; echo note > /scratch/n && echo SCRATCH; \
         ls -A /home /root | wc -l",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let receipt: Value =
        serde_json::from_str(&std::fs::read_to_string(&receipt_file).unwrap()).unwrap();
    assert_eq!(receipt["status"], "succeeded", "{receipt}");
    assert_eq!(receipt["input"]["commit"], commit.as_str());
    assert_eq!(
        receipt["grants"]["network"]["allow"],
        serde_json::json!(["registry.npmjs.org:443"])
    );
    assert_eq!(receipt["grants"]["mounts"][0]["mode"], "read_only");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], "def slug(s):");
    assert_eq!(lines[1], commit, "git inside sees the pinned commit");
    assert!(
        !run.stdout.contains("WROTE"),
        "the repository was writable: {}",
        run.stdout
    );
    assert!(run.stdout.contains("SCRATCH"), "{}", run.stdout);
    assert_eq!(
        lines.last().unwrap().trim(),
        "0",
        "/home and /root are empty inside"
    );
    // The seed asks for no patch: /workspace is the read-only repository.
    assert!(receipt["artifacts"].as_array().unwrap().is_empty());
}

#[test]
fn the_scratch_space_holds_disk_mb_and_no_more_and_never_reaches_the_host() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    let text = test_and_patch(&p).replace("    disk_mb: 2048", "    disk_mb: 2");
    let file = manifest(&p, "small.yaml", &text);
    // Three files of a MiB each: more than 2 MiB, each under the largest file allowed.
    let writes = "for i in 1 2 3; do head -c 1048576 /dev/zero > $D/f$i || { echo FULL; exit 9; }; done; echo ROOM";
    let outside = tempfile::tempdir().unwrap();
    let probe = finish(
        &Command::new("sh")
            .arg("-c")
            .arg(writes.replace("$D", outside.path().to_str().unwrap()))
            .output()
            .unwrap(),
    );
    assert!(
        probe.stdout.contains("ROOM"),
        "the probe works outside: {}",
        probe.stdout
    );
    let (run, receipt) = run(
        &p,
        &file,
        &[],
        &format!(
            "echo results > /scratch/test-results.xml; {}",
            writes.replace("$D", "/scratch")
        ),
    );
    assert_eq!(run.code, 9, "{}{}", run.stdout, run.stderr);
    assert_eq!(receipt["status"], "failed");
    // What fits is still collected; the host's disk held none of it.
    let report = artifact(&receipt, "/scratch/test-results.xml");
    assert_eq!(report["bytes"], 8, "{receipt}");
    let dir = runs_dir(&p).join(receipt["run_id"].as_str().unwrap());
    assert!(!dir.join("run-scratch").exists());
}

#[test]
fn a_forbidden_path_is_not_shown_whatever_else_is() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    let text = test_and_patch(&p).replace(
        "    - /var/run/docker.sock\n",
        "    - /var/run/docker.sock\n    - /etc/passwd\n",
    );
    let file = manifest(&p, "forbid.yaml", &text);
    let plain = manifest(&p, "plain.yaml", &test_and_patch(&p));
    let script = "cat /etc/passwd | grep -c '^root:' || true";
    let shows = |file: &str| {
        let run = p.run(&["manifest", "run", file, "--", "sh", "-c", script]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout.trim().to_owned()
    };
    assert_eq!(
        shows(&plain),
        "1",
        "the probe works without the forbidden path"
    );
    assert_eq!(shows(&file), "0", "a forbidden path was shown");
}

#[test]
fn links_that_leave_the_checkout_are_refused_before_anything_runs() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    std::os::unix::fs::symlink("/etc/passwd", p.root().join("passwd")).unwrap();
    git(&p.root(), &["add", "passwd"]);
    git(&p.root(), &["commit", "-q", "-m", "a link out"]);
    let file = manifest(&p, "m.yaml", &test_and_patch(&p));
    let (run, receipt) = run(&p, &file, &[], "echo RAN");
    assert_eq!(run.code, 126, "{}{}", run.stdout, run.stderr);
    assert_eq!(receipt["status"], "refused");
    assert!(receipt["commands"].as_array().unwrap().is_empty());
    assert!(
        receipt["warnings"]
            .to_string()
            .contains("passwd -> /etc/passwd"),
        "{receipt}"
    );
    assert_eq!(receipt["cleanup"]["workspace_destroyed"], true);
    only_the_main_worktree(&p);
}

#[test]
fn repository_settings_that_would_run_programs_on_the_host_are_neutralised() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    let marker = p.tmp().join("ran-on-the-host");
    let hook = format!("touch {}", marker.display());
    p.write(".gitattributes", "*.py filter=evil\n");
    git(&p.root(), &["add", ".gitattributes"]);
    git(&p.root(), &["commit", "-q", "-m", "attributes"]);
    git(&p.root(), &["config", "core.fsmonitor", &hook]);
    git(
        &p.root(),
        &["config", "filter.evil.smudge", &format!("{hook}; cat")],
    );
    git(
        &p.root(),
        &["config", "filter.evil.clean", &format!("{hook}; cat")],
    );
    std::fs::write(
        p.root().join(".git/hooks/post-checkout"),
        format!("#!/bin/sh\n{hook}\n"),
    )
    .unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(p.root().join(".git/hooks/post-checkout"), mode).unwrap();
    // Without warden, plain git runs them.
    git(&p.root(), &["status"]);
    assert!(marker.exists(), "the probe works with plain git");
    std::fs::remove_file(&marker).unwrap();
    let file = manifest(&p, "m.yaml", &test_and_patch(&p));
    let (run, receipt) = run(&p, &file, &[], "cd /workspace && echo '# x' >> slug.py");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !marker.exists(),
        "a repository setting ran a program on the host"
    );
    let neutralised = receipt["input"]["neutralised"].to_string();
    for name in ["core.fsmonitor", "filter.evil.smudge", "filter.evil.clean"] {
        assert!(neutralised.contains(name), "{name}: {neutralised}");
    }
    assert_eq!(artifact(&receipt, "patch")["error"], Value::Null);
}

#[test]
fn report_only_mode_reports_a_path_the_manifest_did_not_declare() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    let text = test_and_patch(&p).replace("    - /workspace\n    - /scratch\n", "    - /scratch\n");
    let file = manifest(&p, "narrow.yaml", &text);
    let script = "echo notes > /workspace/notes.txt && echo ok > /scratch/test-results.xml";
    // Enforced, the write is refused.
    let (enforced, receipt) = run(&p, &file, &[], script);
    assert_ne!(enforced.code, 0, "{}", enforced.stdout);
    assert_eq!(receipt["status"], "failed");
    // Observed, it goes through and is reported with what to change.
    let (observed, receipt) = run(&p, &file, &["--report-only"], script);
    assert_eq!(observed.code, 0, "{}", observed.stderr);
    let report = &receipt["report"];
    assert_eq!(
        report["undeclared_writes"],
        serde_json::json!(["/workspace/notes.txt"]),
        "{report}"
    );
    assert!(
        report["suggestions"]
            .to_string()
            .contains("/workspace/notes.txt")
    );
    assert!(report["duration_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(receipt["denied"]["filesystem_denials"], 1);
}

/// git lists the repository's own worktree and no other: every run's is gone.
fn only_the_main_worktree(p: &Project) {
    let worktrees = git(&p.root(), &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
}

/// Waits for `path` to exist.
fn wait_for(path: &Path, seconds: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while std::time::Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

/// The run directory of the only run under way.
fn only_run(p: &Project) -> PathBuf {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Ok(entries) = std::fs::read_dir(runs_dir(p)) {
            // The shared checkouts are beside the runs, in `.checkouts`.
            let dirs: Vec<PathBuf> = entries
                .flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .collect();
            if let [one] = dirs.as_slice() {
                return one.clone();
            }
        }
        assert!(std::time::Instant::now() < deadline, "no run started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
