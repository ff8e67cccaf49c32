//! `agency variety score`.

use crate::support::Repo;

#[test]
fn scores_and_derives_gates() {
    let repo = Repo::new();
    let run = repo.agency(&[
        "variety",
        "score",
        "--novelty",
        "2",
        "--scope",
        "3",
        "--uncertainty",
        "2",
        "--risk",
        "3",
    ]);
    insta::assert_snapshot!(run.success().stdout(), @r"
    score 10  (novelty 2 + scope 3 + uncertainty 2 + risk 3)
    route             orchestrate
    teachback         blocking
    auditor required  yes (a slice's sign-off adds an auditor beside the T5 judge; a rejection by either rejects)
    tier path         t3 → t4 → t5
    ");
}

#[test]
fn the_boundary_between_advisory_and_blocking_is_seven() {
    let repo = Repo::new();
    let six = repo
        .agency(&[
            "variety",
            "score",
            "--novelty",
            "1",
            "--scope",
            "1",
            "--uncertainty",
            "2",
            "--risk",
            "2",
            "--json",
        ])
        .success();
    let seven = repo
        .agency(&[
            "variety",
            "score",
            "--novelty",
            "1",
            "--scope",
            "2",
            "--uncertainty",
            "2",
            "--risk",
            "2",
            "--json",
        ])
        .success();
    let six: serde_json::Value = serde_json::from_str(&six.stdout()).unwrap();
    let seven: serde_json::Value = serde_json::from_str(&seven.stdout()).unwrap();
    assert_eq!(six["variety_score"], 6);
    assert_eq!(six["gates"]["teachback_mode"], "advisory");
    assert_eq!(six["gates"]["workflow_route"], "compact");
    assert_eq!(six["default_tier_path"], serde_json::json!(["t4", "t5"]));
    assert_eq!(seven["variety_score"], 7);
    assert_eq!(seven["gates"]["teachback_mode"], "blocking");
    assert_eq!(seven["gates"]["auditor_required"], true);
}

#[test]
fn out_of_range_and_non_integer_dimensions_name_the_dimension() {
    let repo = Repo::new();
    let run = repo
        .agency(&[
            "variety",
            "score",
            "--novelty",
            "5",
            "--scope",
            "1",
            "--uncertainty",
            "1",
            "--risk",
            "1",
        ])
        .fails_with(3);
    assert!(run.stderr().contains("`novelty`"), "{}", run.stderr());
    assert!(run.stderr().contains("found 5"), "{}", run.stderr());

    let run = repo
        .agency(&[
            "variety",
            "score",
            "--novelty",
            "1",
            "--scope",
            "true",
            "--uncertainty",
            "1",
            "--risk",
            "1",
        ])
        .fails_with(3);
    assert!(
        run.stderr().contains("`scope` must be an integer"),
        "{}",
        run.stderr()
    );

    let run = repo
        .agency(&[
            "variety",
            "score",
            "--novelty",
            "1",
            "--scope",
            "1",
            "--uncertainty",
            "2.5",
            "--risk",
            "1",
        ])
        .fails_with(3);
    assert!(run.stderr().contains("`uncertainty`"), "{}", run.stderr());
}

#[test]
fn a_missing_dimension_is_a_usage_error() {
    let repo = Repo::new();
    let run = repo.agency(&["variety", "score", "--novelty", "1"]).fails_with(2);
    assert!(run.stderr().contains("--scope"), "{}", run.stderr());
}

/// Learning II through the binary: after ten finished briefs of domain `backend` whose risk was
/// under-predicted (a real scripted run's fix-add and nine copies, each with a rejected sign-off),
/// `agency variety calibration` shows the bump and the next run's fix-add starts one risk higher, shown by
/// `agency inspect --brief`.
#[test]
fn calibration_is_shown_and_raises_the_next_briefs_risk() {
    use agency_core::event::{EventKind, NewEvent};
    use agency_core::{BriefId, BriefStatus, Tier};
    use agency_store::{Blackboard, SqliteBlackboard};

    let script = include_str!("../../../engine/tests/scripts/simple.yaml");
    let (repo, path) = Repo::calculator(script);
    let script = path.to_str().unwrap();
    let go = || {
        repo.agency(&[
            "run",
            crate::support::CALCULATOR_GOAL,
            "--script",
            script,
            "--auto-approve",
        ])
        .success()
        .run_id()
    };
    let empty = repo.agency(&["variety", "calibration"]).success();
    assert!(
        empty.stdout().contains("nothing to calibrate"),
        "{}",
        empty.stdout()
    );

    let first = go();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let first = store.resolve_run(&first).unwrap();
    let fix_add = store
        .list_briefs(first)
        .unwrap()
        .into_iter()
        .find(|b| b.tier == Tier::T4 && b.status == BriefStatus::Done)
        .unwrap();
    let mut ids = vec![fix_add.id];
    for i in 2..=10 {
        let mut copy = fix_add.clone();
        copy.id = BriefId::new();
        copy.title = format!("fix-add-{i}");
        store.insert_brief(&copy).unwrap();
        ids.push(copy.id);
    }
    for id in ids {
        let rejected = serde_json::json!({ "subject": "fix-add", "missing": ["add.sh still subtracts"] });
        store
            .append_event(NewEvent::new(first, EventKind::SignoffRejected, rejected).brief(id))
            .unwrap();
    }

    let table = repo.agency(&["variety", "calibration"]).success().stdout();
    let risk = table
        .lines()
        .find(|l| l.starts_with("backend") && l.contains("risk"))
        .unwrap();
    let columns: Vec<&str> = risk.split_whitespace().collect();
    assert_eq!(&columns[..5], ["backend", "risk", "10", "1.00", "+1"], "{table}");
    let scope = table
        .lines()
        .find(|l| l.starts_with("backend") && l.contains("scope"))
        .unwrap();
    assert_eq!(scope.split_whitespace().nth(4), Some("0"), "{table}");
    let json: serde_json::Value = serde_json::from_str(
        &repo
            .agency(&["variety", "calibration", "--run", &first.short(), "--json"])
            .success()
            .stdout(),
    )
    .unwrap();
    assert_eq!(json["records"], 10);
    assert_eq!(json["min_matches"], 5);

    let second = store.resolve_run(&go()).unwrap();
    let eleventh = store
        .list_briefs(second)
        .unwrap()
        .into_iter()
        .find(|b| b.tier == Tier::T4)
        .unwrap();
    assert_eq!(eleventh.variety.unwrap().risk, 2);
    let shown = repo
        .agency(&["inspect", &second.short(), "--brief", &eleventh.id.short()])
        .success()
        .stdout();
    assert!(
        shown.contains("predicted 1/1/1/1, used 1/1/1/2 (Learning II, domain backend): risk 1 → 2: 10 of 10"),
        "{shown}"
    );
}
