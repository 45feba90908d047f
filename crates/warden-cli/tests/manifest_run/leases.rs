//! Leases: a run whose warden was killed is reaped when its lease runs out; one whose cleanup fails
//! is quarantined, then reaped.

use super::*;

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
    // The workspace is an overlay on the commit's shared checkout: its upper layer is the run's.
    assert!(wait_for(&dir.join("workspace/upper"), 20));
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
    only_the_main_worktree(&p);
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
    let busy = dir.join("workspace/upper");
    assert!(wait_for(&busy, 20));
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
