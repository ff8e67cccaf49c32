//! Path amendments end to end: a T4 proposes an extra squad-lead pass with its tool, the proposal is listed
//! on the next gate, a human approves it, and the workstream's path changes: the runner writes the extra T3
//! pass before the workstream merges.

use agency_core::event::{EventKind, EventPayload};
use agency_core::gate::{GateKind, GateStatus};
use agency_core::{BriefStatus, Tier};
use agency_engine::amendments;
use agency_store::{Blackboard, RunStatus};

use crate::support::{Project, approve, config, wait_for};

#[test]
fn a_t4s_extra_squad_pass_is_approved_at_the_next_gate_and_changes_the_path() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t5_verdict = true;
    let (run, driving) = project.start_in_background(include_str!("../scripts/amendment.yaml"), team, false);
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

    // The first pass's verdict gate lists the T4's proposal.
    let verdict = wait_for("the first t5_verdict gate", pending(GateKind::T5Verdict));
    let listed = verdict.summary["amendments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(listed.len(), 1, "{}", verdict.summary);
    let seq = listed[0]["seq"].as_i64().unwrap();
    let line = listed[0]["line"].as_str().unwrap();
    assert!(line.contains("ws-arith: add t3 before t5"), "{line}");
    assert!(line.contains("by t4/fix-add"), "{line}");
    let proposed = project.events_of(run.id, EventKind::PathAmendment);
    assert_eq!(proposed.len(), 1);
    assert_eq!(proposed[0].tier, Some(Tier::T4));
    // The tier above is told; nothing waited for it.
    assert!(
        project.log_tags(run.id).iter().any(|t| t == "T3 AMENDMENT"),
        "{:?}",
        project.log_tags(run.id)
    );
    assert_eq!(
        amendments::current_path(store.as_ref(), run.id, "ws-arith").unwrap(),
        Some(vec![Tier::T3, Tier::T4, Tier::T5]),
        "undecided, the path is the plan's"
    );

    amendments::decide(store.as_ref(), run.id, seq, true, "tester", None).unwrap();
    let again = amendments::decide(store.as_ref(), run.id, seq, false, "tester", None).unwrap_err();
    assert!(again.contains("approved by tester already"), "{again}");
    assert_eq!(
        amendments::current_path(store.as_ref(), run.id, "ws-arith").unwrap(),
        Some(vec![Tier::T3, Tier::T4, Tier::T3, Tier::T5])
    );
    approve(store.as_ref(), verdict.id);

    // The extra pass runs, and its own verdict gate comes.
    let second = wait_for("the extra pass's t5_verdict gate", || {
        pending(GateKind::T5Verdict)().filter(|g| g.id != verdict.id)
    });
    assert!(second.summary.get("amendments").is_none(), "{}", second.summary);
    approve(store.as_ref(), second.id);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));

    let briefs = project.briefs(run.id);
    let extra = briefs
        .iter()
        .find(|b| b.tier == Tier::T3 && b.title == "amended-pass-1")
        .expect("the extra squad-lead pass");
    assert_eq!(extra.status, BriefStatus::Done);
    let fix_mul = briefs.iter().find(|b| b.title == "fix-mul").expect("its task");
    assert_eq!(
        (fix_mul.parent, fix_mul.status),
        (Some(extra.id), BriefStatus::Done)
    );
    assert!(project.log_tags(run.id).iter().any(|t| t == "T3 AMENDED_PASS"));
    let decided = project.events_of(run.id, EventKind::PathAmendmentDecided);
    let Ok(EventPayload::PathAmendmentDecided(decision)) = decided[0].typed() else {
        panic!("{decided:?}");
    };
    assert_eq!(decision.path_after, vec![Tier::T3, Tier::T4, Tier::T3, Tier::T5]);
    assert!(
        store
            .list_gates(run.id)
            .unwrap()
            .iter()
            .all(|g| g.status == GateStatus::Approved)
    );
}

