//! `warden manifest run` end to end: a test-and-patch run on a small repository (patch, test
//! report, a receipt whose checksums the test recomputes, a destroyed workspace), the seed's
//! example as it is, the scratch space's size, forbidden paths, the allowlist and its budget,
//! a capability whose credential appears nowhere, repository settings that would run programs,
//! a lease reaped after `kill -9`, report-only mode, and a quarantined run.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::support::{Project, Run, finish, git, sandbox_available};

const SEED: &str = include_str!("../../warden-manifest/tests/fixtures/seed-003.yaml");

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
    let patch_file = patch["stored"].as_str().unwrap();
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
    let worktrees = git(&p.root(), &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
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
    let worktrees = git(&p.root(), &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
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
            let dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            if let [one] = dirs.as_slice() {
                return one.clone();
            }
        }
        assert!(std::time::Instant::now() < deadline, "no run started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_run_whose_warden_was_killed_is_reaped_when_its_lease_runs_out() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    let file = manifest(&p, "m.yaml", &test_and_patch(&p));
    let mut child = p
        .command()
        .args([
            "manifest",
            "run",
            &file,
            "--lease-seconds",
            "3",
            "--",
            "sleep",
            "67",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let dir = only_run(&p);
    assert!(wait_for(&dir.join("workspace/slug.py"), 20));
    // Not reaped while its lease is renewed (each second), past the lease's length.
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let early = p.run(&["manifest", "reap", "--json"]);
    assert_eq!(early.json(), serde_json::json!([]), "{}", early.stdout);
    Command::new("kill")
        .args(["-9", &child.id().to_string()])
        .status()
        .unwrap();
    let _ = child.wait();
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let reaped = p.run(&["manifest", "reap", "--json"]);
    assert_eq!(reaped.code, 0, "{}", reaped.stderr);
    let out = reaped.json();
    assert_eq!(out[0]["action"], "cancelled", "{out}");
    assert_eq!(out[0]["errors"], serde_json::json!([]));
    assert!(!dir.join("workspace").exists());
    let worktrees = git(&p.root(), &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    let receipt: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("receipt.json")).unwrap()).unwrap();
    assert_eq!(receipt["status"], "reaped");
    // The sandboxed command died with its warden.
    let left = Command::new("pgrep")
        .args(["-f", "^sleep 67$"])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "left running: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

#[test]
fn a_run_whose_cleanup_fails_is_quarantined_then_reaped() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let root = finish(&Command::new("id").arg("-u").output().unwrap())
        .stdout
        .trim()
        == "0";
    if !root {
        eprintln!("skipping: making a removal fail for real needs a mount, so root");
        return;
    }
    repo(&p);
    let file = manifest(&p, "m.yaml", &test_and_patch(&p));
    let child = p
        .command()
        .args(["manifest", "run", &file, "--", "sleep", "2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let dir = only_run(&p);
    let busy = dir.join("workspace/docs");
    assert!(wait_for(&busy.join("keep.md"), 20));
    // A mount inside the workspace: its removal fails with EBUSY.
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "tmpfs", busy.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(mounted.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(121), "{stderr}");
    assert!(stderr.contains("QUARANTINED"), "{stderr}");
    let receipt: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("receipt.json")).unwrap()).unwrap();
    assert_eq!(receipt["status"], "quarantined");
    assert_eq!(receipt["cleanup"]["workspace_destroyed"], false);
    // Still busy: still quarantined. Freed: reaped.
    let again = p.run(&["manifest", "reap", "--json"]);
    assert_eq!(again.code, 1);
    assert_eq!(again.json()[0]["action"], "still_quarantined");
    assert!(
        Command::new("umount")
            .arg(&busy)
            .status()
            .unwrap()
            .success()
    );
    let freed = p.run(&["manifest", "reap", "--json"]);
    assert_eq!(
        freed.json()[0]["action"],
        "unquarantined",
        "{}",
        freed.stdout
    );
    assert!(!dir.join("workspace").exists());
}

/// A manifest run's command reaching test servers by name: `names` for the test resolver.
fn run_with_names(
    p: &Project,
    names: &str,
    extra_env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Child {
    let mut cmd = p.command();
    cmd.env("WARDEN_TEST_RESOLVE", names)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

fn network_manifest(p: &Project, allow: &str, budget: u64) -> String {
    let text = test_and_patch(p)
        .replace("  allow: []\n", &format!("  allow:\n{allow}"))
        .replace(
            "  block_private_ranges: true\n",
            "  block_private_ranges: false\n",
        )
        .replace(
            "    network_requests: 500\n",
            &format!("    network_requests: {budget}\n"),
        );
    manifest(p, "net.yaml", &text)
}

#[test]
fn only_the_allowlist_is_reached_and_past_the_budget_nothing_is() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    let port = crate::support::http_server();
    let file = network_manifest(
        &p,
        &format!("    - host: allowed.test\n      ports: [{port}]\n      protocol: http\n"),
        2,
    );
    let get = |host: &str| {
        format!("curl -s -o /dev/null -w '{host} %{{http_code}}\\n' http://{host}:{port}/x; ")
    };
    let script = format!(
        "{}{}{}",
        get("allowed.test"),
        get("other.test"),
        get("allowed.test")
    );
    let child = run_with_names(
        &p,
        "allowed.test=127.0.0.1,other.test=127.0.0.1",
        &[],
        &[
            "manifest", "run", &file, "--json", "--", "sh", "-c", &script,
        ],
    );
    let out = child.wait_with_output().unwrap();
    let receipt: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(receipt["status"], "budget_exceeded", "{receipt}");
    assert_eq!(receipt["denied"]["network_denials"], 2, "{receipt}");
    assert_eq!(receipt["denied"]["budget_denials"], 1, "{receipt}");
    assert_eq!(
        receipt["grants"]["network"]["allow"],
        serde_json::json!([format!("allowed.test:{port}")])
    );
    // Every connection is in the trace, under the run's id.
    let run_id = receipt["run_id"].as_str().unwrap();
    let trace = p.run(&["trace", "network", run_id, "--json"]);
    assert_eq!(trace.code, 0, "{}", trace.stderr);
    let decisions = crate::support::fields(
        &crate::support::events(&trace.stdout),
        &["host", "decision"],
    );
    assert_eq!(
        decisions,
        ["allowed.test allow", "other.test deny", "allowed.test deny"]
    );
}

#[test]
fn a_capabilitys_credential_reaches_its_host_in_scope_and_nowhere_else() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    let ca = p.tmp().join("ca.pem");
    let (port, seen) = crate::support::tls_server("ghe.test", &ca);
    let credentials = p.tmp().join("credentials.toml");
    std::fs::write(
        &credentials,
        format!("[\"ghe.test:{port}\"]\ntoken = \"{TOKEN}\"\n"),
    )
    .unwrap();
    let settings = p.home.join(".config/warden/settings.toml");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        format!(
            "[manifest]\ncredentials_file = \"{}\"\n",
            credentials.display()
        ),
    )
    .unwrap();
    let text = test_and_patch(&p)
        .replace("  block_private_ranges: true\n", "  block_private_ranges: false\n")
        .replace(
            "  capabilities: []\n",
            &format!(
                "  capabilities:\n    - type: source_control\n      repository: acme/site\n      host: \"ghe.test:{port}\"\n      actions: [read, create_pull_request]\n      require_approval_for: [create_pull_request]\n      expires_after_seconds: 600\n"
            ),
        );
    let file = manifest(&p, "cap.yaml", &text);
    let url = format!("https://ghe.test:{port}/api/v3/repos");
    let script = format!(
        "curl -s -w ' %{{http_code}}\\n' {url}/acme/site; \
         curl -s -o /dev/null -w 'other %{{http_code}}\\n' {url}/other/x; \
         curl -s -w ' %{{http_code}}\\n' -X POST -d '{{}}' {url}/acme/site/pulls; \
         curl -s --path-as-is -o /dev/null -w 'climb %{{http_code}}\\n' {url}/acme/site/../../other/x; \
         curl -s -o /dev/null -w 'plain %{{http_code}}\\n' http://ghe.test:{port}/api/v3/repos/acme/site; \
         env | grep -c ghs_ || true; echo TOKEN-IN-ENV-CHECKED"
    );
    let mut child = run_with_names(
        &p,
        "ghe.test=127.0.0.1",
        &[("WARDEN_TEST_UPSTREAM_CA", ca.to_str().unwrap())],
        &["manifest", "run", &file, "--", "sh", "-c", &script],
    );
    // The pull request waits for a person: answer it from outside.
    let dir = only_run(&p);
    assert!(
        wait_for(&dir.join("approvals/1.json"), 30),
        "no approval was asked for"
    );
    let asked: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("approvals/1.json")).unwrap())
            .unwrap();
    assert_eq!(asked["action"], "create_pull_request");
    let run_id = dir.file_name().unwrap().to_str().unwrap().to_owned();
    let answer = p.run(&["manifest", "answer", &run_id, "1", "--allow"]);
    assert_eq!(answer.code, 0, "{}", answer.stderr);
    let status = child.wait().unwrap();
    let mut stdout = String::new();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0], "tls server saw: GET /api/v3/repos/acme/site HTTP/1.1 200",
        "{stdout}"
    );
    assert_eq!(lines[1], "other 403", "{stdout}");
    assert_eq!(
        lines[2], "tls server saw: POST /api/v3/repos/acme/site/pulls HTTP/1.1 200",
        "{stdout}"
    );
    // Out of scope however it is spelled; never over plain HTTP.
    assert_eq!(lines[3], "climb 403", "{stdout}");
    assert_eq!(lines[4], "plain 403", "{stdout}");
    assert_eq!(lines[5], "0", "the token is in the sandbox's environment");
    // The server got the credential on the requests in scope, and nothing else reached it.
    let heads = seen.lock().unwrap().clone();
    assert_eq!(heads.len(), 2, "{heads:?}");
    for head in &heads {
        assert!(
            head.contains(&format!("authorization: Bearer {TOKEN}")),
            "{head}"
        );
    }
    // The credential is in no output, no file of the run, no trace.
    assert!(!stdout.contains(TOKEN) && !stderr.contains(TOKEN));
    let receipt: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("receipt.json")).unwrap()).unwrap();
    // Out of scope, out of scope spelled with `..`, and over plain HTTP.
    assert_eq!(receipt["denied"]["capability_denials"], 3, "{receipt}");
    assert_eq!(receipt["grants"]["capabilities"][0]["credential"], true);
    assert_eq!(receipt["cleanup"]["capabilities_revoked"], true);
    for file in crate::support::files_under(&p.home.join("warden")) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        let found = bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes());
        assert!(!found, "the credential is in {}", file.display());
    }
}

