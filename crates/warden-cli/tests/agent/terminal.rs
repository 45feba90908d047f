//! A person at the terminal: approvals once, for the session, always or denied; rewrites,
//! escalations and permission requests put to them; Ctrl-C; keys never shown.

use super::*;

#[test]
fn approvals_on_a_terminal_once_session_always_and_deny() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    name_cleaner(&p);
    let test = |id| Call::new(id, "bash", &json!({"command": "npm test"}));
    let server = FakeProvider::start(vec![
        openai::calls(
            "",
            &[Call::new("o1", "bash", &json!({"command": "node --test"}))],
            9,
        ),
        openai::calls("", &[test("s1")], 9),
        openai::calls("", &[test("s2")], 9),
        openai::calls(
            "",
            &[Call::new(
                "a1",
                "editFile",
                &json!({"path": "src/slugify.js", "oldString": "/\\s/g", "newString": "/\\s+/g"}),
            )],
            9,
        ),
        openai::calls(
            "",
            &[Call::new("d1", "bash", &json!({"command": "npm run lint"}))],
            9,
        ),
        openai::text("Done."),
    ]);
    let base = format!("{}/v1", server.url());
    let run = on_a_terminal(
        &p,
        &[
            env!("CARGO_BIN_EXE_warden"),
            "run",
            "--model",
            "openai/test-model",
            "--base-url",
            &base,
            "fix it",
        ],
        &["o", "s", "a", "d"],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    // Four questions: the second npm test was covered by the session rule.
    assert_eq!(run.stdout.matches("allow? ").count(), 4, "{}", run.stdout);
    assert!(run.stdout.contains("approval needed") && run.stdout.contains("risk:"));
    // The story as a person sees it: the narrow rule, the edit's diff, the test's own output.
    assert!(
        run.stdout.contains("rule:      Bash(npm test *)")
            && run.stdout.contains("rule:      Edit(/src/slugify.js)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("+exports.slugify = (s) => s.trim().toLowerCase().replace(/\\s+/g"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  │ ") && run.stdout.contains("runs of spaces become one dash"),
        "{}",
        run.stdout
    );
    let result = |n: usize, id: &str| {
        results_sent(&server, n)
            .into_iter()
            .find(|(i, _)| i == id)
            .unwrap()
            .1
    };
    assert!(
        result(1, "o1").contains("\"exitCode\":"),
        "{}",
        result(1, "o1")
    );
    assert!(result(2, "s1").contains("\"exitCode\":"));
    assert!(result(3, "s2").contains("\"exitCode\":"));
    assert!(
        std::fs::read_to_string(p.root().join("src/slugify.js"))
            .unwrap()
            .contains("/\\s+/g")
    );
    assert!(!p.root().join(".warden/settings.local.toml").exists());
    let local = p.remembered();
    assert!(local.contains("Edit(/src/slugify.js)"), "{local}");
    assert!(
        !local.contains("npm test"),
        "a session answer is not saved: {local}"
    );
    assert!(
        result(5, "d1").contains("denied by the user"),
        "{}",
        result(5, "d1")
    );
}

#[test]
fn ctrl_c_kills_the_running_command_saves_and_exits_130() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let (child, _server) = running_in_background(&p, "touch begun; sleep 31419", |root| {
        root.join("begun").exists()
    });
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"status\":\"interrupted\""), "{stdout}");
    let alive = finish(
        &Command::new("pgrep")
            .args(["-f", "sleep 31419"])
            .output()
            .unwrap(),
    );
    assert!(
        alive.stdout.trim().is_empty(),
        "the command outlived Ctrl-C"
    );
    let sessions: Value = serde_json::from_str(&p.run(&["sessions", "--json"]).stdout).unwrap();
    assert_eq!(sessions[0]["status"], "interrupted");
}

/// A host listener on loopback answering one line to every connection; the count of
/// connections it took.
fn host_listener() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::Write as _;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ =
                stream.write_all(b"HTTP/1.0 200 OK\r\ncontent-length: 12\r\n\r\nHOST-HELLO\r\n");
        }
    });
    (port, count)
}

