//! What the grammar is not given, or given only on a clock: input brush-parser is known to fail
//! on, refused before parsing, and a time budget for the rest (its grammar is exponential on
//! some nestings; the differential fuzz target keeps finding them).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::Analysis;
use super::walk::{Readers, walk};

/// How long brush-parser may take over one command string before the command is unknown. Its
/// grammar is exponential on some nestings (the fuzz target keeps finding new ones); what is
/// known is refused before parsing ([`beyond_the_grammar`]), and this bounds the rest.
pub(super) const GRAMMAR_BUDGET: Duration = Duration::from_secs(2);

/// A walk that may use the grammar, on a thread of its own: past `budget` the command is
/// unknown (the thread is left to finish on its own, and not used again).
pub(super) fn within_budget(command: &str, readers: Readers, budget: Duration) -> Analysis {
    let late = || Analysis {
        unknown: vec![format!(
            "the shell grammar did not finish reading {command:?} within {} ms",
            budget.as_millis()
        )],
        ..Analysis::default()
    };
    // Walks left running past their budget hold a core and memory until they end: while
    // `MOST_RUNAWAY` of them do, a string of the kinds they were is not given to the grammar.
    if RUNAWAY.load(Ordering::SeqCst) >= MOST_RUNAWAY {
        return Analysis {
            unknown: vec![format!(
                "the shell grammar did not finish reading earlier commands yet, so {command:?} \
                 is not read now"
            )],
            ..Analysis::default()
        };
    }
    let Some(worker) = Worker::take() else {
        return walk(command, readers).unwrap_or_default();
    };
    if worker.jobs.send((command.to_owned(), readers)).is_err() {
        return walk(command, readers).unwrap_or_default();
    }
    match worker.results.recv_timeout(budget) {
        Ok(Some(analysis)) => {
            worker.put_back();
            analysis
        }
        Ok(None) => {
            worker.put_back();
            late()
        }
        Err(_) => {
            // Counted before the worker is let go: its thread counts itself out when it finds
            // no one waiting for its walk.
            RUNAWAY.fetch_add(1, Ordering::SeqCst);
            drop(worker);
            late()
        }
    }
}

/// Walks left running past their budget, not yet ended.
static RUNAWAY: AtomicUsize = AtomicUsize::new(0);

/// How many such walks may run before the grammar is given no more strings.
const MOST_RUNAWAY: usize = 2;

/// A thread that walks command strings with the grammar, kept between calls (starting a thread
/// costs more than most walks).
struct Worker {
    jobs: std::sync::mpsc::Sender<(String, Readers)>,
    results: std::sync::mpsc::Receiver<Option<Analysis>>,
}

/// Idle workers; a caller takes one, so calls from several threads run side by side.
static IDLE: std::sync::Mutex<Vec<Worker>> = std::sync::Mutex::new(Vec::new());

/// How many idle workers are kept.
const MOST_IDLE: usize = 4;

impl Worker {
    /// An idle worker, or a new one; `None` if no thread can be started.
    fn take() -> Option<Worker> {
        if let Some(worker) = IDLE.lock().ok().and_then(|mut idle| idle.pop()) {
            return Some(worker);
        }
        let (jobs, inbox) = std::sync::mpsc::channel::<(String, Readers)>();
        let (outbox, results) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("warden-shell".to_owned())
            .spawn(move || {
                for (command, readers) in inbox {
                    if outbox.send(walk(&command, readers)).is_err() {
                        // No one waited: this walk ran past its budget.
                        RUNAWAY.fetch_sub(1, Ordering::SeqCst);
                        break;
                    }
                }
            })
            .ok()?;
        Some(Worker { jobs, results })
    }

    /// Back among the idle ones, if there is room.
    fn put_back(self) {
        if let Ok(mut idle) = IDLE.lock()
            && idle.len() < MOST_IDLE
        {
            idle.push(self);
        }
    }
}

/// How deep parentheses may nest before a script is unknown without being parsed: brush-parser
/// takes time exponential in the depth of `(` after `((` (20 levels: 70 ms, 30: over a minute)
/// and in the number of nested `$((` in a here-document (each multiplies it by 4 to 6).
const MAX_PARENTHESES: usize = 10;

