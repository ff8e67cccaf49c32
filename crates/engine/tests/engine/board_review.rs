//! Teachbacks sent through the blackboard (as Claude Code and Codex agents send them, through `agency
//! hook` or `agency teachback submit`) are reviewed by the runner; a reviewer that keeps failing ends in
//! the algedonic ALERT, with the brief left under review for a human. The agent here stands in for an
//! external CLI: it writes its submission to the blackboard exactly as `agency teachback submit` does and
//! then waits, so the runner's side is what is tested (the real Claude Code flow is in the CLI's
//! `run_claude` test).

use std::sync::Arc;
use std::time::{Duration, Instant};

use agency_core::event::{EventKind, NewEvent};
use agency_core::{TeachbackState, Tier};
use agency_engine::Engine;
use agency_exec::runtime::{AgentOutcome, AgentStop, AgentTask, RunnerLink, Runtime, RuntimeError};
use agency_llm::{BoxFuture, CancelToken};
use agency_store::Blackboard;
use serde_json::json;

use crate::support::{GOAL, Project, config};

/// Sends its teachback through the blackboard and waits to be stopped.
#[derive(Debug)]
struct BoardAgent {
    store: Arc<dyn Blackboard>,
}

impl Runtime for BoardAgent {
    fn name(&self) -> &'static str {
        "board-agent"
    }

    fn teachback_on_blackboard(&self) -> bool {
        true
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        _link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async move {
            let brief = &task.brief;
            let teachback = json!({
                "building": "add.sh that adds", "key_constraints": ["only add.sh"], "interfaces": [],
                "approach": "swap the operator", "most_likely_wrong": "nothing", "least_confident": "the tests",
            });
            let event = NewEvent::new(
                brief.run,
                EventKind::TeachbackSubmitted,
                json!({"teachback": teachback, "via": "cli", "from": "pending", "to": "under_review"}),
            )
            .brief(brief.id);
            self.store
                .set_teachback_state(
                    brief.id,
                    TeachbackState::Pending,
                    TeachbackState::UnderReview,
                    event,
                )
                .map_err(|e| RuntimeError::Other(e.to_string()))?;
            cancel.cancelled().await;
            Ok(AgentOutcome {
                report: None,
                stop: AgentStop::Cancelled,
                session_id: None,
                final_text: None,
            })
        })
    }
}

/// The simple profile with a blocking implementer and no reviewer in the script: every review fails.
fn engine(project: &Project) -> Engine {
    let script = include_str!("../scripts/simple.yaml").replace(
        "variety: { novelty: 1, scope: 1, uncertainty: 1, risk: 1 }",
        "variety: { novelty: 1, scope: 2, uncertainty: 2, risk: 2 }\n                  \
         shallower_path_reason: \"one operator in one file\"",
    );
    assert!(!script.contains("teachback-reviewer"));
    let store: Arc<dyn Blackboard> = project.store.clone();
    project.runner(&script, config(), true, "test-runner", move |tier, builtin| {
        if tier == Tier::T4 {
            Arc::new(BoardAgent { store: store.clone() })
        } else {
            builtin
        }
    })
}

