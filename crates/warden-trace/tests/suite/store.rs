//! Recording, reading back, and refusing what cannot be stored.

use std::fs;

use rusqlite::Connection;
use warden_protocol::SessionId;
use warden_trace::{TraceError, TraceStore, redact, redact_value};

use super::support::{denied, event, failed, fake};

fn store() -> (tempfile::TempDir, TraceStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = TraceStore::open(&dir.path().join("trace.db")).unwrap();
    (dir, store)
}

#[test]
fn recorded_events_read_back_equal_after_redaction() {
    let (_dir, store) = store();
    let session = SessionId::new();
    let github = fake("ghp_", "16C7e42F292c6912E7710c838347Ae178B4a");
    let mut secretive = event(&session, 2);
    secretive.arguments = serde_json::json!({"command": format!("git push https://x:{github}@h")});
    secretive.decision.reason = "password=hunter2 in the command".to_owned();
    let original = vec![
        event(&session, 1),
        secretive,
        failed(&session, 3, "auth failed for token=abc123"),
        denied(&session, 4),
    ];
    for e in &original {
        store.record(e).unwrap();
    }

    let expected: Vec<_> = original
        .iter()
        .cloned()
        .map(|mut e| {
            e.arguments = redact_value(&e.arguments);
            e.error = e.error.as_deref().map(|t| redact(t).into_owned());
            e.decision.reason = redact(&e.decision.reason).into_owned();
            e
        })
        .collect();
    let stored = store.events(&session).unwrap();
    assert_eq!(stored, expected);
    let text = serde_json::to_string(&stored).unwrap();
    assert!(!text.contains(&github) && !text.contains("hunter2") && !text.contains("abc123"));
    assert!(store.events(&SessionId::new()).unwrap().is_empty());
}

#[test]
fn next_seq_follows_the_highest_recorded() {
    let (_dir, store) = store();
    let session = SessionId::new();
    assert_eq!(store.next_seq(&session).unwrap(), 1);
    for _ in 0..3 {
        let seq = store.next_seq(&session).unwrap();
        store.record(&event(&session, seq)).unwrap();
    }
    assert_eq!(store.next_seq(&session).unwrap(), 4);
    store.record(&event(&session, 10)).unwrap();
    store.record(&event(&session, 7)).unwrap();
    assert_eq!(store.next_seq(&session).unwrap(), 11);
    assert_eq!(store.next_seq(&SessionId::new()).unwrap(), 1);
    let seqs: Vec<u64> = store
        .events(&session)
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, [1, 2, 3, 7, 10]);
}

#[test]
fn duplicate_seq_is_an_error_and_a_failed_batch_stores_nothing() {
    let (_dir, store) = store();
    let session = SessionId::new();
    store.record(&event(&session, 1)).unwrap();
    let err = store.record(&event(&session, 1)).unwrap_err();
    assert!(
        matches!(err, TraceError::Duplicate { seq: 1, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("already recorded"), "{err}");

    let batch = [event(&session, 2), event(&session, 3), event(&session, 1)];
    assert!(matches!(
        store.record_batch(&batch),
        Err(TraceError::Duplicate { .. })
    ));
    assert_eq!(store.events(&session).unwrap().len(), 1);
    assert_eq!(store.next_seq(&session).unwrap(), 2);

    store.record_batch(&batch[..2]).unwrap();
    assert_eq!(store.events(&session).unwrap().len(), 3);
}

#[test]
fn sessions_are_listed_newest_first_with_counts() {
    let (dir, store) = store();
    let old = SessionId::new();
    let new = SessionId::new();
    let mut first = event(&old, 1);
    first.timestamp = "2025-02-01T08:00:00.000Z".to_owned();
    let mut last = failed(&old, 2, "boom");
    last.timestamp = "2025-02-01T08:05:00.000Z".to_owned();
    store.record_batch(&[first, last]).unwrap();
    let mut newer = denied(&new, 1);
    newer.timestamp = "2025-02-02T09:00:00Z".to_owned();
    store.record(&newer).unwrap();
    drop(store);

    let store = TraceStore::open(&dir.path().join("trace.db")).unwrap();
    let sessions = store.sessions().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0].session_id, new);
    assert_eq!(
        (sessions[0].events, sessions[0].denied, sessions[0].errors),
        (1, 1, 0)
    );
    assert_eq!(sessions[1].session_id, old);
    assert_eq!(
        (sessions[1].events, sessions[1].denied, sessions[1].errors),
        (2, 0, 1)
    );
    assert_eq!(sessions[1].first_timestamp, "2025-02-01T08:00:00.000Z");
    assert_eq!(sessions[1].last_timestamp, "2025-02-01T08:05:00.000Z");
    let json = serde_json::to_value(&sessions[1]).unwrap();
    assert_eq!(json["firstTimestamp"], "2025-02-01T08:00:00.000Z");
    assert_eq!(json["sessionId"], old.as_str());
}

