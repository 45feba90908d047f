//! `warden audit` of real sessions: a run on a terminal that reads a file, edits it (approved),
//! runs a command that writes a file (approved), is denied a secret, and one that made no call;
//! every answer checked in the JSON, the same facts found in the text and the Markdown, and in the
//! HTML report as headless Chromium shows it (its filters working); a trace that is missing or
//! not a trace is said, and no report is written.

use serde_json::{Value, json};
use warden_fake_provider::{Call, FakeProvider, openai};

use crate::support::{Project, model_calling, on_a_terminal, sandbox_available, warden_run};

/// The notes and a private key to be refused, in `p`; the call that edits the notes' second
/// line into `new`.
fn edit_notes(p: &Project, new: &str) -> Call<'static> {
    std::fs::create_dir_all(p.home.join(".ssh")).unwrap();
    std::fs::write(p.home.join(".ssh/id_rsa"), "PRIVATE KEY").unwrap();
    p.write("notes.txt", "first\nsecond\n");
    Call::new(
        "e1",
        "editFile",
        &json!({"path": "notes.txt", "oldString": "second", "newString": new}),
    )
}

fn audit_json(p: &Project, args: &[&str]) -> Value {
    let mut words = vec!["audit", "--format", "json"];
    words.extend_from_slice(args);
    let out = p.run(&words);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn a_session_s_reads_changes_commands_denials_and_approvals_in_every_format() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let server = model_calling(&[
        Call::new("r1", "readFile", &json!({"path": "notes.txt"})),
        edit_notes(&p, "second, edited\nthird"),
        Call::new(
            "b1",
            "bash",
            &json!({"command": "echo made > by-command.txt"}),
        ),
        Call::new("b2", "bash", &json!({"command": "cat ~/.ssh/id_rsa"})),
    ]);
    let base = format!("{}/v1", server.url());
    let argv = [
        env!("CARGO_BIN_EXE_warden"),
        "run",
        "--model",
        "openai/test-model",
        "--base-url",
        &base,
        "tidy the notes",
    ];
    let run = on_a_terminal(&p, &argv, &["o", "o"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(p.root().join("by-command.txt").exists(), "{}", run.stdout);
    let report = audit_json(&p, &[]);
    assert_eq!(report["schema"], "warden.audit/1");
    let s = &report["sessions"][0];
    // Read once, lines 1-2, by readFile.
    let read = &s["files_read"][0];
    assert_eq!(read["path"], "notes.txt", "{s}");
    assert_eq!(read["ranges"], json!(["1-2"]));
    // Changed by the edit: one line out, two in, the call that undoes it named.
    let changed = s["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("notes.txt"))
        .unwrap_or_else(|| panic!("{s}"));
    assert_eq!(
        (changed["added"].as_u64(), changed["removed"].as_u64()),
        (Some(2), Some(1)),
        "{changed}"
    );
    assert_eq!(changed["tools"], json!(["editFile"]));
    assert!(
        changed["diff"]
            .as_str()
            .unwrap()
            .contains("+second, edited"),
        "{changed}"
    );
    // The command, with its exit and the sandbox it ran in (not "none").
    let commands = s["commands"].as_array().unwrap();
    let made = commands
        .iter()
        .find(|c| c["command"] == "echo made > by-command.txt")
        .unwrap();
    assert_eq!(made["exit_code"], 0);
    assert_ne!(made["sandbox_profile"], "none", "{made}");
    assert!(
        made["sandbox_layers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "seccomp"),
        "{made}"
    );
    assert_eq!(made["limits_hit"], json!([]), "{made}");
    // What the command changed in the workspace, as the session's watch saw it.
    assert_eq!(made["changed_files"], json!(["by-command.txt"]), "{made}");
    assert_eq!(
        s["files_changed_by_commands"],
        json!([{"path": "by-command.txt", "commands": [made["seq"]]}]),
        "{s}"
    );
    // Denied: the key, by the layer that refused it.
    let denied = &s["denied"][0];
    assert_eq!(denied["target"], "cat ~/.ssh/id_rsa", "{s}");
    assert_eq!(denied["layer"], "path_sandbox");
    // Two approvals, each once.
    let approvals = s["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 2, "{s}");
    assert!(
        approvals.iter().all(|a| a["answer"] == "once"),
        "{approvals:?}"
    );
    assert_eq!(s["status"], "finished");
    assert_eq!(report["totals"]["denied"], 1);
    same_facts_in_text_and_markdown(&p);
}

/// The facts of the first test's session, found in the text and the Markdown reports.
fn same_facts_in_text_and_markdown(p: &Project) {
    for format in ["text", "md"] {
        let out = p.run(&["audit", "--format", format]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        for fact in [
            "notes.txt",
            "echo made > by-command.txt",
            "cat ~/.ssh/id_rsa",
            "path_sandbox",
            "once",
        ] {
            assert!(
                out.stdout.contains(fact),
                "{format}: {fact}:\n{}",
                out.stdout
            );
        }
    }
    let md = p.run(&["audit", "--format", "md"]).stdout;
    assert!(md.contains("| notes.txt | 1-2 |"), "{md}");
    assert!(md.contains("```diff"), "{md}");
}

#[test]
fn a_session_without_calls_a_missing_trace_and_a_broken_one() {
    let p = Project::new();
    // Nothing recorded yet: said, and nothing written (not even an empty trace).
    let report = p.tmp().join("report.json");
    let out = p.run(&["audit", "-o", report.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("nothing has been recorded yet"),
        "{}",
        out.stderr
    );
    assert!(!report.exists());
    assert!(!p.home.join("warden/trace.db").exists());
    // A run that made no call: its audit holds nothing but its usage.
    let server = FakeProvider::start(vec![openai::text("Hello.").fast()]);
    let run = warden_run(&p, &server, &[], "say hello");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = p.run(&["audit", "--format", "json", "-o", report.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let s = &written["sessions"][0];
    for key in [
        "files_read",
        "files_changed",
        "commands",
        "denied",
        "approvals",
    ] {
        assert_eq!(s[key], json!([]), "{key}: {s}");
    }
    assert_eq!(s["usage"]["turns"], 1, "{s}");
    // A trace that is not one (its log still beside it): said, the earlier report left as it
    // was.
    std::fs::remove_file(&report).unwrap();
    std::fs::write(p.home.join("warden/trace.db"), "not a database, not at all").unwrap();
    let out = p.run(&["audit", "-o", report.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("trace"), "{}", out.stderr);
    assert!(!report.exists());
    // An unknown session is a usage error.
    let p = Project::new();
    let server = FakeProvider::start(vec![openai::text("Hello.").fast()]);
    warden_run(&p, &server, &[], "hi");
    let out = p.run(&["audit", "no-such-session"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
}

/// Debian's Chromium, if installed (required where `WARDEN_REQUIRE_PEERS` is set).
fn chromium() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("chromium"))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("WARDEN_REQUIRE_PEERS").is_none(),
            "chromium is not installed (see .ci/run)"
        );
        eprintln!("skipped: chromium is not installed");
    }
    found
}

/// The page at `url` as headless Chromium leaves its document, scripts run.
fn dom(chromium: &std::path::Path, url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_html_report_is_one_file_a_browser_shows_with_the_same_facts() {
    let Some(chromium) = chromium() else { return };
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let server = model_calling(&[
        Call::new("r1", "readFile", &json!({"path": "notes.txt"})),
        edit_notes(&p, "second <edited>"),
        Call::new("b1", "bash", &json!({"command": "cat ~/.ssh/id_rsa"})),
    ]);
    let run = warden_run(&p, &server, &["--mode", "accept-edits"], "tidy the notes");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = p.tmp().join("report.html");
    let out = p.run(&["audit", "--format", "html", "-o", report.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let html = std::fs::read_to_string(&report).unwrap();
    // Self-contained: nothing fetched from anywhere.
    for outside in ["<link", " src=", "@import", "url("] {
        assert!(!html.contains(outside), "{outside}");
    }
    // The trace's words are escaped, never markup.
    assert!(html.contains("second &lt;edited&gt;"), "{html}");
    let url = format!("file://{}", report.display());
    let page = dom(&chromium, &url);
    for fact in [
        "id=\"count-reads\"><b>1</b>",
        "id=\"count-writes\"><b>1</b>",
        "id=\"count-denials\"><b>1</b>",
        "readFile notes.txt",
        "bash cat ~/.ssh/id_rsa",
        "path_sandbox",
        "+second &lt;edited&gt;",
    ] {
        assert!(page.contains(fact), "{fact} is not in the page:\n{page}");
    }
    // The filters are the page's own script at work: reads hidden, the denied command shown.
    let filtered = dom(&chromium, &format!("{url}#hide=read"));
    // The opening tag of the first step of `kind`.
    let item = |page: &str, kind: &str| {
        let at = page.find(&format!("data-kind=\"{kind}\"")).unwrap();
        let start = page[..at].rfind("<li").unwrap();
        let end = at + page[at..].find('>').unwrap();
        page[start..end].to_owned()
    };
    assert!(item(&filtered, "read").contains("hidden"), "{filtered}");
    assert!(!item(&filtered, "command").contains("hidden"), "{filtered}");
    assert!(!item(&page, "read").contains("hidden"), "{page}");
}

#[test]
fn a_session_that_compacted_says_so() {
    let p = Project::new();
    let server = crate::agent::context::parts_to_compact(&p);
    let run = warden_run(
        &p,
        &server,
        &["--context-window", "3500"],
        "read every part",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = audit_json(&p, &[]);
    let compactions = report["sessions"][0]["compactions"].as_array().unwrap();
    assert!(!compactions.is_empty(), "{report}");
    assert_eq!(compactions[0]["trigger"], "threshold", "{report}");
    assert!(compactions[0]["messages"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(
        report["sessions"][0]["files_read"]
            .as_array()
            .unwrap()
            .len(),
        16
    );
    // What did not fit, layer by layer, before and besides the summary.
    let cuts = report["sessions"][0]["context_cuts"].as_array().unwrap();
    assert!(
        cuts.iter()
            .any(|c| c["dropped"].as_u64().unwrap() + c["trimmed"].as_u64().unwrap() > 0),
        "{report}"
    );
    let text = p.run(&["audit"]).stdout;
    assert!(text.contains("threshold"), "{text}");
}

#[test]
fn a_manifest_run_s_receipt_is_in_its_audit_and_its_checksums_are_checked() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    crate::manifest_run::repo(&p);
    let text = crate::manifest_run::test_and_patch(&p);
    let file = crate::manifest_run::manifest(&p, "m.yaml", &text);
    let script = "cd /workspace && python3 test_slug.py > /scratch/test-results.xml; true";
    let run = p.run(&["manifest", "run", &file, "--json", "--", "sh", "-c", script]);
    let receipt: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    let run_id = receipt["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}{}", run.stdout, run.stderr));
    let report = audit_json(&p, &[run_id]);
    let audited = &report["sessions"][0]["receipts"][0];
    assert_eq!(audited["run_id"], run_id, "{report}");
    assert_eq!(audited["verified"], true, "{audited}");
    let kept = audited["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["check"] == "verified")
        .unwrap_or_else(|| panic!("{audited}"));
    // An artifact changed since the run no longer checks.
    std::fs::write(kept["stored"].as_str().unwrap(), "not what was kept").unwrap();
    let report = audit_json(&p, &[run_id]);
    let audited = &report["sessions"][0]["receipts"][0];
    assert_eq!(audited["verified"], false, "{audited}");
    assert!(
        audited["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["check"] == "changed"),
        "{audited}"
    );
}

#[test]
fn an_agent_session_under_a_manifest_names_its_run_and_what_its_commands_changed() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    crate::manifest_run::repo(&p);
    let text = crate::manifest_run::test_and_patch(&p);
    let file = crate::manifest_run::manifest(&p, "m.yaml", &text);
    let server = model_calling(&[Call::new(
        "b1",
        "bash",
        &json!({"command": "echo made > made-here.txt"}),
    )]);
    let run = warden_run(
        &p,
        &server,
        &["--manifest", &file, "--mode", "auto", "--on-ask", "allow"],
        "make a file",
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let report = audit_json(&p, &["--all"]);
    let session = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| !s["commands"].as_array().unwrap().is_empty())
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(session["receipts"][0]["status"], "succeeded", "{session}");
    assert_eq!(session["receipts"][0]["verified"], true, "{session}");
    assert_eq!(
        session["commands"][0]["changed_files"],
        json!(["made-here.txt"]),
        "{session}"
    );
}

#[test]
fn a_command_s_changes_in_another_writable_root_are_named_by_their_path() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let outside = p.home.join("shared");
    std::fs::create_dir_all(&outside).unwrap();
    p.user_settings("[sandbox.filesystem]\nallow_write = [\"~/shared\"]\n");
    let target = outside.join("made.txt");
    let server = model_calling(&[Call::new(
        "b1",
        "bash",
        &json!({"command": format!("echo x > {} && echo y > here.txt", target.display())}),
    )]);
    let run = warden_run(&p, &server, &["--on-ask", "allow"], "write outside");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(target.exists(), "{}", run.stdout);
    let report = audit_json(&p, &[]);
    let command = &report["sessions"][0]["commands"][0];
    assert_eq!(
        command["changed_files"],
        json!(["here.txt", target.display().to_string()]),
        "{command}"
    );
}
