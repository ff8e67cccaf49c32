//! A provider outage is not the agent's failure: the brief waits with its attempt unspent, the run pauses
//! at a gate that names the cause, and once a human resumes it the brief starts again and the run succeeds
//! with nothing retried or escalated. The same holds when the model that reviews an agent's teachback is
//! the one in the outage.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use agency_core::event::EventKind;
use agency_core::gate::{GateDecision, GateKind};
use agency_core::teachback::TeachbackState;
use agency_core::{BriefStatus, Tier};
use agency_exec::runtime::{AgentOutcome, AgentTask, RunnerLink, Runtime, RuntimeError};
use agency_llm::scripted::{Script, ScriptedProvider};
use agency_llm::{
    BoxFuture, CancelToken, EventSink, LlmError, Provider, Request, Response, RetryPolicy, Retrying,
};
use agency_store::{Blackboard, RunStatus};

use crate::support::{Background, GOAL, Project, wait_for};

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
    let (run, driving) = project
        .runner_for(include_str!("../scripts/simple.yaml"))
        .auto_approve(true)
        .runtime(|tier, builtin| -> Arc<dyn Runtime> {
            if tier == Tier::T4 {
                Arc::new(Overloaded {
                    inner: builtin,
                    failures: 2,
                    runs: AtomicUsize::new(0),
                })
            } else {
                builtin
            }
        })
        .start();
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

/// The teachback reviewer's provider (T3's, which reviews fix-add's blocking teachback in medium.yaml),
/// overloaded while `down` or for its first `refusals` reviews: every review call fails with 529 and is
/// retried inside the call by the [`Retrying`] around it, as the configured providers retry. Also the
/// board review's reviewer in `board_review.rs`.
#[derive(Debug)]
pub(crate) struct ReviewerDown {
    inner: Arc<dyn Provider>,
    pub(crate) down: AtomicBool,
    refusals: AtomicUsize,
    /// Whether an outage probe is answered at all once the reviewer is up (otherwise it is refused as a
    /// bad request: the runner cannot tell the provider is back and leaves the gate to a human).
    answers_probes: bool,
    reviews_asked: AtomicUsize,
}

impl ReviewerDown {
    pub(crate) fn new(inner: Arc<dyn Provider>, down: bool, refusals: usize, answers_probes: bool) -> Self {
        ReviewerDown {
            inner,
            down: AtomicBool::new(down),
            refusals: AtomicUsize::new(refusals),
            answers_probes,
            reviews_asked: AtomicUsize::new(0),
        }
    }

    fn overloaded() -> LlmError {
        LlmError::Overloaded {
            retry_after: None,
            message: "529 overloaded_error".into(),
        }
    }
}

impl Provider for ReviewerDown {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn complete<'a>(
        &'a self,
        request: &'a Request,
        sink: EventSink<'a>,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(async move {
            match request.meta.role.as_deref() {
                Some("teachback-reviewer") => {
                    self.reviews_asked.fetch_add(1, Ordering::SeqCst);
                    let refused = self
                        .refusals
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok();
                    if self.down.load(Ordering::SeqCst) || refused {
                        return Err(Self::overloaded());
                    }
                }
                Some("outage probe") => {
                    if self.down.load(Ordering::SeqCst) {
                        return Err(Self::overloaded());
                    }
                    if !self.answers_probes {
                        return Err(LlmError::BadRequest {
                            status: 400,
                            message: "no probes here".into(),
                        });
                    }
                }
                _ => {}
            }
            self.inner.complete(request, sink, cancel).await
        })
    }
}

/// medium.yaml, whose fix-add teaches back (blocking: T3's model reviews it), with an answer for probes.
fn medium_probed() -> String {
    format!(
        "{}\n  - role: outage probe\n    reply: {{ text: ok }}\n",
        include_str!("../scripts/medium.yaml")
    )
}

