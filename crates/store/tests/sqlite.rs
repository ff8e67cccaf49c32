//! The blackboard on SQLite: the whole conformance suite against database files in a temp dir, plus what
//! only SQLite has (read-only opens for the hook, the schema version, in-memory stores).
// Helpers outside `#[test]` functions unwrap too: a failure here is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use agency_store::conformance::Fixture;
use agency_store::sqlite::SCHEMA_VERSION;
use agency_store::{Blackboard, NewRun, SqliteBlackboard, StoreError};

/// A fresh database file in its own temp dir; every handle is a separate connection, as another process
/// would have.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".agency").join("agency.db");
    Fixture::new(
        move |clock| {
            SqliteBlackboard::open(&path).map(|bb| Box::new(bb.with_clock(clock)) as Box<dyn Blackboard>)
        },
        dir,
    )
}

agency_store::conformance_tests!(fixture);

fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agency.db");
    (dir, path)
}

fn user_version(path: &PathBuf) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
}

#[test]
fn open_creates_parent_dirs_and_migrates_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a").join("b").join("agency.db");
    SqliteBlackboard::open(&path).unwrap();
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    SqliteBlackboard::open(&path).unwrap();
    assert_eq!(user_version(&path), SCHEMA_VERSION);
}

#[test]
fn files_are_in_wal_mode() {
    let (_dir, path) = temp_db();
    SqliteBlackboard::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn read_only_reads_what_a_writer_wrote_and_refuses_writes() {
    let (_dir, path) = temp_db();
    let writer = SqliteBlackboard::open(&path).unwrap();
    let run = writer.create_run(NewRun::new("goal", "/repo")).unwrap();
    let reader = SqliteBlackboard::open_read_only(&path).unwrap();
    assert_eq!(reader.get_run(run.id).unwrap(), run);
    assert_eq!(reader.resolve_run(&run.id.short()).unwrap(), run.id);
    let err = reader.create_run(NewRun::new("goal", "/repo")).unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
    // The refusal names the file and why it cannot be written.
    let message = err.to_string();
    assert!(message.contains("agency.db"), "{message}");
    assert!(message.contains("opened read-only"), "{message}");
    // A later write by the writer is visible to the open reader.
    writer
        .set_run_status(run.id, None, agency_store::RunStatus::Running)
        .unwrap();
    assert_eq!(
        reader.get_run(run.id).unwrap().status,
        agency_store::RunStatus::Running
    );
}

#[test]
fn read_only_fails_clearly_when_the_file_is_missing() {
    let (_dir, path) = temp_db();
    let err = SqliteBlackboard::open_read_only(&path).unwrap_err();
    assert!(matches!(err, StoreError::Missing { .. }), "{err}");
    assert!(err.to_string().starts_with("no blackboard at "), "{err}");
    assert!(!path.exists(), "a read-only open creates nothing");
}

#[test]
fn read_only_refuses_an_unmigrated_file() {
    let (_dir, path) = temp_db();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE x (y)")
        .unwrap();
    let err = SqliteBlackboard::open_read_only(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaOutdated { found: 0, .. }),
        "{err}"
    );
}

#[test]
fn a_newer_schema_is_refused_by_both_opens() {
    let (_dir, path) = temp_db();
    SqliteBlackboard::open(&path).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    for err in [
        SqliteBlackboard::open(&path).unwrap_err(),
        SqliteBlackboard::open_read_only(&path).unwrap_err(),
    ] {
        assert!(matches!(err, StoreError::SchemaTooNew { .. }), "{err}");
        assert!(err.to_string().contains("upgrade agency"), "{err}");
    }
}

#[test]
fn a_file_that_is_not_a_database_is_an_open_error() {
    let (_dir, path) = temp_db();
    std::fs::write(
        &path,
        b"definitely not sqlite, just some text that is long enough to be a header....",
    )
    .unwrap();
    let err = SqliteBlackboard::open(&path).unwrap_err();
    assert!(err.to_string().contains("agency.db"), "{err}");
}

#[test]
fn in_memory_stores_work_and_are_private() {
    let a = SqliteBlackboard::open_in_memory().unwrap();
    let b = SqliteBlackboard::open_in_memory().unwrap();
    a.create_run(NewRun::new("goal", "/repo")).unwrap();
    assert_eq!(a.list_runs().unwrap().len(), 1);
    assert!(b.list_runs().unwrap().is_empty());
}

