//! Who gives claims back, and when. A runner that stops on an error, or is cancelled, stops its agents and
//! gives their briefs back at once (`RELEASED`), instead of leaving the run to wait one lease; only a
//! runner that dies without a word leaves its claims to their lease (tests in `leases`).
//!
//! The lease here is team.yaml's default (600 s) and every run must finish within 60 s, so a claim left
//! to its lease fails the test.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use agency_core::event::EventKind;
use agency_core::{BriefStatus, Event, RunId, Tier};
use agency_engine::{EngineError, EngineOptions};
use agency_llm::CancelToken;
use agency_store::{Blackboard, RunStatus};

use crate::support::{GOAL, Project, Slow, Stuck, claimed_by, config, spawns_per_brief, worked};

const SCRIPT: &str = include_str!("../scripts/medium.yaml");

/// One agent at a time per runner, the default lease.
fn one_at_a_time() -> agency_core::config::TeamConfig {
    let mut config = config();
    config.runner.concurrency = 1;
    config
}

/// A driver whose implementers take a moment, so it still holds fix-add when a worker takes fix-mul.
fn patient_driver(project: &Project) -> agency_engine::Engine {
    project.runner(SCRIPT, one_at_a_time(), true, "driver", |tier, builtin| {
        if tier == Tier::T4 {
            Arc::new(Slow {
                inner: builtin,
                delay: Duration::from_millis(500),
            })
        } else {
            builtin
        }
    })
}

