//! `warden run` end to end against a scripted provider on loopback that speaks the real wire
//! formats: tool use over several turns, parallel calls, calls in pieces, cut streams, bad
//! calls, retries, approvals, budgets, resume after `kill -9`, and the name-cleaner story.

mod approvals;
pub(crate) mod context;
mod terminal;

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use warden_fake_provider::{Call, FakeProvider, Reply, anthropic, openai};

use crate::support::{
    Project, Run, finish, model_calling, of_kind, on_a_terminal, sandbox_available, warden_run,
};

fn events(run: &Run) -> Vec<Value> {
    crate::support::events(&run.stdout)
}

fn finished(events: &[Value]) -> &Value {
    of_kind(events, "session_finished")
        .last()
        .copied()
        .unwrap_or_else(|| panic!("no session_finished in {events:?}"))
}

/// The tool results the model was sent in request `n` (0-based), by call id.
pub(crate) fn results_sent(server: &FakeProvider, n: usize) -> Vec<(String, String)> {
    let body = server.received()[n].json();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A tool result's JSON, after the line that labels it as data from its source.
fn payload(content: &str) -> Value {
    let json = content
        .split_once('\n')
        .filter(|(label, _)| label.starts_with("[output of "))
        .map_or(content, |(_, rest)| rest);
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {content}"))
}

fn name_cleaner(p: &Project) {
    p.write(
        "package.json",
        r#"{"name": "name-cleaner", "version": "1.0.0", "scripts": {"test": "node --test"}}"#,
    );
    p.write(
        "src/slugify.js",
        "exports.slugify = (s) => s.trim().toLowerCase().replace(/\\s/g, '-');\n",
    );
    p.write(
        "test/slugify.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\n\
         const { slugify } = require('../src/slugify');\n\
         test('runs of spaces become one dash', () => {\n  \
         assert.strictEqual(slugify('  Ada   Lovelace '), 'ada-lovelace');\n});\n",
    );
}

#[test]
fn the_name_cleaner_is_fixed_over_several_turns_with_parallel_reads() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    name_cleaner(&p);
    let server = FakeProvider::start(vec![
        openai::calls(
            "Reading the code and the tests.",
            &[
                Call::new("r1", "readFile", &json!({"path": "src/slugify.js"})),
                Call::new("r2", "glob", &json!({"pattern": "test/*.js"})),
                Call::new("r3", "grep", &json!({"pattern": "slugify", "path": "test"})),
            ],
            5,
        ),
        openai::calls(
            "",
            &[Call::new(
                "e1",
                "editFile",
                &json!({"path": "src/slugify.js", "oldString": "/\\s/g", "newString": "/\\s+/g"}),
            )],
            4,
        ),
        openai::calls(
            "",
            &[
                Call::new(
                    "p1",
                    "updatePlan",
                    &json!({"plan": ["fix regex (done)", "run tests"]}),
                ),
                Call::new("t1", "bash", &json!({"command": "npm test"})),
            ],
            6,
        ),
        openai::text("Fixed: slugify now turns runs of whitespace into one dash."),
    ]);
    let run = warden_run(
        &p,
        &server,
        &["--on-ask", "allow"],
        "Fix the slug of names with several spaces",
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let events = events(&run);
    assert_eq!(finished(&events)["status"], "finished");
    assert_eq!(finished(&events)["turns"], 4);
    assert!(
        std::fs::read_to_string(p.root().join("src/slugify.js"))
            .unwrap()
            .contains("/\\s+/g")
    );
    // The reads of turn one ran, and went back in call order.
    let first = results_sent(&server, 1);
    let ids: Vec<&str> = first.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["r1", "r2", "r3"]);
    assert!(first[0].1.contains("replace(/\\\\s/g"), "{}", first[0].1);
    // npm test needed approval (given by --on-ask allow) and passed in the sandbox.
    let tests = results_sent(&server, 3);
    let npm = &tests.iter().find(|(id, _)| id == "t1").unwrap().1;
    assert!(
        npm.starts_with("[output of bash "),
        "tool output is labelled: {npm}"
    );
    let npm = payload(npm);
    assert_eq!(npm["exitCode"], 0, "{npm}");
    let decisions = of_kind(&events, "policy_decision");
    assert!(
        decisions.iter().any(|d| d["id"] == "t1"
            && d["decision"] == "allow"
            && d["reason"].as_str().unwrap().contains("--on-ask allow")),
        "{decisions:?}"
    );
    // The plan is in the system prompt of the next request.
    let last = server.received()[3].json();
    assert!(
        last["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("run tests")
    );
    // The session is saved as finished, and the trace has every call.
    let sessions = p.run(&["sessions", "--json"]);
    let sessions: Value = serde_json::from_str(&sessions.stdout).unwrap();
    assert_eq!(sessions[0]["status"], "finished");
    let id = sessions[0]["sessionId"].as_str().unwrap();
    let trace = p.run(&["trace", "show", id, "--json"]);
    assert_eq!(trace.code, 0, "{}", trace.stderr);
    assert!(trace.stdout.contains("editFile") && trace.stdout.contains("npm test"));
}

#[test]
fn without_approval_edits_and_commands_are_refused_and_the_model_is_told() {
    let p = Project::new();
    name_cleaner(&p);
    let server = FakeProvider::start(vec![
        openai::calls(
            "",
            &[
                Call::new(
                    "e1",
                    "editFile",
                    &json!({"path": "src/slugify.js", "oldString": "/\\s/g", "newString": "/x/"}),
                ),
                Call::new("t1", "bash", &json!({"command": "npm test"})),
            ],
            8,
        ),
        openai::text("I could not do it without approval."),
    ]);
    let run = warden_run(&p, &server, &[], "fix it");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::read_to_string(p.root().join("src/slugify.js"))
            .unwrap()
            .contains("/\\s/g")
    );
    let sent = results_sent(&server, 1);
    assert_eq!(sent.len(), 2);
    for (_, content) in &sent {
        assert!(
            content.contains("needs_approval") || content.contains("require_approval"),
            "{content}"
        );
    }
    let events = events(&run);
    assert_eq!(of_kind(&events, "approval_resolved").len(), 2);
}

