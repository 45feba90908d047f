//! The tokenizer of the common subset of shell against brush-parser's grammar: wherever the
//! shortcut reads a command, the analysis must be the one the grammar gives.

use proptest::prelude::*;
use warden_policy::shell::{analyze, analyze_by_grammar, in_common_subset};

/// Asserts the two analyses of `command` are equal.
fn same(command: &str) {
    assert_eq!(
        analyze(command),
        analyze_by_grammar(command),
        "the shortcut and the grammar differ on {command:?}"
    );
}

/// Commands written to sit at the edges of the subset: each must be read the same either way,
/// whichever of the two reads it.
const EDGES: &[&str] = &[
    "",
    "   ",
    "# only a comment",
    "ls # a comment",
    "ls #no space",
    "ls a#b",
    "ls;",
    "ls ;",
    "ls; ",
    ";",
    "ls ;; x",
    "ls |",
    "ls &&",
    "| ls",
    "ls & ls",
    "ls &",
    "ls |& cat",
    "a=1",
    "a=1 b=2",
    "a=1 ls",
    "a= ls",
    "=a ls",
    "a==b ls",
    "a=b=c ls",
    "_a1=x ls",
    "1a=x ls",
    "a-b=x ls",
    "a+=1 ls",
    "a[0]=1 ls",
    "ls a=1",
    "export A=1",
    "A='x y' ls",
    "A=\"x y\" ls",
    "A=x\\ y ls",
    "\"A\"=1 ls",
    "A\"B\"=1 ls",
    "'ls' -la",
    "\"ls\" -la",
    "l\\s -la",
    "\\ls",
    "ls \\",
    "ls \\'",
    "ls 'unterminated",
    "ls \"unterminated",
    "ls ''",
    "ls \"\"",
    "ls '' x",
    "ls 'a'\"b\"c\\d",
    "echo 'a\"b'",
    "echo \"a'b\"",
    "echo \"a\\b\"",
    "echo \"$HOME\"",
    "echo \"a!b\"",
    "echo a!b",
    "ls > out",
    "ls >out",
    "ls >> out",
    "ls>>out",
    "ls < in",
    "ls <in >out",
    "> out",
    "< in",
    "> out ls",
    "A=1 > out",
    "ls 2>err",
    "ls 2> err",
    "ls 2 > err",
    "ls 10>err",
    "ls 2>&1",
    "ls >&2",
    "ls 2>&-",
    "ls >& 2",
    "ls >&file",
    "ls &>out",
    "ls >|out",
    "ls <>f",
    "ls <<EOF",
    "ls <<<word",
    "ls <&0",
    "ls > 'a b'",
    "ls > ''",
    "ls >",
    "ls > |",
    "ls > #x",
    "ls > a#b",
    "ls 'a b'>out",
    "cat<in",
    "ls *.rs",
    "ls src/*.rs ?x [ab]c",
    "ls [",
    "[ -f x ]",
    "[[ -f x ]]",
    "! ls",
    "time ls",
    "if true; then ls; fi",
    "for x in a; do ls; done",
    "{ ls; }",
    "( ls )",
    "ls {}",
    "find . -exec rm {} \\;",
    "find . -name '*.rs' -exec grep -l x {} +",
    "ls ~",
    "ls ~/x",
    "ls a~b",
    "ls $HOME",
    "ls `id`",
    "ls $(id)",
    "ls a=~/x",
    "g++ main.c",
    "c++ -o x main.cc",
    "ls a+b a[0] a[0]=x",
    "ls\tsrc",
    "ls\u{a0}src",
    "ls é 日本",
    "echo 'é' \"日本\" \\é",
    "ls\nls",
    "ls\rls",
    "ls \\\nx",
    "sudo rm -rf /",
    "sh -c 'cat .env'",
    "bash -c \"rm -rf build\"",
    "sh -c 'sh -c \"sh -c ls\"'",
    "timeout 5 cat notes.md | grep x > out.txt && curl -s https://x.test",
    "git -c core.pager=id log",
    "awk 'BEGIN{system(\"id\")}'",
    "sed -n '1,40p' src/main.rs",
    "xargs rm < list",
    "env LD_PRELOAD=/tmp/x.so ls",
    "LD_PRELOAD=/tmp/x.so ls",
    "PATH=/tmp ls",
    "ls && ls || ls; ls | ls",
    "a | b | c && d || e ; f",
    "in",
    "ls in do done",
    "function",
    "coproc ls",
    "select",
    "ls ]]",
    "%ls",
    "ls %1",
    "ls ^x",
    "ls -- -",
    "ls ,",
    "ls @",
    "ls @(a)",
    "ls +(a)",
];

