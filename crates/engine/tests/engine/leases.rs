//! Several runners on one blackboard: claims have leases. A runner renews the claims of agents that work
//! longer than the lease, and a runner that dies holding a claim loses it when its lease ends — the brief
//! is then picked up again by exactly one of the runners still alive.

use std::sync::Arc;
use std::time::Duration;

use agency_core::event::EventKind;
use agency_core::{BriefStatus, Tier};
use agency_llm::CancelToken;
use agency_store::RunStatus;

use crate::support::{GOAL, Project, Slow, Stuck, claimed_by, config, spawns_per_brief, worked};

const SCRIPT: &str = include_str!("../scripts/medium.yaml");

#[tokio::test]
async fn a_dead_workers_brief_is_picked_up_once_and_a_slow_agents_claim_is_renewed() {
    let project = Project::new();
    let mut config = config();
    config.runner.concurrency = 1;
    config.runner.claim_lease_seconds = 1;
    // The driver's implementers take 1.5 leases: without renewals their claims would be taken back.
    let driver = project.runner(SCRIPT, config.clone(), true, "driver", |tier, builtin| {
        if tier == Tier::T4 {
            Arc::new(Slow {
                inner: builtin,
                delay: Duration::from_millis(1500),
            })
        } else {
            builtin
        }
    });
    let doomed = project.runner(SCRIPT, config.clone(), true, "doomed", |_, _| {
        Arc::new(Stuck::default())
    });
    let survivor = project.runner(SCRIPT, config, true, "survivor", |_, builtin| builtin);

    let run = driver.start(GOAL).unwrap().id;
    let cancel = CancelToken::new();
    let driving = {
        let (driver, cancel) = (driver.clone(), cancel.clone());
        tokio::spawn(async move { driver.drive(run, &cancel).await })
    };
    // The driver holds fix-add (one agent at a time); the doomed worker takes fix-mul, then dies without a
    // word: its task is dropped, its claim left `running`.
    claimed_by(project.store.as_ref(), run, Tier::T4, "fix-add", "driver").await;
    let dying = {
        let (doomed, cancel) = (doomed.clone(), cancel.clone());
        tokio::spawn(async move { doomed.work(run, &cancel).await })
    };
    claimed_by(project.store.as_ref(), run, Tier::T4, "fix-mul", "doomed").await;
    dying.abort();
    let _ = dying.await;
    // Another worker joins; it and the driver both watch for expired claims.
    let working = {
        let (survivor, cancel) = (survivor.clone(), cancel.clone());
        tokio::spawn(async move { survivor.work(run, &cancel).await })
    };

    let outcome = tokio::time::timeout(Duration::from_secs(60), driving)
        .await
        .expect("the run did not finish within 60s")
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run));
    assert_eq!(worked(working).await, RunStatus::Succeeded);

    let events = project.events(run);
    let reclaims: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::BriefStatus && e.payload["reason"] == "lease_expired")
        .collect();
    assert_eq!(reclaims.len(), 1, "one reclaim, of the dead worker's brief");
    assert_eq!(reclaims[0].payload["claimed_by"], "doomed");
    let briefs = project.briefs(run);
    let fix_mul = briefs
        .iter()
        .find(|b| b.tier == Tier::T4 && b.title == "fix-mul")
        .unwrap();
    assert_eq!(reclaims[0].brief, Some(fix_mul.id));
    assert_eq!(fix_mul.status, BriefStatus::Done);
    assert_ne!(fix_mul.claimed_by.as_deref(), Some("doomed"));
    // Picked up once: two spawns of fix-mul (the dead worker's and one more), one of every other brief.
    for (brief, spawns) in spawns_per_brief(&events) {
        let expected = if brief == fix_mul.id { 2 } else { 1 };
        assert_eq!(spawns, expected, "spawns of {brief}:\n{}", project.tree(run));
    }
    let reclaimed_lines = events
        .iter()
        .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == "RECLAIMED")
        .count();
    assert_eq!(reclaimed_lines, 1);
}

/// A worker on this host whose process is gone (its name says host and pid) loses its claims at once, not
/// when their lease ends: here the lease is ten minutes, and the run still finishes in seconds.
#[tokio::test]
async fn a_gone_workers_claims_on_this_host_are_taken_back_at_once() {
    let project = Project::new();
    let mut config = config();
    config.runner.concurrency = 1;
    config.runner.claim_lease_seconds = 600;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    // A pid that has ended and been waited for: the dead worker's.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let dead_name = format!("worker-{host}-{gone}");
    // The driver's implementers take a while, so the doomed worker gets fix-mul.
    let driver = project.runner(SCRIPT, config.clone(), true, "driver", |tier, builtin| {
        if tier == Tier::T4 {
            Arc::new(Slow {
                inner: builtin,
                delay: Duration::from_millis(1500),
            })
        } else {
            builtin
        }
    });
    let doomed = project.runner(
        SCRIPT,
        config,
        true,
        &dead_name,
        |_, _| Arc::new(Stuck::default()),
    );

    let run = driver.start(GOAL).unwrap().id;
    let cancel = CancelToken::new();
    let driving = {
        let (driver, cancel) = (driver.clone(), cancel.clone());
        tokio::spawn(async move { driver.drive(run, &cancel).await })
    };
    claimed_by(project.store.as_ref(), run, Tier::T4, "fix-add", "driver").await;
    // The doomed worker takes fix-mul, then dies without a word, its claim left `running`.
    let dying = {
        let (doomed, cancel) = (doomed.clone(), cancel.clone());
        tokio::spawn(async move { doomed.work(run, &cancel).await })
    };
    claimed_by(project.store.as_ref(), run, Tier::T4, "fix-mul", &dead_name).await;
    dying.abort();
    let _ = dying.await;

    let outcome = tokio::time::timeout(Duration::from_secs(60), driving)
        .await
        .expect("the run did not finish within 60s: the gone worker's claim was not taken back")
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run));
    let events = project.events(run);
    let taken: Vec<_> = events
        .iter()
        .filter(|e| e.payload["reason"] == "holder_gone")
        .collect();
    assert!(!taken.is_empty(), "no claim was taken back from the gone worker");
    assert!(
        taken
            .iter()
            .all(|e| e.payload["claimed_by"] == dead_name.as_str())
    );
    assert!(taken.iter().all(|e| e.payload["tag"] == "RECLAIMED"), "{taken:?}");
}