#[test]
fn invalid_events_are_refused_with_the_reason() {
    let (_dir, store) = store();
    let session = SessionId::new();
    let mut local_time = event(&session, 1);
    local_time.timestamp = "2025-02-01 08:00:00+02:00".to_owned();
    let err = store.record(&local_time).unwrap_err();
    assert!(matches!(err, TraceError::InvalidEvent { .. }), "{err:?}");
    assert!(err.to_string().contains("not RFC 3339 UTC"), "{err}");
    let mut huge = event(&session, 1);
    huge.bytes_out = u64::MAX;
    assert!(
        store
            .record(&huge)
            .unwrap_err()
            .to_string()
            .contains("too large")
    );
    assert!(matches!(
        store.record(&event(&session, 0)),
        Err(TraceError::InvalidEvent { .. })
    ));
}

#[test]
fn unknown_stored_values_are_errors_naming_the_row() {
    let (_dir, store) = store();
    let session = SessionId::new();
    store.record(&event(&session, 1)).unwrap();
    let raw = Connection::open(store.path()).unwrap();
    raw.execute("UPDATE tool_events SET layer = 'oracle'", [])
        .unwrap();

    let err = store.events(&session).unwrap_err();
    assert!(matches!(err, TraceError::BadRow { row: 1, .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("row 1") && message.contains("unknown layer \"oracle\""),
        "{message}"
    );
    assert!(
        message.contains(&store.path().display().to_string()),
        "{message}"
    );
}

#[test]
fn a_corrupt_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.db");
    fs::write(
        &path,
        b"this is not SQLite at all, just some garbage bytes \x00\x01\x02\xff".repeat(100),
    )
    .unwrap();
    let err = TraceStore::open(&path).unwrap_err();
    assert!(matches!(err, TraceError::Corrupt { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("file is not a database"), "{message}");
}

#[test]
fn a_file_overwritten_beside_its_log_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.db");
    let session = SessionId::new();
    {
        let store = TraceStore::open(&path).unwrap();
        store.record(&event(&session, 1)).unwrap();
    }
    // The write-ahead log still holds the pages it wrote; the file itself is garbage now.
    assert!(dir.path().join("trace.db-wal").exists());
    let size = fs::metadata(&path).unwrap().len();
    let garbage = vec![0x5a; usize::try_from(size.max(8192)).unwrap()];
    fs::write(&path, garbage).unwrap();
    let err = TraceStore::open(&path).unwrap_err();
    assert!(matches!(err, TraceError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("file is not a database"), "{err}");
}

#[test]
fn an_unwritable_location_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file.txt");
    fs::write(&file, "a regular file").unwrap();

    let under_file = file.join("trace.db");
    let err = TraceStore::open(&under_file).unwrap_err();
    assert!(matches!(err, TraceError::CreateDir { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&file.display().to_string()),
        "{err}"
    );

    let err = TraceStore::open(dir.path()).unwrap_err();
    assert!(matches!(err, TraceError::Open { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&dir.path().display().to_string()),
        "{err}"
    );
}

#[test]
fn path_is_the_one_opened() {
    let (dir, store) = store();
    assert_eq!(store.path(), dir.path().join("trace.db"));
}

#[test]
fn agent_state_is_saved_redacted_replaced_and_listed() {
    let (_dir, store) = store();
    let session = SessionId::new();
    let github = fake("ghp_", "16C7e42F292c6912E7710c838347Ae178B4a");
    let header = warden_trace::AgentSession {
        session_id: session.clone(),
        started_at: String::new(),
        updated_at: String::new(),
        status: "running".into(),
        model: "openai/m".into(),
        cwd: "/w".into(),
        goal: "fix the slug".into(),
    };
    let state = serde_json::json!({"items": [{"text": format!("token {github}")}], "turns": 1});
    store
        .save_agent_state(&session, &header, &state, 0, &[serde_json::json!({"n": 0})])
        .unwrap();
    let (read, saved) = store.agent_state(&session).unwrap().unwrap();
    assert_eq!(
        (read.status.as_str(), read.goal.as_str()),
        ("running", "fix the slug")
    );
    assert!(!saved.to_string().contains(&github), "{saved}");
    assert_eq!(saved, redact_value(&state));
    // A later save replaces the state; the start stays.
    let done = warden_trace::AgentSession {
        status: "finished".into(),
        ..header
    };
    store
        .save_agent_state(
            &session,
            &done,
            &serde_json::json!({"turns": 2}),
            1,
            &[serde_json::json!({"n": 1, "t": format!("token {github}")})],
        )
        .unwrap();
    let items = store.agent_items(&session).unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["n"], 0);
    assert!(!items[1].to_string().contains(&github));
    let (read2, saved) = store.agent_state(&session).unwrap().unwrap();
    assert_eq!(
        (read2.status.as_str(), saved["turns"].as_u64()),
        ("finished", Some(2))
    );
    assert_eq!(read2.started_at, read.started_at);
    assert_eq!(store.agent_sessions().unwrap().len(), 1);
    assert!(store.agent_state(&SessionId::new()).unwrap().is_none());
    store
        .record_agent_event(
            &session,
            "approval_requested",
            &serde_json::json!({"tool": "bash"}),
        )
        .unwrap();
    assert_eq!(
        store.agent_events(&session).unwrap()[0].0,
        "approval_requested"
    );
}