#[test]
fn the_edges_of_the_subset_are_read_alike() {
    for command in EDGES {
        same(command);
    }
}

#[test]
fn the_corpus_is_read_alike() {
    for (_, case) in crate::corpus::load() {
        if case.tool == "bash" {
            same(&case.target);
        }
    }
}

#[test]
fn the_common_subset_is_read_by_the_shortcut_and_the_rest_by_the_grammar() {
    // Without this, equality would hold trivially if the shortcut never answered.
    for command in [
        "ls -la src",
        "git log --oneline -20",
        "rg -n TODO src | head -50",
        "cat README.md | grep -i install | wc -l",
        "git diff HEAD~1 --stat && git status --short",
        "python3 -m pytest tests/ -x -q 2>&1 | tail -20",
        "sed -n '1,40p' src/main.rs # a comment",
        "A=1 make test > out.txt",
    ] {
        assert!(in_common_subset(command), "{command}");
    }
    for command in [
        "echo $(git rev-parse HEAD) > build/VERSION",
        "for f in src/*.rs; do wc -l \"$f\"; done",
        "cat <<EOF\nx\nEOF",
        "ls ~/x",
        "{ cat f; }",
        "ls & id",
        "ls\nid",
    ] {
        assert!(!in_common_subset(command), "{command}");
    }
}

#[test]
fn input_the_grammar_fails_on_is_unknown_not_a_crash() {
    // brush-parser 0.4 panics reading a descriptor number that overflows (found by the fuzz
    // target); a model could send it on purpose.
    for command in [
        "ls 99999999999999>9",
        "r99999999999999999999999;99999999999999>9",
        "sh -c 'cat 4294967296<x'",
        // A panic inside brush-parser's tokenizer (an unwrap on `None`), caught.
        "cat <<EOF&$[[(r&m -gi$(r$(((d ryerf b!p>//b<&//b<&/&(rb.|)g \u{1}\u{0}\u{0}au OBIGN>sudO`ws \u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{1}ON\u{a}$(rm&3(d ryerf`b$(ld!\u{a}EOF",
    ] {
        let analysis = analyze(command);
        assert!(analysis.is_unknown(), "{command}: {analysis:?}");
        same(command);
    }
    // A large number that is not a descriptor is an ordinary argument.
    assert!(!analyze("head -c 99999999999999 x").is_unknown());
}

#[test]
fn a_here_document_the_grammar_never_finishes_is_unknown_at_once() {
    // brush-parser 0.4's tokenizer loops without end, allocating, on a here-document delimiter
    // that starts with a carriage return or form feed (found by the fuzz target).
    for command in ["<<\r( ", "cat <<-  \r x", "x <<\t\x0c y", "<<\r\"\" "] {
        let analysis = analyze(command);
        assert!(analysis.is_unknown(), "{command:?}: {analysis:?}");
        assert!(
            analysis.unknown[0].contains("here-document"),
            "{analysis:?}"
        );
    }
    // Ordinary here-documents and here-strings are read.
    let usual = analyze("cat <<EOF > out.txt\nhello\nEOF");
    assert!(!usual.is_unknown(), "{usual:?}");
    assert_eq!(usual.commands[0].writes, ["out.txt"]);
    assert!(!analyze("cat <<< \"\r x\"").is_unknown());
}

#[test]
fn parentheses_nested_past_the_grammar_s_reach_are_unknown_at_once() {
    // brush-parser 0.4 takes time exponential in the depth of `(` after `((` (found by the
    // fuzz target): 40 levels would take hours. Common nesting is still read.
    let deep = format!("x;(({}", "(".repeat(40));
    // The same in a here-document's arithmetic: each `$((` multiplies the time by 4 to 6.
    let here = format!("cat <<EOF\n{}\nEOF", "$((//s".repeat(12));
    // `$[` (old arithmetic) nests as deep in the grammar's eyes.
    let legacy = format!("cat <<EOF\n{}\nEOF", "$[x$(y".repeat(8));
    for deep in [deep, here, legacy] {
        let analysis = analyze(&deep);
        assert!(analysis.is_unknown(), "{analysis:?}");
        assert!(analysis.unknown[0].contains("nested"), "{analysis:?}");
    }
    let usual = "echo $(( (1 + 2) * (3 + (4 - 1)) )) && find . \\( -name a -o -name b \\)";
    assert!(!analyze(usual).is_unknown(), "{usual}");
}

