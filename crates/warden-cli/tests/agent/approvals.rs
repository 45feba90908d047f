//! What a person approving sees on a real terminal: each file tool's change and a command as
//! the policy understood it (snapshots of the screens), the narrowest rule with a wider one only
//! as a second choice, and what a command printed under its tool line.

use super::*;

/// The approval screens of a terminal's output: from each "approval needed" to its question,
/// colours and carriage returns taken out, the project's directory and the server's port
/// replaced.
fn screens(run: &Run, p: &Project) -> String {
    let plain = strip_colours(&run.stdout).replace('\r', "");
    let mut out = Vec::new();
    let mut rest = plain.as_str();
    while let Some(start) = rest.find("── approval needed") {
        let screen = &rest[start..];
        let end = screen.find("allow? ").map_or(screen.len(), |i| {
            i + screen[i..].find(": ").map_or(0, |j| j + 2)
        });
        out.push(p.scrub(&screen[..end]));
        rest = &screen[end..];
    }
    out.join("\n\n")
}

fn strip_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ parameters final-byte.
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn bash(id: &'static str, command: &str) -> Call<'static> {
    Call::new(id, "bash", &json!({ "command": command }))
}

fn warden_on_a_terminal(p: &Project, server: &FakeProvider, answers: &[&str]) -> Run {
    let base = format!("{}/v1", server.url());
    on_a_terminal(
        p,
        &[
            env!("CARGO_BIN_EXE_warden"),
            "run",
            "--model",
            "openai/test-model",
            "--base-url",
            &base,
            "fix it",
        ],
        answers,
    )
}

#[test]
fn the_approval_screens_of_edit_write_patch_and_bash() {
    let p = Project::new();
    name_cleaner(&p);
    p.write("notes.md", "first\nsecond\nthird\n");
    let patch = "*** Begin Patch\n*** Update File: src/slugify.js\n@@\n-exports.slugify = (s) => s.trim().toLowerCase().replace(/\\s/g, '-');\n+exports.slugify = (s) => s.trim().toLowerCase().replace(/\\s+/g, '-');\n*** Add File: src/new.js\n+exports.x = 1;\n*** End Patch";
    let server = model_calling(&[
        Call::new(
            "e1",
            "editFile",
            &json!({"path": "src/slugify.js", "oldString": "/\\s/g", "newString": "/\\s+/g"}),
        ),
        Call::new(
            "w1",
            "writeFile",
            &json!({"path": "notes.md", "content": "first\nsecond, changed\nthird\n"}),
        ),
        Call::new("p1", "apply_patch", &json!({ "patch": patch })),
        bash(
            "b1",
            "npm install left-pad > install.log && cat ~/Private/x.txt",
        ),
    ]);
    // The patch's hunks are seen on request (`v`), then it is denied like the others.
    let run = warden_on_a_terminal(&p, &server, &["d", "d", "v", "d", "d"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    // Coloured on the terminal: the removed line red, the added green.
    assert!(
        run.stdout.contains("\x1b[31m-exports.slugify"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\x1b[32m+exports.slugify"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("its hunks, ") && run.stdout.contains("\x1b[32m+exports.x = 1;"),
        "{}",
        run.stdout
    );
    insta::assert_snapshot!("approval_screens", screens(&run, &p));
}

#[test]
fn a_wider_rule_is_only_a_second_choice_and_a_broad_one_is_named_and_refused() {
    let p = Project::new();
    p.write("src/a.js", "exports.a = 1;\n");
    p.write("src/b.js", "exports.b = 1;\n");
    p.write("lib/c.js", "exports.c = 1;\n");
    let edit = |id: &'static str, path: &'static str| {
        Call::new(
            id,
            "editFile",
            &json!({"path": path, "oldString": "= 1", "newString": "= 2"}),
        )
    };
    let server = model_calling(&[
        edit("e1", "src/a.js"),
        edit("e2", "src/b.js"),
        edit("e3", "lib/c.js"),
        bash("c1", "cat ~/Private/x.txt"),
    ]);
    // The first edit: the wider rule (its directory) picked, for the session; then denials.
    let run = warden_on_a_terminal(&p, &server, &["w", "s", "d", "d"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let plain = strip_colours(&run.stdout);
    assert!(plain.contains("rule:      Edit(/src/a.js)"), "{plain}");
    assert!(plain.contains("wider:     Edit(/src/**)"), "{plain}");
    assert!(plain.contains("[w]ider rule"), "{plain}");
    // Three questions, not four: the second edit in src/ was covered by the wider rule, the
    // one in lib/ was not.
    assert_eq!(plain.matches("allow? ").count(), 3, "{plain}");
    for (file, text) in [
        ("src/a.js", "exports.a = 2;\n"),
        ("src/b.js", "exports.b = 2;\n"),
        ("lib/c.js", "exports.c = 1;\n"),
    ] {
        assert_eq!(
            std::fs::read_to_string(p.root().join(file)).unwrap(),
            text,
            "{file}"
        );
    }
    // The one-off read of a private file: remembered as itself, `cat *` named and refused.
    assert!(
        plain.contains("rule:      Bash(cat ~/Private/x.txt)"),
        "{plain}"
    );
    assert!(
        plain.contains("not:       Bash(cat *) — cat reaches past the workspace here"),
        "{plain}"
    );
}

#[test]
fn a_wider_rule_nobody_offered_cannot_be_chosen() {
    let p = Project::new();
    let server = model_calling(&[
        bash("c1", "cat ~/Private/x.txt"),
        bash("c2", "cat ~/Private/y.txt"),
    ]);
    // `w` where no wider rule is offered asks again; `s` then remembers the command itself.
    let run = warden_on_a_terminal(&p, &server, &["w", "s", "d"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let plain = strip_colours(&run.stdout);
    assert!(!plain.contains("[w]ider rule"), "{plain}");
    // The second `cat` of another file is asked about again.
    assert_eq!(plain.matches("allow? ").count(), 3, "{plain}");
}

#[test]
fn a_commands_output_is_shown_under_its_tool_line_first_and_last_lines() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let server = model_calling(&[bash(
        "s1",
        "for w in a b c d e f g h i j k l m n o p q r s t u v w x y z aa bb cc dd; do echo word-$w; \
         done; echo oops >&2; exit 3",
    )]);
    let run = warden_on_a_terminal(&p, &server, &["o"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let plain = strip_colours(&run.stdout).replace('\r', "");
    let after = &plain[plain.find("  exit 3").expect(&plain)..];
    for shown in [
        "  │ word-a\n",
        "  │ word-e\n",
        "  │ word-cc\n",
        "  │ word-dd\n",
        "  │ oops\n",
    ] {
        assert!(after.contains(shown), "{shown:?} in {after}");
    }
    assert!(after.contains("  │ … 21 more lines\n"), "{after}");
    assert!(!after.contains("  │ word-f\n"), "{after}");
    // The model still got all of it.
    let sent = &results_sent(&server, 1)[0].1;
    assert!(sent.contains("word-m\\nword-n"), "{sent}");
}

#[test]
fn in_a_session_last_shows_all_a_command_printed() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let server = model_calling(&[bash(
        "s1",
        "for a in a b; do for b in a b c d e f g h i j k l m n o p q r s t; do echo item-$a$b; \
         done; done",
    )]);
    let base = format!("{}/v1", server.url());
    let run = crate::support::in_a_session(
        &p,
        &[
            env!("CARGO_BIN_EXE_warden"),
            "run",
            "--model",
            "openai/test-model",
            "--base-url",
            &base,
        ],
        &["o"],
        &["count", "/last"],
    );
    let plain = strip_colours(&run.stdout).replace('\r', "");
    assert!(
        plain.contains("  │ … 30 more lines (/last shows them all)"),
        "{plain}"
    );
    // Before `/last` the middle is not shown; after it, every line is.
    let last = plain.rfind("/last").expect(&plain);
    assert!(!plain[..last].contains("  │ item-ak\n"), "{plain}");
    for a in ["a", "b"] {
        for b in "abcdefghijklmnopqrst".chars() {
            let line = format!("  │ item-{a}{b}\n");
            assert!(plain[last..].contains(&line), "{line} in {plain}");
        }
    }
}

#[test]
fn a_permission_broader_than_any_approval_may_remember_is_refused_before_anyone_is_asked() {
    let p = Project::new();
    let ask = |id: &'static str, rule: &str| {
        Call::new(
            id,
            "requestPermission",
            &json!({"permission": rule, "reason": "to work faster"}),
        )
    };
    let server = model_calling(&[
        ask("q1", "Bash(python3 *)"),
        ask("q2", "Read(~/**)"),
        ask("q3", "Bash(npm run lint *)"),
    ]);
    let run = warden_on_a_terminal(&p, &server, &["d"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let plain = strip_colours(&run.stdout);
    // Only the narrow one was put to the person.
    assert_eq!(plain.matches("allow? ").count(), 1, "{plain}");
    assert!(plain.contains("rule:      Bash(npm run lint *)"), "{plain}");
    let sent = |n: usize, id: &str| {
        results_sent(&server, n)
            .into_iter()
            .find(|(i, _)| i == id)
            .unwrap()
            .1
    };
    assert!(
        sent(1, "q1").contains("broader than a permission may be")
            && sent(1, "q1").contains("only the exact command"),
        "{}",
        sent(1, "q1")
    );
    assert!(
        sent(2, "q2").contains("home directory"),
        "{}",
        sent(2, "q2")
    );
}
