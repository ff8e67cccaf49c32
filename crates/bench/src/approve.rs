//! `agency-bench --approve N`: how long a waiting runner takes from a human's approval of the plan gate to
//! the next agent's start (issue 24's target: ≤ 20 ms from the `gate_approved` event to `spawned`). Each of
//! the N samples is a fresh run on a fresh repository and blackboard, driven by the real [`Engine`] on its
//! own thread with a one-minute poll, so only the poke ([`EngineOptions::wake`], what `agency approve` does
//! through the gate service) can wake it: T1's plan (`W` workstreams on the path t3→t4→t5) opens the plan
//! gate, the bench lets the runner settle into its wait, approves the gate on the blackboard and pokes.
//!
//! The split comes from the run's own events (each stamped when the runner made it) and from the bench's
//! agents, which note the moment the runner started them:
//!
//! - `pass`: `gate_approved` → the first child brief written (`brief_created`): tending the gates and the
//!   pass up to writing the approved plan's workstreams;
//! - `claim`: → the first child brief claimed (its `brief_status` to running): the rest of the pass and the
//!   claim;
//! - `prepare`: → its `spawned` (stamped once its worktree is made and its task put together);
//! - `start`: → the first agent running (the starts recorded, the agents handed to the runtime).

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agency_core::Tier;
use agency_core::config::TeamConfig;
use agency_core::event::{Event, EventKind};
use agency_core::gate::{GateDecision, GateKind};
use agency_engine::{Engine, EngineOptions};
use agency_exec::runtime::{AgentOutcome, AgentTask, RunnerLink, Runtime, RuntimeError};
use agency_exec::{GitOptions, Repo};
use agency_llm::{BoxFuture, CancelToken, Provider, Script, ScriptedProvider};
use agency_store::{Blackboard, SqliteBlackboard};
use chrono::{DateTime, Utc};

use crate::runtime::InstantRuntime;

/// How long the runner is left to settle into its wait before the approval.
const SETTLE: Duration = Duration::from_millis(200);

/// How long a sample may take before the bench gives up on it.
const PATIENCE: Duration = Duration::from_secs(30);

/// One approval's timeline, in milliseconds after `gate_approved`.
#[derive(Debug, Clone, Copy)]
struct Timeline {
    created: f64,
    claimed: f64,
    spawned: f64,
    started: f64,
}

/// The bench's agents, noting when the runner starts each one past the plan (the plan's own agent runs
/// before the gate opens).
#[derive(Debug)]
struct Stamping {
    inner: InstantRuntime,
    started: Mutex<Sender<DateTime<Utc>>>,
}

impl Runtime for Stamping {
    fn name(&self) -> &'static str {
        "bench"
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        if task.brief.tier != Tier::T1
            && let Ok(started) = self.started.lock()
        {
            let _ = started.send(Utc::now());
        }
        self.inner.run(task, link, cancel)
    }
}

/// Runs `samples` approvals of a plan of `workstreams` workstreams at `concurrency` agents and prints the
/// figures.
pub fn bench(samples: usize, workstreams: usize, concurrency: u32) -> Result<(), String> {
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load_before = load();
    let mut timelines = Vec::with_capacity(samples);
    for _ in 0..samples {
        timelines.push(sample(workstreams, concurrency)?);
    }
    let load_after = load();
    let column = |pick: fn(&Timeline) -> f64| {
        let mut values: Vec<f64> = timelines.iter().map(pick).collect();
        values.sort_by(f64::total_cmp);
        values
    };
    let spawned = column(|t| t.spawned);
    let started = column(|t| t.started);
    let steps = [
        ("pass", column(|t| t.created)),
        ("claim", column(|t| t.claimed - t.created)),
        ("prepare", column(|t| t.spawned - t.claimed)),
        ("start", column(|t| t.started - t.spawned)),
    ];
    println!(
        "approvals={samples} workstreams={workstreams} concurrency={concurrency} \
         spawned_p50_ms={:.1} spawned_p99_ms={:.1} spawned_max_ms={:.1} started_p50_ms={:.1} started_p99_ms={:.1} {}",
        percentile(&spawned, 50.0),
        percentile(&spawned, 99.0),
        spawned.last().copied().unwrap_or(0.0),
        percentile(&started, 50.0),
        percentile(&started, 99.0),
        steps
            .iter()
            .map(|(name, values)| format!(
                "{name}_p50_ms={:.1} {name}_p99_ms={:.1}",
                percentile(values, 50.0),
                percentile(values, 99.0)
            ))
            .collect::<Vec<_>>()
            .join(" "),
    );
    println!(
        "load_before={} load_after={}",
        first_three(&load_before),
        first_three(&load_after)
    );
    Ok(())
}

fn first_three(loadavg: &str) -> String {
    loadavg.split_whitespace().take(3).collect::<Vec<_>>().join(",")
}

