//! Prompt-cache discipline measured: a 10-workstream scripted run on the built-in agent over HTTP against
//! the fake Anthropic server, which models the prompt cache (`agency_testkit::prompt_cache`). Every agent
//! of a tier sends the same tools and the same leading system blocks, marked for caching, so from the
//! second agent of a kind on most of the input is read from the cache. The figures are printed for
//! docs/performance.md ("Prompt cache across agents").

use std::collections::BTreeMap;
use std::time::Duration;

use agency_core::event::EventPayload;
use agency_store::{Blackboard, SqliteBlackboard};
use agency_testkit::prompt_cache::{CacheUsage, PromptCache};
use serde_json::Value;

use crate::support::{Repo, events, finish, notes_run, runtime_of};

const WORKSTREAMS: usize = 10;

/// Every tier's model priced, each with its own cache prices, so the cost of a call shows which price each
/// of its token counts was charged at.
const PRICES: &str = "  prices:
    claude-opus-4-8: {input: 5, output: 25, cache_read: 0.5, cache_write: 6.25}
    claude-sonnet-4-5: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}
    claude-haiku-4-5: {input: 1, output: 5, cache_read: 0.1, cache_write: 1.25}";

/// USD per million tokens: input, output, cache read, cache write.
fn price_of(model: &str) -> [f64; 4] {
    match model {
        "claude-opus-4-8" => [5.0, 25.0, 0.5, 6.25],
        "claude-sonnet-4-5" => [3.0, 15.0, 0.3, 3.75],
        "claude-haiku-4-5" => [1.0, 5.0, 0.1, 1.25],
        other => panic!("unpriced model {other}"),
    }
}

/// Which agent a request comes from (its first user message) and of which kind (its tools and the first
/// words of its first system block: the planner, an implementer, a teachback reviewer, a judge).
fn agent_of(body: &Value) -> (String, String) {
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let system: String = body["system"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .chars()
        .take(60)
        .collect();
    // Its last block carries a breakpoint on the first turn only.
    let mut first = body["messages"][0]["content"].clone();
    for block in first.as_array_mut().into_iter().flatten() {
        if let Some(block) = block.as_object_mut() {
            block.remove("cache_control");
        }
    }
    (format!("{} | {system}", tools.join(",")), first.to_string())
}

/// The estimated tokens (a quarter of the JSON bytes, as the fake counts) of a request's tools and of its
/// system blocks up to the first one marked for caching: the prefix every agent of its kind shares.
fn shared_prefix_tokens(body: &Value) -> usize {
    let mut bytes: usize = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t.to_string().len())
        .sum();
    for block in body["system"].as_array().into_iter().flatten() {
        bytes += block.to_string().len();
        if block.get("cache_control").is_some() {
            break;
        }
    }
    bytes / 4
}

/// The share of input tokens read from the cache over the agents after the first of each kind, with the
/// per-kind figures, as the cache in `cache` would have billed the `bodies` in order.
fn shares(bodies: &[Value], mut cache: PromptCache) -> (f64, Vec<String>) {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut per_kind: BTreeMap<String, (usize, CacheUsage)> = BTreeMap::new();
    let mut later = CacheUsage::default();
    for body in bodies {
        let usage = cache.usage(body);
        let (kind, agent) = agent_of(body);
        let kind = format!("{kind} | {}", shared_prefix_tokens(body));
        let agents = seen.entry(kind.clone()).or_default();
        if !agents.contains(&agent) {
            agents.push(agent.clone());
        }
        if agents.first() != Some(&agent) {
            let entry = per_kind.entry(kind).or_default();
            entry.1.input += usage.input;
            entry.1.cache_read += usage.cache_read;
            entry.1.cache_write += usage.cache_write;
            later.input += usage.input;
            later.cache_read += usage.cache_read;
            later.cache_write += usage.cache_write;
        }
    }
    let share = |u: &CacheUsage| u.cache_read as f64 / u.total().max(1) as f64;
    let lines = per_kind
        .iter()
        .map(|(kind, (_, u))| {
            let agents = seen.get(kind).map_or(0, Vec::len);
            let mut parts = kind.split(" | ").skip(1);
            let (system, prefix) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
            format!(
                "{:>5.1}% of {:>6} input tokens read from cache, agents 2..{agents} (shared prefix ~{prefix} \
                 tokens) of {system}",
                share(u) * 100.0,
                u.total(),
            )
        })
        .collect();
    (share(&later), lines)
}

#[test]
fn from_the_second_agent_on_most_input_is_read_from_the_prompt_cache() {
    let server = notes_run::server(WORKSTREAMS);
    // Sonnet 4.5's minimum cacheable prefix.
    server.model_prompt_cache(1_024);
    let base_url = format!("    base_url: {}", server.base_url());
    let (t4, t4_builtin) = runtime_of("t4", "builtin");
    let (t5, t5_builtin) = runtime_of("t5", "builtin");
    let repo = Repo::demo(&[
        ("    # base_url: https://api.anthropic.com", &base_url),
        (t4, &t4_builtin),
        (t5, &t5_builtin),
        ("  prices: {}", PRICES),
    ]);
    let env = [("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-the-fake-server")];
    let running = repo.spawn(&["run", "Write ten notes", "--auto-approve"], &env);
    let (code, output) = finish(running, Duration::from_secs(120));
    assert_eq!(code, Some(0), "{output}");

    let bodies = server.message_requests();
    // What the client recorded is what the server billed: the cache counts reach the usage events.
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store.list_runs().unwrap()[0].id;
    let mut recorded = CacheUsage::default();
    for event in events(&store, run) {
        if let Ok(EventPayload::Usage(usage)) = event.typed() {
            recorded.input += usage.input_tokens;
            recorded.cache_read += usage.cache_read_tokens;
            recorded.cache_write += usage.cache_write_tokens;
            // Each count at its own price from models.prices: cache reads and writes too.
            let [input, output, read, write] = price_of(&usage.model);
            let expected = (usage.input_tokens as f64 * input
                + usage.output_tokens as f64 * output
                + usage.cache_read_tokens as f64 * read
                + usage.cache_write_tokens as f64 * write)
                / 1_000_000.0;
            let cost = usage
                .cost_usd
                .unwrap_or_else(|| panic!("an unpriced call: {usage:?}"));
            assert!(
                (cost - expected).abs() < 1e-12,
                "{cost} against {expected}: {usage:?}"
            );
        }
    }
    let mut billed = CacheUsage::default();
    let mut again = PromptCache::new(1_024);
    for body in &bodies {
        let usage = again.usage(body);
        billed.input += usage.input;
        billed.cache_read += usage.cache_read;
        billed.cache_write += usage.cache_write;
    }
    assert_eq!(recorded, billed, "usage events against the server's bill");
    assert!(billed.cache_read > 0);

    let (share, lines) = shares(&bodies, PromptCache::new(1_024));
    let (share_4096, lines_4096) = shares(&bodies, PromptCache::new(4_096));
    eprintln!(
        "{} model calls; from the second agent of each kind on, {:.1}% of input tokens read from the cache \
         with a 1,024-token minimum, {:.1}% with 4,096:",
        bodies.len(),
        share * 100.0,
        share_4096 * 100.0
    );
    for line in lines.iter().chain(&lines_4096) {
        eprintln!("  {line}");
    }
    assert!(share >= 0.70, "cache share {share:.3} below the 70% target");
}
