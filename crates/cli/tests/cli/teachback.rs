//! `agency teachback ...` through the real binary: every transition of the state machine, the refusals,
//! show/list, and the stall ALERT raised once per stall.

use crate::hook_support::{TEACHBACK, correct_teachback, start_brief, submit_teachback};
use crate::support::{Repo, decider};

fn state(repo: &Repo, brief: &str) -> String {
    let out = repo.agency(&["teachback", "show", brief]).success().stdout();
    out.lines()
        .find_map(|l| l.strip_prefix("state      "))
        .expect("state line")
        .to_string()
}

#[test]
fn every_transition_of_a_blocking_teachback() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    assert_eq!(state(&repo, &brief), "pending");
    // Nothing to review yet.
    let early = repo.agency(&["teachback", "approve", &brief]).fails_with(5);
    assert!(
        early
            .stderr()
            .contains("no teachback has been submitted (state: pending)"),
        "{}",
        early.stderr()
    );
    let out = submit_teachback(&repo, &brief).success().stdout();
    assert!(out.contains("now under_review"), "{out}");
    assert_eq!(state(&repo, &brief), "under_review");
    submit_teachback(&repo, &brief).fails_with(5);
    correct_teachback(&repo, &brief).success();
    assert_eq!(state(&repo, &brief), "correcting");
    let show = repo.agency(&["teachback", "show", &brief]).success().stdout();
    assert!(
        show.contains(&format!(
            "review     corrections by {}\n  - per message\n  - no new deps",
            decider()
        )),
        "{show}"
    );
    repo.agency(&["teachback", "approve", &brief]).fails_with(5);
    submit_teachback(&repo, &brief).success();
    assert_eq!(state(&repo, &brief), "under_review");
    repo.agency(&["teachback", "approve", &brief, "--note", "go"])
        .success();
    assert_eq!(state(&repo, &brief), "active");
    let show = repo.agency(&["teachback", "show", &brief]).success().stdout();
    assert!(
        show.contains(&format!("review     approved by {}\nnote       go", decider())),
        "{show}"
    );
    repo.agency(&["teachback", "approve", &brief]).fails_with(5);
    submit_teachback(&repo, &brief).fails_with(5);
}

#[test]
fn an_advisory_teachback_is_active_once_sent() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "1,2,1,2");
    submit_teachback(&repo, &brief).success();
    assert_eq!(state(&repo, &brief), "active");
}

#[test]
fn submit_refuses_rote_teachbacks_and_reads_stdin_and_files() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let rote = repo
        .agency(&["teachback", "submit", "--brief", &brief, "- Building: stuff"])
        .fails_with(3);
    assert!(
        rote.stderr()
            .contains("key_constraints, approach, most_likely_wrong, least_confident must not be empty"),
        "{}",
        rote.stderr()
    );
    let file = repo.path().join("tb.md");
    std::fs::write(&file, TEACHBACK).unwrap();
    repo.agency(&[
        "teachback",
        "submit",
        "--brief",
        &brief,
        "--file",
        file.to_str().unwrap(),
    ])
    .success();
    assert_eq!(state(&repo, &brief), "under_review");
}

#[test]
fn corrections_need_an_item_and_briefs_must_exist() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    submit_teachback(&repo, &brief).success();
    repo.agency(&["teachback", "correct", &brief]).fails_with(2);
    repo.agency(&["teachback", "correct", &brief, "--item", " "])
        .fails_with(3);
    repo.agency(&["teachback", "approve", "ffffffff"]).fails_with(4);
    let none = repo.agency(&["teachback", "show"]).fails_with(2);
    assert!(none.stderr().contains("AGENCY_BRIEF"), "{}", none.stderr());
}

#[test]
fn list_shows_state_and_mode() {
    let repo = Repo::initialised();
    let blocking = start_brief(&repo, "2,2,2,2");
    start_brief(&repo, "1,1,1,1");
    submit_teachback(&repo, &blocking).success();
    let out = repo.agency(&["teachback", "list"]).success().stdout();
    assert!(out.contains("under_review  blocking  t4   write hello"), "{out}");
    assert!(out.contains("pending       advisory  t4   write hello"), "{out}");
}

