//! Gates decided from outside the runner, as `agency pause` and `resume` do: a pause holds every new spawn
//! of a live run until it is released; a tier waiting at its gate is announced once however many passes
//! the runner makes; a teachback reviewed by hand decides its gate. A rejected gate's re-invocation is
//! driven in bounded_gates.rs and decided in flow (crates/flow/tests/gates.rs).

use agency_core::event::{EventKind, NewEvent};
use agency_core::gate::{GateKind, GateStatus};
use agency_core::teachback::{ReviewVerdict, TeachbackReview, TeachbackState};
use agency_core::{BriefStatus, Tier};
use agency_engine::brief_link::{review_event, review_payload};
use agency_store::{Blackboard, NewGate, RunStatus};

use crate::support::{Project, approve, config, events, pending, wait_for};

#[test]
fn a_pause_holds_new_spawns_of_a_live_run_until_it_is_resumed() {
    let project = Project::new();
    let (run, driving) = project.start_in_background(include_str!("../scripts/simple.yaml"), config(), false);
    let store = project.store.clone();
    // While the run waits at the plan gate, pause it (as `agency pause` does), then approve the plan.
    let plan_gate = wait_for("the t1_plan gate", || {
        store.pending_gates(Some(run.id)).unwrap().pop()
    });
    let pause = store
        .open_gate(NewGate::new(
            run.id,
            GateKind::Pause,
            serde_json::json!({ "message": "paused by the test" }),
        ))
        .unwrap();
    approve(store.as_ref(), plan_gate.id);
    // The approved plan's T4 brief is written, but not spawned.
    let implementer = wait_for("the T4 brief", || {
        store
            .list_briefs(run.id)
            .unwrap()
            .into_iter()
            .find(|b| b.tier == Tier::T4)
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let spawned = |store: &dyn Blackboard| {
        events(store, run.id)
            .iter()
            .filter(|e| e.kind == EventKind::Spawned)
            .count()
    };
    assert_eq!(
        spawned(store.as_ref()),
        1,
        "only the planner ran before the pause"
    );
    assert_eq!(
        store.get_brief(implementer.id).unwrap().status,
        BriefStatus::Pending
    );
    assert_eq!(store.get_run(run.id).unwrap().status, RunStatus::Running);
    approve(store.as_ref(), pause.id);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let all = project.events(run.id);
    let resumed = all.iter().position(|e| e.kind == EventKind::GateResumed).unwrap();
    let first_t4 = all
        .iter()
        .position(|e| e.kind == EventKind::Spawned && e.brief == Some(implementer.id))
        .unwrap();
    assert!(first_t4 > resumed, "the T4 spawned only after the resume");
}

#[test]
fn a_tier_waiting_at_its_gate_is_announced_once() {
    let project = Project::new();
    let (run, driving) = project.start_in_background(include_str!("../scripts/mesh.yaml"), config(), false);
    let store = project.store.clone();
    let decide_next = |kind: GateKind| {
        let gate = wait_for("a gate", || store.pending_gates(Some(run.id)).unwrap().pop());
        assert_eq!(gate.kind, kind);
        gate
    };
    let plan = decide_next(GateKind::T1Plan);
    approve(store.as_ref(), plan.id);
    let synthesis = decide_next(GateKind::T2Synthesis);
    assert!(
        synthesis.summary["next"].to_string().contains("t3 squad-sign"),
        "{}",
        synthesis.summary
    );
    // The runner polls every 20ms while the human reads: the tier's outcome is logged and stored once.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let synth_done = |store: &dyn Blackboard| {
        events(store, run.id)
            .iter()
            .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == "SYNTH_DONE")
            .count()
    };
    assert_eq!(synth_done(store.as_ref()), 1);
    approve(store.as_ref(), synthesis.id);
    assert_eq!(
        driving.join().status,
        RunStatus::Succeeded,
        "{}",
        project.tree(run.id)
    );
    assert_eq!(synth_done(store.as_ref()), 1);
    let architectures = store
        .list_artifacts(run.id, None)
        .unwrap()
        .into_iter()
        .filter(|a| a.name == "architecture/ws-calc")
        .count();
    assert_eq!(architectures, 1);
    let mesh_done = project
        .log_tags(run.id)
        .iter()
        .filter(|t| *t == "T3 MESH_DONE")
        .count();
    assert_eq!(mesh_done, 1, "one mesh, one MESH_DONE");
}

/// A human's review recorded on a teachback while the runner waits for it at the `teachback` gate — by a
/// tool that records the review but leaves the gate (`agency teachback approve` closes it too; here the
/// runner must) — is the gate's decision: the runner closes the gate with it, gives the agent that review
/// (recording none of its own) and the run goes on at once, not when the gate times out.
#[test]
fn a_teachback_reviewed_by_hand_closes_its_gate_and_the_run_goes_on() {
    let project = Project::new();
    let mut config = config();
    config.visibility.inspection_gates.teachback = true;
    let (run, driving) = project.start_in_background(include_str!("../scripts/medium.yaml"), config, false);
    let run = run.id;
    let store = project.store.clone();
    let plan = wait_for("the t1_plan gate", pending(&store, run, GateKind::T1Plan));
    approve(store.as_ref(), plan.id);
    let gate = wait_for("the teachback gate", pending(&store, run, GateKind::Teachback));
    let brief = store.get_brief(gate.brief.unwrap()).unwrap();

    let review = TeachbackReview {
        verdict: ReviewVerdict::Approved,
        reviewer: "cli:alice".into(),
        note: Some("go ahead".into()),
    };
    let payload = review_event(
        &review,
        review_payload(&brief, &review),
        TeachbackState::UnderReview,
        TeachbackState::Active,
    );
    let event = NewEvent::typed(run, payload).brief(brief.id);
    store
        .set_teachback_state(
            brief.id,
            TeachbackState::UnderReview,
            TeachbackState::Active,
            event,
        )
        .unwrap();

    let outcome = driving.join_within(
        std::time::Duration::from_secs(60),
        "the teachback gate was left open",
    );
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run));
    let decided = store.get_gate(gate.id).unwrap();
    assert_eq!(decided.status, GateStatus::Approved);
    assert_eq!(decided.decided_by.as_deref(), Some("cli:alice"));
    assert_eq!(decided.note.as_deref(), Some("the teachback review: go ahead"));
    let events = events(store.as_ref(), run);
    let reviews = events
        .iter()
        .filter(|e| e.brief == Some(brief.id) && e.kind == EventKind::TeachbackApproved)
        .count();
    assert_eq!(reviews, 1, "the runner recorded no review of its own");
    // The agent went on with the human's review: its edit was allowed, never denied.
    assert!(
        !events
            .iter()
            .any(|e| e.brief == Some(brief.id) && e.kind == EventKind::TeachbackDenied)
    );
    assert_eq!(store.get_brief(brief.id).unwrap().status, BriefStatus::Done);
}