/// Input brush-parser is known to fail on (rather than reject), said in words: a descriptor
/// number too large for an integer (`99999999999>x`), which panics; parentheses nested deeper
/// than [`MAX_PARENTHESES`], which take exponential time; and a here-document whose delimiter
/// starts with a carriage return, form feed or vertical tab (`<<\r `), on which its tokenizer
/// never ends and grows without bound. Quotes are not looked at, so this errs on the side of
/// unknown.
pub(super) fn beyond_the_grammar(source: &str) -> Option<String> {
    if odd_here_document(source) {
        return Some(format!(
            "a here-document delimiter the shell grammar cannot read in {source:?}"
        ));
    }
    let mut digits = 0;
    for &b in source.as_bytes() {
        if matches!(b, b'<' | b'>') && digits > 9 {
            return Some(format!(
                "a file descriptor number too large for the shell in {source:?}"
            ));
        }
        digits = if b.is_ascii_digit() { digits + 1 } else { 0 };
    }
    let deepest = nesting(source);
    (deepest > MAX_PARENTHESES)
        .then(|| format!("parentheses nested more than {MAX_PARENTHESES} deep in {source:?}"))
}

/// How deep `(`, `$[` (old arithmetic) and `${` nest, as the grammar sees them: a closer closes
/// only its own kind. Quotes are not looked at.
pub(super) fn nesting(source: &str) -> usize {
    let mut open: Vec<u8> = Vec::new();
    let mut deepest = 0;
    let bytes = source.as_bytes();
    for (at, &b) in bytes.iter().enumerate() {
        let after_dollar = at > 0 && bytes[at - 1] == b'$';
        match b {
            b'(' | b'[' | b'{' if b == b'(' || after_dollar => {
                open.push(b);
                deepest = deepest.max(open.len());
            }
            b')' | b']' | b'}' => {
                let opener = match b {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                if open.last() == Some(&opener) {
                    open.pop();
                }
            }
            _ => {}
        }
    }
    deepest
}

/// `<<` (not `<<<`), an optional `-` and blanks, then `\r`, `\x0b` or `\x0c`.
fn odd_here_document(source: &str) -> bool {
    let bytes = source.as_bytes();
    bytes.windows(2).enumerate().any(|(at, pair)| {
        if pair != b"<<" || bytes.get(at + 2) == Some(&b'<') {
            return false;
        }
        let mut rest = &bytes[at + 2..];
        if let [b'-', tail @ ..] = rest {
            rest = tail;
        }
        let start = rest.iter().position(|b| !matches!(b, b' ' | b'\t'));
        start.is_some_and(|i| matches!(rest[i], b'\r' | 0x0b | 0x0c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grammar_past_its_budget_makes_the_command_unknown() {
        // About a millisecond of the grammar's exponential arithmetic, under every cap.
        let slow = format!("cat <<EOF\n{}\nEOF", "$[x$(y".repeat(5));
        assert!(beyond_the_grammar(&slow).is_none());
        let read = within_budget(&slow, Readers::Both, GRAMMAR_BUDGET);
        assert!(
            !read.unknown.iter().any(|u| u.contains("did not finish")),
            "{read:?}"
        );
        let late = within_budget(&slow, Readers::Both, Duration::ZERO);
        assert!(late.unknown[0].contains("did not finish"), "{late:?}");
        assert!(late.is_unknown());
        // Once the walk left running ends, the grammar reads again.
        let waited = std::time::Instant::now();
        while RUNAWAY.load(Ordering::SeqCst) > 0 && waited.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(RUNAWAY.load(Ordering::SeqCst), 0);
        let again = within_budget(&slow, Readers::Both, GRAMMAR_BUDGET);
        assert!(!again.is_unknown(), "{again:?}");
        // While as many as may run past their budget still do, nothing more is handed over.
        RUNAWAY.store(MOST_RUNAWAY, Ordering::SeqCst);
        let busy = within_budget(&slow, Readers::Both, GRAMMAR_BUDGET);
        RUNAWAY.store(0, Ordering::SeqCst);
        assert!(busy.unknown[0].contains("earlier commands"), "{busy:?}");
    }
}
