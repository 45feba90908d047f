//! Compaction from a user's side: the handoff of a session whose notes hold every kind of
//! identifier, to a model that paraphrases them all away; a resumed session going on from its
//! stored summary; a run whose tool results pile up compacting by itself.

use serde_json::{Value, json};
use warden_context::holds;
use warden_fake_provider::{Call, FakeProvider, Reply, openai};

use crate::support::{Project, events, warden_run};

const NOTES: &str = "Login bug, 3 December\n\
- Fails at src/auth/AuthService.ts:42 for users with a remembered device\n\
- Dashboard: https://grafana.example.com/d/auth-latency\n\
- Broke in 9f3e2a1c, the session refactor\n\
- The gateway answers 401 with code AUTH_TOKEN_EXPIRED (trace 4bf92f3577b34da6a3ce929d0e0e4736)\n\
- Suspect the refreshSession method of AuthService\n\
- Expired rows pile up in the user_sessions table\n";

/// What the notes hold, by kind.
const IDS: [(&str, &str); 7] = [
    ("path_line", "src/auth/AuthService.ts:42"),
    ("url", "https://grafana.example.com/d/auth-latency"),
    ("commit", "9f3e2a1c"),
    ("error_code", "AUTH_TOKEN_EXPIRED"),
    ("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"),
    ("function", "refreshSession"),
    ("table", "user_sessions"),
];

/// The model's summary: every identifier paraphrased into words.
const PARAPHRASE: &str = "## Goal\nFix the login bug.\n## Progress\nRead the notes: the auth \
    file fails, a dashboard shows it, a recent commit broke it, the gateway answers with an \
    expiry code and a trace, a session method is suspect and a sessions table fills up.\n\
    ## Remaining Work\nFix the method.";

fn paraphrasing() -> Reply {
    openai::text(PARAPHRASE).fast()
}

fn read(id: &str, path: &str) -> Reply {
    openai::calls("", &[Call::new(id, "readFile", &json!({"path": path}))], 20).fast()
}

fn session_id(stdout: &str) -> String {
    events(stdout)[0]["sessionId"].as_str().unwrap().to_owned()
}

#[test]
fn a_handoff_keeps_every_kind_of_identifier_the_notes_held_and_a_resume_starts_from_it() {
    let p = Project::new();
    p.write("notes.md", NOTES);
    p.write(
        "src/auth/AuthService.ts",
        "export class AuthService {\n  async refreshSession(token) {\n    return token;\n  }\n}\n",
    );
    let grep = Call::new("g1", "grep", &json!({"pattern": "refreshSession"}));
    let server = FakeProvider::start(vec![
        read("r1", "notes.md"),
        openai::calls("", &[grep], 20).fast(),
        openai::text("The notes are read.").fast(),
    ])
    .answering("handoff summaries", paraphrasing());
    let base = format!("{}/v1", server.url());
    let run = warden_run(&p, &server, &[], "fix the login bug");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = session_id(&run.stdout);
    // The session learned the name it searched for and found.
    let store = warden_trace::TraceStore::open(&p.home.join("warden/trace.db")).unwrap();
    let (_, state) = store.agent_state(&id.parse().unwrap()).unwrap().unwrap();
    let symbols = &state["workingSet"]["relevantSymbols"];
    assert!(
        symbols
            .as_array()
            .unwrap()
            .contains(&json!("refreshSession")),
        "{symbols}"
    );
    // The model's summary alone loses every one of them.
    for (kind, text) in IDS {
        assert!(!holds(PARAPHRASE, text), "{kind} {text}");
    }
    let handoff = p.run(&["handoff", "--json", "--base-url", &base, &id]);
    assert_eq!(handoff.code, 0, "{}", handoff.stderr);
    let out = handoff.json();
    let restored: Vec<(&str, &str)> = out["restoredIdentifiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["kind"].as_str().unwrap(), i["text"].as_str().unwrap()))
        .collect();
    let sections = out["sections"].to_string();
    for (kind, text) in IDS {
        assert!(
            restored.contains(&(kind, text)),
            "{kind} {text}: {restored:?}"
        );
        assert!(sections.contains(text), "{text}: {sections}");
    }
    let symbols = out["sections"]["Files And Symbols"].as_str().unwrap();
    assert!(
        symbols.contains("- refreshSession (function, kept verbatim by warden)")
            && symbols.contains("- user_sessions (table, kept verbatim by warden)"),
        "{symbols}"
    );
    // A day later: the run goes on from the stored summary, which is not written again.
    let before = server.received().len();
    server.push([openai::text("Going on from the summary.").fast()]);
    let resumed = p.run(&[
        "resume",
        "--json",
        "--model",
        "openai/test-model",
        "--base-url",
        &base,
        &id,
        "go on",
    ]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let received = server.received();
    let after = &received[before..];
    assert_eq!(after.len(), 1, "one request, no summarising");
    assert!(!after[0].body.contains("handoff summaries"));
    let messages = after[0].json()["messages"].to_string();
    for (_, text) in IDS {
        assert!(messages.contains(text), "{text}: {messages}");
    }
    assert!(
        events(&resumed.stdout)
            .iter()
            .all(|e| e["event"] != "compaction"),
        "{}",
        resumed.stdout
    );
}

/// Five files read one a turn, then an answer: the compactions of a run with `settings`.
fn compactions_with(settings: &str, lines: usize) -> (Vec<Value>, FakeProvider) {
    let p = Project::new();
    for i in 0..5 {
        p.write(
            &format!("src/part{i}.rs"),
            &format!("pub fn part_{i}() {{}} // see #{}\n", 100 + i).repeat(lines),
        );
    }
    p.user_settings(settings);
    let mut script: Vec<Reply> = (0..5)
        .map(|i| read(&format!("r{i}"), &format!("src/part{i}.rs")))
        .collect();
    script.push(openai::text("All read.").fast());
    let server = FakeProvider::start(script).answering("handoff summaries", paraphrasing());
    let run = warden_run(
        &p,
        &server,
        &["--context-window", "40000"],
        "read the parts",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let compactions = events(&run.stdout)
        .into_iter()
        .filter(|e| e["event"] == "compaction")
        .collect();
    (compactions, server)
}

#[test]
fn tool_results_past_their_count_or_share_compact_the_conversation() {
    // The window holds it all: by default nothing is compacted.
    let (none, _) = compactions_with("", 40);
    assert!(none.is_empty(), "{none:?}");
    // More results than `tool_results_count`: one compaction, and the next request carries the
    // summary with the results' identifiers.
    let (by_count, server) = compactions_with("[context]\ntool_results_count = 3\n", 40);
    assert_eq!(by_count.len(), 1, "{by_count:?}");
    assert_eq!(by_count[0]["trigger"], "tool_results");
    let received = server.received();
    let at = received
        .iter()
        .position(|r| r.body.contains("handoff summaries"))
        .unwrap();
    let next = received[at + 1].body.clone();
    for id in ["src/part0.rs", "part_0", "#100"] {
        assert!(next.contains(id), "{id} lost");
    }
    // Results past `tool_results_share` of the window.
    let (by_share, _) = compactions_with("[context]\ntool_results_share = 2\n", 40);
    assert!(!by_share.is_empty());
    assert!(by_share.iter().all(|c| c["trigger"] == "tool_results"));
}