/// The `RELEASED` lines of the run: the brief each gave back and who held it.
fn released(events: &[Event]) -> Vec<(agency_core::BriefId, String)> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == "RELEASED")
        .map(|e| {
            assert_eq!(e.payload["from"], "running");
            assert_eq!(e.payload["to"], "pending");
            assert_eq!(e.payload["reason"], "runner_stopped");
            (
                e.brief.unwrap(),
                e.payload["claimed_by"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Drives `run` with `driver` to its end (60 s at most) while `during` acts beside it.
async fn drive_while(
    driver: &agency_engine::Engine,
    run: RunId,
    during: impl std::future::Future<Output = ()>,
) -> agency_engine::DriveOutcome {
    let cancel = CancelToken::new();
    let driving = {
        let (driver, cancel) = (driver.clone(), cancel.clone());
        tokio::spawn(async move { driver.drive(run, &cancel).await })
    };
    during.await;
    let outcome = tokio::time::timeout(Duration::from_secs(60), driving).await;
    cancel.cancel();
    outcome
        .expect("the run did not finish within 60 s: a claim was left to its lease")
        .unwrap()
        .unwrap()
}

/// The brief of tier `tier` titled `title`.
fn brief_id(project: &Project, run: RunId, tier: Tier, title: &str) -> agency_core::BriefId {
    project
        .briefs(run)
        .iter()
        .find(|b| b.tier == tier && b.title == title)
        .unwrap()
        .id
}

#[tokio::test]
async fn a_worker_that_stops_on_an_error_gives_its_claim_back_at_once() {
    let project = Project::new();
    let driver = patient_driver(&project);
    // A worker that cannot make a worktree: a file stands where its worktree directory should be, so the
    // first brief it claims ends its loop with an error naming that directory.
    let blocked = project.dir.path().join("not-a-directory");
    std::fs::write(&blocked, "").unwrap();
    let broken = project.runner_with(
        SCRIPT,
        one_at_a_time(),
        true,
        "broken",
        |_, builtin| builtin,
        |options: &mut EngineOptions| options.worktrees = blocked.join("worktrees"),
    );
    let run = driver.start(GOAL).unwrap().id;

    let store = project.store.clone();
    let outcome = drive_while(&driver, run, async {
        claimed_by(store.as_ref(), run, Tier::T4, "fix-add", "driver").await;
        let ended = tokio::time::timeout(Duration::from_secs(30), broken.work(run, &CancelToken::new()))
            .await
            .expect("the broken worker did not stop");
        let error = ended.unwrap_err().to_string();
        assert!(
            error.contains("cannot make the worktree directory") && error.contains("not-a-directory"),
            "{error}"
        );
    })
    .await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run));

    let events = project.events(run);
    let fix_mul = brief_id(&project, run, Tier::T4, "fix-mul");
    assert_eq!(released(&events), vec![(fix_mul, "broken".to_string())]);
    assert!(
        !events.iter().any(|e| e.payload["reason"] == "lease_expired"),
        "nothing was left to its lease"
    );
    // The broken worker never started an agent: the driver's spawn of fix-mul is its only one.
    assert!(spawns_per_brief(&events).values().all(|&n| n == 1));
}

#[tokio::test]
async fn a_cancelled_worker_stops_its_agent_then_gives_its_claim_back() {
    let project = Project::new();
    let driver = patient_driver(&project);
    let stuck = Arc::new(Stuck::default());
    let stopped = stuck.stopped();
    let quitter = {
        let stuck = stuck.clone();
        project.runner(SCRIPT, one_at_a_time(), true, "quitter", move |_, _| {
            stuck.clone()
        })
    };
    let run = driver.start(GOAL).unwrap().id;

    let store = project.store.clone();
    let outcome = drive_while(&driver, run, async {
        claimed_by(store.as_ref(), run, Tier::T4, "fix-add", "driver").await;
        let cancel = CancelToken::new();
        let working = {
            let (quitter, cancel) = (quitter.clone(), cancel.clone());
            tokio::spawn(async move { quitter.work(run, &cancel).await })
        };
        claimed_by(store.as_ref(), run, Tier::T4, "fix-mul", "quitter").await;
        assert!(!stopped.load(Ordering::SeqCst));
        cancel.cancel();
        let ended = tokio::time::timeout(Duration::from_secs(30), working)
            .await
            .expect("the cancelled worker did not stop")
            .unwrap();
        assert!(matches!(ended, Err(EngineError::Cancelled)), "{ended:?}");
        assert!(
            stopped.load(Ordering::SeqCst),
            "its agent was stopped before it returned"
        );
    })
    .await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run));

    let events = project.events(run);
    let fix_mul = brief_id(&project, run, Tier::T4, "fix-mul");
    assert_eq!(released(&events), vec![(fix_mul, "quitter".to_string())]);
    assert!(!events.iter().any(|e| e.payload["reason"] == "lease_expired"));
    // Spawned by the quitter, then once more by the driver; every other brief once.
    for (brief, spawns) in spawns_per_brief(&events) {
        let expected = if brief == fix_mul { 2 } else { 1 };
        assert_eq!(spawns, expected, "spawns of {brief}:\n{}", project.tree(run));
    }
    let fix_mul = project.store.get_brief(fix_mul).unwrap();
    assert_eq!(fix_mul.status, BriefStatus::Done);
    assert_eq!(fix_mul.claimed_by.as_deref(), Some("driver"));
}

