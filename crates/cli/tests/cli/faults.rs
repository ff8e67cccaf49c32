//! Faults a run survives (issue 33): each test injects one — PostgreSQL connections killed mid-run, a
//! second runner on a driven run — and asserts a clear report, nothing lost, and a run that still succeeds. docs/operations.md's "What
//! survives what" table is backed by these tests.

use std::time::{Duration, Instant};

use agency_core::event::EventKind;
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
use postgres::{Client, NoTls};

use crate::postgres::{Database, SCRIPT, calculator, no_database, spawn};
use crate::support::{CALCULATOR_GOAL, Repo, finish, wait_for};

/// The medium script with each implementer taking a second, so a run lasts long enough to be interrupted.
fn slow_script() -> String {
    let slow = SCRIPT
        .replace(
            "    brief: ws-arith/t4/fix-add\n    reply:\n      tool_calls:\n",
            "    brief: ws-arith/t4/fix-add\n    reply:\n      tool_calls:\n        - {name: run_command, input: {argv: [sleep, \"1\"]}}\n",
        )
        .replace(
            "    brief: ws-arith/t4/fix-mul\n    reply:\n      tool_calls:\n",
            "    brief: ws-arith/t4/fix-mul\n    reply:\n      tool_calls:\n        - {name: run_command, input: {argv: [sleep, \"1\"]}}\n",
        );
    assert_eq!(slow.matches("sleep").count(), 2, "the script changed shape");
    slow
}

/// Ends every server process connected to `db` (other than the one asking): what a PostgreSQL restart
/// does to its clients, without restarting a server other tests share. Returns how many it ended.
fn kill_connections(db: &Database) -> usize {
    let mut admin = Client::connect(&db.url, NoTls).unwrap();
    admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap()
        .len()
}

#[test]
fn a_run_survives_its_postgres_connections_being_killed_mid_run() {
    if no_database() {
        return;
    }
    let db = Database::new();
    let repo = calculator(&db, &slow_script());
    let runner = spawn(
        &repo,
        &db,
        &[
            "run",
            CALCULATOR_GOAL,
            "--auto-approve",
            "--script",
            ".agency/script.yaml",
        ],
    );
    let store = db.store();
    let run = wait_for(
        || store.list_runs().ok()?.first().map(|r| r.id),
        "the run to start",
    );
    // Once an agent is at work, every connection of the runner is ended, three times over.
    wait_for(
        || {
            let events = store.events_after(Some(run), 0, 100_000).ok()?;
            events.iter().any(|e| e.kind == EventKind::Spawned).then_some(())
        },
        "an agent to start",
    );
    let mut killed = 0;
    for _ in 0..3 {
        killed += kill_connections(&db);
        std::thread::sleep(Duration::from_millis(700));
    }
    assert!(killed >= 3, "ended only {killed} connections");

    let started = Instant::now();
    let (code, out) = finish(runner, Duration::from_secs(120));
    assert_eq!(code, Some(0), "after {:?}: {out}", started.elapsed());
    assert!(out.contains("succeeded"), "{out}");
    // The pause is reported with its cause, not hidden.
    assert!(out.contains("reconnected to PostgreSQL"), "{out}");
    assert!(!out.contains("pg_hba"), "{out}");
    // Nothing lost: the run and its work are there.
    let store = db.store();
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);
    assert_eq!(
        repo.git_output(&["show", &format!("agency/{}/integration:mul.sh", run.short())]),
        "# mul A B: prints A * B\necho $(($1 * $2))\n"
    );
}

/// A second runner on a run one already drives is refused before it writes anything (no `RUNTIMES` line,
/// nothing at all), naming the runner that drives it; once that runner is stopped, `--resume` takes the
/// run to success.
#[test]
fn a_second_runner_is_refused_without_writing_and_the_run_resumes_after_the_first() {
    let (repo, script) = Repo::calculator(SCRIPT);
    let script = script.to_str().unwrap();
    let first = repo.spawn(&["run", CALCULATOR_GOAL, "--script", script], &[]);
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = crate::support::run_at_plan_gate(&store);
    let before = store.last_seq(Some(run)).unwrap();
    let second = repo.agency(&["run", "--resume", &run.short(), "--script", script]);
    assert_ne!(second.code(), Some(0), "{}", second.stdout());
    assert!(
        second.stderr().contains("is already being driven by runner-"),
        "{}",
        second.stderr()
    );
    assert_eq!(
        store.last_seq(Some(run)).unwrap(),
        before,
        "the refused runner wrote to the run: {:?}",
        store.events_after(Some(run), before, 100).unwrap()
    );

    let sent = std::process::Command::new("kill")
        .args(["-INT", &first.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let (code, out) = finish(first, Duration::from_secs(30));
    assert_eq!(code, Some(130), "{out}");
    let resumed = repo
        .agency(&[
            "run",
            "--resume",
            &run.short(),
            "--auto-approve",
            "--script",
            script,
        ])
        .success();
    assert!(resumed.stdout().contains("succeeded"), "{}", resumed.stdout());
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);
}
