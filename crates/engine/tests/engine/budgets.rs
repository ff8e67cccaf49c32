//! Budgets against agents that call their models themselves (Claude Code, Codex, pi): agency cannot refuse
//! their calls, so what they report is charged to the run's live ledger as it arrives. Here the built-in
//! agent on the script stands in for one (wrapped so that agency does not meter its calls): its reported
//! usage passes the run's limit, the `budget` gate opens and holds the run; a limit raised too little keeps
//! the next agent from starting at all; a limit raised enough lets the run finish.

use std::sync::{Arc, Mutex};

use agency_core::event::EventKind;
use agency_core::gate::{GateDecision, GateKind};
use agency_core::{Event, GateId, RunId, Tier};
use agency_exec::runtime::{AgentOutcome, AgentTask, RunnerLink, Runtime, RuntimeError};
use agency_llm::{BoxFuture, BudgetLedger, BudgetLimits, CancelToken, Limit};
use agency_store::{Blackboard, RunStatus};

use crate::support::{Background, GOAL, Project, wait_for};

/// An agent whose calls agency does not meter: only what it reports is known (as with Claude Code).
#[derive(Debug)]
struct External(Arc<dyn Runtime>);

impl Runtime for External {
    fn name(&self) -> &'static str {
        "external"
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        self.0.run(task, link, cancel)
    }
}

fn tokens_of(event: &Event) -> u64 {
    [
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
    ]
    .iter()
    .filter_map(|k| event.payload[*k].as_u64())
    .sum()
}

fn budget_gate(store: &Arc<dyn Blackboard>, run: RunId, not: Option<GateId>) -> agency_core::gate::Gate {
    wait_for("a budget gate", || {
        store
            .pending_gates(Some(run))
            .unwrap()
            .into_iter()
            .find(|g| g.kind == GateKind::Budget && Some(g.id) != not)
    })
}

/// A runner of `script` whose agents report their spending (as external ones do), with a run budget of one
/// token: the first report exhausts it.
fn one_token_runner(project: &Project, script: &str) -> agency_engine::Engine {
    let limits = BudgetLimits {
        run: Limit {
            tokens: Some(1),
            usd: None,
        },
        ..BudgetLimits::default()
    };
    project
        .runner_for(script)
        .auto_approve(true)
        .runtime(|_, builtin| Arc::new(External(builtin)))
        .engine()
        .with_ledger(Arc::new(Mutex::new(BudgetLedger::new(limits))))
}

#[test]
fn reported_spending_past_the_budget_holds_the_run_at_the_gate_until_a_human_raises_it_enough() {
    let project = Project::new();
    let engine = one_token_runner(&project, include_str!("../scripts/simple.yaml"));
    let run = engine.start(GOAL).unwrap();
    let store: Arc<dyn Blackboard> = project.store.clone();
    let driving = Background::drive(engine, run.id);
    let of_kind = |kind: EventKind| project.events_of(run.id, kind);

    // The planner reports what it spent: far past one token. It had already spent it, so it finished.
    let first = budget_gate(&store, run.id, None);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let exhausted = of_kind(EventKind::BudgetExhausted);
    assert_eq!(exhausted.len(), 1, "{exhausted:?}");
    assert_eq!(exhausted[0].tier, Some(Tier::T1));
    assert_eq!(exhausted[0].payload["scope"], "run");
    let usage = of_kind(EventKind::Usage);
    let spent: u64 = usage
        .iter()
        .filter(|e| e.seq < exhausted[0].seq)
        .map(tokens_of)
        .sum();
    assert!(spent > 1);
    assert_eq!(exhausted[0].payload["spent"]["tokens"], spent, "charged once");
    assert_eq!(
        of_kind(EventKind::Spawned).len(),
        1,
        "nothing starts while the budget gate waits:\n{}",
        project.tree(run.id)
    );

    // Doubled to two tokens, the limit is still spent: the implementer is not started, the gate opens again.
    store
        .decide_gate(
            first.id,
            GateDecision::Approve {
                by: "tester".into(),
                note: None,
            },
        )
        .unwrap();
    let second = budget_gate(&store, run.id, Some(first.id));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let exhausted = of_kind(EventKind::BudgetExhausted);
    assert_eq!(exhausted.len(), 2, "{exhausted:?}");
    assert_eq!(exhausted[1].tier, Some(Tier::T4));
    assert_eq!(exhausted[1].payload["limit"]["tokens"], 2);
    assert_eq!(
        of_kind(EventKind::Spawned).len(),
        1,
        "an external agent started with its budget already spent:\n{}",
        project.tree(run.id)
    );

    store
        .decide_gate(
            second.id,
            GateDecision::Approve {
                by: "tester".into(),
                note: Some("tokens=100000000".into()),
            },
        )
        .unwrap();
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    assert_eq!(of_kind(EventKind::BudgetExhausted).len(), 2);
}