#[test]
fn runs_may_live_on_a_tmpfs_named_in_the_users_settings() {
    let p = Project::new();
    if !sandbox_available(&p) || !Path::new("/dev/shm").is_dir() {
        return;
    }
    repo(&p);
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let settings = p.home.join(".config/warden/settings.toml");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        format!(
            "[manifest]\nruns_dir = \"{}\"\n",
            shm.path().join("runs").display()
        ),
    )
    .unwrap();
    // With the proxy's CA too: the sandbox builds its own /dev, so nothing is seen at a path
    // under /dev/shm.
    let text = test_and_patch(&p).replace(
        "  allow: []\n",
        "  allow:\n    - host: registry.test\n      methods: [GET]\n",
    );
    let file = manifest(&p, "m.yaml", &text);
    let (run, receipt) = run(
        &p,
        &file,
        &[],
        "cd /workspace && echo '# x' >> slug.py && test -s \"$SSL_CERT_FILE\"",
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let patch = artifact(&receipt, "patch");
    assert!(
        patch["stored"]
            .as_str()
            .unwrap()
            .starts_with(shm.path().to_str().unwrap())
    );
    assert!(!runs_dir(&p).exists(), "nothing beside the trace");
}

fn call(id: &str, name: &str, args: &Value) -> warden_fake_provider::Reply {
    warden_fake_provider::openai::calls("", &[warden_fake_provider::Call::new(id, name, args)], 30)
        .fast()
}

