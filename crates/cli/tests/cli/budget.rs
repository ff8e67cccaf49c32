//! Budgets fail closed: a run whose budget is smaller than its work stops at the budget with the `budget`
//! gate open and no model call made past the limit; rejecting the gate stops the run. Budgets in dollars
//! hold the built-in agent's calls, priced from `models.prices`; a dollar budget over an unpriced model is
//! refused before anything runs.

use std::time::Duration;

use agency_core::event::EventKind;
use agency_core::gate::GateKind;
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
use agency_testkit::{FakeAnthropic, Reply};
use serde_json::json;

use crate::support::{Repo, demo_dir, events, finish, pending_gate, runtime_of, tokens_of, wait_for};

#[test]
fn a_run_stops_at_its_budget_with_the_gate_open() {
    // Above the first call's reservation (T1's plan call, its system prompt with its personality) and
    // below what the whole demo run spends, so the gate opens in the middle of the run.
    const LIMIT: u64 = 20_000;
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
    // A call admitted before the limit was reached may still be finishing when the gate opens (another
    // agent's call was the one refused); its usage lands after. What must not happen is a call made after
    // the gate: so the count is taken once it has stood still for a second, and must not move again.
    let usage_count = || {
        events(&store, run_id)
            .iter()
            .filter(|e| e.kind == EventKind::Usage)
            .count()
    };
    let mut settled = usage_count();
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let now = usage_count();
        if now == settled {
            break;
        }
        settled = now;
    }
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

    let rejected = repo
        .agency(&["reject", &run, "--reason", "too expensive"])
        .success();
    // The command says what rejecting this gate does, and the run does that.
    assert!(
        rejected.stdout().contains("the run stops (cancelled)"),
        "{}",
        rejected.stdout()
    );
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

/// The run's dollar budget in [`a_run_stops_at_its_dollar_budget_with_every_call_priced`].
const USD_LIMIT: f64 = 0.3;
/// USD per million tokens, input and output alike, for every model.
const USD_PER_MILLION: f64 = 10.0;
/// Input tokens the fake reports per call: fewer than any real prompt of the planner, so each call costs
/// less than its worst-case estimate, as a real model's does.
const FAKE_INPUT_TOKENS: u64 = 1_000;

