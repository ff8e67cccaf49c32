//! Escalation up the ladder: a T4 that reports itself blocked goes to its T3 at once (no retries), which is
//! re-invoked with the context; a T3 mesh that does not commit in time goes to T2 and never force-commits;
//! a workstream whose every slice fails verification ends at a human gate that auto-approve does not pass,
//! and nothing of it is merged. Where each failure goes on the ladder (a shallow path's T1, the run's
//! escalation limit) is decided in `agency_flow::ladder` and tested there (crates/flow/tests/escalation.rs).

use agency_core::event::EventKind;
use agency_core::gate::{GateDecision, GateKind, GateStatus};
use agency_core::tiers::BriefRole;
use agency_core::{BriefStatus, Tier};
use agency_engine::engine::feedback_name;
use agency_store::{Blackboard, RunStatus};

use crate::support::{Project, config, events, wait_for};

#[tokio::test]
async fn a_blocked_implementer_escalates_to_its_squad_lead_which_is_re_invoked() {
    let project = Project::new();
    let (run, outcome) = project
        .succeed(include_str!("../scripts/escalation.yaml"), config())
        .await;
    let briefs = project.briefs(run.id);
    let blocked = briefs
        .iter()
        .find(|b| b.tier == Tier::T4 && b.title == "fix-mul" && b.status == BriefStatus::Escalated)
        .unwrap();
    assert_eq!(blocked.attempt, 0, "blocked is escalated at once, never retried");
    let squads: Vec<_> = briefs.iter().filter(|b| b.tier == Tier::T3).collect();
    assert_eq!(squads.len(), 2, "{}", project.tree(run.id));
    assert_eq!(squads[0].status, BriefStatus::Cancelled);
    assert_eq!((squads[1].attempt, squads[1].status), (1, BriefStatus::Done));
    let context = project.artifact(run.id, &feedback_name(squads[1].id)).unwrap();
    assert!(
        context.contains("Escalated to you from t4 \"fix-mul\""),
        "{context}"
    );
    assert!(
        context.contains("The brief does not say where mul.sh lives."),
        "{context}"
    );
    let escalated = project.events_of(run.id, EventKind::Escalated);
    assert_eq!(escalated.len(), 1);
    assert_eq!(escalated[0].payload["failure"], "t4_blocked");
    assert_eq!(escalated[0].payload["to"], "t3");
    let branch = outcome.branch.unwrap();
    project.assert_fixed(&branch, &["mul.sh", "add.sh"]);
}

#[test]
fn a_t3_mesh_timeout_escalates_to_its_own_specialist_and_never_force_commits() {
    let project = Project::new();
    // One agent at a time: the second squad lead is still pending when the first reports, and with a
    // zero-minute timeout the mesh has already run out of time.
    let (run, driving) = project
        .runner_for(include_str!("../scripts/mesh.yaml"))
        .auto_approve(true)
        .team(|config| {
            config.runner.concurrency = 1;
            config.retry.t3_mesh_timeout_minutes = 0;
        })
        .start();
    let store = project.store.clone();
    let specialist = wait_for(
        "the domain's specialist re-invoked after the mesh timeout",
        || {
            store
                .list_briefs(run.id)
                .unwrap()
                .into_iter()
                .find(|b| BriefRole::of(b) == BriefRole::Specialist && b.attempt == 1)
        },
    );
    driving.stop();
    assert_eq!(specialist.title, "calculator", "the squads' own specialist");
    let briefs = project.briefs(run.id);
    assert!(
        briefs.iter().all(|b| b.tier != Tier::T4),
        "a timed-out mesh must not dispatch T4 work:\n{}",
        project.tree(run.id)
    );
    let context = project.artifact(run.id, &feedback_name(specialist.id)).unwrap();
    assert!(context.contains("T3 mesh timeout"), "{context}");
    let escalated = project.events_of(run.id, EventKind::Escalated);
    assert_eq!(escalated.len(), 1, "{escalated:?}");
    assert_eq!(escalated[0].tier, Some(Tier::T3));
    assert_eq!(escalated[0].payload["failure"], "t3_stuck");
    assert_eq!(escalated[0].payload["to"], "t2");
    assert!(project.log_tags(run.id).contains(&"T3 MESH_TIMEOUT".to_string()));
    // The squads of the timed-out mesh are superseded, none committed.
    for squad in briefs
        .iter()
        .filter(|b| b.tier == Tier::T3 && b.created_at < specialist.created_at)
    {
        assert!(
            matches!(squad.status, BriefStatus::Escalated | BriefStatus::Cancelled),
            "{}",
            project.tree(run.id)
        );
    }
}

