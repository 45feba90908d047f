//! Sessions over time: an interactive session on a terminal with its own commands, a handoff to
//! another agent, a switch to a smaller window, pinned constraints, and a task read from
//! standard input.

use std::io::Write as _;
use std::process::Stdio;

use serde_json::{Value, json};
use warden_fake_provider::{Call, FakeProvider, Reply, openai};

use crate::support::{Project, events, finish, in_a_session, warden_run};

fn read(id: &str, path: &str) -> Reply {
    openai::calls("", &[Call::new(id, "readFile", &json!({"path": path}))], 20).fast()
}

/// The summariser of these tests keeps the headings and drops every identifier.
fn lossy_summary() -> Reply {
    openai::text("## Goal\nRead the files.\n## Progress\nRead them.").fast()
}

fn files(p: &Project, n: usize, lines: usize) {
    for i in 0..n {
        p.write(
            &format!("src/part{i}.rs"),
            &format!("// part {i}: see https://example.com/spec/{i}\n").repeat(lines),
        );
    }
}

/// The system prompt of request `n`.
fn system_of(server: &FakeProvider, n: usize) -> String {
    server.received()[n].json()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn an_interactive_session_takes_messages_and_its_own_commands() {
    let p = Project::new();
    files(&p, 2, 5);
    let server = FakeProvider::start(vec![
        read("a", "src/part0.rs"),
        read("b", "src/part1.rs"),
        openai::text("Both read.").fast(),
        openai::text("Still here.").fast(),
    ])
    .answering("handoff summaries", lossy_summary());
    let base = format!("{}/v1", server.url());
    let warden = env!("CARGO_BIN_EXE_warden");
    let run = in_a_session(
        &p,
        &[
            warden,
            "run",
            "--model",
            "openai/test-model",
            "--base-url",
            &base,
        ],
        &[],
        &[
            "read both parts",
            "/pin never edit migrations/",
            "/pins",
            "/bogus",
            "and now?",
            "/compact",
            "/context",
            "/help",
            "/exit",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let out = &run.stdout;
    for said in [
        "interactive session",
        "Both read.",
        "pinned: never edit migrations/",
        "1. never edit migrations/",
        "unknown command /bogus",
        "Still here.",
        "compacted 5 messages into a summary",
        "files_references",
        "/unpin N",
    ] {
        assert!(out.contains(said), "{said:?} missing:\n{out}");
    }
    // The second message went with the first conversation, and the pin with the rules.
    let received = server.received();
    let second = received
        .iter()
        .filter(|r| !r.body.contains("handoff summaries"))
        .nth(3)
        .unwrap()
        .json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"], "read both parts");
    assert_eq!(messages.last().unwrap()["content"], "and now?");
    let system = messages[0]["content"].as_str().unwrap();
    assert!(
        system.contains("Constraints the user pinned") && system.contains("never edit migrations/"),
        "{system}"
    );
    // The session was saved and can be resumed.
    let sessions = p.run(&["sessions", "--json"]).json();
    assert_eq!(sessions[0]["goal"], "read both parts");
    let id = sessions[0]["sessionId"].as_str().unwrap();
    let shown = p.run(&["context", "show", id, "--json", "--items"]).json();
    let items = shown["items"].as_array().unwrap();
    assert!(
        items.len() < 8,
        "the compacted part is one summary: {shown}"
    );
}

#[test]
fn ctrl_d_or_ctrl_c_at_the_first_prompt_leaves_without_a_run() {
    let p = Project::new();
    let server = FakeProvider::start(Vec::new());
    let base = format!("{}/v1", server.url());
    let warden = env!("CARGO_BIN_EXE_warden");
    let run = in_a_session(
        &p,
        &[
            warden,
            "run",
            "--model",
            "openai/test-model",
            "--base-url",
            &base,
        ],
        &[],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        server.received().is_empty(),
        "no model call without a message"
    );
    // Ctrl-C at the prompt leaves at once, as Ctrl-C does.
    let run = in_a_session(
        &p,
        &[
            warden,
            "run",
            "--model",
            "openai/test-model",
            "--base-url",
            &base,
        ],
        &[],
        &["\u{3}"],
    );
    assert_eq!(run.code, 130, "{}", run.stdout);
}

#[test]
fn a_handoff_prints_the_whole_run_as_a_summary_that_keeps_every_identifier() {
    let p = Project::new();
    files(&p, 3, 5);
    let server = FakeProvider::start(vec![
        read("a", "src/part0.rs"),
        read("b", "src/part1.rs"),
        read("c", "src/part2.rs"),
        openai::text("All three read; see commit 1a2b3c4d.").fast(),
    ])
    .answering("handoff summaries", lossy_summary());
    let base = format!("{}/v1", server.url());
    let run = warden_run(&p, &server, &[], "read the parts");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = events(&run.stdout)[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let handoff = p.run(&["handoff", "--json", "--base-url", &base, &id]);
    assert_eq!(handoff.code, 0, "{}", handoff.stderr);
    let out = handoff.json();
    assert_eq!(out["sessionId"], id.as_str());
    // All of it but the task, the last answer too.
    assert_eq!(out["messages"], 7);
    let sections = out["sections"].as_object().unwrap();
    for heading in warden_context::compaction::SECTIONS {
        assert!(sections.contains_key(heading), "{heading}: {out}");
    }
    let files = sections["Files And Symbols"].as_str().unwrap();
    for path in ["src/part0.rs", "src/part1.rs", "src/part2.rs"] {
        assert!(files.contains(path), "{path} lost: {files}");
    }
    let evidence = sections["Tool Evidence"].as_str().unwrap();
    assert!(
        evidence.contains("https://example.com/spec/2") && evidence.contains("1a2b3c4d"),
        "{evidence}"
    );
    assert!(!out["restoredIdentifiers"].as_array().unwrap().is_empty());
    // Text for the next agent, by default; the run goes on from the summary.
    let text = p.run(&["handoff", "--base-url", &base, &id]);
    assert!(text.stdout.starts_with("## Goal\n"), "{}", text.stdout);
    let shown = p.run(&["context", "show", &id, "--json", "--items"]).json();
    assert_eq!(shown["items"].as_array().unwrap().len(), 2, "{shown}");
}

#[test]
fn a_switch_to_a_smaller_window_compacts_once_before_the_first_call() {
    let p = Project::new();
    files(&p, 4, 120);
    let server = FakeProvider::start(vec![
        read("a", "src/part0.rs"),
        read("b", "src/part1.rs"),
        read("c", "src/part2.rs"),
        read("d", "src/part3.rs"),
        openai::text("Read.").fast(),
    ])
    .answering("handoff summaries", lossy_summary());
    let base = format!("{}/v1", server.url());
    let args = [
        "--json",
        "--model",
        "openai/test-model",
        "--base-url",
        &base,
    ];
    let mut first = vec!["run", "--pin", "keep the public API"];
    first.extend_from_slice(&args);
    first.push("read the parts");
    let run = p.run(&first);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        events(&run.stdout)
            .iter()
            .all(|e| e["event"] != "compaction"),
        "the default window holds it all"
    );
    assert!(system_of(&server, 0).contains("keep the public API"));
    let id = events(&run.stdout)[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    server.push([openai::text("Going on.").fast()]);
    let mut resume = vec!["resume", "--context-window", "3000"];
    resume.extend_from_slice(&args);
    resume.extend([id.as_str(), "go on"]);
    let resumed = p.run(&resume);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let compactions: Vec<Value> = events(&resumed.stdout)
        .into_iter()
        .filter(|e| e["event"] == "compaction")
        .collect();
    assert_eq!(compactions.len(), 1, "{}", resumed.stdout);
    assert_eq!(compactions[0]["trigger"], "model_switch");
    // The pin outlived the compaction: it is a layer, not a message.
    let last = server.received().len() - 1;
    assert!(system_of(&server, last).contains("keep the public API"));
    // The same window again is no switch.
    server.push([openai::text("Still going.").fast()]);
    let mut again = vec!["resume", "--context-window", "3000"];
    again.extend_from_slice(&args);
    again.extend([id.as_str(), "more"]);
    let again = p.run(&again);
    assert!(
        events(&again.stdout)
            .iter()
            .all(|e| e["trigger"] != "model_switch"),
        "{}",
        again.stdout
    );
}

#[test]
fn without_a_terminal_the_task_is_read_from_standard_input() {
    let p = Project::new();
    let server = FakeProvider::start(vec![openai::text("Done.").fast()]);
    let base = format!("{}/v1", server.url());
    let mut cmd = crate::support::agent_command(&p, &base);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"explain the project\n")
        .unwrap();
    let run = finish(&child.wait_with_output().unwrap());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let body = server.received()[0].json();
    assert_eq!(body["messages"][1]["content"], "explain the project\n");
    // Nothing on standard input is a usage error.
    let empty = p
        .command()
        .args(["run", "--model", "openai/test-model", "--base-url", &base])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(empty.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("the prompt is empty"));
}
