//! Learning II in a run: earlier briefs of a domain whose risk was always under-predicted (each had its
//! sign-off rejected) make a new workstream of that domain start with its risk one higher, recorded on the
//! brief with what was predicted and why. What `teachback.calibration: off` changes (the planner's
//! dimensions kept, the record saying what calibration would have done) is decided in
//! `agency_flow::calibration` and tested there (crates/flow/tests/calibration.rs).

use agency_core::event::{EventKind, NewEvent};
use agency_core::{BriefId, BriefStatus, Tier};
use agency_engine::calibration::calibration_name;
use agency_store::Blackboard;
use serde_json::json;

use crate::support::{Project, config};

const SIMPLE: &str = include_str!("../scripts/simple.yaml");

/// A finished run of the simple script (domain `backend`, fix-add predicted at risk 1) plus nine copies
/// of its fix-add, each of the ten with a rejected sign-off: ten records of `backend` whose risk was
/// under-predicted.
async fn ten_under_predicted_risks(project: &Project) {
    let (run, _) = project.succeed(SIMPLE, config()).await;
    let fix_add = project
        .briefs(run.id)
        .into_iter()
        .find(|b| b.tier == Tier::T4 && b.status == BriefStatus::Done)
        .unwrap();
    assert_eq!(fix_add.variety.unwrap().risk, 1);
    let mut ids = vec![fix_add.id];
    for i in 2..=10 {
        let mut copy = fix_add.clone();
        copy.id = BriefId::new();
        copy.title = format!("fix-add-{i}");
        project.store.insert_brief(&copy).unwrap();
        ids.push(copy.id);
    }
    for id in ids {
        let rejected = json!({ "subject": "fix-add", "missing": ["add.sh still subtracts"] });
        project
            .store
            .append_event(NewEvent::new(run.id, EventKind::SignoffRejected, rejected).brief(id))
            .unwrap();
    }
}

#[tokio::test]
async fn ten_under_predicted_risks_make_the_eleventh_one_higher() {
    let project = Project::new();
    ten_under_predicted_risks(&project).await;
    let (run, _) = project.succeed(SIMPLE, config()).await;
    let eleventh = project
        .briefs(run.id)
        .into_iter()
        .find(|b| b.tier == Tier::T4)
        .unwrap();
    let used = eleventh.variety.unwrap();
    assert_eq!(
        (used.novelty, used.scope, used.uncertainty, used.risk),
        (1, 1, 1, 2)
    );
    let record: serde_json::Value =
        serde_json::from_str(&project.artifact(run.id, &calibration_name(eleventh.id)).unwrap()).unwrap();
    assert_eq!(record["domain"], "backend");
    assert_eq!(record["variety_dimensions"]["risk"], 1);
    assert_eq!(record["calibrated"]["risk"], 2);
    let why = record["why"][0].as_str().unwrap();
    assert!(
        why.starts_with("risk 1 → 2: 10 of 10 finished briefs in domain backend"),
        "{why}"
    );
    assert!(project.log_tags(run.id).iter().any(|t| t.ends_with("CALIBRATED")));
    // The calibrated brief is itself a record with what was predicted, not what was used: a third run
    // still sees eleven records of risk 1, and bumps by one, not two.
    let (third, _) = project.succeed(SIMPLE, config()).await;
    let twelfth = project
        .briefs(third.id)
        .into_iter()
        .find(|b| b.tier == Tier::T4)
        .unwrap();
    assert_eq!(twelfth.variety.unwrap().risk, 2);
}
