//! The event stream of `warden run --json` (and the text a person sees) is a contract: scripted
//! sessions that between them produce every kind of event, each checked line by line against a
//! recorded stream (`snapshots/all__streams__*.snap`). Session and run ids, durations, the
//! temporary directory and the provider's address are filtered out; everything else must match.
//! A deliberate change of the stream is re-recorded with `INSTA_UPDATE=always` and reviewed.

use serde_json::{Value, json};
use warden_fake_provider::{Call, FakeProvider, Reply, openai};

use crate::skills::{call, skill};
use crate::support::{Project, Run, agent_command, finish, sandbox_available, warden_run};

/// Keys whose values change from one run to the next.
const VARYING: &[&str] = &["sessionId", "runId", "durationMs", "waitMs"];

/// What differs between two runs of the same script, replaced by placeholders.
struct Filter {
    replace: Vec<(String, &'static str)>,
}

impl Filter {
    fn new(p: &Project, server: &FakeProvider) -> Self {
        let tmp = p.tmp().canonicalize().unwrap().display().to_string();
        let raw = p.tmp().display().to_string();
        Self {
            replace: vec![(server.url(), "[PROVIDER]"), (tmp, "[TMP]"), (raw, "[TMP]")],
        }
    }

    fn text(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (from, to) in &self.replace {
            text = text.replace(from.as_str(), to);
        }
        text
    }

    /// The `--json` stream, one filtered event per line, with the ids it names replaced too.
    fn events(&mut self, stdout: &str) -> String {
        let mut events: Vec<Value> = crate::support::events(stdout);
        for event in &events {
            for (key, label) in [("sessionId", "[SESSION]"), ("runId", "[RUN]")] {
                if let Some(id) = event[key].as_str()
                    && !self.replace.iter().any(|(from, _)| from == id)
                {
                    self.replace.insert(0, (id.to_owned(), label));
                }
            }
        }
        let mut lines = String::new();
        for event in &mut events {
            self.value(event);
            lines.push_str(&event.to_string());
            lines.push('\n');
        }
        lines
    }

    fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if VARYING.contains(&key.as_str()) {
                        *v = json!("[VARIES]");
                    } else {
                        self.value(v);
                    }
                }
            }
            _ => {}
        }
    }

    /// The text for a person, the run's duration (`…, $0.0000, 12.3 s`) filtered.
    fn human(&self, stderr: &str) -> String {
        let text = self.text(stderr);
        let lines: Vec<String> = text
            .lines()
            .map(|line| {
                if let Some(rest) = line.strip_prefix("warden: session ")
                    && let Some((_, model)) = rest.split_once(" with ")
                {
                    return format!("warden: session [SESSION] with {model}");
                }
                let Some(at) = line.find(", $").filter(|_| line.starts_with("warden: ")) else {
                    return line.to_owned();
                };
                let (head, tail) = line.split_at(at + 3);
                match tail
                    .split_once(", ")
                    .map(|(cost, rest)| (cost, rest.split_once(" s")))
                {
                    Some((cost, Some((_, after)))) => format!("{head}{cost}, [SECONDS] s{after}"),
                    _ => line.to_owned(),
                }
            })
            .collect();
        lines.join("\n")
    }
}

fn name_cleaner(p: &Project) {
    p.write(
        "src/slugify.js",
        "exports.slugify = (s) => s.trim().toLowerCase().replace(/\\s/g, '-');\n",
    );
    p.write("test/slugify.test.js", "// slugify('  Ada   Lovelace ')\n");
}

/// Reads, an edit, the plan, commands that pass and fail, and calls that go back to the model.
fn tools_script() -> Vec<Reply> {
    vec![
        openai::calls(
            "Reading the code and the tests.",
            &[
                Call::new("r1", "readFile", &json!({"path": "src/slugify.js"})),
                Call::new("r2", "glob", &json!({"pattern": "test/*.js"})),
                Call::new("r3", "grep", &json!({"pattern": "slugify", "path": "test"})),
            ],
            5,
        )
        .fast(),
        call(
            "e1",
            "editFile",
            &json!({"path": "src/slugify.js", "oldString": "/\\s/g", "newString": "/\\s+/g"}),
        ),
        openai::calls(
            "",
            &[
                Call::new(
                    "p1",
                    "updatePlan",
                    &json!({"plan": ["fix regex (done)", "check"]}),
                ),
                Call::new(
                    "t1",
                    "bash",
                    &json!({"command": "grep -c 's+' src/slugify.js"}),
                ),
                Call::new("t2", "bash", &json!({"command": "test -e missing.txt"})),
            ],
            9,
        )
        .fast(),
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
        )
        .fast(),
        openai::text("Fixed: slugify now turns runs of whitespace into one dash.").fast(),
    ]
}

