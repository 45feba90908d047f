//! Agent sessions under a manifest: the worktree as workspace, the manifest's sandbox, budgets and
//! environment for every call, and the receipt at the end, whatever happens.

use super::*;
use crate::skills::call;

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