/// A runner on [`medium_probed`] whose T3 provider is `reviewer`, retried inside each call for
/// `give_up_after` with millisecond waits.
fn reviewed_by(
    project: &Project,
    reviewer: Arc<ReviewerDown>,
    give_up_after: Duration,
) -> agency_engine::Engine {
    let policy = RetryPolicy {
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        give_up_after: Some(give_up_after),
        ..RetryPolicy::default()
    };
    project
        .runner_for(&medium_probed())
        .auto_approve(true)
        .provider(move |tier, scripted| -> Arc<dyn Provider> {
            if tier == Tier::T3 {
                let reviewer: Arc<dyn Provider> = reviewer.clone();
                Arc::new(Retrying::new(reviewer, policy.clone()))
            } else {
                scripted
            }
        })
        .engine()
}

fn fix_add(project: &Project, run: agency_core::RunId) -> agency_core::Brief {
    project
        .briefs(run)
        .into_iter()
        .find(|b| b.tier == Tier::T4 && b.title == "fix-add")
        .unwrap()
}

/// The attempts fix-add's agents were started at, from their `spawned` records.
fn fix_add_spawns(project: &Project, run: agency_core::RunId) -> Vec<u64> {
    let id = fix_add(project, run).id;
    project
        .events_of(run, EventKind::Spawned)
        .into_iter()
        .filter(|e| e.brief == Some(id))
        .map(|e| e.payload["attempt"].as_u64().unwrap())
        .collect()
}

fn outage_gate(store: &dyn Blackboard, run: agency_core::RunId) -> agency_core::gate::Gate {
    wait_for("the outage gate", || {
        store
            .pending_gates(Some(run))
            .unwrap()
            .into_iter()
            .find(|g| g.kind == GateKind::Pause)
    })
}

/// Nothing was retried, failed or escalated, and no teachback was corrected (an outage is not a review).
fn assert_unretried(project: &Project, run: agency_core::RunId) {
    let briefs = project.briefs(run);
    assert!(
        briefs
            .iter()
            .all(|b| b.attempt == 0 && b.status == BriefStatus::Done),
        "nothing retried, failed or escalated:\n{}",
        project.tree(run)
    );
    assert!(project.events_of(run, EventKind::TeachbackCorrected).is_empty());
    assert!(project.events_of(run, EventKind::Escalated).is_empty());
}