#[test]
fn tool_calls_results_and_commands() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    name_cleaner(&p);
    let server = FakeProvider::start(tools_script());
    let run = warden_run(&p, &server, &["--on-ask", "allow"], "fix the slug");
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("tools", Filter::new(&p, &server).events(&run.stdout));

    // The same session as a person sees it.
    let p = Project::new();
    name_cleaner(&p);
    let server = FakeProvider::start(tools_script());
    let mut cmd = p.command();
    cmd.args(["run", "--model", "openai/test-model", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .args(["--on-ask", "allow", "fix the slug"]);
    let run = finish(&cmd.output().unwrap());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let filter = Filter::new(&p, &server);
    insta::assert_snapshot!("tools_stdout", filter.text(&run.stdout));
    insta::assert_snapshot!("tools_stderr", filter.human(&run.stderr));
}

#[test]
fn approvals_refusals_and_permission_requests_without_a_person() {
    let p = Project::new();
    name_cleaner(&p);
    let server =
        FakeProvider::start(vec![
        openai::calls(
            "",
            &[
                Call::new(
                    "e1",
                    "editFile",
                    &json!({"path": "src/slugify.js", "oldString": "/\\s/g", "newString": "/x/"}),
                ),
                Call::new("b1", "bash", &json!({"command": "rm -rf src"})),
                Call::new("w1", "writeFile", &json!({"path": ".env", "content": "X=1"})),
                Call::new(
                    "q1",
                    "requestPermission",
                    &json!({"permission": "Bash(npm install *)", "reason": "dependencies"}),
                ),
            ],
            11,
        )
        .fast(),
        openai::text("I could not do it without approval.").fast(),
    ]);
    let run = warden_run(&p, &server, &[], "fix it");
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("refusals", Filter::new(&p, &server).events(&run.stdout));

    // Granted by `--on-ask allow`.
    let server = FakeProvider::start(vec![
        call(
            "q1",
            "requestPermission",
            &json!({"permission": "Bash(npm install *)", "reason": "dependencies"}),
        ),
        openai::text("Granted.").fast(),
    ]);
    let run = warden_run(&p, &server, &["--on-ask", "allow"], "ask for npm");
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("permission", Filter::new(&p, &server).events(&run.stdout));
}

#[test]
fn retries_budgets_and_provider_errors() {
    let p = Project::new();
    p.write("notes.md", "hello\n");
    let server = FakeProvider::start(vec![
        Reply::status(429, "slow down").header("retry-after", "1"),
        call("r1", "readFile", &json!({"path": "notes.md"})),
        call("r2", "readFile", &json!({"path": "notes.md"})),
    ]);
    // An allowlist network: the counts of its proxy end the run.
    let settings = p.home.join(".config/warden");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.toml"),
        "[sandbox.network]\nmode = \"allowlist\"\nallowed_domains = [\"example.test\"]\n",
    )
    .unwrap();
    let run = warden_run(&p, &server, &["--max-turns", "2"], "read the notes");
    assert_eq!(run.code, 3, "{}", run.stderr);
    insta::assert_snapshot!("budget", Filter::new(&p, &server).events(&run.stdout));

    let server = FakeProvider::start(vec![Reply::status(401, "bad key")]);
    let run = warden_run(&p, &server, &[], "hi");
    assert_eq!(run.code, 1, "{}", run.stderr);
    insta::assert_snapshot!(
        "provider_error",
        Filter::new(&p, &server).events(&run.stdout)
    );
}

#[test]
fn skills_loaded_refused_unloaded_and_approved() {
    let p = Project::new();
    p.write("notes.md", "hello\n");
    skill(
        &p,
        true,
        "reader",
        "description: Reads notes, changes nothing.\nallowed-tools: Read Grep\ntriggers: [\"summarise the notes\"]",
        "Only read.",
    );
    skill(
        &p,
        false,
        "deploy-notes",
        "description: How this project deploys.",
        "Deploy with care.",
    );
    skill(
        &p,
        true,
        "broken",
        "description: Declares what cannot be enforced.\nallowed-tools: Bash(((",
        "Nothing.",
    );
    let server = FakeProvider::start(vec![
        call("s1", "Skill", &json!({"name": "deploy-notes"})),
        call(
            "s2",
            "Skill",
            &json!({"name": "deploy-notes", "unload": true}),
        ),
        call("s3", "Skill", &json!({"name": "broken"})),
        call("s4", "Skill", &json!({"name": "nothing-by-this-name"})),
        call("r1", "readFile", &json!({"path": "notes.md"})),
        openai::text("Summarised.").fast(),
    ]);
    let run = warden_run(&p, &server, &["--on-ask", "allow"], "summarise the notes");
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("skills", Filter::new(&p, &server).events(&run.stdout));

    // A skill the task calls for, from a root nobody trusted, and no one to ask.
    let p = Project::new();
    skill(
        &p,
        false,
        "release",
        "description: Write release notes.\ntriggers: [\"release notes\"]",
        "Notes.",
    );
    let server = FakeProvider::start(vec![openai::text("No skill.").fast()]);
    let run = warden_run(&p, &server, &[], "write the release notes");
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(
        "skill_not_loaded",
        Filter::new(&p, &server).events(&run.stdout)
    );
}

#[test]
fn compaction() {
    let p = Project::new();
    let server = crate::agent::context::parts_to_compact(&p);
    let run = warden_run(
        &p,
        &server,
        &["--context-window", "3500"],
        "read every part",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("compaction", Filter::new(&p, &server).events(&run.stdout));
}

#[test]
fn a_session_under_a_manifest_ends_in_a_receipt() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    crate::manifest_run::repo(&p);
    let file =
        crate::manifest_run::manifest(&p, "m.yaml", &crate::manifest_run::test_and_patch(&p));
    let server = FakeProvider::start(vec![
        call(
            "e1",
            "editFile",
            &json!({"path": "slug.py", "oldString": "s.lower()", "newString": "s.lower().replace(' ', '-')"}),
        ),
        call("b1", "bash", &json!({"command": "python3 test_slug.py"})),
        openai::text("Fixed and tested.").fast(),
    ]);
    let mut cmd = agent_command(&p, &format!("{}/v1", server.url()));
    cmd.args([
        "--manifest",
        &file,
        "--mode",
        "auto",
        "--on-ask",
        "allow",
        "fix the slug",
    ]);
    let run: Run = finish(&cmd.output().unwrap());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    insta::assert_snapshot!("manifest", Filter::new(&p, &server).events(&run.stdout));
}