#[test]
fn a_run_stops_at_its_dollar_budget_with_every_call_priced() {
    // The planner lists files turn after turn, so the run keeps calling until its dollars run out. Each
    // listing differs: the same call over and over would be stopped as a loop first.
    let listings = (0..40)
        .map(|i| Reply::tool_use("list_files", json!({"path": ".", "glob": format!("**/*{i}*")})))
        .collect();
    let server = FakeAnthropic::start(listings).expect("fake server");
    server.set_input_tokens(FAKE_INPUT_TOKENS);
    let base_url = format!("    base_url: {}\n", server.base_url());
    let prices = format!(
        "  prices:\n    claude-opus-4-8: {{input: {p}, output: {p}}}\n    claude-sonnet-4-5: {{input: {p}, output: {p}}}\n    claude-haiku-4-5: {{input: {p}, output: {p}}}",
        p = USD_PER_MILLION
    );
    let budget = format!("  run: {{usd: {USD_LIMIT}}}");
    let (t4, t4_builtin) = runtime_of("t4", "builtin");
    let (t5, t5_builtin) = runtime_of("t5", "builtin");
    let repo = Repo::demo(&[
        ("    # base_url: https://api.anthropic.com", base_url.trim_end()),
        ("  prices: {}", &prices),
        ("  run: {}", &budget),
        (t4, &t4_builtin),
        (t5, &t5_builtin),
    ]);
    let child = repo.spawn(
        &["run", "Fix the pagination bug", "--auto-approve", "--verbose"],
        &[("ANTHROPIC_API_KEY", "dummy-key-for-the-fake")],
    );
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = wait_for(
        || store.list_runs().ok().and_then(|runs| runs.first().map(|r| r.id)),
        "the run to be recorded",
    );
    wait_for(
        || pending_gate(&store, run, GateKind::Budget),
        "the budget gate once the dollars ran out",
    );
    let at_gate = events(&store, run);
    let exhausted = at_gate
        .iter()
        .find(|e| e.kind == EventKind::BudgetExhausted)
        .expect("a budget_exhausted event");
    assert_eq!(exhausted.payload["scope"], "run", "{}", exhausted.payload);
    assert_eq!(exhausted.payload["limit"]["usd"], USD_LIMIT);
    let usage: Vec<_> = at_gate.iter().filter(|e| e.kind == EventKind::Usage).collect();
    assert!(usage.len() > 1, "{usage:?}");
    // Every call is priced at team.yaml's price, and the record says what the ledger was charged.
    let mut spent = 0.0;
    for event in &usage {
        let cost = event.payload["cost_usd"]
            .as_f64()
            .unwrap_or_else(|| panic!("an unpriced call: {}", event.payload));
        let priced = tokens_of(event) as f64 * USD_PER_MILLION / 1e6;
        assert!((cost - priced).abs() < 1e-12, "{cost} for {}", event.payload);
        spent += cost;
    }
    assert!(
        spent > 0.0 && spent <= USD_LIMIT,
        "spent ${spent} of ${USD_LIMIT}"
    );
    let charged = exhausted.payload["spent"]["usd"].as_f64().unwrap();
    assert!((charged - spent).abs() < 1e-9, "{charged} {spent}");
    let needed = exhausted.payload["needed"]["usd"].as_f64().unwrap();
    assert!(charged + needed > USD_LIMIT, "{}", exhausted.payload);

    repo.agency(&["reject", &run.to_string(), "--reason", "too expensive"])
        .success();
    let (_, output) = finish(child, Duration::from_secs(60));
    assert_eq!(
        store.get_run(run).unwrap().status,
        RunStatus::Cancelled,
        "{output}"
    );
    let after = events(&store, run);
    assert_eq!(
        after.iter().filter(|e| e.kind == EventKind::Usage).count(),
        usage.len(),
        "a call was made past the gate"
    );
    // The live log shows what each call cost.
    let one_call = format!("${:.4}", (FAKE_INPUT_TOKENS + 5) as f64 * USD_PER_MILLION / 1e6);
    assert!(output.contains(&one_call), "no {one_call} in:\n{output}");
}

#[test]
fn a_dollar_budget_over_an_unpriced_model_is_refused_before_anything_runs() {
    let repo = Repo::demo(&[(
        "  prices: {}",
        "  prices:\n    claude-opus-4-8: {input: 5, output: 25}\n    claude-sonnet-4-5: {input: 3, output: 15}",
    )]);
    repo.edit_team(&[("  workstream: {}", "  workstream: {usd: 2}")]);
    let out = repo.agency(&["config", "check"]).fails_with(3);
    let err = out.stderr();
    assert!(
        err.contains("claude-haiku-4-5 (models.fast-cheap.model, called by t4) has no price"),
        "{err}"
    );
    assert!(err.contains("budgets.workstream.usd"), "{err}");
    assert!(err.contains("models.prices.claude-haiku-4-5"), "{err}");
    assert!(!err.contains("claude-sonnet-4-5 ("), "{err}");

    // `agency run` refuses it too, before a run is recorded or a key is needed.
    let out = repo.agency(&["run", "Fix the pagination bug"]).fails_with(3);
    assert!(
        out.stderr().contains("models.prices.claude-haiku-4-5"),
        "{}",
        out.stderr()
    );
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    assert!(store.list_runs().unwrap().is_empty());

    // Priced, it checks.
    repo.edit_team(&[(
        "    claude-sonnet-4-5: {input: 3, output: 15}",
        "    claude-sonnet-4-5: {input: 3, output: 15}\n    claude-haiku-4-5: {input: 1, output: 5}",
    )]);
    repo.agency(&["config", "check"]).success();
}
