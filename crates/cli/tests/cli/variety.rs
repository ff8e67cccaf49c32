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
    auditor required  yes
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
