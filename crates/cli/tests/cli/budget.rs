//! Budgets fail closed: a run whose budget is smaller than its work stops at the budget with the `budget`
//! gate open and no model call made past the limit; rejecting the gate stops the run.

use agency_core::event::EventKind;
use agency_core::gate::GateKind;
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};

use crate::support::{Repo, demo_dir, events, pending_gate, tokens_of, wait_for};

#[test]
fn a_run_stops_at_its_budget_with_the_gate_open() {
    const LIMIT: u64 = 12_000;
    let repo = Repo::demo(&[("  run: {}", &format!("  run: {{tokens: {LIMIT}}}"))]);
    let script = demo_dir().join("script.yaml");
    let out = repo
        .agency(&[
            "run",
            "Fix the pagination bug",
            "--script",
            script.to_str().unwrap(),
            "--auto-approve",
            "--detach",
        ])
        .success();
    let run = out.run_id();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run_id = store.resolve_run(&run).unwrap();
    let gate = wait_for(
        || pending_gate(&store, run_id, GateKind::Budget),
        "the budget gate",
    );
    let at_gate = events(&store, run_id);
    let spent: u64 = at_gate
        .iter()
        .filter(|e| e.kind == EventKind::Usage)
        .map(tokens_of)
        .sum();
    assert!(spent > 0 && spent <= LIMIT, "spent {spent} of {LIMIT}");
    assert!(at_gate.iter().any(|e| e.kind == EventKind::BudgetExhausted));
    assert!(
        gate.summary["message"]
            .as_str()
            .unwrap()
            .contains("Budget reached")
    );
    assert!(!store.get_run(run_id).unwrap().status.is_terminal());

    repo.agency(&["reject", &run, "--reason", "too expensive"])
        .success();
    wait_for(
        || (store.get_run(run_id).unwrap().status == RunStatus::Cancelled).then_some(()),
        "the run to stop after the budget gate was rejected",
    );
    // Nothing was spent after the gate opened.
    let after: usize = events(&store, run_id)
        .iter()
        .filter(|e| e.kind == EventKind::Usage)
        .count();
    assert_eq!(
        after,
        at_gate.iter().filter(|e| e.kind == EventKind::Usage).count()
    );
}
