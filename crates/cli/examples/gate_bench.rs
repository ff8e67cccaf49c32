//! The gate service's decision latency: `AGENTS` clients (default 8) at once, each asking the service for
//! `CALLS` PreToolUse decisions (default 2,000) over its unix socket, one connection per call as `agency
//! hook` makes them; the service decides each with the blackboard (a SQLite file with one advisory brief
//! per agent, so a Write is allowed). Prints p50, p99 and max of the round trip (connect, send, decide,
//! answer), as measured by the client. The hook's own process start is not in it: bench/hook measures that.
//!
//!   cargo run --release -p agency-cli --example gate_bench [AGENTS] [CALLS]

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agency_cli::gate_service::{GateService, GateSetup, Request, request};
use agency_core::brief::{BriefPlacement, NewBrief};
use agency_core::config::RolloutMode;
use agency_core::{BriefId, Tier};
use agency_exec::gate::GateIssuer;
use agency_store::{Blackboard, NewRun, SqliteBlackboard};
use serde_json::json;

fn main() {
    let mut args = std::env::args().skip(1);
    let agents: usize = args.next().map_or(8, |a| a.parse().expect("AGENTS: a number"));
    let calls: usize = args.next().map_or(2_000, |a| a.parse().expect("CALLS: a number"));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agency.db");
    let store = Arc::new(SqliteBlackboard::open(&db).unwrap());
    let run = store
        .create_run(NewRun::new("bench", dir.path().display().to_string()))
        .unwrap();
    let service = GateService::start(
        &dir.path().join("gate"),
        GateSetup {
            store: store.clone(),
            db: Some(db.clone()),
            config: None,
            rollout: RolloutMode::Enforce,
        },
    )
    .unwrap();
    let mut workers = Vec::new();
    for n in 0..agents {
        let brief = NewBrief {
            tier: Tier::T4,
            workstream: "bench".into(),
            title: format!("agent {n}"),
            personality: None,
            instructions: String::new(),
            inputs: Vec::new(),
            variety: None,
            contract: None,
            depends_on: Vec::new(),
        }
        .into_brief(BriefPlacement {
            id: BriefId::new(),
            run: run.id,
            parent: None,
            goal_anchor: "bench".into(),
            retry_budget: 0,
            depends_on: Vec::new(),
            created_at: chrono::Utc::now(),
        });
        store.insert_brief(&brief).unwrap();
        let capability = service.issue(brief.id).unwrap();
        let socket = capability.socket().to_path_buf();
        workers.push(std::thread::spawn(move || {
            let event = json!({
                "session_id": "s", "cwd": "/w", "hook_event_name": "PreToolUse",
                "tool_name": "Write", "tool_input": {"file_path": "/w/x.txt", "content": "hi"},
            });
            let mut took = Vec::with_capacity(calls);
            for _ in 0..calls {
                let ask = Request::Hook {
                    brief: brief.id.to_string(),
                    token: capability.token().to_owned(),
                    event: event.clone(),
                };
                let start = Instant::now();
                let answer = request(&socket, &ask, Duration::from_secs(10)).unwrap();
                took.push(start.elapsed());
                assert!(
                    answer["stdout"].as_str().unwrap().contains("\"allow\""),
                    "{answer}"
                );
            }
            took
        }));
    }
    let mut all: Vec<Duration> = workers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    all.sort();
    let at = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)];
    println!(
        "gate service, {agents} agents x {calls} decisions: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        all[all.len() - 1].as_secs_f64() * 1e3,
    );
}