#[test]
fn rewrites_escalations_and_permission_requests_are_put_to_a_person() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    name_cleaner(&p);
    p.write("build/out.txt", "built\n");
    let (port, connections) = host_listener();
    let fetch = format!("curl -s http://127.0.0.1:{port}/");
    let script = || {
        vec![
            openai::calls(
                "",
                &[Call::new("r1", "bash", &json!({"command": "rm -rf build"}))],
                9,
            ),
            openai::calls(
                "",
                &[Call::new("n1", "bash", &json!({"command": fetch}))],
                9,
            ),
            openai::calls(
                "",
                &[Call::new(
                    "q1",
                    "requestPermission",
                    &json!({"permission": "Bash(npm test *)", "reason": "to check the fix"}),
                )],
                9,
            ),
            openai::calls(
                "",
                &[Call::new("t1", "bash", &json!({"command": "npm test"}))],
                9,
            ),
            openai::text("Done."),
        ]
    };
    // Without a terminal: the rewrite goes back to the model as a suggestion, the escalation is
    // refused (no flag widens the sandbox), the permission is granted by --on-ask allow.
    let server = FakeProvider::start(script());
    let run = warden_run(&p, &server, &["--on-ask", "allow"], "clean up and check");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        p.root().join("build/out.txt").exists(),
        "a rewrite ran silently"
    );
    let sent = |n: usize, server: &FakeProvider| results_sent(server, n).pop().unwrap().1;
    assert!(
        sent(1, &server).contains(".warden-trash"),
        "{}",
        sent(1, &server)
    );
    assert!(
        sent(2, &server).contains("require_escalation"),
        "{}",
        sent(2, &server)
    );
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(sent(3, &server).contains("granted"), "{}", sent(3, &server));
    assert!(
        sent(4, &server).contains("node --test"),
        "npm test ran: {}",
        sent(4, &server)
    );

    // On a terminal: the rewrite is what runs, the network is given to that one command, and the
    // permission granted for the session covers the next command without another question.
    let server = FakeProvider::start(script());
    let base = format!("{}/v1", server.url());
    let run = on_a_terminal(
        &p,
        &[
            env!("CARGO_BIN_EXE_warden"),
            "run",
            "--model",
            "openai/test-model",
            "--base-url",
            &base,
            "clean up and check",
        ],
        &["o", "o", "s"],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.stdout.matches("allow? ").count(), 3, "{}", run.stdout);
    assert!(!p.root().join("build").exists());
    assert!(
        p.root().join(".warden-trash/build/out.txt").exists(),
        "moved, not deleted"
    );
    assert!(
        sent(2, &server).contains("HOST-HELLO"),
        "{}",
        sent(2, &server)
    );
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(
        sent(4, &server).contains("node --test"),
        "npm test ran: {}",
        sent(4, &server)
    );
}

#[test]
fn keys_are_never_printed_or_traced_and_no_model_is_a_usage_error() {
    let p = Project::new();
    let server = FakeProvider::start(vec![openai::text("hello")]);
    let base = format!("{}/v1", server.url());
    let key = "sk-test-0123456789abcdefSECRET";
    let out = crate::support::agent_command(&p, &base)
        .env("OPENAI_API_KEY", key)
        .args(["hi"])
        .output()
        .unwrap();
    let run = finish(&out);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        server.received()[0].header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    assert!(!run.stdout.contains("SECRET") && !run.stderr.contains("SECRET"));
    for file in crate::support::files_under(&p.home) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("SECRET"),
            "{}",
            file.display()
        );
    }
    // Nothing configured, no key, no local server (an empty settings file names no default).
    let none = p.run(&["run", "hi"]);
    if none.code == 2 {
        assert!(
            none.stderr.contains("--model PROVIDER/MODEL"),
            "{}",
            none.stderr
        );
    } else {
        // A local model server is answering on this machine's usual port.
        assert!(
            std::net::TcpStream::connect("127.0.0.1:11434").is_ok()
                || std::net::TcpStream::connect("127.0.0.1:8080").is_ok(),
            "{}",
            none.stderr
        );
    }
}

