//! `agency approve | reject | pause | resume`: decisions written by one process (the CLI) are seen by
//! another (this test, holding its own blackboard handle, as a runner would).

use agency_core::RunId;
use agency_core::gate::{GateKind, GateStatus};
use agency_store::{Blackboard, NewGate, NewRun, RunStatus, SqliteBlackboard};

use crate::support::{Repo, decider};

fn run_with_gate(repo: &Repo, kind: GateKind) -> (SqliteBlackboard, RunId, agency_core::GateId) {
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store
        .create_run(NewRun::new(
            "Fix the off-by-one in pagination",
            repo.path().display().to_string(),
        ))
        .unwrap();
    let summary = serde_json::json!({ "message": "Waiting on approval before T2 spawns" });
    let gate = store.open_gate(NewGate::new(run.id, kind, summary)).unwrap();
    (store, run.id, gate.id)
}

#[test]
fn approve_by_prefix_is_seen_by_another_handle() {
    let repo = Repo::initialised();
    let (store, run, gate) = run_with_gate(&repo, GateKind::T1Plan);
    let out = repo
        .agency(&["approve", &run.short(), "--note", "looks right"])
        .success();
    assert!(
        out.stdout().contains("approved  gate t1_plan"),
        "{}",
        out.stdout()
    );
    let gate = store.get_gate(gate).unwrap();
    assert_eq!(gate.status, GateStatus::Approved);
    assert_eq!(gate.note.as_deref(), Some("looks right"));
    assert_eq!(gate.decided_by.as_deref(), Some(decider().as_str()));
}

#[test]
fn reject_records_the_reason() {
    let repo = Repo::initialised();
    let (store, run, gate) = run_with_gate(&repo, GateKind::T2Synthesis);
    let out = repo
        .agency(&[
            "reject",
            &run.to_string(),
            "--reason",
            "the queue must be durable",
        ])
        .success();
    assert!(
        out.stdout().contains("brief is retried with your reason"),
        "{}",
        out.stdout()
    );
    let gate = store.get_gate(gate).unwrap();
    assert_eq!(gate.status, GateStatus::Rejected);
    assert_eq!(gate.note.as_deref(), Some("the queue must be durable"));
}

#[test]
fn nothing_pending_is_a_clear_non_zero_exit() {
    let repo = Repo::initialised();
    let (_store, run, _gate) = run_with_gate(&repo, GateKind::T1Plan);
    repo.agency(&["approve", &run.short()]).success();
    let again = repo.agency(&["approve", &run.short()]).fails_with(5);
    assert!(
        again.stderr().contains("no gate waiting for a decision"),
        "{}",
        again.stderr()
    );
    repo.agency(&["reject", &run.short(), "--reason", "late"])
        .fails_with(5);
}

#[test]
fn unknown_and_malformed_run_ids_are_errors() {
    let repo = Repo::initialised();
    let (_store, _run, _gate) = run_with_gate(&repo, GateKind::T1Plan);
    let unknown = repo.agency(&["approve", "ffffffff"]).fails_with(4);
    assert!(unknown.stderr().contains("ffffffff"), "{}", unknown.stderr());
    let junk = repo.agency(&["approve", "not-an-id"]).fails_with(3);
    assert!(junk.stderr().contains("not-an-id"), "{}", junk.stderr());
}

#[test]
fn an_ambiguous_prefix_lists_candidates() {
    let repo = Repo::initialised();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let mut a = NewRun::new("one", "repo");
    a.id = "abc10000-0000-4000-8000-000000000001".parse().unwrap();
    let mut b = NewRun::new("two", "repo");
    b.id = "abc20000-0000-4000-8000-000000000002".parse().unwrap();
    let (a, b) = (store.create_run(a).unwrap(), store.create_run(b).unwrap());
    let out = repo.agency(&["inspect", "abc"]).fails_with(4);
    assert!(
        out.stderr().contains(&a.id.short()) && out.stderr().contains(&b.id.short()),
        "{}",
        out.stderr()
    );
}

#[test]
fn pause_and_resume_a_run() {
    let repo = Repo::initialised();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store.create_run(NewRun::new("goal", "repo")).unwrap().id;
    repo.agency(&["pause", &run.short()]).success();
    let pending = store.pending_gates(Some(run)).unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].kind, GateKind::Pause);
    let twice = repo.agency(&["pause", &run.short()]).fails_with(5);
    assert!(twice.stderr().contains("already paused"), "{}", twice.stderr());
    // approve does not silently release a pause.
    let approve = repo.agency(&["approve", &run.short()]).fails_with(5);
    assert!(approve.stderr().contains("agency resume"), "{}", approve.stderr());
    repo.agency(&["resume", &run.short()]).success();
    assert!(store.pending_gates(Some(run)).unwrap().is_empty());
    repo.agency(&["resume", &run.short()]).fails_with(5);
}

#[test]
fn an_ended_run_cannot_be_paused() {
    let repo = Repo::initialised();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store.create_run(NewRun::new("goal", "repo")).unwrap().id;
    store.set_run_status(run, None, RunStatus::Succeeded).unwrap();
    let out = repo.agency(&["pause", &run.short()]).fails_with(5);
    assert!(out.stderr().contains("has ended"), "{}", out.stderr());
}

#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    let repo = Repo::initialised();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    // More than a pipe holds (64 KiB), so the command is still writing when the reader leaves.
    for i in 0..1000 {
        store
            .create_run(NewRun::new(
                format!("goal {i}"),
                repo.path().display().to_string(),
            ))
            .unwrap();
    }
    // `agency runs | head -1`: the reader closes the pipe after one line.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agency"))
        .arg("runs")
        .current_dir(repo.path())
        .env_remove("AGENCY_DB")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        matches!(out.status.code(), Some(0) | Some(141)),
        "{:?}",
        out.status
    );
}
