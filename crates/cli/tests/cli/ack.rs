//! `agency ack`: a human acknowledges a HALT — `--resume` approves the run's `halt` gate with the note,
//! `--cancel` rejects it — signed with the process's uid like `agency approve`. Bad input is refused before
//! anything is written. (The runner's side — all work stops, resumes or ends — is tested in the engine's
//! `signals` tests.)

use agency_core::RunId;
use agency_core::gate::{GateKind, GateStatus};
use agency_store::{Blackboard, NewGate, NewRun, SqliteBlackboard};

use crate::support::{Repo, decider};

fn halted_run(repo: &Repo) -> (SqliteBlackboard, RunId, agency_core::GateId) {
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store
        .create_run(NewRun::new(
            "Fix the calculator",
            repo.path().display().to_string(),
        ))
        .unwrap();
    let summary = serde_json::json!({ "message": "HALT SECURITY from t4 \"fix-mul\": a key is committed" });
    let gate = store
        .open_gate(NewGate::new(run.id, GateKind::Halt, summary))
        .unwrap();
    (store, run.id, gate.id)
}

#[test]
fn ack_resume_approves_the_halt_with_the_note_and_the_uid() {
    let repo = Repo::initialised();
    let (store, run, gate) = halted_run(&repo);
    let out = repo
        .agency(&[
            "ack",
            &run.short(),
            "--note",
            "the key is a test fixture",
            "--resume",
        ])
        .success();
    assert!(out.stdout().contains("resumed   run"), "{}", out.stdout());
    assert!(out.stdout().contains("HALT SECURITY"), "{}", out.stdout());
    let gate = store.get_gate(gate).unwrap();
    assert_eq!(gate.status, GateStatus::Approved);
    assert_eq!(gate.note.as_deref(), Some("the key is a test fixture"));
    assert_eq!(gate.decided_by.as_deref(), Some(decider().as_str()));
    // Decided once: a second ack has nothing to act on.
    let again = repo
        .agency(&["ack", &run.short(), "--note", "again", "--resume"])
        .fails_with(5);
    assert!(again.stderr().contains("no HALT waiting"), "{}", again.stderr());
}

#[test]
fn ack_cancel_rejects_the_halt() {
    let repo = Repo::initialised();
    let (store, run, gate) = halted_run(&repo);
    // The tests run agency with USER=tester: whoever sets $USER does not choose the signature.
    let out = repo
        .agency(&["ack", &run.short(), "--note", "rotate the key first", "--cancel"])
        .success();
    assert!(out.stdout().contains("cancelled run"), "{}", out.stdout());
    let gate = store.get_gate(gate).unwrap();
    assert_eq!(gate.status, GateStatus::Rejected);
    assert_eq!(gate.note.as_deref(), Some("rotate the key first"));
    assert_eq!(gate.decided_by.as_deref(), Some(decider().as_str()));
}

#[test]
fn ack_needs_a_note_and_exactly_one_decision() {
    let repo = Repo::initialised();
    let (store, run, gate) = halted_run(&repo);
    let short = run.short();
    repo.agency(&["ack", &short, "--note", "checked"]).fails_with(2);
    repo.agency(&["ack", &short, "--note", "checked", "--resume", "--cancel"])
        .fails_with(2);
    repo.agency(&["ack", &short, "--resume"]).fails_with(2);
    let empty = repo
        .agency(&["ack", &short, "--note", " ", "--resume"])
        .fails_with(3);
    assert!(empty.stderr().contains("--note"), "{}", empty.stderr());
    assert_eq!(store.get_gate(gate).unwrap().status, GateStatus::Pending);
}

#[test]
fn ack_without_a_halt_points_at_approve() {
    let repo = Repo::initialised();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store.create_run(NewRun::new("goal", "repo")).unwrap().id;
    store
        .open_gate(NewGate::new(run, GateKind::T1Plan, serde_json::json!({})))
        .unwrap();
    let out = repo
        .agency(&["ack", &run.short(), "--note", "fine", "--resume"])
        .fails_with(5);
    assert!(out.stderr().contains("agency approve"), "{}", out.stderr());
    assert_eq!(store.pending_gates(Some(run)).unwrap().len(), 1);
}