/// A workstream reaches the integration branch only when every slice of it was accepted. Here its one
/// slice is rejected every time: after the ladder ends at a human gate, nothing of it is merged or verified
/// on the integration branch, neither while the gate is pending nor after a human grants a fresh attempt
/// that is rejected again.
#[test]
fn a_never_accepted_workstream_waits_at_its_gate_and_is_never_merged() {
    let project = Project::new();
    let (run, driving) =
        project.start_in_background(include_str!("../scripts/rejected.yaml"), config(), true);
    let store = project.store.clone();
    let escalation_gate = |after: Option<agency_core::GateId>| {
        let store = store.clone();
        wait_for("an escalation gate", move || {
            store
                .pending_gates(Some(run.id))
                .unwrap()
                .into_iter()
                .find(|g| g.kind == GateKind::Escalation && Some(g.id) != after)
        })
    };
    let integrated = |project: &Project| {
        let integration_work: Vec<String> = project
            .events(run.id)
            .iter()
            .filter(|e| {
                (e.kind == EventKind::SignoffVerify && e.tier == Some(Tier::T1))
                    || (e.kind == EventKind::Log
                        && matches!(e.payload["tag"].as_str(), Some("INTEGRATION" | "VERDICT"))
                        && e.payload["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("integration")))
            })
            .map(|e| format!("{} {}", e.kind.as_str(), e.payload))
            .collect();
        (integration_work, project.artifact(run.id, "merged/ws-add"))
    };
    let first = escalation_gate(None);
    assert!(
        first.summary["message"]
            .as_str()
            .unwrap()
            .contains("every slice failed verification"),
        "{}",
        first.summary
    );
    // The runner goes on passing over the run while the gate waits (auto-approve does not pass it): give
    // it the time for several passes. No agent starts meanwhile.
    let spawned = |store: &dyn Blackboard| {
        events(store, run.id)
            .iter()
            .filter(|e| e.kind == EventKind::Spawned)
            .count()
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let before = spawned(store.as_ref());
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert_eq!(
        spawned(store.as_ref()),
        before,
        "an agent started while the gate waited"
    );
    assert_eq!(store.get_gate(first.id).unwrap().status, GateStatus::Pending);
    assert_eq!(
        integrated(&project),
        (vec![], None),
        "a rejected workstream was taken to the integration branch:\n{}",
        project.tree(run.id)
    );
    assert_eq!(
        store.pending_gates(Some(run.id)).unwrap().len(),
        1,
        "one gate, opened once"
    );
    store
        .decide_gate(
            first.id,
            GateDecision::Approve {
                by: "tester".into(),
                note: Some("try once more".into()),
            },
        )
        .unwrap();
    let second = escalation_gate(Some(first.id));
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert_eq!(
        integrated(&project),
        (vec![], None),
        "the fresh attempt was rejected too, yet the workstream was integrated:\n{}",
        project.tree(run.id)
    );
    store
        .decide_gate(
            second.id,
            GateDecision::Reject {
                by: "tester".into(),
                reason: "the slice is never accepted".into(),
            },
        )
        .unwrap();
    assert_eq!(driving.join().status, RunStatus::Failed);
    assert_eq!(integrated(&project), (vec![], None));
    let integration = format!("agency/{}/integration", run.id.short());
    assert_eq!(
        project.file_on(&integration, "add.sh").as_deref(),
        Some("# add A B: prints A + B\necho $(($1 - $2))\n"),
        "the integration branch still holds the original add.sh"
    );
}
