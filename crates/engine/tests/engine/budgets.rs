//! Budgets against agents that call their models themselves (Claude Code, Codex, pi): agency cannot refuse
//! their calls, so what they report is charged to the run's live ledger as it arrives. Here the built-in
//! agent on the script stands in for one (wrapped so that agency does not meter its calls): its reported
//! usage passes the run's limit, the `budget` gate opens and holds the run; a limit raised too little keeps
//! the next agent from starting at all; a limit raised enough lets the run finish.

use std::sync::{Arc, Mutex};

use agency_core::event::EventKind;
use agency_core::gate::{GateDecision, GateKind};
use agency_core::{Event, GateId, RunId, Tier};
use agency_exec::runtime::{AgentHooks, AgentOutcome, AgentTask, Runtime, RuntimeError};
use agency_llm::{BoxFuture, BudgetLedger, BudgetLimits, CancelToken, Limit};
use agency_store::{Blackboard, RunStatus};

use crate::support::{Background, GOAL, Project, config, events, wait_for};

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
        hooks: &'a dyn AgentHooks,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        self.0.run(task, hooks, cancel)
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

#[test]
fn reported_spending_past_the_budget_holds_the_run_at_the_gate_until_a_human_raises_it_enough() {
    let project = Project::new();
    let limits = BudgetLimits {
        run: Limit {
            tokens: Some(1),
            usd: None,
        },
        ..BudgetLimits::default()
    };
    let engine = project
        .runner(
            include_str!("../scripts/simple.yaml"),
            config(),
            true,
            "test-runner",
            |_, builtin| Arc::new(External(builtin)),
        )
        .with_ledger(Arc::new(Mutex::new(BudgetLedger::new(limits))));
    let run = engine.start(GOAL).unwrap();
    let store: Arc<dyn Blackboard> = project.store.clone();
    let driving = Background::drive(engine, run.id);
    let of_kind = |kind: EventKind| -> Vec<Event> {
        events(store.as_ref(), run.id)
            .into_iter()
            .filter(|e| e.kind == kind)
            .collect()
    };

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