#[test]
fn a_stream_cut_mid_call_runs_nothing_and_bad_calls_go_back_to_the_model() {
    let p = Project::new();
    let whole = openai::calls(
        "",
        &[Call::new(
            "b1",
            "writeFile",
            &json!({"path": "ran.txt", "content": "x"}),
        )],
        3,
    );
    let cut = whole.clone().cut_after(whole.chunks.len() / 2);
    let server = FakeProvider::start(vec![
        cut,
        openai::calls(
            "",
            &[
                Call::new("u1", "noSuchTool", &json!({})),
                Call::new("u2", "readFile", &json!({"path": 5})),
                Call {
                    id: "u3",
                    name: "glob",
                    arguments: "{\"pattern\": ".into(),
                },
            ],
            7,
        ),
        openai::text("Giving up."),
    ]);
    let run = warden_run(&p, &server, &["--on-ask", "allow"], "try things");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!p.root().join("ran.txt").exists(), "a cut call ran");
    // The cut answer was asked for again; the second answer's calls all failed, and said why.
    assert_eq!(server.received().len(), 3);
    let sent = results_sent(&server, 2);
    assert_eq!(sent.len(), 3);
    assert!(sent[0].1.contains("noSuchTool"), "{}", sent[0].1);
    assert!(sent[1].1.contains("/path"), "{}", sent[1].1);
    assert!(sent[2].1.contains("not valid JSON"), "{}", sent[2].1);
}

#[test]
fn providers_are_retried_when_busy_and_a_bad_key_ends_the_run() {
    let p = Project::new();
    let server = FakeProvider::start(vec![
        Reply::status(429, "slow down").header("retry-after", "1"),
        openai::text("hello"),
    ]);
    let run = warden_run(&p, &server, &[], "hi");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(of_kind(&events(&run), "retry").len(), 1);

    let server = FakeProvider::start(vec![Reply::status(401, "bad key")]);
    let run = warden_run(&p, &server, &[], "hi");
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("test-model")
            && run.stderr.contains(&server.url())
            && run.stderr.contains("401"),
        "{}",
        run.stderr
    );
    assert_eq!(server.received().len(), 1);
}