#[test]
fn an_agent_session_under_a_manifest_works_in_its_worktree_and_ends_in_a_receipt() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let commit = repo(&p);
    let file = manifest(&p, "m.yaml", &test_and_patch(&p));
    // A server on the host's loopback: reachable here, not from inside the sandbox.
    let port = crate::support::http_server();
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
        "the probe works outside"
    );
    let probe = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 3)' && echo REACHED || echo NO-NETWORK"
    );
    let server = warden_fake_provider::FakeProvider::start(vec![
        call(
            "e1",
            "editFile",
            &serde_json::json!({"path": "slug.py", "oldString": "s.lower()", "newString": "s.lower().replace(' ', '-')"}),
        ),
        call(
            "b1",
            "bash",
            &serde_json::json!({"command": "python3 test_slug.py > /scratch/test-results.xml; cat /scratch/test-results.xml; pwd"}),
        ),
        // The policy sees no network use in this one; the sandbox has none to give.
        call("b2", "bash", &serde_json::json!({"command": probe})),
        call(
            "b3",
            "bash",
            &serde_json::json!({"command": "sleep 30", "background": true}),
        ),
        warden_fake_provider::openai::text("Fixed and tested.").fast(),
    ]);
    let run = crate::support::warden_run(
        &p,
        &server,
        &["--manifest", &file, "--mode", "auto", "--on-ask", "allow"],
        "fix the slug",
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let events = crate::support::events(&run.stdout);
    let receipt_event = crate::support::of_kind(&events, "receipt");
    let receipt_file = receipt_event[0]["path"].as_str().unwrap();
    let receipt: Value =
        serde_json::from_str(&std::fs::read_to_string(receipt_file).unwrap()).unwrap();
    assert_eq!(receipt["status"], "succeeded", "{}", run.stdout);
    assert_eq!(receipt["input"]["commit"], commit.as_str());
    assert_eq!(receipt["commands"][2]["background"], true, "{receipt}");
    assert_eq!(
        receipt["commands"].as_array().unwrap().len(),
        3,
        "{receipt}"
    );
    // The command ran in the manifest's sandbox: at /workspace, with no network.
    let body = server.received()[2].json();
    let sent = body["messages"].to_string();
    assert!(sent.contains("1 passed"), "{sent}");
    assert!(sent.contains("/workspace"), "{sent}");
    assert!(
        !sent.contains("Example Domain"),
        "the network was reached: {sent}"
    );
    // The edit made by the file tool is in the patch; the report was collected.
    let patch = artifact(&receipt, "patch");
    let diff = std::fs::read_to_string(patch["stored"].as_str().unwrap()).unwrap();
    assert!(
        diff.contains("+    return s.lower().replace(' ', '-')"),
        "{diff}"
    );
    let report = artifact(&receipt, "/scratch/test-results.xml");
    assert_eq!(
        report["sha256"].as_str().unwrap(),
        sha256_file(report["stored"].as_str().unwrap())
    );
    assert_eq!(receipt["cleanup"]["workspace_destroyed"], true);
    // The user's copy is as it was.
    assert_eq!(
        std::fs::read_to_string(p.root().join("slug.py")).unwrap(),
        "def slug(s):\n    return s.lower()\n"
    );
}

