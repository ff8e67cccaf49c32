//! A provider outage is not the agent's failure: the brief waits with its attempt unspent, the run pauses
//! at a gate that names the cause, and once a human resumes it the brief starts again and the run succeeds
//! with nothing retried or escalated.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agency_core::gate::{GateDecision, GateKind};
use agency_core::{BriefStatus, Tier};
use agency_exec::runtime::{AgentOutcome, AgentTask, RunnerLink, Runtime, RuntimeError};
use agency_llm::{BoxFuture, CancelToken, LlmError};
use agency_store::{Blackboard, RunStatus};

use crate::support::{Background, GOAL, Project, config, wait_for};

/// An agent whose first `failures` runs end with the provider overloaded.
#[derive(Debug)]
struct Overloaded {
    inner: Arc<dyn Runtime>,
    failures: usize,
    runs: AtomicUsize,
}

impl Runtime for Overloaded {
    fn name(&self) -> &'static str {
        "overloaded"
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async move {
            if self.runs.fetch_add(1, Ordering::SeqCst) < self.failures {
                return Err(RuntimeError::Model(LlmError::Overloaded {
                    retry_after: None,
                    message: "529 overloaded_error".into(),
                }));
            }
            self.inner.run(task, link, cancel).await
        })
    }
}

#[test]
fn an_outage_pauses_the_run_without_spending_a_retry_and_the_run_resumes() {
    let project = Project::new();
    let engine = project.runner_with(
        include_str!("../scripts/simple.yaml"),
        config(),
        true,
        "test-runner",
        |tier, builtin| -> Arc<dyn Runtime> {
            if tier == Tier::T4 {
                Arc::new(Overloaded {
                    inner: builtin,
                    failures: 2,
                    runs: AtomicUsize::new(0),
                })
            } else {
                builtin
            }
        },
        |_| {},
    );
    let run = engine.start(GOAL).unwrap();
    let driving = Background::drive(engine, run.id);
    let store = project.store.clone();
    for outage in 1..=2 {
        let gate = wait_for("the outage gate", || {
            store
                .pending_gates(Some(run.id))
                .unwrap()
                .into_iter()
                .find(|g| g.kind == GateKind::Pause)
        });
        let message = gate.summary["message"].as_str().unwrap().to_string();
        assert!(
            message.starts_with("Outage: the provider is overloaded"),
            "{message}"
        );
        let implementer = project
            .briefs(run.id)
            .into_iter()
            .find(|b| b.tier == Tier::T4)
            .unwrap();
        assert_eq!(
            (implementer.status, implementer.attempt),
            (BriefStatus::Pending, 0),
            "outage {outage}"
        );
        // `agency resume`.
        store
            .decide_gate(
                gate.id,
                GateDecision::Approve {
                    by: "tester".into(),
                    note: None,
                },
            )
            .unwrap();
    }
    let outcome = driving.join_within(Duration::from_secs(30), "the run after the outage");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let briefs = project.briefs(run.id);
    assert!(
        briefs
            .iter()
            .all(|b| b.attempt == 0 && b.status == BriefStatus::Done),
        "nothing retried, failed or escalated:\n{}",
        project.tree(run.id)
    );
    let outages = project
        .events(run.id)
        .into_iter()
        .filter(|e| e.payload["tag"] == "OUTAGE")
        .count();
    assert_eq!(outages, 2);
}