#[test]
fn an_approvals_event_carries_the_change_each_file_tool_would_make() {
    let p = Project::new();
    name_cleaner(&p);
    p.write("notes.md", &"a line of notes\n".repeat(60));
    let patch = "*** Begin Patch\n*** Update File: src/slugify.js\n@@\n-exports.slugify = (s) => s.trim().toLowerCase().replace(/\\s/g, '-');\n+exports.slugify = (s) => s.trim().toLowerCase().replace(/\\s+/g, '-');\n*** Add File: src/new.js\n+exports.x = 1;\n+exports.y = 2;\n*** End Patch";
    let server = FakeProvider::start(vec![
        openai::calls(
            "",
            &[
                Call::new(
                    "e1",
                    "editFile",
                    &json!({"path": "src/slugify.js", "oldString": "/\\s/g", "newString": "/\\s+/g"}),
                ),
                Call::new(
                    "w1",
                    "writeFile",
                    &json!({"path": "notes.md", "content": "one line now\n"}),
                ),
                Call::new("p1", "apply_patch", &json!({ "patch": patch })),
                Call::new(
                    "b1",
                    "bash",
                    &json!({"command": "npm install left-pad > install.log"}),
                ),
            ],
            9,
        )
        .fast(),
        openai::text("Asked.").fast(),
    ]);
    // Without a person: the preview is in each approval's event, and nothing was written.
    let run = warden_run(&p, &server, &[], "fix it");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let asked = of_kind(&events(&run), "approval_requested")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(asked.len(), 4, "{asked:?}");
    let preview = |tool: &str| {
        asked
            .iter()
            .find(|e| e["tool"] == tool)
            .and_then(|e| e["preview"].as_str())
            .unwrap_or_else(|| panic!("no preview for {tool}: {asked:?}"))
            .to_owned()
    };
    let edit = preview("editFile");
    assert!(
        edit.contains("-exports.slugify = (s) => s.trim().toLowerCase().replace(/\\s/g, '-');")
            && edit.contains(
                "+exports.slugify = (s) => s.trim().toLowerCase().replace(/\\s+/g, '-');"
            ),
        "{edit}"
    );
    let write = preview("writeFile");
    assert!(
        write.contains("-a line of notes") && write.contains("+one line now"),
        "{write}"
    );
    let patched = preview("apply_patch");
    assert!(
        patched.contains("update src/slugify.js (+1 -1)")
            && patched.contains("add src/new.js (+2)"),
        "{patched}"
    );
    // A command, as the policy understood it.
    let command = preview("bash");
    assert!(
        command.contains("runs:   npm install left-pad")
            && command.contains("writes: install.log (redirected)"),
        "{command}"
    );
    assert!(asked.iter().all(|e| e["previewTruncated"] == false));
    assert!(
        std::fs::read_to_string(p.root().join("notes.md"))
            .unwrap()
            .starts_with("a line of notes"),
        "a preview writes nothing"
    );
}

#[test]
fn on_a_terminal_the_change_is_shown_and_a_long_one_is_cut_with_a_key_to_see_it_all() {
    let p = Project::new();
    p.write("notes.md", &"a line of notes\n".repeat(60));
    let server = FakeProvider::start(vec![
        openai::calls(
            "",
            &[Call::new(
                "w2",
                "writeFile",
                &json!({"path": "notes.md", "content": "one line now\n"}),
            )],
            9,
        ),
        openai::text("Done."),
    ]);
    let base = format!("{}/v1", server.url());
    let run = on_a_terminal(
        &p,
        &[
            env!("CARGO_BIN_EXE_warden"),
            "run",
            "--model",
            "openai/test-model",
            "--base-url",
            &base,
            "shorten the notes",
        ],
        &["v", "d"],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("change:"), "{}", run.stdout);
    assert!(
        run.stdout.contains("more lines ([v]iew them all)"),
        "{}",
        run.stdout
    );
    // Seen whole after `v`: the sixtieth removed line is there.
    assert!(
        run.stdout.matches("-a line of notes").count() >= 60,
        "{}",
        run.stdout
    );
}