#[test]
fn anthropic_messages_work_end_to_end() {
    let p = Project::new();
    p.write("notes.md", "remember the milk\n");
    let server = FakeProvider::start(vec![
        anthropic::calls(
            "Let me look.",
            &[Call::new("t1", "readFile", &json!({"path": "notes.md"}))],
            5,
        ),
        anthropic::text("It says to remember the milk."),
    ]);
    let url = server.url();
    let run = p.run(&[
        "run",
        "--json",
        "--model",
        "anthropic/claude-test",
        "--base-url",
        &url,
        "what do my notes say?",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let second = server.received()[1].json();
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("remember the milk")
    );
    assert_eq!(of_kind(&events(&run), "assistant_text").len(), 2);
}

#[test]
fn every_budget_stops_the_run_with_exit_3() {
    let p = Project::new();
    p.write("a.txt", "a\n");
    let again = || openai::calls("", &[Call::new("g", "glob", &json!({"pattern": "*"}))], 50);
    let two = || {
        openai::calls(
            "",
            &[
                Call::new("g1", "glob", &json!({"pattern": "*"})),
                Call::new("g2", "glob", &json!({"pattern": "*.txt"})),
            ],
            50,
        )
    };
    // The project's settings set the budgets (and a model's price): trusted.
    p.trust();
    let settings = p.root().join(".warden/settings.toml");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let cases: Vec<(&str, Vec<&str>, Vec<Reply>, &str)> = vec![
        (
            "",
            vec!["--max-turns", "2"],
            vec![again(), again(), again()],
            "max_turns",
        ),
        (
            "[budgets]\nmax_tokens = 200\n",
            vec![],
            vec![again(), again(), again()],
            "max_tokens",
        ),
        (
            "[budgets]\nmax_tool_calls = 1\n",
            vec![],
            vec![two(), again()],
            "max_tool_calls",
        ),
        (
            "[model.prices.test-model]\ninput_per_mtok = 1000000.0\noutput_per_mtok = 0.0\n",
            vec!["--max-cost", "1"],
            vec![again(), again()],
            "max_cost_usd",
        ),
        (
            "[budgets]\nmax_wall_seconds = 1\n",
            vec!["--allow", "Bash(sleep *)"],
            vec![
                openai::calls(
                    "",
                    &[Call::new("s", "bash", &json!({"command": "sleep 1.5"}))],
                    50,
                ),
                again(),
            ],
            "max_wall_seconds",
        ),
    ];
    for (toml, flags, replies, budget) in cases {
        if budget == "max_wall_seconds" && !sandbox_available(&p) {
            continue;
        }
        std::fs::write(&settings, toml).unwrap();
        let server = FakeProvider::start(replies);
        let run = warden_run(&p, &server, &flags, "loop");
        assert_eq!(run.code, 3, "{budget}: {}\n{}", run.stdout, run.stderr);
        let events = events(&run);
        let end = finished(&events);
        assert_eq!(end["status"], "budget_exhausted", "{budget}");
        assert!(
            end["budget"].as_str().unwrap().starts_with(budget),
            "{budget}: {end}"
        );
    }
}

/// Starts `warden run --json` against a provider that asks for `command` (touch and sleep
/// allowed), and waits until `started` says the command is running.
fn running_in_background(
    p: &Project,
    command: &str,
    started: impl Fn(&std::path::Path) -> bool,
) -> (std::process::Child, FakeProvider) {
    let server = FakeProvider::start(vec![openai::calls(
        "",
        &[Call::new("s1", "bash", &json!({"command": command}))],
        20,
    )]);
    let base = format!("{}/v1", server.url());
    let child = crate::support::agent_command(p, &base)
        .args([
            "--allow",
            "Bash(touch *)",
            "--allow",
            "Bash(sleep *)",
            "do a long thing",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let since = std::time::Instant::now();
    while !started(&p.root()) {
        assert!(since.elapsed().as_secs() < 60, "the command never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (child, server)
}

#[test]
fn a_run_killed_mid_command_resumes_and_the_command_is_reported_not_rerun() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let (mut child, _server) = running_in_background(&p, "touch started-$$; sleep 27183", |root| {
        std::fs::read_dir(root)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("started-"))
    });
    // The command runs: kill warden outright.
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let first_line = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let id = serde_json::from_str::<Value>(&first_line).unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let sleeping = || {
        !finish(
            &Command::new("pgrep")
                .args(["-f", "sleep 27183"])
                .output()
                .unwrap(),
        )
        .stdout
        .trim()
        .is_empty()
    };
    assert!(!sleeping(), "the sandboxed command outlived warden");
    let listed = p.run(&["sessions"]);
    assert!(
        listed.stdout.contains(&id) && listed.stdout.contains("running"),
        "{}",
        listed.stdout
    );

    let server2 = FakeProvider::start(vec![openai::text(
        "The long thing was interrupted; not repeating it.",
    )]);
    let base2 = format!("{}/v1", server2.url());
    let resumed = p.run(&["resume", "--json", "--base-url", &base2, &id]);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    let sent = results_sent(&server2, 0);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, "s1");
    assert!(sent[0].1.contains("interrupted"), "{}", sent[0].1);
    let starts = std::fs::read_dir(p.root())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("started-"))
        .count();
    assert_eq!(starts, 1, "the command ran again");
    assert!(!sleeping());
    // A finished run needs a new prompt to go on.
    let again = p.run(&["resume", "--base-url", &base2, &id]);
    assert_eq!(again.code, 2, "{}", again.stderr);
}

#[test]
fn the_private_probe_is_refused_everywhere_and_its_content_appears_nowhere() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let probe = p.home.join("Private/sandbox-probe.txt");
    std::fs::create_dir_all(probe.parent().unwrap()).unwrap();
    std::fs::write(&probe, "PROBE-SECRET-31337\n").unwrap();
    assert!(
        std::fs::read_to_string(&probe)
            .unwrap()
            .contains("PROBE-SECRET")
    );
    p.write(
        ".warden/settings.toml",
        "[permissions]\ndeny = [\"Read(~/Private/**)\"]\n",
    );
    let path = probe.display().to_string();
    let dir = probe.parent().unwrap().display().to_string();
    let server = FakeProvider::start(vec![
        openai::calls(
            "",
            &[
                Call::new("a", "readFile", &json!({"path": path})),
                Call::new("b", "grep", &json!({"pattern": "PROBE", "path": dir})),
                Call::new("c", "bash", &json!({"command": format!("cat {path}")})),
                Call::new(
                    "d",
                    "bash",
                    &json!({"command": format!("node -e \"console.log(require('fs').readFileSync('{path}','utf8'))\"")}),
                ),
                // Past the engine: nothing in this command names the file, so only the sandbox
                // stands between it and the probe.
                Call::new(
                    "e",
                    "bash",
                    &json!({"command": "cat \"$HOME/Priv\"ate/sandbox-probe.txt"}),
                ),
            ],
            9,
        ),
        openai::text("I cannot read that file."),
    ]);
    let run = warden_run(
        &p,
        &server,
        &["--on-ask", "allow"],
        "show me ~/Private/sandbox-probe.txt",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let sent = results_sent(&server, 1);
    assert_eq!(sent.len(), 5);
    for (id, content) in &sent {
        assert!(!content.contains("PROBE-SECRET"), "{id}: {content}");
    }
    // a–d were refused by the policy; e ran and the sandbox hid the file.
    let events = events(&run);
    for id in ["a", "b", "c", "d"] {
        let d = of_kind(&events, "policy_decision")
            .into_iter()
            .find(|d| d["id"] == id)
            .unwrap_or_else(|| panic!("{id}: no decision"));
        assert_eq!(d["decision"], "deny", "{id}: {d}");
    }
    let e = payload(&sent[4].1);
    assert_ne!(e["exitCode"], 0, "{e}");
    assert!(!run.stdout.contains("PROBE-SECRET") && !run.stderr.contains("PROBE-SECRET"));
    for request in server.received() {
        assert!(!request.body.contains("PROBE-SECRET"));
    }
    let trace_dir = p.home.join("warden");
    for entry in crate::support::files_under(&trace_dir) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("PROBE-SECRET"),
            "{}",
            entry.display()
        );
    }
}
