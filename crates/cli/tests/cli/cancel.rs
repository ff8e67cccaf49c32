//! `agency cancel`: a live runner is stopped and the run ends `cancelled`; a run whose runner died is
//! closed all the same; an ended run is a clear non-zero exit. `agency runs` and `inspect` say when a run
//! has no runner, with the command that resumes it, and keep session records out of the way.

use std::time::Duration;

use agency_core::BriefStatus;
use agency_core::gate::GateStatus;
use agency_store::{Blackboard, NewRun, RunStatus, SqliteBlackboard};

use crate::support::{CALCULATOR_GOAL, Repo, finish};

const SCRIPT: &str = include_str!("../../../engine/tests/scripts/simple.yaml");

#[test]
fn cancel_stops_a_live_runner_and_closes_the_run() {
    let (repo, script) = Repo::calculator(SCRIPT);
    let script = script.to_str().unwrap();
    // No --auto-approve: the runner waits at the plan gate.
    let runner = repo.spawn(&["run", CALCULATOR_GOAL, "--script", script], &[]);
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = crate::support::run_at_plan_gate(&store);
    let listed = repo.agency(&["runs"]).success().stdout();
    assert!(!listed.contains("no runner attached"), "{listed}");

    let out = repo
        .agency(&["cancel", &run.short(), "--reason", "wrong goal"])
        .success()
        .stdout();
    assert!(out.contains("its runner stopped"), "{out}");
    let (code, output) = finish(runner, Duration::from_secs(30));
    assert_eq!(
        code,
        Some(7),
        "the attached run reports the run did not succeed:\n{output}"
    );
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Cancelled);
    assert!(store.pending_gates(Some(run)).unwrap().is_empty());
    let gate = store.list_gates(run).unwrap().pop().unwrap();
    assert_eq!(gate.status, GateStatus::Rejected);
    assert!(gate.note.unwrap().contains("wrong goal"));

    // Ended: a second cancel has nothing to do.
    let again = repo.agency(&["cancel", &run.short()]).fails_with(5);
    assert!(
        again.stderr().contains("has already ended (cancelled)"),
        "{}",
        again.stderr()
    );
}

#[test]
fn a_run_without_a_runner_is_shown_so_and_can_be_cancelled() {
    let (repo, script) = Repo::calculator(SCRIPT);
    let script_path = script.to_str().unwrap();
    let mut runner = repo.spawn(&["run", CALCULATOR_GOAL, "--script", script_path], &[]);
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = crate::support::run_at_plan_gate(&store);
    // The runner dies without a word.
    runner.kill().unwrap();
    let _ = runner.wait();
    // A session record sits beside it, never ending by itself.
    store
        .create_run(NewRun::new(
            "the tasks of Claude Code session s1",
            repo.path().display().to_string(),
        ))
        .unwrap();

    let listed = repo.agency(&["runs"]).success().stdout();
    let canonical = std::fs::canonicalize(script_path).unwrap();
    let resume = format!(
        "agency run --resume {} --script {}",
        run.short(),
        canonical.display()
    );
    assert!(listed.contains(&resume), "{listed}");
    // The session record is left out of the listing, and counted.
    let shown = |text: &str| {
        let text = text.replace(canonical.to_str().unwrap(), "<script>");
        crate::demo::normalise_run(&text, repo.path().to_str().unwrap())
    };
    insta::assert_snapshot!("runs_without_a_runner", shown(&listed));
    let all = repo.agency(&["runs", "--all"]).success().stdout();
    insta::assert_snapshot!("runs_all_with_a_session_record", shown(&all));
    let inspected = repo.agency(&["inspect", &run.short()]).success().stdout();
    insta::assert_snapshot!("inspect_without_a_runner", shown(&inspected));

    let out = repo.agency(&["cancel", &run.short()]).success().stdout();
    assert!(out.contains("no runner was attached"), "{out}");
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Cancelled);
    for brief in store.list_briefs(run).unwrap() {
        assert!(
            matches!(brief.status, BriefStatus::Cancelled | BriefStatus::Done),
            "{} is {:?}",
            brief.title,
            brief.status
        );
    }
    // gc collects it now.
    repo.agency(&["gc"]).success();
    let branches = repo.git_output(&["branch", "--list", &format!("agency/{}/*", run.short())]);
    assert_eq!(branches.trim(), "", "gc collected the cancelled run's branches");
}