/// The `p`th percentile of sorted `values` (nearest rank).
fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let rank = (p / 100.0 * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

/// One run: to its plan gate, approved and poked, to the first agent after it.
fn sample(workstreams: usize, concurrency: u32) -> Result<Timeline, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    std::fs::write(root.join("README"), "bench\n").map_err(|e| e.to_string())?;
    let repo = Repo::init(&root, "main", GitOptions::default()).map_err(|e| e.to_string())?;
    repo.commit_all("bench base").map_err(|e| e.to_string())?;
    let store: Arc<dyn Blackboard> =
        Arc::new(SqliteBlackboard::open(dir.path().join("agency.db")).map_err(|e| e.to_string())?);

    let mut config = TeamConfig::default();
    config.runner.concurrency = concurrency;
    let provider: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(
        Script::from_yaml(crate::SCRIPT).map_err(|e| e.to_string())?,
    ));
    let (tx, started): (Sender<DateTime<Utc>>, Receiver<DateTime<Utc>>) = channel();
    let runtime: Arc<dyn Runtime> = Arc::new(Stamping {
        inner: InstantRuntime::new(workstreams, 1, None),
        started: Mutex::new(tx),
    });
    let runtimes: BTreeMap<Tier, Arc<dyn Runtime>> =
        Tier::ALL.into_iter().map(|t| (t, runtime.clone())).collect();
    let providers: BTreeMap<Tier, Arc<dyn Provider>> =
        Tier::ALL.into_iter().map(|t| (t, provider.clone())).collect();
    let wake = Arc::new(tokio::sync::Notify::new());
    let options = EngineOptions {
        poll: Duration::from_secs(60),
        worktrees: dir.path().join("worktrees"),
        wake: Some(wake.clone()),
        ..EngineOptions::default()
    };
    let engine =
        Engine::new(store.clone(), config, repo, runtimes, providers, options).map_err(|e| e.to_string())?;
    let run = engine
        .start("Benchmark approve to spawn")
        .map_err(|e| e.to_string())?;
    let cancel = CancelToken::new();
    let driver = {
        let cancel = cancel.clone();
        std::thread::spawn(move || -> Result<(), String> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            // Cancelled at the end of the sample: that ending is the expected one; any other is the sample's
            // error, not a silent "gave up".
            match rt.block_on(engine.drive(run.id, &cancel)) {
                Ok(_) | Err(agency_engine::EngineError::Cancelled) => Ok(()),
                Err(error) => Err(format!("the drive failed: {error}")),
            }
        })
    };

    let deadline = Instant::now() + PATIENCE;
    let gate = loop {
        let pending = store.pending_gates(Some(run.id)).map_err(|e| e.to_string())?;
        if let Some(gate) = pending.into_iter().find(|g| g.kind == GateKind::T1Plan) {
            break gate;
        }
        if driver.is_finished() {
            return Err(match driver.join() {
                Ok(Err(error)) => format!("the plan gate did not open: {error}"),
                _ => "the plan gate did not open: the drive ended".into(),
            });
        }
        if Instant::now() > deadline {
            return Err("the plan gate did not open".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    std::thread::sleep(SETTLE);
    store
        .decide_gate(
            gate.id,
            GateDecision::Approve {
                by: "bench".into(),
                note: None,
            },
        )
        .map_err(|e| e.to_string())?;
    wake.notify_one();
    let agent_started = started
        .recv_timeout(PATIENCE)
        .map_err(|e| format!("no agent started after the approval: {e}"))?;

    cancel.cancel();
    while !driver.is_finished() {
        wake.notify_one();
        std::thread::sleep(Duration::from_millis(5));
    }
    driver
        .join()
        .map_err(|_| "the driver's thread panicked".to_string())?
        .map_err(|e| format!("driver: {e}"))?;

    let events = store
        .events_after(Some(run.id), 0, usize::MAX)
        .map_err(|e| e.to_string())?;
    timeline(&events, agent_started)
}

/// The timeline of the first agent started after the plan gate's approval, from the run's events.
fn timeline(events: &[Event], agent_started: DateTime<Utc>) -> Result<Timeline, String> {
    let approved = events
        .iter()
        .position(|e| e.kind == EventKind::GateApproved)
        .ok_or("no gate_approved event")?;
    let approved_at = events[approved].ts;
    let after = &events[approved..];
    let first = |what: &str, wanted: &dyn Fn(&Event) -> bool| {
        after
            .iter()
            .find(|e| wanted(e))
            .map(|e| e.ts)
            .ok_or_else(|| format!("no {what} event after the approval"))
    };
    let created = first("brief_created", &|e| e.kind == EventKind::BriefCreated)?;
    let claimed = first("claim", &|e| {
        e.kind == EventKind::BriefStatus
            && matches!(e.typed(), Ok(agency_core::event::EventPayload::BriefStatus(change)) if change.to == "running")
    })?;
    let spawned = first("spawned", &|e| e.kind == EventKind::Spawned)?;
    let ms = |at: DateTime<Utc>| (at - approved_at).num_microseconds().unwrap_or(0) as f64 / 1000.0;
    Ok(Timeline {
        created: ms(created),
        claimed: ms(claimed),
        spawned: ms(spawned),
        started: ms(agent_started),
    })
}