#[test]
fn a_stepping_clock_stamps_records_and_canonical_events() {
    use chrono::{Duration, TimeZone, Utc};
    let start = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
    let clock = std::sync::Arc::new(agency_store::SteppingClock::new(start, Duration::seconds(1)));
    let bb = SqliteBlackboard::open_in_memory().unwrap().with_clock(clock);
    let run = bb.create_run(NewRun::new("goal", "/repo")).unwrap();
    assert_eq!(run.created_at, start);
    let events = bb.events_after(Some(run.id), 0, 10).unwrap();
    assert_eq!(events[0].ts, start);
}

#[test]
fn handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SqliteBlackboard>();
    assert_send_sync::<Box<dyn Blackboard>>();
}

#[test]
fn many_handles_may_create_and_migrate_one_new_file_at_once() {
    let (_dir, path) = temp_db();
    let opened: Vec<_> = std::thread::scope(|scope| {
        let openers: Vec<_> = (0..6)
            .map(|_| scope.spawn(|| SqliteBlackboard::open(&path)))
            .collect();
        openers.into_iter().map(|o| o.join().unwrap()).collect()
    });
    for bb in &opened {
        assert!(bb.as_ref().is_ok(), "{:?}", bb.as_ref().err());
    }
    assert_eq!(user_version(&path), SCHEMA_VERSION);
}

/// The error reading a run back gives once `sql` has changed its row behind the store's back.
fn run_read_back_after(sql: &str) -> StoreError {
    let (_dir, path) = temp_db();
    let bb = SqliteBlackboard::open(&path).unwrap();
    assert_eq!(bb.path(), Some(path.as_path()));
    let run = bb.create_run(NewRun::new("goal", "/repo")).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(sql, [])
        .unwrap();
    bb.get_run(run.id).unwrap_err()
}

