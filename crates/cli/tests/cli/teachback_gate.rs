//! The human teachback gate decided on the teachback: with team.yaml's `teachback` gate on, a runner waits
//! at a `teachback` gate for each blocking teachback; `agency teachback approve|correct <brief>` decides
//! that gate too, as one decision, and the run goes on at once rather than when the gate times out
//! (60 minutes by default).

use std::time::Duration;

use agency_core::event::EventKind;
use agency_core::gate::{GateKind, GateStatus};
use agency_core::{Event, Gate};
use agency_store::{Blackboard, SqliteBlackboard};

use crate::hook_support::{correct_teachback, start_brief, submit_teachback};
use crate::support::{CALCULATOR_GOAL, Repo, decider, events, finish, wait_for};

/// The medium-profile script: fix-add's teachback is blocking (variety 8).
const SCRIPT: &str = include_str!("../../../engine/tests/scripts/medium.yaml");

/// Turns team.yaml's `teachback` gate on: a human reviews blocking teachbacks.
fn human_teachback_reviews(repo: &Repo) {
    repo.edit_team(&[("    teachback: false ", "    teachback: true ")]);
}

/// The first pending gate of `kind` on the blackboard.
fn pending(store: &SqliteBlackboard, kind: GateKind) -> Option<Gate> {
    store
        .pending_gates(None)
        .unwrap()
        .into_iter()
        .find(|g| g.kind == kind)
}

#[test]
fn approving_a_teachback_decides_its_gate_and_the_run_goes_on_at_once() {
    let (repo, script) = Repo::calculator(SCRIPT);
    human_teachback_reviews(&repo);
    let runner = repo.spawn(
        &["run", CALCULATOR_GOAL, "--script", script.to_str().unwrap()],
        &[],
    );
    let store = SqliteBlackboard::open(repo.db()).unwrap();

    let plan = wait_for(|| pending(&store, GateKind::T1Plan), "the plan gate");
    let run = plan.run;
    repo.agency(&["approve", &run.short()]).success();
    // fix-add's agent sent its teachback: the runner waits for a human at its gate.
    let gate = wait_for(|| pending(&store, GateKind::Teachback), "the teachback gate");
    let brief = gate.brief.unwrap();

    let out = repo
        .agency(&["teachback", "approve", &brief.short(), "--note", "go ahead"])
        .success()
        .stdout();
    assert!(
        out.contains(&format!(
            "its teachback gate {}: the run goes on",
            gate.id.short()
        )),
        "{out}"
    );
    // Decided by the command itself, with its verdict and reviewer, not left for the runner or a timeout.
    let decided = store.get_gate(gate.id).unwrap();
    assert_eq!(decided.status, GateStatus::Approved);
    assert_eq!(decided.decided_by.as_deref(), Some(decider().as_str()));
    assert_eq!(decided.note.as_deref(), Some("the teachback review: go ahead"));

    let (code, output) = finish(runner, Duration::from_secs(60));
    assert_eq!(code, Some(0), "the run did not go on to the end:\n{output}");
    assert!(output.contains("succeeded"), "{output}");

    // One decision: one review of the teachback, naming its gate, and the gate's one decision. The runner
    // recorded no review of its own, and its agent went on with the human's.
    let events = events(&store, run);
    let reviews: Vec<&Event> = events
        .iter()
        .filter(|e| {
            e.brief == Some(brief)
                && matches!(
                    e.kind,
                    EventKind::TeachbackApproved | EventKind::TeachbackCorrected
                )
        })
        .collect();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    assert_eq!(reviews[0].kind, EventKind::TeachbackApproved);
    assert_eq!(reviews[0].payload["reviewer"], decider());
    assert_eq!(reviews[0].payload["gate"], gate.id.to_string());
    let decisions = events
        .iter()
        .filter(|e| {
            matches!(e.kind, EventKind::GateApproved | EventKind::GateRejected)
                && e.payload["gate"] == gate.id.to_string()
        })
        .count();
    assert_eq!(decisions, 1);
    assert_eq!(
        store.get_brief(brief).unwrap().status,
        agency_core::BriefStatus::Done
    );
}

#[test]
fn correcting_a_teachback_rejects_its_gate_with_the_corrections() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    submit_teachback(&repo, &brief).success();
    // A runner's human review of it, waiting at its gate (as `agency run` opens it).
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let id = store.resolve_brief(&brief).unwrap();
    let run = store.get_brief(id).unwrap().run;
    let mut new = agency_store::NewGate::new(
        run,
        GateKind::Teachback,
        serde_json::json!({ "message": "waiting" }),
    );
    new.brief = Some(id);
    let gate = store.open_gate(new).unwrap();

    let out = correct_teachback(&repo, &brief).success().stdout();
    assert!(
        out.contains(&format!("rejected   its teachback gate {}", gate.id.short())),
        "{out}"
    );
    let decided = store.get_gate(gate.id).unwrap();
    assert_eq!(decided.status, GateStatus::Rejected);
    assert_eq!(decided.decided_by.as_deref(), Some(decider().as_str()));
    assert_eq!(
        decided.note.as_deref(),
        Some("the teachback review: per message; no new deps")
    );
    // A teachback with no gate waiting is reviewed as before, and says nothing of gates.
    submit_teachback(&repo, &brief).success();
    let out = repo.agency(&["teachback", "approve", &brief]).success().stdout();
    assert!(!out.contains("gate"), "{out}");
}
