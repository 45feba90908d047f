//! Any command string the tokenizer of the common subset reads must be analysed exactly as
//! brush-parser's grammar analyses it. `cargo +nightly fuzz run shortcut -- -dict=shell.dict`
//! from `crates/warden-policy/fuzz` (see `docs/policy.md`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use warden_policy::shell::{analyze, analyze_by_grammar};

fuzz_target!(
    init: {
        // warden catches a panic inside brush-parser and calls the command unknown; any other
        // panic (the equality below among them) is a finding.
        std::panic::set_hook(Box::new(|info| {
            let grammar = info
                .location()
                .is_some_and(|at| at.file().contains("brush-parser"));
            if !grammar {
                eprintln!("{info}");
                std::process::abort();
            }
        }));
    },
    |data: &[u8]| {
        let Ok(command) = std::str::from_utf8(data) else {
            return;
        };
        let fast = analyze(command);
        let grammar = analyze_by_grammar(command);
        // A walk past its time budget is unknown on the clock's say: which of two walks of the
        // same slow string finishes in time is not a difference between the readers.
        let late = |a: &warden_policy::shell::Analysis| {
            a.unknown.iter().any(|u| u.contains("did not finish reading"))
        };
        if late(&fast) || late(&grammar) {
            return;
        }
        assert_eq!(fast, grammar, "the shortcut and the grammar differ on {command:?}");
    }
);