/// Pieces of commands, tricky ones included; generated commands are strings of them.
const PIECES: &[&str] = &[
    "ls",
    "cat",
    "git",
    "sh",
    "-c",
    "rm",
    "-rf",
    "x",
    "a=1",
    "A=b",
    "=",
    "==",
    "'",
    "\"",
    "\\",
    "'a b'",
    "\"a b\"",
    "\\ ",
    "|",
    "||",
    "&&",
    "&",
    ";",
    ";;",
    ">",
    ">>",
    "<",
    "2>",
    "2>&1",
    ">&",
    "-",
    "#",
    "$",
    "$x",
    "${x}",
    "`",
    "(",
    ")",
    "{",
    "}",
    "~",
    "!",
    "*",
    "?",
    "[",
    "]",
    "[[",
    "if",
    "then",
    "fi",
    "do",
    "in",
    "time",
    "+",
    "+=",
    "é",
    "1",
    "10",
    "\t",
    " ",
    "\n",
    ".env",
    "/etc",
    "sudo",
    "xargs",
    "find",
    "-exec",
    "{}",
    "\\;",
    "awk",
    "'{print}'",
    "sed",
    "e",
    "export",
];

/// One word of the common subset: plain, single-quoted, double-quoted and escaped parts.
fn subset_word() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        "[a-zA-Z0-9._/:,%@^+-]{1,8}",
        "'[ -&(-~é]{0,8}'",
        "\"[ a-zA-Z0-9#|;&<>'(){}~*?=.-]{0,8}\"",
        // `\$` and `\``: see `fast.rs`.
        "\\\\[ -#%-_a-~é]",
        "[*?=]",
        "[a-z][#~{}][a-z]",
    ];
    prop::collection::vec(part, 1..4).prop_map(|parts| parts.concat())
}

/// A simple command of the subset: assignments, a program, words and redirections.
fn subset_command() -> impl Strategy<Value = String> {
    let program = prop::sample::select(
        &[
            "ls", "cat", "git", "sh", "bash", "rm", "awk", "sed", "find", "xargs", "sudo", "env",
            "tar", "curl", "echo", "python3", "'ls'", "\\rm", "/bin/cat",
        ][..],
    );
    let redirect = prop_oneof![
        Just(" 2>&1".to_owned()),
        Just(" >&2".to_owned()),
        subset_word().prop_map(|w| format!(" > {w}")),
        subset_word().prop_map(|w| format!(" >>{w}")),
        subset_word().prop_map(|w| format!(" <{w}")),
        subset_word().prop_map(|w| format!(" 2>{w}")),
    ];
    (
        prop::collection::vec(
            (
                "[A-Z_][A-Z0-9_]{0,4}",
                prop_oneof!["[a-zA-Z0-9._/,%@^+-]{0,8}", "'[ -&(-~]{0,8}'"],
            ),
            0..2,
        ),
        program,
        prop::collection::vec(subset_word(), 0..5),
        prop::collection::vec(redirect, 0..2),
    )
        .prop_map(|(assignments, program, words, redirects)| {
            let mut line = String::new();
            for (name, value) in assignments {
                line.push_str(&name);
                line.push('=');
                line.push_str(&value);
                line.push(' ');
            }
            line.push_str(program);
            for word in words {
                line.push(' ');
                line.push_str(&word);
            }
            line.extend(redirects);
            line
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn commands_of_the_subset_take_the_shortcut_and_are_read_alike(
        commands in prop::collection::vec(subset_command(), 1..4),
        joins in prop::collection::vec(prop::sample::select(&[" | ", " && ", " || ", "; ", ";"][..]), 3),
        comment in prop::bool::ANY,
    ) {
        let mut line = commands[0].clone();
        for (command, join) in commands[1..].iter().zip(joins) {
            line.push_str(join);
            line.push_str(command);
        }
        if comment {
            line.push_str(" # done");
        }
        prop_assert!(in_common_subset(&line), "{:?}", line);
        prop_assert_eq!(analyze(&line), analyze_by_grammar(&line), "{:?}", line);
    }

    #[test]
    fn generated_commands_are_read_alike(
        pieces in prop::collection::vec((prop::sample::select(PIECES), prop::bool::ANY), 0..12),
    ) {
        let mut command = String::new();
        for (piece, glued) in pieces {
            if !glued && !command.is_empty() {
                command.push(' ');
            }
            command.push_str(piece);
        }
        prop_assert_eq!(analyze(&command), analyze_by_grammar(&command), "{:?}", command);
    }

    #[test]
    fn shell_like_strings_are_read_alike(command in "[a-z0-9 =|&;<>'\"\\\\#$~!{}()*?\\[\\]\\t+é.-]{0,24}") {
        prop_assert_eq!(analyze(&command), analyze_by_grammar(&command), "{:?}", command);
    }
}