#[test]
fn a_row_that_does_not_decode_is_corrupt_naming_record_and_column() {
    let err = run_read_back_after("UPDATE runs SET status = 'exploded'");
    assert!(matches!(err, StoreError::Corrupt { what: "run", .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("column `status`") && message.contains("exploded"),
        "{message}"
    );
}

#[test]
fn a_column_that_is_not_utf8_is_corrupt_naming_it() {
    // STRICT tables keep every column's type, so text that is not UTF-8 is what can still go wrong.
    let err = run_read_back_after("UPDATE runs SET created_at = CAST(x'ff00' AS TEXT)");
    assert!(matches!(err, StoreError::Corrupt { what: "run", .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("column `created_at`") && message.contains("utf-8"),
        "{message}"
    );
}

#[test]
fn error_messages_say_what_to_do() {
    let bb = SqliteBlackboard::open_in_memory().unwrap();
    let run = bb.create_run(NewRun::new("goal", "/repo")).unwrap();
    let err = bb.resolve_run("nothex!").unwrap_err();
    assert_eq!(
        err.to_string(),
        "`nothex!` is not a run id: expected hex digits (dashes are ignored), like `0193a1b2`"
    );
    let err = bb.decide_pending_gate(
        run.id,
        agency_core::GateDecision::Approve {
            by: "me".into(),
            note: None,
        },
    );
    assert_eq!(
        err.unwrap_err().to_string(),
        format!(
            "run {} has no pending gate; nothing is waiting for a decision",
            run.id.short()
        )
    );
    let err = bb.set_run_status(
        run.id,
        Some(agency_store::RunStatus::Running),
        agency_store::RunStatus::Paused,
    );
    assert_eq!(
        err.unwrap_err().to_string(),
        format!(
            "run {} is `planning`, expected `running`: it changed since it was read (another process?); \
             re-read it and decide again",
            run.id.short()
        )
    );
}

#[test]
fn read_only_opens_a_file_no_writer_has_open() {
    let (_dir, path) = temp_db();
    let id = {
        let writer = SqliteBlackboard::open(&path).unwrap();
        writer.create_run(NewRun::new("goal", "/repo")).unwrap().id
    };
    let reader = SqliteBlackboard::open_read_only(&path).unwrap();
    assert!(reader.is_read_only());
    assert_eq!(reader.get_run(id).unwrap().id, id);
}

fn wal_len(path: &std::path::Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(0, |m| m.len())
}

#[test]
fn append_handles_create_nothing_and_refuse_other_schemas() {
    let (_dir, path) = temp_db();
    let err = SqliteBlackboard::open_for_append(&path).unwrap_err();
    assert!(matches!(err, StoreError::Missing { .. }), "{err}");
    assert!(!path.exists(), "an append open creates nothing");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE x (y)")
        .unwrap();
    let err = SqliteBlackboard::open_for_append(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaOutdated { found: 0, .. }),
        "{err}"
    );
}

#[test]
fn appends_stay_in_a_small_wal_and_are_read_by_the_next_process() {
    let (_dir, path) = temp_db();
    let run = SqliteBlackboard::open(&path)
        .unwrap()
        .create_run(NewRun::new("goal", "/repo"))
        .unwrap();
    // The full open checkpointed and removed the WAL when it closed.
    assert_eq!(wal_len(&path), 0);
    let appended = {
        let store = SqliteBlackboard::open_for_append(&path).unwrap();
        store
            .append_event(agency_core::NewEvent::new(
                run.id,
                agency_core::EventKind::Log,
                serde_json::json!({"message": "denied"}),
            ))
            .unwrap()
    };
    // Closed without a checkpoint: the commit is in the WAL, and a new handle (as another process) sees it.
    assert!(wal_len(&path) > 0);
    let reader = SqliteBlackboard::open_read_only(&path).unwrap();
    let events = reader.events_after(Some(run.id), 0, 100).unwrap();
    assert!(events.iter().any(|e| e.seq == appended.seq));
}

#[test]
fn a_large_wal_is_checkpointed_when_an_append_handle_closes() {
    let (_dir, path) = temp_db();
    let run = SqliteBlackboard::open(&path)
        .unwrap()
        .create_run(NewRun::new("goal", "/repo"))
        .unwrap();
    let big = "x".repeat(8 * 1024);
    let mut appends = 0;
    while wal_len(&path) < agency_store::sqlite::APPEND_WAL_LIMIT {
        let store = SqliteBlackboard::open_for_append(&path).unwrap();
        store
            .append_event(agency_core::NewEvent::new(
                run.id,
                agency_core::EventKind::Log,
                serde_json::json!({"message": big}),
            ))
            .unwrap();
        appends += 1;
        assert!(appends < 1000, "the WAL never reached the limit");
    }
    // The next append handle finds the WAL past the limit and checkpoints it away when it closes.
    drop(SqliteBlackboard::open_for_append(&path).unwrap());
    assert_eq!(wal_len(&path), 0);
    let events = SqliteBlackboard::open_read_only(&path)
        .unwrap()
        .events_after(Some(run.id), 0, 10_000)
        .unwrap();
    let logs = events
        .iter()
        .filter(|e| e.kind == agency_core::EventKind::Log)
        .count();
    assert_eq!(logs, appends);
}

/// The child half of `every_commit_survives_the_process_dying`: commits to the blackboard named by
/// `AGENCY_TEST_CRASH_DB`, one write transaction after another, says how far it got, and dies without
/// closing it (no checkpoint, no destructor runs), as a runner killed with `kill -9` does.
#[test]
#[ignore = "run by every_commit_survives_the_process_dying, in a process of its own"]
fn commit_then_die() {
    let Some(path) = std::env::var_os("AGENCY_TEST_CRASH_DB") else {
        return;
    };
    let store = SqliteBlackboard::open(path).unwrap();
    let run = store.create_run(NewRun::new("goal", "/repo")).unwrap();
    let mut last = 0;
    for i in 0..300 {
        last = store
            .append_event(agency_core::NewEvent::new(
                run.id,
                agency_core::EventKind::Log,
                serde_json::json!({ "message": format!("commit {i}") }),
            ))
            .unwrap()
            .seq;
    }
    println!("run={} last_seq={last}", run.id);
    std::process::abort();
}

/// A process that dies loses none of its commits: each is in the WAL (the OS has it) when `COMMIT`
/// returns, and the next process to open the file recovers them. Under `synchronous=NORMAL` only a power
/// loss or an OS crash can lose the commits since the WAL was last synced, at a checkpoint.
#[test]
fn every_commit_survives_the_process_dying() {
    let (_dir, path) = temp_db();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "commit_then_die",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("AGENCY_TEST_CRASH_DB", &path)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the child was to die: {out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (run, last) = stdout
        .lines()
        .find_map(|line| {
            let (run, seq) = line.split_once("run=")?.1.split_once(" last_seq=")?;
            Some((run.to_string(), seq.parse::<i64>().ok()?))
        })
        .unwrap_or_else(|| panic!("the child said how far it got: {stdout}"));
    // It died with commits that only the WAL held.
    assert!(wal_len(&path) > 0);
    let store = SqliteBlackboard::open(&path).unwrap();
    let run = store.resolve_run(&run).unwrap();
    assert_eq!(store.last_seq(Some(run)).unwrap(), last);
    assert_eq!(store.events_after(Some(run), 0, 1000).unwrap().len(), 301);
}

/// SQLite holds a log line appended "soon" back until the handle's next write: no commit of its own. A
/// write that fails keeps it held; a line whose run does not exist is dropped without failing the write
/// it rides with; closing the handle writes what is still held.
#[test]
fn log_lines_ride_with_the_next_write() {
    use agency_core::{EventKind, NewEvent, RunId};
    use serde_json::json;

    let (_dir, path) = temp_db();
    let bb = SqliteBlackboard::open(&path).unwrap();
    let reader = SqliteBlackboard::open(&path).unwrap();
    let run = bb.create_run(NewRun::new("goal", "/repo")).unwrap().id;
    let line = |n: u32| NewEvent::log(run, "info", n.to_string());
    let seen = || -> Vec<u64> {
        reader
            .events_after(Some(run), 0, 100)
            .unwrap()
            .iter()
            .filter_map(|e| match e.typed() {
                Ok(agency_core::event::EventPayload::Log(line)) => line.message.parse().ok(),
                _ => None,
            })
            .collect()
    };
    let writes = bb.write_count();
    bb.append_event_soon(line(1)).unwrap();
    assert_eq!(bb.write_count(), writes, "no write of its own");
    assert!(seen().is_empty(), "held back");

    let missing_run = NewEvent::new(RunId::new(), EventKind::Log, json!({}));
    assert!(bb.append_event(missing_run.clone()).is_err());
    assert!(seen().is_empty(), "the failed write took nothing with it");
    bb.append_event_soon(missing_run).unwrap();
    bb.append_event(line(2)).unwrap();
    assert_eq!(seen(), [1, 2], "held lines first, the one without a run dropped");

    // A held write of several changes is all or nothing: one that cannot be made leaves nothing behind,
    // and does not fail the write it rides with. The held writes are first made together; when one fails
    // they are undone and made apart, so the one before it is made exactly once.
    let mut before = agency_store::WriteBatch::new();
    before.append_event(line(80)).append_event(line(81));
    bb.apply_soon(before).unwrap();
    let mut broken = agency_store::WriteBatch::new();
    broken.append_event(line(90));
    broken.append_event(NewEvent::new(RunId::new(), EventKind::Log, json!({ "n": 91 })));
    bb.apply_soon(broken).unwrap();
    let mut whole = agency_store::WriteBatch::new();
    whole.append_event(line(3)).append_event(line(4));
    bb.apply_soon(whole).unwrap();
    assert_eq!(seen(), [1, 2], "held back");
    bb.flush_events().unwrap();
    assert_eq!(
        seen(),
        [1, 2, 80, 81, 3, 4],
        "the whole batches once each, none of the broken one"
    );

    bb.append_event_soon(line(5)).unwrap();
    drop(bb);
    assert_eq!(seen(), [1, 2, 80, 81, 3, 4, 5], "written on close");
}

/// A blackboard from before claim generations (schema 9) opens: its claimed brief reads generation 0, a
/// holder naming generation 0 still writes for it, and the next claim after a reclaim takes generation 1.
#[test]
fn a_blackboard_from_before_claim_generations_opens_and_fences() {
    use agency_store::conformance::sample_brief;
    use agency_store::{Claim, DEFAULT_CLAIM_LEASE, WriteBatch};
    let (_dir, path) = temp_db();
    let store = SqliteBlackboard::open(&path).unwrap();
    let run = store.create_run(NewRun::new("g", "/repo")).unwrap().id;
    let brief = sample_brief(run, "old");
    store.insert_brief(&brief).unwrap();
    store
        .claim_next_brief(Some(run), "runner-old", DEFAULT_CLAIM_LEASE)
        .unwrap()
        .unwrap();
    drop(store);
    let old = rusqlite::Connection::open(&path).unwrap();
    old.execute_batch(
        "UPDATE briefs SET claim_generation = 0; ALTER TABLE briefs DROP COLUMN claim_generation; \
         DROP TABLE placement_needs; DROP TABLE runner_offers; PRAGMA user_version = 9;",
    )
    .unwrap();
    drop(old);

    let store = SqliteBlackboard::open(&path).unwrap();
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    let mut check = WriteBatch::new();
    check.holds_claim(Claim {
        brief: brief.id,
        holder: "runner-old".into(),
        generation: 0,
    });
    store.apply(check).unwrap();
    let later = chrono::Utc::now() + DEFAULT_CLAIM_LEASE + chrono::Duration::minutes(1);
    assert_eq!(store.reclaim_expired(Some(run), later).unwrap().len(), 1);
    let claimed = store
        .claim_briefs(Some(run), "runner-new", DEFAULT_CLAIM_LEASE, 1)
        .unwrap();
    assert_eq!(claimed[0].claim.generation, 1);
}
