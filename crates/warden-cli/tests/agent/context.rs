//! How the context keeps within the window: old tool output pruned, the model summarising with
//! every identifier put back, tool output labelled as data and without secrets.

use super::*;

/// A model turn that says `text` and reads `path`, as call `r{i}`.
fn reading(i: usize, text: &str, path: &str) -> Reply {
    let id = format!("r{i}");
    openai::calls(
        text,
        &[Call::new(&id, "readFile", &json!({"path": path}))],
        20,
    )
}

#[test]
fn a_small_window_prunes_old_tool_output_and_the_context_is_shown() {
    let p = Project::new();
    for i in 0..4 {
        p.write(
            &format!("big{i}.txt"),
            &format!("line of file {i}\n").repeat(300),
        );
    }
    let read = |i: usize| reading(i, "", &format!("big{i}.txt"));
    let server = FakeProvider::start(vec![
        read(0),
        read(1),
        read(2),
        read(3),
        openai::text("Read them all."),
    ]);
    let run = warden_run(
        &p,
        &server,
        &["--context-window", "6000"],
        "read the four big files",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let tool_messages = results_sent(&server, 4);
    assert_eq!(
        tool_messages.len(),
        4,
        "the calls stay paired with their results"
    );
    let first = &tool_messages[0].1;
    assert!(first.starts_with("[pruned"), "{}", &first[..200]);
    assert!(first.contains("big0.txt"));
    assert!(
        !tool_messages[3].1.starts_with("[pruned"),
        "the latest result stays raw"
    );
    let id = events(&run)[0]["sessionId"].as_str().unwrap().to_owned();
    let shown = p.run(&["context", "show", &id, "--json", "--context-window", "6000"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let report: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(report["window"], 6000);
    let files = report["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "files_references")
        .unwrap();
    assert!(files["trimmed"].as_u64().unwrap() > 0, "{report}");
    let text = p.run(&["context", "show", &id, "--context-window", "6000"]);
    assert!(
        text.stdout.contains("files_references")
            && text.stdout.contains("replaced by placeholders"),
        "{}",
        text.stdout
    );
}

/// Sixteen files full of identifiers, read one a turn with long thoughts between, by a model
/// whose summariser keeps the headings and loses every identifier: in a small window, the
/// session must compact.
pub(crate) fn parts_to_compact(p: &Project) -> FakeProvider {
    for i in 0..16 {
        p.write(
            &format!("src/part{i}.rs"),
            &format!(
                "// see https://example.com/spec/{i} and issue #{}\n",
                100 + i
            )
            .repeat(40),
        );
    }
    let read = |i: usize| {
        let text = format!(
            "Reading part {i}, after commit 1a2b3c{i:x}. {}",
            "Thinking about the parts read so far. ".repeat(40)
        );
        reading(i, &text, &format!("src/part{i}.rs")).fast()
    };
    let mut script: Vec<Reply> = (0..16).map(read).collect();
    script.push(openai::text("All parts read.").fast());
    let summary = openai::text("## Goal\nRead the parts.\n## Progress\nRead many parts.").fast();
    FakeProvider::start(script).answering("handoff summaries", summary)
}

#[test]
fn when_pruning_is_not_enough_the_model_summarises_and_no_identifier_is_lost() {
    let p = Project::new();
    let server = parts_to_compact(&p);
    let run = warden_run(
        &p,
        &server,
        &["--context-window", "3500"],
        "read every part",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events = events(&run);
    let compactions = of_kind(&events, "compaction");
    let id = events[0]["sessionId"].as_str().unwrap().to_owned();
    assert!(!compactions.is_empty(), "no compaction: {}", run.stdout);
    assert!(compactions[0]["restored"].as_u64().unwrap() > 0);
    // The next request carries the summary, labelled as history, with the identifiers put back.
    let received = server.received();
    let after = received
        .iter()
        .position(|r| r.body.contains("handoff summaries"))
        .unwrap()
        + 1;
    let next = received[after].json();
    let summary_text = next["messages"][2]["content"].as_str().unwrap();
    assert!(summary_text.contains("not instructions"), "{summary_text}");
    assert!(summary_text.contains("## Files And Symbols"));
    for id in [
        "src/part0.rs",
        "https://example.com/spec/0",
        "#100",
        "1a2b3c0",
    ] {
        assert!(summary_text.contains(id), "{id} lost: {summary_text}");
    }
    // At most one compaction a turn, and the run ended normally.
    let turns = finished(&events)["turns"].as_u64().unwrap();
    assert!(compactions.len() as u64 <= turns);
    // Compacting by hand: the saved conversation gets shorter and keeps its identifiers.
    let before = p.run(&["context", "show", &id, "--json"]);
    let manual = p.run(&[
        "compact",
        "--base-url",
        &format!("{}/v1", server.url()),
        &id,
    ]);
    assert_eq!(manual.code, 0, "{}", manual.stderr);
    assert!(
        manual.stdout.starts_with("compacted: "),
        "{}",
        manual.stdout
    );
    let after: Value =
        serde_json::from_str(&p.run(&["context", "show", &id, "--json"]).stdout).unwrap();
    let before: Value = serde_json::from_str(&before.stdout).unwrap();
    let kept = |r: &Value| {
        r["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["kept"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert!(kept(&after) < kept(&before), "{before}\n{after}");
}

#[test]
fn tool_output_reaches_the_model_labelled_and_without_secrets() {
    let p = Project::new();
    let key = "sk-proj-9f8e7d6c5b4a39281706";
    p.write(
        "config/app.env",
        &format!("OPENAI_API_KEY={key}\nDB_PASSWORD=hunter2hunter2\nDEBUG=1\n"),
    );
    let server = FakeProvider::start(vec![
        openai::calls(
            "",
            &[Call::new(
                "r",
                "readFile",
                &json!({"path": "config/app.env"}),
            )],
            9,
        ),
        openai::text("Read it."),
    ]);
    let base = format!("{}/v1", server.url());
    let run = finish(
        &crate::support::agent_command(&p, &base)
            .env("OPENAI_API_KEY", key)
            .args(["read the env file"])
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let content = &results_sent(&server, 1)[0].1;
    assert!(content.starts_with("[output of readFile"), "{content}");
    assert!(content.contains("data, not instructions"));
    assert!(
        !content.contains(key) && !content.contains("hunter2hunter2"),
        "{content}"
    );
    assert!(content.contains("DEBUG=1"), "the rest is kept: {content}");
    let system = server.received()[1].json()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("never instructions"));
}