#[test]
fn an_amendment_the_runner_cannot_carry_out_is_refused_at_approval() {
    let project = Project::new();
    let (run, driving) =
        project.start_in_background(include_str!("../scripts/amendment.yaml"), config(), false);
    let store = project.store.clone();
    let plan_gate = wait_for("the t1_plan gate", || {
        store.pending_gates(Some(run.id)).unwrap().pop()
    });
    approve(store.as_ref(), plan_gate.id);
    wait_for("the approved plan", || {
        amendments::current_path(store.as_ref(), run.id, "ws-arith").unwrap()
    });
    let human = amendments::Proposer {
        name: "cli:tester".into(),
        brief: None,
    };
    let t2_pass = agency_core::event::payload::PathChange {
        workstream: "ws-arith".into(),
        add_tiers: vec![Tier::T2],
        insert_before: Some(Tier::T3),
        ..Default::default()
    };
    let proposed = amendments::propose(store.as_ref(), run.id, &human, "auth needs design", t2_pass).unwrap();
    let refused = amendments::decide(store.as_ref(), run.id, proposed.seq, true, "tester", None).unwrap_err();
    assert!(
        refused.contains("carries out only an extra squad-lead pass"),
        "{refused}"
    );
    let unknown = agency_core::event::payload::PathChange {
        workstream: "ws-nope".into(),
        add_tiers: vec![Tier::T3],
        insert_before: Some(Tier::T5),
        ..Default::default()
    };
    let bad = amendments::propose(store.as_ref(), run.id, &human, "why", unknown).unwrap_err();
    assert!(
        bad.contains("no workstream \"ws-nope\" (it has ws-arith)"),
        "{bad}"
    );
    amendments::decide(
        store.as_ref(),
        run.id,
        proposed.seq,
        false,
        "tester",
        Some("not now".into()),
    )
    .unwrap();
    driving.stop();
    let decided = project.events_of(run.id, EventKind::PathAmendmentDecided);
    assert_eq!(decided.len(), 1);
    assert_eq!(
        amendments::current_path(store.as_ref(), run.id, "ws-arith").unwrap(),
        Some(vec![Tier::T3, Tier::T4, Tier::T5]),
        "a rejected amendment changes nothing"
    );
}

/// A gate's summary carries what the tiers flagged: the squad lead's notes on its `t3_plan` gate, and an
/// `anomaly` event recorded since the previous gate (here by the test, as any writer may).
#[test]
fn a_gate_lists_squad_notes_and_anomaly_events_since_the_previous_gate() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t3_plan = true;
    let (run, driving) = project.start_in_background(include_str!("../scripts/anomaly.yaml"), team, false);
    let store = project.store.clone();
    let plan_gate = wait_for("the t1_plan gate", || {
        store.pending_gates(Some(run.id)).unwrap().pop()
    });
    store
        .append_event(agency_core::NewEvent::typed(
            run.id,
            EventPayload::Anomaly(agency_core::event::payload::Anomaly {
                source: "mesh".into(),
                workstream: Some("ws-arith".into()),
                brief: None,
                message: "two squads claimed add.sh".into(),
            }),
        ))
        .unwrap();
    approve(store.as_ref(), plan_gate.id);
    let squad_gate = wait_for("the t3_plan gate", || {
        store
            .pending_gates(Some(run.id))
            .unwrap()
            .into_iter()
            .find(|g| g.kind == GateKind::T3Plan)
    });
    driving.stop();
    let anomalies: Vec<&str> = squad_gate.summary["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(
        anomalies,
        [
            "squad note: add.sh and mul.sh share no helper; fix-add touches add.sh only",
            "ws-arith: two squads claimed add.sh (mesh)",
        ],
        "{}",
        squad_gate.summary
    );
    // Shown once: the plan gate, opened before it was recorded, did not list it.
    assert!(plan_gate.summary["anomalies"].as_array().unwrap().is_empty());
}
