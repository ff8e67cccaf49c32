//! An external agent's spending counts against the run's budget like the built-in agent's: the real Claude
//! Code (or Codex) implementer, against a fake model server that reports more input tokens than the run's
//! budget, has its usage charged to the live ledger when it reports it; the `budget` gate opens and holds the run, and
//! the spending it names is every usage event of the run counted once (the built-in agent's calls, already
//! charged by the metered provider, are not charged again). Codex reports no cost: its tokens are priced
//! at the model's price in team.yaml, so a budget in dollars holds it too.

use std::time::Duration;

use agency_core::event::EventKind;
use agency_core::gate::GateKind;
use agency_core::{Event, Tier};
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
use agency_testkit::{FakeAnthropic, FakeOpenAi, Reply};

use crate::hook_support::e2e_client;
use crate::run_external::{GOAL, REPORT};
use crate::support::{Repo, demo_dir, finish, pending_gate, runtime_of, tokens_of, wait_for};

/// The run's token budget; the fake reports far more for one call of the implementer.
const LIMIT: u64 = 400_000;
const FAKE_INPUT_TOKENS: u64 = 1_000_000;

#[test]
fn claude_code_spending_past_the_run_budget_opens_the_budget_gate() {
    if !e2e_client("claude") {
        return;
    }
    let (line, on) = runtime_of("t4", "claude-code");
    let repo = Repo::demo(&[(line, &on), ("  run: {}", &format!("  run: {{tokens: {LIMIT}}}"))]);
    let server = FakeAnthropic::start(vec![Reply::text(REPORT)]).expect("fake server");
    server.set_input_tokens(FAKE_INPUT_TOKENS);
    let base_url = server.base_url();
    let env = [
        ("ANTHROPIC_BASE_URL", base_url.as_str()),
        ("ANTHROPIC_API_KEY", "dummy-key-for-the-fake"),
    ];
    stops_at_the_budget_gate(&repo, &env, "claude-code", Limit::Tokens(LIMIT));
}

#[test]
fn codex_spending_past_the_run_budget_opens_the_budget_gate() {
    if !e2e_client("codex") {
        return;
    }
    let budget = format!("  run: {{tokens: {LIMIT}}}");
    codex_stops_at_the_budget_gate(&[("  run: {}", &budget)], Limit::Tokens(LIMIT));
}

#[test]
fn codex_spending_priced_from_team_yaml_passes_a_budget_in_dollars() {
    if !e2e_client("codex") {
        return;
    }
    // A million input tokens at $2 a million: $2 against a $1 budget, and no token limit at all. The other
    // tiers' models are priced too, as a dollar budget requires (their scripted calls cost nothing).
    codex_stops_at_the_budget_gate(
        &[
            ("  run: {}", "  run: {usd: 1}"),
            (
                "  prices: {}",
                "  prices:\n    gpt-5.5: {input: 2, output: 8}\n    claude-opus-4-8: {input: 5, output: 25}\n    claude-sonnet-4-5: {input: 3, output: 15}",
            ),
        ],
        Limit::Usd(1.0),
    );
}

/// The run's limit the budget gate is expected to name.
#[derive(Debug, Clone, Copy)]
enum Limit {
    Tokens(u64),
    Usd(f64),
}

/// The demo with its implementer on Codex on `gpt-5.5`, team.yaml edited further by `edits`.
fn codex_stops_at_the_budget_gate(edits: &[(&str, &str)], limit: Limit) {
    let (line, on) = runtime_of("t4", "codex");
    let mut all = vec![
        (line, on.as_str()),
        ("providers:\n", "providers:\n  openai: {kind: openai}\n"),
        // A model Codex knows, on the provider that speaks its API.
        (
            "fast-cheap:\n    provider: anthropic           # a key of providers\n    model: claude-haiku-4-5 ",
            "fast-cheap:\n    provider: openai\n    model: gpt-5.5 ",
        ),
    ];
    all.extend_from_slice(edits);
    let repo = Repo::demo(&all);
    let server = FakeOpenAi::start(vec![Reply::text(REPORT)]).expect("fake server");
    server.set_input_tokens(FAKE_INPUT_TOKENS);
    let base_url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", "dummy-key-for-the-fake"),
    ];
    stops_at_the_budget_gate(&repo, &env, "codex", limit);
}