#[test]
fn the_duration_stops_the_run_and_a_lockfile_names_what_the_allowlist_misses() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    p.write(
        "package-lock.json",
        r#"{"packages": {"node_modules/left-pad": {"resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz"}}}"#,
    );
    repo(&p);
    let text = test_and_patch(&p).replace(
        "  max_duration_seconds: 900\n",
        "  max_duration_seconds: 1\n",
    );
    let file = manifest(&p, "short.yaml", &text);
    let started = std::time::Instant::now();
    let (run, receipt) = run(&p, &file, &[], "sleep 30");
    assert_eq!(run.code, 124, "{}", run.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(receipt["status"], "timed_out");
    assert_eq!(receipt["commands"][0]["timed_out"], true);
    let warnings = receipt["warnings"].to_string();
    assert!(
        warnings.contains("package-lock.json downloads from registry.npmjs.org"),
        "{warnings}"
    );
    assert_eq!(receipt["cleanup"]["workspace_destroyed"], true);
}

#[test]
fn a_sessions_tool_calls_and_environment_are_the_manifests() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    let text = test_and_patch(&p).replace("    tool_calls: 200\n", "    tool_calls: 1\n");
    let file = manifest(&p, "m.yaml", &text);
    let server = warden_fake_provider::FakeProvider::start(vec![
        call(
            "b1",
            "bash",
            &serde_json::json!({"command": "echo \"CI=$CI OTHER=${LEAKY_VALUE:-none}\" > /scratch/test-results.xml"}),
        ),
        call("b2", "bash", &serde_json::json!({"command": "echo second"})),
        warden_fake_provider::openai::text("Done.").fast(),
    ]);
    let base = format!("{}/v1", server.url());
    let run = crate::support::agent_command(&p, &base)
        .env("CI", "true")
        .env("LEAKY_VALUE", "hunter2-in-the-environment")
        .args(["--manifest", &file, "--mode", "auto", "echo things"])
        .output()
        .unwrap();
    let run = finish(&run);
    // The budget of one tool call stops the session (exit 3), and the run still finishes.
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let events = crate::support::events(&run.stdout);
    let end = crate::support::of_kind(&events, "session_finished")[0].clone();
    assert_eq!(end["status"], "budget_exhausted", "{end}");
    let receipt_event = crate::support::of_kind(&events, "receipt");
    assert_eq!(receipt_event.len(), 1, "{}", run.stdout);
    let receipt: Value = serde_json::from_str(
        &std::fs::read_to_string(receipt_event[0]["path"].as_str().unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(
        receipt["commands"].as_array().unwrap().len(),
        1,
        "{receipt}"
    );
    // Only the variables the manifest names reach the command.
    let env = artifact(&receipt, "/scratch/test-results.xml");
    assert!(env["stored"].is_string(), "{receipt}");
    let seen = std::fs::read_to_string(env["stored"].as_str().unwrap()).unwrap();
    assert_eq!(seen.trim(), "CI=true OTHER=none");
    assert!(!run.stdout.contains("hunter2"));
}

#[test]
fn a_session_that_fails_to_start_still_finishes_its_run() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    let file = manifest(&p, "m.yaml", &test_and_patch(&p));
    let run = p.run(&[
        "run",
        "--json",
        "--model",
        "nosuch/model",
        "--manifest",
        &file,
        "task",
    ]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    let dir = only_run(&p);
    let receipt: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("receipt.json")).unwrap()).unwrap();
    assert_eq!(receipt["status"], "refused");
    assert_eq!(receipt["cleanup"]["workspace_destroyed"], true);
    assert!(!dir.join("workspace").exists());
    let lease: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("lease.json")).unwrap()).unwrap();
    assert_eq!(lease["status"], "finished");
}

#[test]
fn a_manifest_run_masks_the_secret_list_in_what_its_command_sees() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    repo(&p);
    let cargo = p.home.join(".cargo");
    std::fs::create_dir_all(cargo.join("registry")).unwrap();
    std::fs::write(
        cargo.join("credentials.toml"),
        "token = \"MANIFEST-CARGO-31337\"\n",
    )
    .unwrap();
    std::fs::write(cargo.join("registry/readme"), "CARGO-README-31337\n").unwrap();
    let file = manifest(&p, "plain.yaml", &test_and_patch(&p));
    let script = format!(
        "cat {0}/registry/readme {0}/credentials.toml; true",
        cargo.display()
    );
    let bare = p.run(&["exec", "--no-sandbox", "--", "sh", "-c", &script]);
    assert!(
        bare.stdout.contains("MANIFEST-CARGO-31337"),
        "the probe: {}",
        bare.stderr
    );
    let run = p.run(&["manifest", "run", &file, "--", "sh", "-c", &script]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("CARGO-README-31337"), "{}", run.stderr);
    assert!(
        !run.stdout.contains("MANIFEST-CARGO-31337"),
        "{}",
        run.stdout
    );
}