#[tokio::test]
async fn a_reviewer_that_keeps_failing_raises_the_alert_and_leaves_the_brief_under_review() {
    let project = Project::new();
    let engine = engine(&project);
    let run = engine.start(GOAL).unwrap();
    let cancel = CancelToken::new();
    let driving = {
        let engine = engine.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move { engine.drive(run.id, &cancel).await })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let alert = loop {
        let found = project
            .events(run.id)
            .into_iter()
            .find(|e| e.kind == EventKind::Alert);
        if let Some(alert) = found {
            break alert;
        }
        assert!(
            Instant::now() < deadline,
            "no ALERT was raised:\n{:#?}",
            project
                .events(run.id)
                .iter()
                .map(|e| format!(
                    "{} {:?} {}",
                    e.kind.as_str(),
                    e.brief.map(|b| b.short()),
                    e.payload
                ))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    cancel.cancel();
    let _ = driving.await;

    let message = alert.payload["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "META-BLOCK: orchestrator unreachable: the teachback of fix-add could not be reviewed"
        ),
        "{message}"
    );
    assert_eq!(alert.payload["teachback_state"], "under_review");
    crate::support::assert_pact_alert(&alert.payload, "teachback_review");
    let implementer = project
        .briefs(run.id)
        .into_iter()
        .find(|b| b.tier == Tier::T4)
        .unwrap();
    assert_eq!(alert.brief, Some(implementer.id));
    assert_eq!(implementer.teachback, TeachbackState::UnderReview);
    let all = project.events(run.id);
    let failures = all
        .iter()
        .filter(|e| {
            e.kind == EventKind::Log
                && e.payload["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("teachback failed"))
        })
        .count();
    assert_eq!(failures, 3);
    assert_eq!(all.iter().filter(|e| e.kind == EventKind::Alert).count(), 1);
    assert!(!all.iter().any(|e| matches!(
        e.kind,
        EventKind::TeachbackApproved | EventKind::TeachbackCorrected
    )));
}

#[test]
fn a_reviewer_in_an_outage_pauses_the_run_without_the_alert_and_reviews_once_the_gate_is_decided() {
    use crate::support::{Background, approve, wait_for};
    use agency_core::gate::GateKind;

    let project = Project::new();
    let script = format!(
        "{}\n  - role: teachback-reviewer\n    reply:\n      tool_calls:\n        - name: review_teachback\n          \
         input: {{ approved: true, note: \"Matches the brief.\" }}\n  - role: outage probe\n    reply: {{ text: ok }}\n",
        include_str!("../scripts/simple.yaml").replace(
            "variety: { novelty: 1, scope: 1, uncertainty: 1, risk: 1 }",
            "variety: { novelty: 1, scope: 2, uncertainty: 2, risk: 2 }\n                  \
             shallower_path_reason: \"one operator in one file\"",
        )
    );
    let down = Arc::new(crate::outage::ReviewerDown::new(
        Arc::new(agency_llm::ScriptedProvider::new(
            agency_llm::Script::from_yaml(&script).unwrap(),
        )),
        true,
        0,
        true,
    ));
    let policy = agency_llm::RetryPolicy {
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        give_up_after: Some(Duration::from_millis(200)),
        ..agency_llm::RetryPolicy::default()
    };
    let store: Arc<dyn Blackboard> = project.store.clone();
    let engine = {
        let down = down.clone();
        project.runner_providing(
            &script,
            config(),
            true,
            "test-runner",
            move |tier, builtin| {
                if tier == Tier::T4 {
                    Arc::new(BoardAgent { store: store.clone() })
                } else {
                    builtin
                }
            },
            move |_, _| -> Arc<dyn agency_llm::Provider> {
                let down: Arc<dyn agency_llm::Provider> = down.clone();
                Arc::new(agency_llm::Retrying::new(down, policy.clone()))
            },
            |_| {},
        )
    };
    let run = engine.start(GOAL).unwrap();
    let driving = Background::drive(engine, run.id);
    let store = project.store.clone();

    let gate = wait_for("the outage gate", || {
        store
            .pending_gates(Some(run.id))
            .unwrap()
            .into_iter()
            .find(|g| g.kind == GateKind::Pause)
    });
    let message = gate.summary["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with("Outage: the teachback reviewer ("),
        "{message}"
    );
    // Waiting out the outage is not the reviewer failing: no attempt counted, no ALERT, still under review.
    std::thread::sleep(Duration::from_millis(300));
    let events = project.events(run.id);
    assert!(!events.iter().any(|e| e.kind == EventKind::Alert));
    assert!(!events.iter().any(|e| {
        e.payload["message"]
            .as_str()
            .is_some_and(|m| m.contains("teachback failed"))
    }));
    let implementer = project
        .briefs(run.id)
        .into_iter()
        .find(|b| b.tier == Tier::T4)
        .unwrap();
    assert_eq!(implementer.teachback, TeachbackState::UnderReview);
    assert_eq!(implementer.attempt, 0);

    // The provider answers again and a human resumes: the review is tried again and approves.
    down.down.store(false, std::sync::atomic::Ordering::SeqCst);
    approve(store.as_ref(), gate.id);
    wait_for("the teachback approved", || {
        project
            .events(run.id)
            .into_iter()
            .find(|e| e.kind == EventKind::TeachbackApproved)
    });
    driving.stop();
    let outage_lines = project
        .events(run.id)
        .into_iter()
        .filter(|e| e.payload["tag"] == "OUTAGE")
        .count();
    assert_eq!(outage_lines, 1, "one outage, said once");
    assert!(!project.events(run.id).iter().any(|e| e.kind == EventKind::Alert));
}
