//! Agreement verification at the handoffs (seed 003; docs/protocols.md, "Agreement at each handoff"): an
//! L1 mismatch at T4→T5 is an anomaly on the T5 verdict gate, and a handoff with nothing on the handing-over
//! side to check against is recorded with the seed's fallback.

use agency_core::event::payload::{AGREEMENT_ASSUMED, AgreementChecked};
use agency_core::event::{EventKind, EventPayload};
use agency_core::gate::GateKind;
use agency_store::{Blackboard, RunStatus};

use crate::support::{Project, approve, config, wait_for};

fn agreements(project: &Project, run: agency_core::RunId) -> Vec<AgreementChecked> {
    project
        .events_of(run, EventKind::Agreement)
        .iter()
        .map(|e| match e.typed() {
            Ok(EventPayload::Agreement(a)) => a,
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_slice_leaving_its_squads_design_is_an_l1_mismatch_on_the_verdict_gate() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t5_verdict = true;
    let (run, driving) = project.start_in_background(include_str!("../scripts/agreement.yaml"), team, false);
    let store = project.store.clone();
    let pending = |kind: GateKind| {
        let store = store.clone();
        move || {
            store
                .pending_gates(Some(run.id))
                .unwrap()
                .into_iter()
                .find(|g| g.kind == kind)
        }
    };
    let plan_gate = wait_for("the t1_plan gate", pending(GateKind::T1Plan));
    approve(store.as_ref(), plan_gate.id);
    let verdict = wait_for("the t5_verdict gate", pending(GateKind::T5Verdict));
    let anomalies: Vec<&str> = verdict.summary["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(
        anomalies,
        ["ws-arith: L1 mismatch at t4→t5 (fix-add): mul.sh is outside what was handed over (agreement)"],
        "{}",
        verdict.summary
    );

    let checked = agreements(&project, run.id);
    // The squad lead's restatement, held against the files the plan declared for ws-arith: agreed.
    let squad = checked
        .iter()
        .find(|a| a.handoff == "t1→t3")
        .expect("the t1→t3 check");
    assert_eq!((squad.level.as_str(), squad.outcome.as_str()), ("L1", "agreed"));
    assert!(
        squad.restated.contains("add.sh adds its two arguments"),
        "{squad:?}"
    );
    let slice = checked
        .iter()
        .find(|a| a.handoff == "t4→t5")
        .expect("the t4→t5 check");
    assert_eq!(
        (slice.level.as_str(), slice.outcome.as_str(), slice.significant),
        ("L1", "mismatch", true)
    );
    assert_eq!(slice.differences, ["mul.sh is outside what was handed over"]);
    assert!(
        slice.restated.contains("add.sh") && slice.restated.contains("mul.sh"),
        "{slice:?}"
    );

    // Non-blocking: a human who reads the anomaly and approves lets the run go on.
    approve(store.as_ref(), verdict.id);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
}

#[test]
fn a_slice_without_a_declared_design_is_recorded_with_the_fallback() {
    let project = Project::new();
    let (run, driving) = project.start_in_background(include_str!("../scripts/simple.yaml"), config(), true);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let checked = agreements(&project, run.id);
    let slice = checked
        .iter()
        .find(|a| a.handoff == "t4→t5")
        .expect("the t4→t5 check");
    assert_eq!(slice.outcome, "assumed");
    assert!(!slice.significant);
    assert!(project.events_of(run.id, EventKind::Anomaly).is_empty());
    assert!(AGREEMENT_ASSUMED.contains("specialist unavailable for verification"));
}

#[test]
fn a_lead_restating_a_wider_topic_than_t1_handed_over_is_an_l0_mismatch_on_the_lead_gate() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t2_lead = true;
    let (run, driving) =
        project.start_in_background(include_str!("../scripts/agreement-t2.yaml"), team, false);
    let store = project.store.clone();
    let pending = |kind: GateKind| {
        let store = store.clone();
        move || {
            store
                .pending_gates(Some(run.id))
                .unwrap()
                .into_iter()
                .find(|g| g.kind == kind)
        }
    };
    approve(
        store.as_ref(),
        wait_for("the t1_plan gate", pending(GateKind::T1Plan)).id,
    );
    let lead_gate = wait_for("the t2_lead gate", pending(GateKind::T2Lead));
    let anomalies: Vec<&str> = lead_gate.summary["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(
        anomalies,
        [
            "ws-calc: L0 mismatch at t1→t2 (lead): NOTES.md is outside what was handed over; neg.sh is outside \
          what was handed over (agreement)"
        ],
        "{}",
        lead_gate.summary
    );
    approve(store.as_ref(), lead_gate.id);
    approve(
        store.as_ref(),
        wait_for("the t2_synthesis gate", pending(GateKind::T2Synthesis)).id,
    );
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));

    let checked = agreements(&project, run.id);
    let lead = checked
        .iter()
        .find(|a| a.handoff == "t1→t2")
        .expect("the t1→t2 check");
    assert_eq!(
        (lead.level.as_str(), lead.outcome.as_str(), lead.significant),
        ("L0", "mismatch", true)
    );
    // The specialist declared what it hands its squad: the squad lead's restatement is within it.
    let squad = checked
        .iter()
        .find(|a| a.handoff == "t2→t3")
        .expect("the t2→t3 check");
    assert_eq!(
        (squad.level.as_str(), squad.outcome.as_str()),
        ("L1", "agreed"),
        "{squad:?}"
    );
    assert!(squad.restated.contains("[interfaces: sum]"), "{squad:?}");
}
