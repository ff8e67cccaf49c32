//! `agency run --resume` after the runner was killed with SIGKILL mid-run: the run completes from the
//! blackboard, nothing recorded is lost, and no brief is spawned twice unless it was in flight at the kill
//! (then it is restarted once, as configured).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use agency_core::event::EventKind;
use agency_core::{BriefId, Event, Tier};
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};

use crate::support::{CALCULATOR_GOAL, Repo, events, started_run};

/// The medium-profile script of the engine's end-to-end tests: T1 → T3 → two T4s → T5s → accept.
const SCRIPT: &str = include_str!("../../../engine/tests/scripts/medium.yaml");

fn spawns(events: &[Event]) -> BTreeMap<BriefId, usize> {
    let mut counts = BTreeMap::new();
    for e in events.iter().filter(|e| e.kind == EventKind::Spawned) {
        *counts.entry(e.brief.unwrap()).or_insert(0) += 1;
    }
    counts
}

#[test]
fn a_run_killed_mid_run_resumes_and_completes_without_double_spawns() {
    let (repo, script) = Repo::calculator(SCRIPT);

    let script = script.to_str().unwrap();
    let mut runner = repo.spawn(
        &["run", CALCULATOR_GOAL, "--auto-approve", "--script", script],
        &[],
    );

    // Kill it the moment the first implementer is spawned: the plan and the squad lead are recorded, the
    // T4s are in flight or just done.
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = started_run(&store);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let t4_spawned = events(&store, run)
            .iter()
            .any(|e| e.kind == EventKind::Spawned && e.tier == Some(Tier::T4));
        if t4_spawned {
            break;
        }
        assert!(
            runner.try_wait().unwrap().is_none(),
            "the runner ended before it could be killed"
        );
        assert!(Instant::now() < deadline, "no implementer was spawned within 60s");
        std::thread::sleep(Duration::from_millis(2));
    }
    // SIGKILL: no chance to clean up.
    runner.kill().unwrap();
    runner.wait().unwrap();

    let before = events(&store, run);
    assert_ne!(
        store.get_run(run).unwrap().status,
        RunStatus::Succeeded,
        "killed too late to test resume"
    );
    let briefs_before = store.list_briefs(run).unwrap();
    // What was in flight at the kill: spawned, with no outcome recorded yet.
    let in_flight: Vec<BriefId> = briefs_before
        .iter()
        .filter(|b| b.status == agency_core::BriefStatus::Running)
        .map(|b| b.id)
        .collect();

    let resumed = repo.agency(&[
        "run",
        "--resume",
        &run.short(),
        "--auto-approve",
        "--script",
        script,
    ]);
    let resumed = resumed.success();
    assert!(resumed.stdout().contains("succeeded"), "{}", resumed.stdout());
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);

    let after = events(&store, run);
    // Nothing recorded is lost: the history before the kill is a prefix of the history after.
    assert_eq!(&after[..before.len()], &before[..]);
    // Every brief recorded before the kill is still there, each restarted at most once.
    let briefs_after = store.list_briefs(run).unwrap();
    for brief in &briefs_before {
        assert!(briefs_after.iter().any(|b| b.id == brief.id));
    }
    for (brief, count) in spawns(&after) {
        let allowed = if in_flight.contains(&brief) { 2 } else { 1 };
        assert!(
            count <= allowed,
            "brief {} spawned {count} times (in flight at the kill: {})",
            brief.short(),
            in_flight.contains(&brief)
        );
    }
    // Restarts are said in the log.
    let restarts = after[before.len()..]
        .iter()
        .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == "RESUME")
        .count();
    assert_eq!(restarts, in_flight.len());
    // The work is on the integration branch.
    assert_eq!(
        repo.git_output(&["show", &format!("agency/{}/integration:mul.sh", run.short())]),
        "# mul A B: prints A * B\necho $(($1 * $2))\n"
    );
}

/// Ctrl-C (SIGINT) stops the runner the way an error does — its agents stopped, their briefs given back —
/// and the run stays resumable: exit 130 with the command that continues it. While it drives, a second
/// runner on the same run is refused.
#[test]
fn ctrl_c_stops_the_runner_and_the_run_resumes() {
    let (repo, script) = Repo::calculator(SCRIPT);
    let script = script.to_str().unwrap();
    // No --auto-approve: the runner waits at the plan gate.
    let runner = repo.spawn(&["run", CALCULATOR_GOAL, "--script", script], &[]);
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = crate::support::run_at_plan_gate(&store);
    // A run has one driver: a second runner on it, while the first waits at the gate, is refused before
    // it changes anything, and says who drives it.
    let second = repo.agency(&["run", "--resume", &run.short(), "--script", script]);
    assert_ne!(second.code(), Some(0), "{}", second.stdout());
    let refusal = second.stderr();
    assert!(
        refusal.contains("is already being driven by runner-"),
        "{refusal}"
    );
    assert!(refusal.contains(&format!("pid {}", runner.id())), "{refusal}");
    assert!(refusal.contains("agency worker"), "{refusal}");
    assert!(!refusal.contains("panicked"), "{refusal}");
    let pid = runner.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let (code, output) = crate::support::finish(runner, Duration::from_secs(30));
    assert_eq!(code, Some(130), "{output}");
    assert!(output.contains("stopped: the runner of run"), "{output}");
    assert!(
        output.contains(&format!("agency run --resume {}", run.short())),
        "{output}"
    );
    let status = store.get_run(run).unwrap().status;
    assert!(!status.is_terminal(), "still resumable, found {status:?}");

    repo.agency(&[
        "run",
        "--resume",
        &run.to_string(),
        "--auto-approve",
        "--script",
        script,
    ])
    .success();
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);
}

/// A runner whose log reader went away (its stdout and stderr pipes closed: `agency run | tee` killed, an
/// ssh session dropped) still stops on SIGTERM, its run resumable. Writing "stopping" to the closed stderr
/// used to panic the signal listener before it cancelled the run, and the process ignored every signal
/// after.
#[test]
fn a_runner_whose_output_is_gone_still_stops_on_sigterm() {
    stops_resumable_on("-TERM");
}

/// The terminal closing (SIGHUP) stops the runner the same way, instead of ending it with its agents left
/// running.
#[test]
fn a_runner_whose_terminal_hangs_up_stops_and_its_run_resumes() {
    stops_resumable_on("-HUP");
}

/// Starts a run that waits at its plan gate, closes the runner's output pipes, sends it `signal`, and
/// checks it stopped on its own (exit 130) with the run resumable.
fn stops_resumable_on(signal: &str) {
    let (repo, script) = Repo::calculator(SCRIPT);
    let script = script.to_str().unwrap();
    let mut runner = repo.spawn(&["run", CALCULATOR_GOAL, "--script", script], &[]);
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = crate::support::run_at_plan_gate(&store);
    drop(runner.stdout.take());
    drop(runner.stderr.take());
    let sent = std::process::Command::new("kill")
        .args([signal, &runner.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let (code, _) = crate::support::finish(runner, Duration::from_secs(30));
    assert_eq!(
        code,
        Some(130),
        "stopped by the signal, not killed at the deadline"
    );
    let status = store.get_run(run).unwrap().status;
    assert!(!status.is_terminal(), "still resumable, found {status:?}");
}
