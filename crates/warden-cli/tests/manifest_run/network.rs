//! A run's network: only the allowlist, within its budget; a capability's credential in scope and
//! nowhere else; runs on a tmpfs.

use super::*;

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
            .unwrap_or_else(|| panic!("{patch}"))
            .starts_with(shm.path().to_str().unwrap())
    );
    assert!(!runs_dir(&p).exists(), "nothing beside the trace");
}