/// A runner claims all its free places at once. When the budget holds back the first brief it claimed, the
/// others it claimed with it are given back at once, unstarted (a `brief_status` back to `pending` saying
/// why), and start once a human raises the limit enough.
#[test]
fn briefs_claimed_with_one_the_budget_holds_back_are_given_back_unstarted() {
    let project = Project::new();
    let engine = one_token_runner(&project, include_str!("../scripts/medium.yaml"));
    let run = engine.start(GOAL).unwrap();
    let store: Arc<dyn Blackboard> = project.store.clone();
    let driving = Background::drive(engine, run.id);
    let of_kind = |kind: EventKind| project.events_of(run.id, kind);
    let approve = |gate: GateId, tokens: u64| {
        let note = Some(format!("tokens={tokens}"));
        store
            .decide_gate(
                gate,
                GateDecision::Approve {
                    by: "tester".into(),
                    note,
                },
            )
            .unwrap();
    };
    let spent = |exhausted: &Event| exhausted.payload["spent"]["tokens"].as_u64().unwrap();

    // The planner passes the limit; raised to just above what it spent, the squad lead starts, splits its
    // work into two tasks and passes the limit in turn.
    let first = budget_gate(&store, run.id, None);
    let planned = spent(&of_kind(EventKind::BudgetExhausted)[0]);
    approve(first.id, planned + 1);
    let second = budget_gate(&store, run.id, Some(first.id));
    let split = wait_for("the squad lead's tasks", || {
        let tasks: Vec<_> = project
            .briefs(run.id)
            .into_iter()
            .filter(|b| b.tier == Tier::T4)
            .collect();
        (tasks.len() == 2).then_some(tasks)
    });
    assert_eq!(of_kind(EventKind::Spawned).len(), 2, "{}", project.tree(run.id));

    // Raised too little: both tasks are claimed together, the first is held at the gate and the second is
    // given back with it.
    approve(second.id, planned + 1);
    let third = wait_for("the budget gate for the tasks", || {
        store
            .list_gates(run.id)
            .unwrap()
            .into_iter()
            .find(|g| g.kind == GateKind::Budget && g.id != first.id && g.id != second.id)
    });
    let given_back = wait_for("the unstarted task given back", || {
        let back: Vec<Event> = of_kind(EventKind::BriefStatus)
            .into_iter()
            .filter(|e| {
                e.payload["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("not started"))
            })
            .collect();
        (!back.is_empty()).then_some(back)
    });
    assert_eq!(given_back.len(), 1, "{given_back:?}");
    assert_eq!(given_back[0].brief, Some(split[1].id));
    assert_eq!(given_back[0].payload["from"], "running");
    assert_eq!(given_back[0].payload["to"], "pending");
    for task in &split {
        let task = store.get_brief(task.id).unwrap();
        assert_eq!(
            task.status,
            agency_core::BriefStatus::Pending,
            "{}",
            project.tree(run.id)
        );
        assert_eq!(task.claimed_by, None);
    }
    assert_eq!(
        of_kind(EventKind::Spawned).len(),
        2,
        "nothing started while the gate waits:\n{}",
        project.tree(run.id)
    );

    approve(third.id, 100_000_000);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
}
