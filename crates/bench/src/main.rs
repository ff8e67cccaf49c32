//! `agency-bench`: the runner's own cost, measured on a whole run. A plan of `W` workstreams (tier path
//! t3→t4→t5) whose squad leads each split their work into `K` tasks, every task with its T5 verifier, driven
//! by the real [`Engine`] on a real git repository and SQLite blackboard — with agents that finish at once
//! (the [`InstantRuntime`]) and the scripted provider reviewing blocking teachbacks. What is left of the
//! process's CPU time once the agents' own work is taken out is the runner's: claims, spawns, teachback
//! reviews, status changes, sign-off, verdicts, merges. Git and verify commands run as child processes, so
//! their CPU is reported apart (the runner still pays for starting them).
//!
//! ```text
//! agency-bench --briefs 10000 [--squad 50] [--concurrency 8] [--verify true] [--keep DIR]
//! agency-bench --spawn-cost 2000
//! agency-bench --approve 100 [--workstreams 1] [--concurrency 8]
//! ```
//! Prints one `key=value` line per run for `bench/runner.sh` to tabulate. Besides CPU time (which moves
//! with the machine's load) it counts what the runner did per brief: child processes started and
//! blackboard write transactions. `--spawn-cost N` measures the runner's own CPU per git process: `git
//! version` run N times through the same code the runner uses. `--approve N` measures N approvals of a
//! waiting runner's plan gate to the next agent's start ([`approve`]).

mod approve;
mod measure;
mod runtime;

/// The allocator the `agency` binary runs with (crates/cli/src/main.rs), so the figures are the runner's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agency_core::Tier;
use agency_core::config::TeamConfig;
use agency_core::redact::Redactor;
use agency_engine::budget::BlackboardSink;
use agency_engine::{Engine, EngineOptions};
use agency_exec::runtime::{AgentLimits, Runtime};
use agency_exec::{GitOptions, Repo};
use agency_llm::{BudgetLedger, CancelToken, Metered, Provider, Script, ScriptedProvider, UsageSink};
use agency_store::{Blackboard, RedactingBlackboard, SqliteBlackboard};

use crate::measure::Sample;
use crate::runtime::InstantRuntime;

/// The models' answers: every teachback is approved and every slice accepted (each is still a model call,
/// through the metered provider, as in a real run).
const SCRIPT: &str = r#"
model: scripted-bench
replies:
  - role: teachback-reviewer
    reply:
      tool_calls:
        - name: review_teachback
          input: { approved: true, note: "Matches the brief." }
  # The read-only judge of a two-stage sign-off, where the runner asks one.
  - contains: "VERDICT"
    reply: { text: "Every slice file is there.\nVERDICT: accept\nmissing: none" }
"#;

