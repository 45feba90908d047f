//! `apply_patch` fixtures: files before, the patch, files after (or the error and no change).

use serde_json::json;
use warden_protocol::ToolErrorKind;

use crate::support::Workspace;

struct Fixture {
    name: &'static str,
    before: &'static [(&'static str, &'static str)],
    patch: &'static str,
    /// Files after, or `None` for a file that must not exist.
    after: &'static [(&'static str, Option<&'static str>)],
    error: Option<ToolErrorKind>,
}

const FIXTURES: &[Fixture] = &[
    Fixture {
        name: "update one line",
        before: &[("a.py", "def f():\n    return 1\n")],
        patch: "*** Begin Patch\n*** Update File: a.py\n@@ def f():\n-    return 1\n+    return 2\n*** End Patch\n",
        after: &[("a.py", Some("def f():\n    return 2\n"))],
        error: None,
    },
    Fixture {
        name: "add a file",
        before: &[],
        patch: "*** Begin Patch\n*** Add File: src/new.txt\n+hello\n+world\n*** End Patch",
        after: &[("src/new.txt", Some("hello\nworld\n"))],
        error: None,
    },
    Fixture {
        name: "delete a file",
        before: &[("old.txt", "x\n")],
        patch: "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch",
        after: &[("old.txt", None)],
        error: None,
    },
    Fixture {
        name: "move and change",
        before: &[("a.txt", "one\ntwo\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b/c.txt\n@@\n one\n-two\n+TWO\n*** End Patch",
        after: &[("a.txt", None), ("b/c.txt", Some("one\nTWO\n"))],
        error: None,
    },
    Fixture {
        name: "two hunks in order",
        before: &[("m.rs", "fn a() {\n    1\n}\nfn b() {\n    1\n}\n")],
        patch: "*** Begin Patch\n*** Update File: m.rs\n@@ fn a() {\n-    1\n+    10\n@@ fn b() {\n-    1\n+    20\n*** End Patch",
        after: &[("m.rs", Some("fn a() {\n    10\n}\nfn b() {\n    20\n}\n"))],
        error: None,
    },
    Fixture {
        name: "end of file",
        before: &[("e.txt", "x\ny\nx\ny\n")],
        patch: "*** Begin Patch\n*** Update File: e.txt\n@@\n x\n-y\n+Y\n*** End of File\n*** End Patch",
        after: &[("e.txt", Some("x\ny\nx\nY\n"))],
        error: None,
    },
    Fixture {
        name: "crlf file keeps crlf",
        before: &[("w.txt", "a\r\nb\r\n")],
        patch: "*** Begin Patch\n*** Update File: w.txt\n@@\n a\n-b\n+B\n*** End Patch",
        after: &[("w.txt", Some("a\r\nB\r\n"))],
        error: None,
    },
    Fixture {
        name: "crlf patch against lf file",
        before: &[("l.txt", "a\nb\n")],
        patch: "*** Begin Patch\r\n*** Update File: l.txt\r\n@@\r\n a\r\n-b\r\n+B\r\n*** End Patch\r\n",
        after: &[("l.txt", Some("a\nB\n"))],
        error: None,
    },
    Fixture {
        name: "no final newline stays without one",
        before: &[("n.txt", "a\nb")],
        patch: "*** Begin Patch\n*** Update File: n.txt\n@@\n-a\n+A\n b\n*** End Patch",
        after: &[("n.txt", Some("A\nb"))],
        error: None,
    },
    Fixture {
        name: "unicode",
        before: &[("u.txt", "naïve café\n日本語\n")],
        patch: "*** Begin Patch\n*** Update File: u.txt\n@@\n-日本語\n+中文\n*** End Patch",
        after: &[("u.txt", Some("naïve café\n中文\n"))],
        error: None,
    },
    Fixture {
        name: "trailing whitespace tolerated",
        before: &[("t.txt", "keep   \nchange\n")],
        patch: "*** Begin Patch\n*** Update File: t.txt\n@@\n keep\n-change\n+changed\n*** End Patch",
        after: &[("t.txt", Some("keep   \nchanged\n"))],
        error: None,
    },
    Fixture {
        name: "indentation tolerated last",
        before: &[("i.py", "    x = 1\n")],
        patch: "*** Begin Patch\n*** Update File: i.py\n@@\n-x = 1\n+    x = 2\n*** End Patch",
        after: &[("i.py", Some("    x = 2\n"))],
        error: None,
    },
    Fixture {
        name: "missing context is an error and nothing changes",
        before: &[("a.txt", "one\n"), ("b.txt", "two\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: b.txt\n@@\n-three\n+THREE\n*** End Patch",
        after: &[("a.txt", Some("one\n")), ("b.txt", Some("two\n"))],
        error: Some(ToolErrorKind::NoMatch),
    },
    Fixture {
        name: "ambiguous context is an error",
        before: &[("d.txt", "x\nx\n")],
        patch: "*** Begin Patch\n*** Update File: d.txt\n@@\n-x\n+y\n*** End Patch",
        after: &[("d.txt", Some("x\nx\n"))],
        error: Some(ToolErrorKind::MultipleMatches),
    },
    Fixture {
        name: "adding an existing file is an error",
        before: &[("e.txt", "x\n")],
        patch: "*** Begin Patch\n*** Add File: e.txt\n+y\n*** End Patch",
        after: &[("e.txt", Some("x\n"))],
        error: Some(ToolErrorKind::InvalidArguments),
    },
    Fixture {
        name: "deleting a missing file is an error",
        before: &[],
        patch: "*** Begin Patch\n*** Delete File: ghost.txt\n*** End Patch",
        after: &[("ghost.txt", None)],
        error: Some(ToolErrorKind::Io),
    },
    Fixture {
        name: "no begin marker",
        before: &[],
        patch: "*** Update File: a.txt\n*** End Patch",
        after: &[],
        error: Some(ToolErrorKind::InvalidArguments),
    },
    Fixture {
        name: "no end marker",
        before: &[("a.txt", "a\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n",
        after: &[("a.txt", Some("a\n"))],
        error: Some(ToolErrorKind::InvalidArguments),
    },
    Fixture {
        name: "a path outside the workspace",
        before: &[],
        patch: "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch",
        after: &[],
        error: Some(ToolErrorKind::OutsideRoots),
    },
    Fixture {
        name: "inside .git",
        before: &[],
        patch: "*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+evil\n*** End Patch",
        after: &[(".git/hooks/pre-commit", None)],
        error: Some(ToolErrorKind::DeniedPath),
    },
    Fixture {
        name: "a bad hunk line",
        before: &[("a.txt", "a\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n?b\n*** End Patch",
        after: &[("a.txt", Some("a\n"))],
        error: Some(ToolErrorKind::InvalidArguments),
    },
    Fixture {
        name: "add, update and delete together",
        before: &[("keep.txt", "1\n2\n"), ("gone.txt", "x\n")],
        patch: "*** Begin Patch\n*** Add File: new.txt\n+n\n*** Update File: keep.txt\n@@\n 1\n-2\n+two\n*** Delete File: gone.txt\n*** End Patch",
        after: &[
            ("new.txt", Some("n\n")),
            ("keep.txt", Some("1\ntwo\n")),
            ("gone.txt", None),
        ],
        error: None,
    },
];

#[test]
fn every_fixture() {
    assert!(FIXTURES.len() >= 20);
    for f in FIXTURES {
        let ws = Workspace::new();
        for (path, content) in f.before {
            ws.write(path, content);
        }
        let result = ws.call("apply_patch", json!({"patch": f.patch}));
        match (f.error, &result) {
            (None, Ok(out)) => assert_eq!(out["applied"], true, "{}", f.name),
            (Some(kind), Err(err)) => assert_eq!(err.kind, kind, "{}: {}", f.name, err.message),
            (want, got) => panic!("{}: wanted {want:?}, got {got:?}", f.name),
        }
        for (path, want) in f.after {
            let got = std::fs::read_to_string(ws.root().join(path)).ok();
            assert_eq!(got.as_deref(), *want, "{}: {path}", f.name);
        }
    }
}

#[test]
fn errors_name_the_file_and_hunk() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let err = ws.err(
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n-none\n+x\n*** End Patch"}),
    );
    assert!(err.message.contains("a.txt: hunk 1"), "{}", err.message);
}

mod properties {
    use proptest::prelude::*;
    use similar::{ChangeTag, TextDiff};
    use warden_protocol::ToolErrorKind;
    use warden_tools::{FileOp, apply_hunks, parse_patch};

    /// A patch in the envelope, made from a line diff of `old` to `new` with one line of context.
    fn patch_for(old: &str, new: &str) -> String {
        let diff = TextDiff::from_lines(old, new);
        let mut out = String::from("*** Begin Patch\n*** Update File: f.txt\n");
        for group in diff.grouped_ops(1) {
            out.push_str("@@\n");
            for op in &group {
                for change in diff.iter_changes(op) {
                    let tag = match change.tag() {
                        ChangeTag::Equal => ' ',
                        ChangeTag::Delete => '-',
                        ChangeTag::Insert => '+',
                    };
                    out.push(tag);
                    out.push_str(change.value().trim_end_matches('\n'));
                    out.push('\n');
                }
            }
        }
        out.push_str("*** End Patch\n");
        out
    }

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(&["a", "b", "c", "fn x() {", "}", "    let y = 1;", ""][..]),
            1..12,
        )
        .prop_map(|lines| {
            lines.iter().fold(String::new(), |mut text, l| {
                text.push_str(l);
                text.push('\n');
                text
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// A patch made from a diff reproduces the target, or is refused as ambiguous: never
        /// another text.
        #[test]
        fn a_patch_from_a_diff_reproduces_the_target_or_is_refused(old in text(), new in text()) {
            prop_assume!(old != new);
            let ops = parse_patch(&patch_for(&old, &new)).unwrap();
            let FileOp::Update { hunks, .. } = &ops[0] else { panic!("an update") };
            match apply_hunks(&old, hunks, "f.txt") {
                Ok(result) => prop_assert_eq!(result, new),
                Err(err) => prop_assert!(matches!(err.kind, ToolErrorKind::MultipleMatches | ToolErrorKind::NoMatch), "{:?}", err),
            }
        }

        /// A patch whose last file fails leaves every file byte-identical.
        #[test]
        fn a_failed_multi_file_patch_changes_nothing(a in text(), b in text(), c in text()) {
            let ws = crate::support::Workspace::new();
            ws.write("a.txt", &a);
            ws.write("b.txt", &b);
            let patch = format!(
                "*** Begin Patch\n*** Add File: new.txt\n+n\n*** Update File: a.txt\n@@\n-{}\n+changed\n*** Delete File: b.txt\n*** Update File: c.txt\n@@\n-{}\n+x\n*** End Patch\n",
                a.lines().next().unwrap_or_default(),
                c.lines().next().unwrap_or_default(),
            );
            let result = ws.call("apply_patch", serde_json::json!({"patch": patch}));
            prop_assert!(result.is_err());
            prop_assert_eq!(std::fs::read_to_string(ws.root().join("a.txt")).unwrap(), a);
            prop_assert_eq!(std::fs::read_to_string(ws.root().join("b.txt")).unwrap(), b);
            prop_assert!(!ws.root().join("new.txt").exists());
        }
    }
}