#[test]
fn a_stalled_teachback_raises_one_alert_per_stall() {
    let repo = Repo::initialised();
    std::fs::write(
        repo.path().join(".agency/team.yaml"),
        "teachback:\n  pending_timeout_minutes: 1\n  review_timeout_minutes: 1\n",
    )
    .unwrap();
    let brief = start_brief(&repo, "2,2,2,2");
    let check = |at: &str| repo.agency(&["teachback", "check", "--at", at]).success();
    let soon = (chrono::Utc::now() + chrono::Duration::seconds(20)).to_rfc3339();
    let later = (chrono::Utc::now() + chrono::Duration::minutes(2)).to_rfc3339();
    let much_later = (chrono::Utc::now() + chrono::Duration::minutes(3)).to_rfc3339();
    assert!(
        check(&soon).stdout().contains("0 alert(s) raised"),
        "not yet past the timeout"
    );
    let pending = check(&later);
    assert!(pending.stdout().contains("1 alert(s) raised"));
    assert!(
        pending.stderr().contains("teachback not sent within 1 minutes"),
        "{}",
        pending.stderr()
    );
    assert!(
        check(&later).stdout().contains("0 alert(s) raised"),
        "one alert per stall, not per poll"
    );
    assert!(check(&much_later).stdout().contains("0 alert(s) raised"));
    submit_teachback(&repo, &brief).success();
    let review = check(&later);
    assert!(review.stdout().contains("1 alert(s) raised"));
    assert!(
        review.stderr().contains("META-BLOCK: orchestrator unreachable"),
        "{}",
        review.stderr()
    );
    assert!(check(&much_later).stdout().contains("0 alert(s) raised"));
    let show = repo.agency(&["teachback", "show", &brief]).success().stdout();
    assert!(show.contains("2 alert(s)"), "{show}");
    // Both in PACT's form: META-BLOCK, with the four fields a human acts on.
    let store = agency_store::SqliteBlackboard::open(repo.db()).unwrap();
    let alerts: Vec<_> = agency_store::Blackboard::events_after(&store, None, 0, 1000)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == agency_core::EventKind::Alert)
        .collect();
    assert_eq!(alerts.len(), 2);
    for alert in &alerts {
        crate::support::assert_pact_alert(&alert.payload, "teachback_timeout");
    }
    assert!(
        alerts[1].payload["issue"]
            .as_str()
            .unwrap()
            .contains("orchestrator unreachable")
    );
}

/// Tiers that only read (T1–T3, the T5 sign-off) have no teachback to wait for: every listing says so
/// rather than showing them `pending` for ever.
#[test]
fn reading_tiers_show_their_teachback_as_not_needed() {
    let script = include_str!("../../../engine/tests/scripts/simple.yaml");
    let (repo, path) = Repo::calculator(script);
    let run = repo
        .agency(&[
            "run",
            crate::support::CALCULATOR_GOAL,
            "--script",
            path.to_str().unwrap(),
            "--auto-approve",
        ])
        .success()
        .run_id();
    let list = repo
        .agency(&["teachback", "list", "--run", &run])
        .success()
        .stdout();
    let t1: Vec<&str> = list.lines().filter(|l| l.contains(" t1 ")).collect();
    let t4: Vec<&str> = list.lines().filter(|l| l.contains(" t4 ")).collect();
    assert!(!t1.is_empty() && !t4.is_empty(), "{list}");
    for line in list.lines().skip(1).filter(|l| !l.contains(" t4 ")) {
        assert!(line.contains("not needed (reads only)"), "{list}");
    }
    for line in &t4 {
        assert!(!line.contains("not needed"), "{list}");
    }
    let tier = repo.agency(&["inspect", &run, "--tier", "t1"]).success().stdout();
    assert!(tier.contains("teachback not needed (reads only)"), "{tier}");
    assert!(!tier.contains("teachback pending"), "{tier}");
    let plan = list
        .lines()
        .find(|l| l.contains(" t1 ") && l.ends_with("plan"))
        .unwrap();
    let brief = plan.split_whitespace().next().unwrap();
    let show = repo.agency(&["teachback", "show", brief]).success().stdout();
    assert!(show.contains("state      not needed (reads only)"), "{show}");
    let shown = repo
        .agency(&["show", &run, "teachback", brief])
        .success()
        .stdout();
    assert!(shown.contains("not needed (reads only)"), "{shown}");
}
