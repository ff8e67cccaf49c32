//! Fenced writes (issue 33): a runner that lost its claim while it was away — stopped past its lease, its
//! brief taken back and claimed by someone else — writes nothing more for that brief when it wakes. Its
//! agent's outcome is refused by the claim's generation, in the same transaction, and logged `CLAIM LOST`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agency_core::event::payload::BriefStatusChange;
use agency_core::event::{EventKind, NewEvent};
use agency_core::{BriefStatus, Tier};
use agency_exec::runtime::{AgentEvent, AgentOutcome, AgentTask, RunnerLink, Runtime, RuntimeError};
use agency_llm::{BoxFuture, CancelToken};
use agency_store::{Blackboard, RunStatus};
use tokio::sync::Notify;

use crate::support::{GOAL, Project, Slow, claimed_by, config, spawns_per_brief, worked};

const SCRIPT: &str = include_str!("../scripts/medium.yaml");

/// An agent that does its work, then is "stopped" (as a SIGSTOP'd runner is) before it hands its outcome
/// back, until the test lets it go. Only its first run waits.
#[derive(Debug)]
struct Suspended {
    inner: Arc<dyn Runtime>,
    worked: Arc<Notify>,
    wake: Arc<Notify>,
    woken: AtomicBool,
}

impl Runtime for Suspended {
    fn name(&self) -> &'static str {
        "suspended"
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async move {
            let outcome = self.inner.run(task, link, cancel).await;
            if !self.woken.swap(true, Ordering::SeqCst) {
                self.worked.notify_one();
                self.wake.notified().await;
                // Awake, it goes on recording as if nothing happened.
                link.record(AgentEvent::Note("awake again".into()));
            }
            outcome
        })
    }
}

#[tokio::test]
async fn a_runner_woken_after_losing_its_claim_writes_nothing_for_the_brief() {
    let project = Project::new();
    let mut config = config();
    config.runner.concurrency = 1;
    // Long leases: the claim is lost only because the test takes it back, never by the clock.
    config.runner.claim_lease_seconds = 600;
    // The driver's implementers are slow, so the sleeper gets fix-mul while the driver holds fix-add.
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
    let worked_once = Arc::new(Notify::new());
    let wake = Arc::new(Notify::new());
    let sleeper = {
        let (worked, wake) = (worked_once.clone(), wake.clone());
        project.runner(SCRIPT, config, true, "sleeper", move |tier, builtin| {
            if tier == Tier::T4 {
                Arc::new(Suspended {
                    inner: builtin,
                    worked: worked.clone(),
                    wake: wake.clone(),
                    woken: AtomicBool::new(false),
                })
            } else {
                builtin
            }
        })
    };

    let run = driver.start(GOAL).unwrap().id;
    let cancel = CancelToken::new();
    let driving = {
        let (driver, cancel) = (driver.clone(), cancel.clone());
        tokio::spawn(async move { driver.drive(run, &cancel).await })
    };
    claimed_by(project.store.as_ref(), run, Tier::T4, "fix-add", "driver").await;
    let working = {
        let (sleeper, cancel) = (sleeper.clone(), cancel.clone());
        tokio::spawn(async move { sleeper.work(run, &cancel).await })
    };
    claimed_by(project.store.as_ref(), run, Tier::T4, "fix-mul", "sleeper").await;
    // The sleeper's agent has done its work and is now "stopped" before reporting it.
    tokio::time::timeout(Duration::from_secs(30), worked_once.notified())
        .await
        .expect("the sleeper's agent never finished its work");
    let fix_mul = project
        .briefs(run)
        .into_iter()
        .find(|b| b.tier == Tier::T4 && b.title == "fix-mul")
        .unwrap();
    let store: &dyn Blackboard = project.store.as_ref();
    // Meanwhile its claim is taken back (as at the end of its lease) and claimed anew under the same name —
    // what a runner that restarts its own agents does — so the name on the brief is still the sleeper's:
    // only the claim's generation tells the old claim from the new.
    let taken = NewEvent::brief_moved(
        &fix_mul,
        BriefStatus::Pending,
        BriefStatusChange::because("test: the lease ended while the runner was stopped"),
    );
    store
        .update_brief_status(fix_mul.id, BriefStatus::Running, BriefStatus::Pending, taken)
        .unwrap();
    let anew = store
        .claim_briefs(Some(run), "sleeper", chrono::Duration::minutes(10), 1)
        .unwrap();
    assert_eq!(anew.len(), 1);
    assert_eq!(anew[0].brief.id, fix_mul.id, "fix-mul was claimed anew");
    assert_eq!(anew[0].claim.generation, 2);
    let before = store.last_seq(Some(run)).unwrap();

    wake.notify_one();
    let lost = wait_for_line(&project, run, "CLAIM LOST").await;
    assert_eq!(lost.brief, Some(fix_mul.id));
    // Nothing of the sleeper's outcome was written for fix-mul: no completion, no output, no move.
    let since = store.events_after(Some(run), before, 10_000).unwrap();
    let for_fix_mul: Vec<_> = since
        .iter()
        .filter(|e| e.brief == Some(fix_mul.id) && e.seq != lost.seq)
        .collect();
    assert!(for_fix_mul.is_empty(), "the woken runner wrote {for_fix_mul:?}");
    let now = store.get_brief(fix_mul.id).unwrap();
    assert_eq!(now.status, BriefStatus::Running);
    assert_eq!(now.claimed_by.as_deref(), Some("sleeper"));
    assert!(
        store
            .list_artifacts(run, Some(fix_mul.id))
            .unwrap()
            .iter()
            .all(|a| !a.name.starts_with("output/") && !a.name.starts_with("report/")),
        "an output or report of the lost claim was stored"
    );

    // The new claim is given back; the run then finishes, with fix-mul done exactly once.
    let back = NewEvent::brief_moved(
        &now,
        BriefStatus::Pending,
        BriefStatusChange::because("test: given back"),
    );
    store
        .update_brief_status(fix_mul.id, BriefStatus::Running, BriefStatus::Pending, back)
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(90), driving)
        .await
        .expect("the run did not finish within 90s")
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run));
    assert_eq!(worked(working).await, RunStatus::Succeeded);
    let events = project.events(run);
    let completed = events
        .iter()
        .filter(|e| e.kind == EventKind::Completed && e.brief == Some(fix_mul.id))
        .count();
    assert_eq!(completed, 1, "fix-mul completed once:\n{}", project.tree(run));
    assert_eq!(spawns_per_brief(&events)[&fix_mul.id], 2);
}

/// Waits for the run's first log line tagged `tag`.
async fn wait_for_line(project: &Project, run: agency_core::RunId, tag: &str) -> agency_core::Event {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(line) = project
            .events(run)
            .into_iter()
            .find(|e| e.kind == EventKind::Log && e.payload["tag"] == tag)
        {
            return line;
        }
        assert!(std::time::Instant::now() < deadline, "no {tag} line");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
