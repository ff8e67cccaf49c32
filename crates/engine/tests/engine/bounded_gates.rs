//! Gates are bounded: a rejected or timed-out tier gate counts against its brief's retry budget, and once
//! the budget is spent the escalation ladder ends at a human gate that never times out (it is announced
//! again instead) — never a loop of re-plans. Each rejection re-invokes the tier told the reason (what
//! each rejection leads to is decided in `agency_flow::ladder::after_rejection`, tested in
//! crates/flow/tests/gates.rs).

use std::time::Duration;

use agency_core::BriefStatus;
use agency_core::event::EventKind;
use agency_core::gate::{GateDecision, GateKind, GateStatus};
use agency_core::tiers::BriefRole;
use agency_engine::engine::feedback_name;
use agency_store::{Blackboard, RunStatus};

use crate::support::{Background, GOAL, Project, config, wait_for};

const SIMPLE: &str = include_str!("../scripts/simple.yaml");

/// The plan briefs of the run, oldest first.
fn plans(project: &Project, run: agency_core::RunId) -> Vec<agency_core::Brief> {
    project
        .briefs(run)
        .into_iter()
        .filter(|b| BriefRole::of(b) == BriefRole::Plan)
        .collect()
}

#[test]
fn rejections_spend_the_retry_budget_and_end_at_a_human_gate() {
    let project = Project::new();
    let (run, driving) = project.start_in_background(SIMPLE, config(), false);
    let store = project.store.clone();
    let mut rejected = Vec::new();
    let escalation = loop {
        let gate = wait_for("a gate", || {
            store
                .pending_gates(Some(run.id))
                .unwrap()
                .into_iter()
                .find(|g| !rejected.contains(&g.id))
        });
        if gate.kind == GateKind::Escalation {
            break gate;
        }
        assert_eq!(gate.kind, GateKind::T1Plan);
        assert!(rejected.len() < 10, "rejections looped: {}", project.tree(run.id));
        store
            .decide_gate(
                gate.id,
                GateDecision::Reject {
                    by: "tester".into(),
                    reason: "not like this".into(),
                },
            )
            .unwrap();
        rejected.push(gate.id);
    };
    let plans = plans(&project, run.id);
    let budget = plans[0].retry_budget;
    assert_eq!(rejected.len() as u32, budget + 1, "{}", project.tree(run.id));
    assert_eq!(plans.len() as u32, budget + 1);
    let last = plans.last().unwrap();
    assert_eq!(last.status, BriefStatus::Escalated);
    assert_eq!(escalation.brief, Some(last.id));
    let message = escalation.summary["message"].as_str().unwrap_or_default();
    assert!(message.contains("retry budget is spent"), "{message}");
    // Each rejection cancelled the plan and re-invoked the planner as its next attempt, told the reason
    // and the gate, under a gate of its own.
    for (i, plan) in plans.iter().enumerate() {
        assert_eq!(plan.attempt as usize, i, "{}", project.tree(run.id));
        if i + 1 < plans.len() {
            assert_eq!(plan.status, BriefStatus::Cancelled, "{}", project.tree(run.id));
        }
        if i > 0 {
            let feedback = project.artifact(run.id, &feedback_name(plan.id)).unwrap();
            assert!(feedback.contains("not like this"), "{feedback}");
            assert!(feedback.contains("t1_plan"), "{feedback}");
        }
    }
    let gated: Vec<_> = store
        .list_gates_of_kind(run.id, GateKind::T1Plan)
        .unwrap()
        .into_iter()
        .map(|g| g.brief)
        .collect();
    assert_eq!(gated, plans.iter().map(|p| Some(p.id)).collect::<Vec<_>>());
    let kinds: Vec<EventKind> = project
        .events(run.id)
        .iter()
        .map(|e| e.kind)
        .filter(|k| {
            matches!(
                k,
                EventKind::GatePending | EventKind::GateRejected | EventKind::GateApproved
            )
        })
        .collect();
    let mut expected = [EventKind::GatePending, EventKind::GateRejected].repeat(rejected.len());
    expected.push(EventKind::GatePending);
    assert_eq!(
        kinds, expected,
        "each gate opened once, rejected once, then the escalation gate"
    );
    // The human ends it.
    store
        .decide_gate(
            escalation.id,
            GateDecision::Reject {
                by: "tester".into(),
                reason: "stop".into(),
            },
        )
        .unwrap();
    let outcome = driving.join_within(
        Duration::from_secs(30),
        "the run after its escalation was rejected",
    );
    assert_eq!(outcome.status, RunStatus::Failed);
}

#[test]
fn an_unattended_run_stops_at_a_human_gate_after_its_budget_of_timeouts_and_is_reminded() {
    let project = Project::new();
    let engine = project
        .runner_for(SIMPLE)
        .options(|options| options.gate_timeout = Some(Duration::from_secs(1)))
        .engine();
    let run = engine.start(GOAL).unwrap();
    let driving = Background::drive(engine, run.id);
    let store = project.store.clone();
    let escalation = wait_for("the escalation gate", || {
        store
            .pending_gates(Some(run.id))
            .unwrap()
            .into_iter()
            .find(|g| g.kind == GateKind::Escalation)
    });
    let plans = plans(&project, run.id);
    assert_eq!(
        plans.len() as u32,
        plans[0].retry_budget + 1,
        "{}",
        project.tree(run.id)
    );
    let timed_out: Vec<_> = store
        .list_gates_of_kind(run.id, GateKind::T1Plan)
        .unwrap()
        .into_iter()
        .filter(|g| g.status == GateStatus::Rejected && g.decided_by.as_deref() == Some("timeout"))
        .collect();
    assert_eq!(timed_out.len(), plans.len());
    // The escalation gate waits for a human past the timeout, and says so again.
    let reminder = wait_for("a reminder", || {
        project
            .events(run.id)
            .into_iter()
            .find(|e| e.kind == EventKind::Log && e.payload["tag"] == "REMINDER")
    });
    assert_eq!(reminder.payload["gate"], serde_json::json!(escalation.id));
    assert_eq!(store.get_gate(escalation.id).unwrap().status, GateStatus::Pending);
    assert!(!store.get_run(run.id).unwrap().status.is_terminal());
    assert_eq!(
        plans.len(),
        self::plans(&project, run.id).len(),
        "no re-plan after the budget"
    );
    driving.stop();
}