#[test]
fn a_teachback_reviewer_outage_pauses_the_run_naming_the_reviewer_and_resuming_restarts_the_teachback() {
    let project = Project::new();
    let reviewer = Arc::new(ReviewerDown::new(
        Arc::new(ScriptedProvider::new(
            Script::from_yaml(&medium_probed()).unwrap(),
        )),
        true,
        0,
        false,
    ));
    let engine = reviewed_by(&project, reviewer.clone(), Duration::from_millis(300));
    let run = engine.start(GOAL).unwrap();
    let driving = Background::drive(engine, run.id);
    let store = project.store.clone();

    let gate = outage_gate(store.as_ref(), run.id);
    let message = gate.summary["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with(
            "Outage: the teachback reviewer (t3 model scripted-medium on scripted): the provider is overloaded"
        ),
        "{message}"
    );
    assert_eq!(
        gate.summary["tier"], "t3",
        "an --auto-approve runner probes the reviewer's model"
    );
    // The call retried inside itself before it gave up.
    assert!(reviewer.reviews_asked.load(Ordering::SeqCst) > 1);
    // The agent was stopped, its brief waits unspent, its teachback still under review (not corrected).
    let waiting = wait_for("fix-add back to pending", || {
        let brief = fix_add(&project, run.id);
        (brief.status == BriefStatus::Pending).then_some(brief)
    });
    assert_eq!(waiting.attempt, 0);
    assert_eq!(waiting.teachback, TeachbackState::UnderReview);
    let outage_lines: Vec<String> = project
        .events(run.id)
        .into_iter()
        .filter(|e| e.payload["tag"] == "OUTAGE")
        .map(|e| e.payload["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(outage_lines.len(), 1, "{outage_lines:?}");
    assert!(
        outage_lines[0].starts_with("t4 fix-add: its teachback's review failed after its retries")
            && outage_lines[0].ends_with("its attempt not spent"),
        "{outage_lines:?}"
    );
    let back = project
        .events_of(run.id, EventKind::BriefStatus)
        .into_iter()
        .filter(|e| e.brief == Some(waiting.id) && e.payload["outage"] == true)
        .count();
    assert_eq!(back, 1);

    // The reviewer is back; a human resumes (this runner's probes are refused: it cannot tell by itself).
    reviewer.down.store(false, Ordering::SeqCst);
    store
        .decide_gate(
            gate.id,
            GateDecision::Approve {
                by: "tester".into(),
                note: None,
            },
        )
        .unwrap();
    let outcome = driving.join_within(Duration::from_secs(30), "the run after the outage");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    assert_unretried(&project, run.id);
    assert_eq!(
        fix_add_spawns(&project, run.id),
        [0, 0],
        "started twice, at attempt 0"
    );
    assert_eq!(project.events_of(run.id, EventKind::TeachbackApproved).len(), 1);
    assert_eq!(
        project
            .file_on(&format!("agency/{}/integration", run.id.short()), "add.sh")
            .unwrap(),
        "# add A B: prints A + B\necho $(($1 + $2))\n"
    );
}

#[test]
fn with_auto_approve_a_reviewer_outage_is_probed_and_the_run_resumes_by_itself() {
    let project = Project::new();
    let reviewer = Arc::new(ReviewerDown::new(
        Arc::new(ScriptedProvider::new(
            Script::from_yaml(&medium_probed()).unwrap(),
        )),
        true,
        0,
        true,
    ));
    let engine = reviewed_by(&project, reviewer.clone(), Duration::from_millis(300));
    let run = engine.start(GOAL).unwrap();
    let driving = Background::drive(engine, run.id);
    let store = project.store.clone();
    let gate = outage_gate(store.as_ref(), run.id);
    wait_for("a failed probe of the reviewer's model", || {
        project.events(run.id).into_iter().find(|e| {
            e.payload["tag"] == "OUTAGE"
                && e.payload["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("probe 1 of the t3 model failed"))
        })
    });
    reviewer.down.store(false, Ordering::SeqCst);
    let outcome = driving.join_within(Duration::from_secs(60), "the run resumed by its probe");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    assert_unretried(&project, run.id);
    assert_eq!(fix_add_spawns(&project, run.id), [0, 0]);
    let decided = store.get_gate(gate.id).unwrap();
    assert_eq!(decided.decided_by.as_deref(), Some("auto"));
}

#[test]
fn a_reviewer_blip_inside_the_bound_is_retried_in_the_call_and_pauses_nothing() {
    let project = Project::new();
    let reviewer = Arc::new(ReviewerDown::new(
        Arc::new(ScriptedProvider::new(
            Script::from_yaml(&medium_probed()).unwrap(),
        )),
        false,
        3,
        true,
    ));
    let engine = reviewed_by(&project, reviewer.clone(), Duration::from_secs(30));
    let run = engine.start(GOAL).unwrap();
    let outcome = Background::drive(engine, run.id).join_within(Duration::from_secs(30), "the run");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    assert_unretried(&project, run.id);
    assert_eq!(
        reviewer.reviews_asked.load(Ordering::SeqCst),
        4,
        "three refusals, then the review"
    );
    assert_eq!(fix_add_spawns(&project, run.id), [0]);
    assert!(
        project
            .store
            .list_gates_of_kind(run.id, GateKind::Pause)
            .unwrap()
            .is_empty()
    );
    assert!(
        project
            .events(run.id)
            .iter()
            .all(|e| e.payload["tag"] != "OUTAGE")
    );
}
