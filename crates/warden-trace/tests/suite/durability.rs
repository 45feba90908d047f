//! A process killed with SIGKILL mid-write loses nothing it committed and never corrupts the file.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rusqlite::Connection;
use serde_json::json;
use warden_protocol::SessionId;
use warden_trace::{TraceStore, now_rfc3339};

use super::support::event;

const CHILD_ENV: &str = "WARDEN_TRACE_KILL_CHILD";
const CHILD_TEST: &str = "suite::durability::kill_child_writes_until_killed";
const ROUNDS: usize = 24;

/// Not a test on its own: the body of the child process of
/// [`sigkill_loses_no_committed_event`], which re-runs this binary with [`CHILD_ENV`] set to the
/// database path. Writes events forever, one committed transaction each, and reports each seq on
/// stdout after its commit returned.
#[test]
fn kill_child_writes_until_killed() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let store = TraceStore::open(Path::new(&path)).unwrap();
    let session = SessionId::new();
    let mut out = std::io::stdout().lock();
    writeln!(out, "session {session}").unwrap();
    out.flush().unwrap();
    for seq in 1.. {
        let mut e = event(&session, seq);
        e.timestamp = now_rfc3339();
        e.arguments = json!({"path": format!("f{seq}"), "padding": "x".repeat(usize::try_from(seq % 512).unwrap())});
        store.record(&e).unwrap();
        writeln!(out, "committed {seq}").unwrap();
        out.flush().unwrap();
    }
}

struct Round {
    session: SessionId,
    reported: u64,
}

/// The value after `key` on a line of the child's stdout. The test harness may print its own
/// text on the same line before the child's first line.
fn field<'l>(line: &'l str, key: &str) -> Option<&'l str> {
    line.rfind(key).map(|at| line[at + key.len()..].trim())
}

fn run_child(path: &Path, delay: Duration) -> Round {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // Wait for the child to have opened the database and committed once, so the kill lands
    // while it is writing rather than while it starts.
    let mut session = None;
    let mut reported = 0;
    let mut line = String::new();
    while reported == 0 {
        line.clear();
        assert_ne!(
            stdout.read_line(&mut line).unwrap(),
            0,
            "child exited early"
        );
        if let Some(id) = field(&line, "session ") {
            session = Some(id.parse().unwrap());
        } else if let Some(seq) = field(&line, "committed ") {
            reported = seq.parse().unwrap();
        }
    }
    std::thread::sleep(delay);
    child.kill().unwrap();
    child.wait().unwrap();

    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    // Only whole lines count: a line cut by the kill was never reported.
    for line in rest.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
        if let Some(seq) = field(line, "committed ") {
            reported = seq.parse().unwrap();
        }
    }
    Round {
        session: session.expect("the child reports its session first"),
        reported,
    }
}

#[test]
fn sigkill_loses_no_committed_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.db");
    let seed = RandomState::new().build_hasher().finish();
    let mut rounds = Vec::new();
    for round in 0..ROUNDS {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(seed ^ round as u64);
        let delay = Duration::from_millis(5 + hasher.finish() % 76);
        rounds.push(run_child(&path, delay));
    }

    let store = TraceStore::open(&path).unwrap();
    let check: String = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    for Round { session, reported } in &rounds {
        let seqs: Vec<u64> = store
            .events(session)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        // Every reported commit is there; at most the one in flight at the kill is extra.
        assert!(
            seqs.len() as u64 >= *reported,
            "session {session}: reported {reported}, stored {}",
            seqs.len()
        );
        assert!(
            seqs.len() as u64 <= reported + 1,
            "session {session}: reported {reported}, stored {}",
            seqs.len()
        );
        assert!(
            seqs.iter().copied().eq(1..=seqs.len() as u64),
            "session {session}: gaps in {seqs:?}"
        );
    }
    assert_eq!(store.sessions().unwrap().len(), ROUNDS);
}