/// What to run.
#[derive(Debug, Clone)]
struct Args {
    /// About this many briefs in the whole run (T4 + T5 pairs, plus one squad lead per workstream, the plan
    /// and the accept brief).
    briefs: usize,
    /// T4 tasks per squad.
    squad: usize,
    /// Agents at once (`runner.concurrency`).
    concurrency: u32,
    /// The contract's verify command (stage 1 of sign-off), if any.
    verify: Option<String>,
    /// Instead of a run: start this many git processes and report the CPU each cost this process.
    spawn_cost: Option<u32>,
    /// Instead of a run: this many approvals of a plan gate, each timed to the next agent's start.
    approve: Option<usize>,
    /// Workstreams in each `--approve` sample's plan.
    workstreams: usize,
    /// Run in this new directory and leave it (the repository, worktrees and blackboard) for inspection,
    /// instead of in a temporary one.
    keep: Option<std::path::PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        briefs: 1_000,
        squad: 50,
        concurrency: 8,
        verify: None,
        spawn_cost: None,
        approve: None,
        workstreams: 1,
        keep: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--briefs" => args.briefs = value()?.parse().map_err(|e| format!("--briefs: {e}"))?,
            "--squad" => args.squad = value()?.parse().map_err(|e| format!("--squad: {e}"))?,
            "--concurrency" => {
                args.concurrency = value()?.parse().map_err(|e| format!("--concurrency: {e}"))?;
            }
            "--verify" => args.verify = Some(value()?),
            "--spawn-cost" => {
                args.spawn_cost = Some(value()?.parse().map_err(|e| format!("--spawn-cost: {e}"))?);
            }
            "--approve" => args.approve = Some(value()?.parse().map_err(|e| format!("--approve: {e}"))?),
            "--workstreams" => {
                args.workstreams = value()?.parse().map_err(|e| format!("--workstreams: {e}"))?;
            }
            "--keep" => args.keep = Some(value()?.into()),
            other => return Err(format!("unknown argument {other}; see the crate docs")),
        }
    }
    if args.approve == Some(0) || args.workstreams == 0 {
        return Err("--approve and --workstreams must be at least 1".into());
    }
    if args.squad == 0 || args.briefs < 2 * args.squad {
        return Err("--briefs must be at least twice --squad, and --squad at least 1".into());
    }
    Ok(args)
}

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(err) => {
            eprintln!("agency-bench: {err}");
            return std::process::ExitCode::from(2);
        }
    };
    let outcome = match (args.spawn_cost, args.approve) {
        (Some(n), _) => spawn_cost(n),
        (None, Some(n)) => approve::bench(n, args.workstreams, args.concurrency),
        (None, None) => bench(&args),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("agency-bench: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn bench(args: &Args) -> Result<(), String> {
    let workstreams = (args.briefs / (2 * args.squad)).max(1);
    // Held to the end of the run, for its Drop, when the run is not kept.
    let temporary;
    let dir = match &args.keep {
        Some(keep) => {
            std::fs::create_dir(keep).map_err(|e| format!("--keep {}: {e}", keep.display()))?;
            keep.as_path()
        }
        None => {
            temporary = tempfile::tempdir().map_err(|e| e.to_string())?;
            temporary.path()
        }
    };
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    std::fs::write(root.join("README"), "bench\n").map_err(|e| e.to_string())?;
    let repo = Repo::init(&root, "main", GitOptions::default()).map_err(|e| e.to_string())?;
    repo.commit_all("bench base").map_err(|e| e.to_string())?;
    let sqlite = Arc::new(SqliteBlackboard::open(dir.join("agency.db")).map_err(|e| e.to_string())?);
    // As the CLI opens it: everything written is redacted on its way in.
    let redactor = Redactor::from_process_env(&TeamConfig::default().secret_env_names());
    let store: Arc<dyn Blackboard> = RedactingBlackboard::wrap(sqlite.clone(), redactor);

    let mut config = TeamConfig::default();
    config.runner.concurrency = args.concurrency;
    let ledger = Arc::new(Mutex::new(BudgetLedger::new(agency_llm::budget_limits(
        &config.budgets,
    ))));
    let sink: Arc<dyn UsageSink> = Arc::new(BlackboardSink::new(store.clone()));
    let scripted: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(
        Script::from_yaml(SCRIPT).map_err(|e| e.to_string())?,
    ));
    let provider: Arc<dyn Provider> = Arc::new(Metered::new(scripted, sink).with_ledger(ledger.clone()));
    let runtime = Arc::new(InstantRuntime::new(workstreams, args.squad, args.verify.clone()));
    let mut runtimes: BTreeMap<Tier, Arc<dyn Runtime>> = BTreeMap::new();
    let mut providers: BTreeMap<Tier, Arc<dyn Provider>> = BTreeMap::new();
    for tier in Tier::ALL {
        runtimes.insert(tier, runtime.clone());
        providers.insert(tier, provider.clone());
    }
    let options = EngineOptions {
        auto_approve: true,
        worker: "bench".into(),
        poll: Duration::from_millis(20),
        worktrees: dir.join("worktrees"),
        limits: AgentLimits::default(),
        output_retries: 2,
        gate_timeout: None,
        agent_idle: None,
        hidden: Vec::new(),
        wake: None,
        remote: None,
        offer: Default::default(),
    };
    let engine = Engine::new(store.clone(), config, repo, runtimes, providers, options)
        .map_err(|e| e.to_string())?
        .with_ledger(ledger);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    agency_exec::process::cost::account(true);
    let before = Sample::now()?;
    let (processes_before, writes_before) = (agency_exec::process::started_count(), sqlite.write_count());
    let process_cost_before = agency_exec::process::cost::spent();
    let wall = Instant::now();
    let run = engine.start("Benchmark the runner").map_err(|e| e.to_string())?;
    let outcome = rt
        .block_on(engine.drive(run.id, &CancelToken::new()))
        .map_err(|e| e.to_string())?;
    let wall = wall.elapsed();
    let after = Sample::now()?;
    let process_cost = agency_exec::process::cost::spent().saturating_sub(process_cost_before);
    let processes = agency_exec::process::started_count() - processes_before;
    let writes = sqlite.write_count() - writes_before;

    let briefs = store.list_briefs(run.id).map_err(|e| e.to_string())?.len();
    let events = store.last_seq(Some(run.id)).map_err(|e| e.to_string())?;
    let agent = runtime.agent_cpu();
    let process = after.cpu.saturating_sub(before.cpu);
    let runner = process.saturating_sub(agent);
    let children = after.children_cpu.saturating_sub(before.children_cpu);
    let per_brief = |d: Duration| d.as_secs_f64() * 1e6 / briefs.max(1) as f64;
    let per_brief_us = per_brief(runner);
    let process_us = process_cost.as_secs_f64() * 1e6 / briefs.max(1) as f64;
    println!(
        "status={} briefs={briefs} events={events} workstreams={workstreams} squad={} concurrency={} \
         wall_s={:.1} runner_cpu_s={:.2} agent_cpu_s={:.2} child_cpu_s={:.2} runner_us_per_brief={per_brief_us:.0} \
         user_us_per_brief={:.0} system_us_per_brief={:.0} process_us_per_brief={process_us:.0} peak_rss_mb={:.1} processes_per_brief={:.2} writes_per_brief={:.1}",
        outcome.status.as_str(),
        args.squad,
        args.concurrency,
        wall.as_secs_f64(),
        runner.as_secs_f64(),
        agent.as_secs_f64(),
        children.as_secs_f64(),
        per_brief(after.user.saturating_sub(before.user)),
        per_brief(after.system.saturating_sub(before.system)),
        after.peak_rss_kb as f64 / 1024.0,
        processes as f64 / briefs.max(1) as f64,
        writes as f64 / briefs.max(1) as f64,
    );
    Ok(())
}

/// The runner's CPU per git process it starts, supervises and reaps.
fn spawn_cost(n: u32) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let repo = Repo::init(dir.path(), "main", GitOptions::default()).map_err(|e| e.to_string())?;
    let before = Sample::now()?;
    let wall = Instant::now();
    for _ in 0..n {
        repo.run_git(&["version"]).map_err(|e| e.to_string())?;
    }
    let wall = wall.elapsed();
    let after = Sample::now()?;
    let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(n.max(1));
    println!(
        "processes={n} runner_us_per_process={:.0} child_us_per_process={:.0} wall_us_per_process={:.0}",
        per(after.cpu.saturating_sub(before.cpu)),
        per(after.children_cpu.saturating_sub(before.children_cpu)),
        per(wall),
    );
    Ok(())
}