/// Runs the demo with its implementer on `runtime` (talking to a fake at `env` that reports
/// [`FAKE_INPUT_TOKENS`] per call) and checks that the run stops at the budget gate once the implementer
/// reports its usage, with every usage event counted once, and stops when the gate is rejected.
fn stops_at_the_budget_gate(repo: &Repo, env: &[(&str, &str)], runtime: &str, limit: Limit) {
    let script = demo_dir().join("script.yaml");
    let child = repo.spawn(
        &[
            "run",
            GOAL,
            "--script",
            script.to_str().unwrap(),
            "--auto-approve",
        ],
        env,
    );
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = wait_for(
        || store.list_runs().ok().and_then(|runs| runs.first().map(|r| r.id)),
        "the run to be recorded",
    );
    let gate = wait_for(
        || pending_gate(&store, run, GateKind::Budget),
        "the budget gate after the external implementer reported its usage",
    );
    let events = crate::support::events(&store, run);
    let exhausted = events
        .iter()
        .find(|e| e.kind == EventKind::BudgetExhausted)
        .expect("a budget_exhausted event");
    assert_eq!(exhausted.tier, Some(Tier::T4), "{}", exhausted.payload);
    assert_eq!(exhausted.payload["scope"], "run", "{}", exhausted.payload);
    match limit {
        Limit::Tokens(tokens) => assert_eq!(exhausted.payload["limit"]["tokens"], tokens),
        Limit::Usd(usd) => assert_eq!(exhausted.payload["limit"]["usd"], usd),
    }
    let usage_before: Vec<&Event> = events
        .iter()
        .filter(|e| e.kind == EventKind::Usage && e.seq < exhausted.seq)
        .collect();
    let external: Vec<&&Event> = usage_before
        .iter()
        .filter(|e| e.payload["provider"] == runtime)
        .collect();
    assert!(!external.is_empty(), "{usage_before:?}");
    // Claude Code reports each call as it answers, then the rest of the session's; one of them has the
    // fake's million input tokens.
    assert!(
        external.iter().any(|e| tokens_of(e) >= FAKE_INPUT_TOKENS),
        "{external:?}"
    );
    assert!(
        usage_before.len() > 1,
        "the built-in planner's usage comes first: {usage_before:?}"
    );
    // Every usage event counted once: the built-in agent's by its metered provider, the external agent's
    // as it reported it.
    match limit {
        Limit::Tokens(_) => {
            let spent: u64 = usage_before.iter().map(|e| tokens_of(e)).sum();
            assert_eq!(
                exhausted.payload["spent"]["tokens"], spent,
                "{}",
                exhausted.payload
            );
        }
        Limit::Usd(usd) => {
            let cost = |e: &&Event| e.payload["cost_usd"].as_f64().unwrap_or(0.0);
            let spent: f64 = usage_before.iter().map(cost).sum();
            let recorded = exhausted.payload["spent"]["usd"].as_f64().unwrap();
            assert!(
                spent > usd && (recorded - spent).abs() < 1e-9,
                "{spent} {}",
                exhausted.payload
            );
        }
    }
    assert!(
        gate.summary["message"]
            .as_str()
            .unwrap()
            .contains("Budget reached"),
        "{}",
        gate.summary
    );
    // The gate holds the run: no agent starts while it waits.
    let spawned = |list: &[Event]| list.iter().filter(|e| e.kind == EventKind::Spawned).count();
    std::thread::sleep(Duration::from_millis(1500));
    let now = crate::support::events(&store, run);
    assert_eq!(
        spawned(&now),
        spawned(&events),
        "an agent started past the budget"
    );
    assert!(!store.get_run(run).unwrap().status.is_terminal());

    repo.agency(&["reject", &run.to_string(), "--reason", "too expensive"])
        .success();
    let (_, output) = finish(child, Duration::from_secs(60));
    assert_eq!(
        store.get_run(run).unwrap().status,
        RunStatus::Cancelled,
        "{output}"
    );
}