#[tokio::test]
async fn a_resuming_driver_takes_back_its_dead_predecessors_claims_at_once_and_leaves_a_live_workers_alone() {
    let project = Project::new();
    // The names say who is who (`agency_engine::Role`): two drivers, one after the other, and a worker.
    let dead = project.runner(SCRIPT, one_at_a_time(), true, "runner-old", |tier, builtin| {
        if tier == Tier::T4 {
            Arc::new(Stuck::default())
        } else {
            builtin
        }
    });
    let worker = project.runner(SCRIPT, one_at_a_time(), true, "worker-live", |tier, builtin| {
        if tier == Tier::T4 {
            Arc::new(Slow {
                inner: builtin,
                delay: Duration::from_secs(3),
            })
        } else {
            builtin
        }
    });
    let resumed = project.runner(SCRIPT, one_at_a_time(), true, "runner-new", |_, builtin| builtin);
    let run = dead.start(GOAL).unwrap().id;
    let store = project.store.clone();

    // The first driver takes fix-add and the worker fix-mul; then the driver dies without a word (as with
    // kill -9: its task is dropped, its claim left `running` under a lease of 600 s).
    let cancel = CancelToken::new();
    let dying = {
        let (dead, cancel) = (dead.clone(), cancel.clone());
        tokio::spawn(async move { dead.drive(run, &cancel).await })
    };
    claimed_by(store.as_ref(), run, Tier::T4, "fix-add", "runner-old").await;
    let working = {
        let (worker, cancel) = (worker.clone(), cancel.clone());
        tokio::spawn(async move { worker.work(run, &cancel).await })
    };
    claimed_by(store.as_ref(), run, Tier::T4, "fix-mul", "worker-live").await;
    dying.abort();
    let _ = dying.await;
    let held = project
        .store
        .get_brief(brief_id(&project, run, Tier::T4, "fix-mul"))
        .unwrap();
    assert_eq!(
        held.status,
        BriefStatus::Running,
        "the worker's agent is still at work"
    );

    // `agency run --resume`, while the worker's agent is still at work.
    let outcome = drive_while(&resumed, run, async {}).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run));
    assert_eq!(worked(working).await, RunStatus::Succeeded);

    let events = project.events(run);
    let fix_add = brief_id(&project, run, Tier::T4, "fix-add");
    let fix_mul = brief_id(&project, run, Tier::T4, "fix-mul");
    let restarted: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == "RESUME")
        .map(|e| {
            (
                e.brief.unwrap(),
                e.payload["claimed_by"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        restarted,
        vec![(fix_add, "runner-old".to_string())],
        "only the dead driver's claim is taken back"
    );
    assert!(!events.iter().any(|e| e.payload["reason"] == "lease_expired"));
    // The worker kept fix-mul and finished it: spawned once, by the worker; fix-add twice.
    for (brief, spawns) in spawns_per_brief(&events) {
        let expected = if brief == fix_add { 2 } else { 1 };
        assert_eq!(spawns, expected, "spawns of {brief}:\n{}", project.tree(run));
    }
    let fix_mul = project.store.get_brief(fix_mul).unwrap();
    assert_eq!(fix_mul.status, BriefStatus::Done);
    assert_eq!(fix_mul.claimed_by.as_deref(), Some("worker-live"));
}

#[tokio::test]
async fn a_second_driver_is_refused_while_the_first_drives_and_let_in_once_it_is_gone() {
    let project = Project::new();
    let first = project.runner(SCRIPT, one_at_a_time(), true, "runner-first", |tier, builtin| {
        if tier == Tier::T4 {
            Arc::new(Stuck::default())
        } else {
            builtin
        }
    });
    let second = project.runner(SCRIPT, one_at_a_time(), true, "runner-second", |_, builtin| {
        builtin
    });
    let run = first.start(GOAL).unwrap().id;
    let cancel = CancelToken::new();
    let driving = {
        let (first, cancel) = (first.clone(), cancel.clone());
        tokio::spawn(async move { first.drive(run, &cancel).await })
    };
    claimed_by(project.store.as_ref(), run, Tier::T4, "fix-add", "runner-first").await;
    let events_before = project.events(run).len();

    let refused = tokio::time::timeout(Duration::from_secs(30), second.drive(run, &CancelToken::new()))
        .await
        .expect("the second driver was let in and kept driving");
    match refused {
        Err(EngineError::Store(agency_store::StoreError::Driven { holder, .. })) => {
            assert!(holder.unwrap_or_default().starts_with("runner-first"));
        }
        other => panic!("a second driver was let in: {other:?}"),
    }
    assert_eq!(
        project.events(run).len(),
        events_before,
        "the refused driver wrote nothing (it took no claim back)"
    );
    let held = project
        .store
        .get_brief(brief_id(&project, run, Tier::T4, "fix-add"))
        .unwrap();
    assert_eq!(held.claimed_by.as_deref(), Some("runner-first"));

    // The first driver dies (its task dropped, as with kill -9): the second takes over and finishes.
    driving.abort();
    let _ = driving.await;
    let outcome = drive_while(&second, run, async {}).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run));
}
