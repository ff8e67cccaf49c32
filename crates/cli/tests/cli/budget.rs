//! Budgets fail closed: a run whose budget is smaller than its work stops at the budget with the `budget`
//! gate open and no model call made past the limit; rejecting the gate stops the run.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agency_core::event::EventKind;
use agency_core::gate::GateKind;
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};

use crate::support::Repo;

fn demo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo")
}

/// The demo repository, committed, with agency initialised and `budgets` set to `budget_yaml`.
fn demo_repo(budget_yaml: &str) -> Repo {
    let repo = Repo::new();
    for name in ["pagination.py", "test_pagination.py"] {
        std::fs::copy(demo_dir().join("repo").join(name), repo.path().join(name)).unwrap();
    }
    repo.git(&["add", "."]);
    repo.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "start",
    ]);
    repo.agency(&["init"]).success();
    let config = repo.path().join(".agency/team.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("  run: {}", budget_yaml);
    std::fs::write(&config, text).unwrap();
    repo
}

#[test]
fn a_run_stops_at_its_budget_with_the_gate_open() {
    const LIMIT: u64 = 12_000;
    let repo = demo_repo(&format!("  run: {{tokens: {LIMIT}}}"));
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
    let run = out.stdout().split_whitespace().nth(1).unwrap().to_string();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run_id = store.resolve_run(&run).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let gate = loop {
        if let Some(gate) = store
            .pending_gates(Some(run_id))
            .unwrap()
            .into_iter()
            .find(|g| g.kind == GateKind::Budget)
        {
            break gate;
        }
        assert!(Instant::now() < deadline, "no budget gate opened");
        std::thread::sleep(Duration::from_millis(100));
    };
    let events = store.events_after(Some(run_id), 0, usize::MAX).unwrap();
    let spent: u64 = events
        .iter()
        .filter(|e| e.kind == EventKind::Usage)
        .map(|e| {
            [
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
            ]
            .iter()
            .filter_map(|k| e.payload[*k].as_u64())
            .sum::<u64>()
        })
        .sum();
    assert!(spent > 0 && spent <= LIMIT, "spent {spent} of {LIMIT}");
    assert!(events.iter().any(|e| e.kind == EventKind::BudgetExhausted));
    assert!(
        gate.summary["message"]
            .as_str()
            .unwrap()
            .contains("Budget reached")
    );
    assert!(!store.get_run(run_id).unwrap().status.is_terminal());

    repo.agency(&["reject", &run, "--reason", "too expensive"])
        .success();
    let deadline = Instant::now() + Duration::from_secs(30);
    while store.get_run(run_id).unwrap().status != RunStatus::Cancelled {
        assert!(
            Instant::now() < deadline,
            "the run did not stop after the budget gate was rejected"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Nothing was spent after the gate opened.
    let after: usize = store
        .events_after(Some(run_id), 0, usize::MAX)
        .unwrap()
        .iter()
        .filter(|e| e.kind == EventKind::Usage)
        .count();
    assert_eq!(
        after,
        events.iter().filter(|e| e.kind == EventKind::Usage).count()
    );
}
