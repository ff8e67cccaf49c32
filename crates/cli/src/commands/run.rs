//! `agency run "goal"`: runs the tiered pipeline on this repository in the foreground with the live log, or
//! in the background with `--detach`; `--resume <run>` continues a run from the blackboard after its runner
//! stopped (even killed), spawning nothing twice. `--record` writes every model call of the run to a
//! cassette in `.agency/cassettes/<run>/`; `--replay <run>` runs it again offline from that cassette and stops
//! at the first request that differs (docs/replay.md).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agency_core::config::{Runtime as ConfiguredRuntime, TeamConfig};
use agency_core::event::EventPayload;
use agency_core::event::payload::{LogLine, RuntimeChoiceNote};
use agency_core::redact::Redactor;
use agency_core::{NewEvent, Tier};
use agency_engine::budget::{BlackboardSink, ledger_from_events};
use agency_engine::{DriveOutcome, Engine, EngineOptions, Role};
use agency_exec::runtime::{
    CodexProvider, ModelSource, Runtime, RuntimeChoice, RuntimeSetup, TierModel, build as build_runtime,
    choose_for_run,
};
use agency_exec::{GitOptions, Repo, Sandboxing};
use agency_llm::cassette::{self, Manifest};
use agency_llm::{
    BudgetLedger, CancelToken, Metered, Price, Provider, Recorder, Replayer, RetryPolicy, ScriptedProvider,
    UsageSink,
};
use agency_store::{Blackboard, RunStatus, StoreError};

use crate::commands::{Context, config, resolve_run, store_error};
use crate::error::{CommandError, CommandResult, ErrorKind};
use crate::gate_service::{GateService, GateSetup};
use crate::render::follow::{self, GateWait};
use crate::render::log::Level;
use crate::workspace::{AGENCY_DIR, BlackboardAt, Workspace};

/// `agency run "goal" | --goal-file F | --resume RUN`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The goal, in your words; it is kept verbatim as the goal anchor of every brief.
    #[arg(conflicts_with_all = ["goal_file", "resume"])]
    pub goal: Option<String>,
    /// Read the goal from a file.
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    pub goal_file: Option<PathBuf>,
    /// Continue a run whose runner stopped.
    #[arg(long, value_name = "RUN")]
    pub resume: Option<String>,
    /// Answer every model call from this script instead of a provider (offline, reproducible runs).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Approve every gate at once instead of waiting for a human.
    #[arg(long)]
    pub auto_approve: bool,
    /// Start the run and return; follow it with `agency watch <run> --follow`.
    #[arg(long)]
    pub detach: bool,
    /// Show per-agent lines in the live log.
    #[arg(long, short)]
    pub verbose: bool,
    /// Share the run's branches through this git remote, for `agency worker --repo` on other machines: the
    /// integration and workstream branches are pushed as they move, workers' slices fetched from it.
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    /// Recording and replaying the run's model calls.
    #[command(flatten)]
    pub cassette: CassetteArgs,
}

/// `--record` and `--replay RUN`: a run's model calls kept in a cassette, and a run answered from one.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct CassetteArgs {
    /// Record every model request and answer of this run, redacted, in .agency/cassettes/<run>/.
    #[arg(long, conflicts_with = "replay")]
    pub record: bool,
    /// Run a recorded run again offline: every model call is answered from its cassette (a run id or
    /// prefix under .agency/cassettes/, or a cassette directory), and the run stops at the first request
    /// that differs from the recorded one.
    #[arg(long, value_name = "RUN|DIR", conflicts_with_all = ["script", "resume", "detach"])]
    pub replay: Option<String>,
}

/// Runs `agency run`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let ws = ctx.workspace()?;
    let (_, team) = config::load(ctx)?;
    // `--verbose` or team.yaml's `visibility.log_level: verbose`: either asks for the per-agent lines.
    let level = crate::commands::watch::log_level(args.verbose, team.visibility.log_level);
    let store: Arc<dyn Blackboard> = ctx.open_store()?;
    let resuming = match &args.resume {
        Some(prefix) => Some(resolve_run(store.as_ref(), prefix)?),
        None => None,
    };
    if resuming.is_none() {
        starting_point(&ws.root)?;
    }
    let mut runner = build_engine(
        &ws,
        store.clone(),
        team,
        &args,
        resuming,
        Role::Driver.name_here(),
    )?;
    let remote = remote_of(&args, resuming, store.as_ref());
    if let Some(remote) = &remote {
        let shared = shared_remote(&runner.engine, remote)?;
        runner.engine = runner.engine.sharing_through(shared);
    }
    let run_id = match resuming {
        Some(run) => run,
        None => {
            let goal = match (&runner.replay, &args.goal, &args.goal_file) {
                (Some(replay), None, None) => replay.manifest().goal.clone(),
                _ => goal_text(&args)?,
            };
            let run = runner.engine.start(&goal).map_err(engine_error)?;
            crate::commands::attached::record_resume_command(
                store.as_ref(),
                run.id,
                args.script.as_deref(),
                runner.recorder.is_some(),
                remote.as_deref(),
            );
            println!("run {} started on {}", run.id.short(), ws.root.display());
            if let Some(replay) = &runner.replay {
                println!(
                    "replaying run {} offline: {} recorded model calls",
                    replay.manifest().run,
                    replay.len()
                );
            }
            run.id
        }
    };
    if let Some(recorder) = &runner.recorder {
        start_cassette(&ws, recorder, store.as_ref(), run_id, runner.auto_approve)?;
    }
    if args.detach {
        return detach(&ws, run_id, &args);
    }
    let outcome = drive_with_log(&runner, &ws.db, run_id, level);
    if let Some(replay) = &runner.replay {
        return replayed(replay, run_id, outcome);
    }
    report(run_id, &outcome?)
}

/// Writes the manifest of `run`'s cassette, unless a recording of it already has one (a resumed run).
fn start_cassette(
    ws: &Workspace,
    recorder: &Recorder,
    store: &dyn Blackboard,
    run: agency_core::RunId,
    auto_approve: bool,
) -> CommandResult {
    let goal = store.get_run(run).map_err(store_error)?.goal;
    let dir = recorder
        .start(&Manifest {
            format: cassette::FORMAT,
            run: run.to_string(),
            goal,
            root: ws.root.display().to_string(),
            auto_approve,
        })
        .map_err(|e| CommandError::input(e.to_string()))?;
    println!("recording its model calls in {}", dir.display());
    Ok(())
}

/// How a replay ended: the first difference from the recording, or recorded calls it never asked for, are
/// failures; otherwise as the run ended.
fn replayed(
    replay: &Replayer,
    run: agency_core::RunId,
    outcome: CommandResult<DriveOutcome>,
) -> CommandResult {
    let hint = "a change to prompts, tools, team.yaml or the repository changed what the model is asked; \
                record the run again (`agency run --record`) if the change is meant";
    if let Some(divergence) = replay.divergence() {
        return Err(CommandError::new(ErrorKind::RunFailed, divergence).hint(hint));
    }
    let outcome = outcome?;
    let unused = replay.unused();
    if let Some(first) = unused.first() {
        return Err(CommandError::new(
            ErrorKind::RunFailed,
            format!(
                "replay diverged: run {} ended {} without asking for {} of the recorded calls, the first: {first}",
                run.short(),
                outcome.status.as_str(),
                unused.len()
            ),
        )
        .hint(hint));
    }
    report(run, &outcome)
}

/// Where cassettes are kept: `.agency/cassettes/`.
fn cassettes_of(ws: &Workspace) -> PathBuf {
    ws.root.join(AGENCY_DIR).join("cassettes")
}

/// The cassette `which` names: a directory holding a cassette, or a run id (whole, a prefix, or its short
/// form) recorded under `.agency/cassettes/`.
fn cassette_dir(ws: &Workspace, which: &str) -> CommandResult<PathBuf> {
    let path = Path::new(which);
    if path.join(cassette::MANIFEST).is_file() {
        return Ok(path.to_path_buf());
    }
    let root = cassettes_of(ws);
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let simple = name.replace('-', "");
                    !which.is_empty() && (name.starts_with(which) || simple.ends_with(which))
                })
                .map(|entry| entry.path())
                .filter(|dir| dir.join(cassette::MANIFEST).is_file())
                .collect()
        })
        .unwrap_or_default();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(CommandError::input(format!(
            "no cassette named {which:?}: neither a directory holding {} nor a run recorded in {}",
            cassette::MANIFEST,
            root.display()
        ))
        .hint("record one with `agency run --record \"goal\"`")),
        n => Err(CommandError::input(format!(
            "{which:?} names {n} cassettes in {}; give more of the run id",
            root.display()
        ))),
    }
}

/// Agents start from the commit `HEAD` names: a repository with no commit cannot start a run (said in one
/// line instead of a git error), and changes not committed are not seen by any agent (said as a warning,
/// since a run from a clean HEAD with notes left in the tree is a normal thing to do).
fn starting_point(root: &Path) -> CommandResult {
    let repo = Repo::open(root, GitOptions::default()).map_err(|e| CommandError::input(e.to_string()))?;
    let head = repo.head_rev().map_err(|_| {
        CommandError::input(format!(
            "{} has no commit yet: agents start from the commit HEAD names",
            root.display()
        ))
        .hint("commit what the agents should start from: git add -A && git commit -m \"Initial commit\"")
    })?;
    let status = repo
        .run_git(&[
            "status",
            "--porcelain",
            "--untracked-files=normal",
            "--",
            ".",
            ":(exclude).agency",
        ])
        .map_err(|e| CommandError::input(e.to_string()))?;
    let changed = status
        .stdout
        .text()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    if changed > 0 {
        eprintln!(
            "warning: {changed} uncommitted change(s) in {} are not seen by the agents: they start from HEAD ({})",
            root.display(),
            head.get(..8).unwrap_or(&head)
        );
    }
    Ok(())
}

fn goal_text(args: &Args) -> CommandResult<String> {
    let goal = match (&args.goal, &args.goal_file) {
        (Some(goal), _) => goal.clone(),
        (None, Some(file)) => std::fs::read_to_string(file)
            .map_err(|e| CommandError::input(format!("cannot read the goal file {}: {e}", file.display())))?,
        (None, None) => {
            return Err(
                CommandError::new(ErrorKind::Usage, "give a goal, --goal-file FILE or --resume RUN")
                    .hint("agency run \"Fix the off-by-one in pagination\""),
            );
        }
    };
    if goal.trim().is_empty() {
        return Err(CommandError::input("the goal is empty"));
    }
    Ok(goal.trim().to_string())
}

/// A runner ready to drive: the engine, and which runtime each tier's agents use and why.
#[derive(Debug)]
pub struct Runner {
    /// The engine.
    pub engine: Engine,
    /// One choice per tier, in tier order; written to the run's log when it is driven.
    pub runtimes: Vec<RuntimeChoice>,
    /// Whether the engine approves gates by itself (`--auto-approve`).
    pub auto_approve: bool,
    /// How long a gate waits before the engine rejects it (`visibility.gate_timeout_minutes`).
    pub gate_timeout: chrono::Duration,
    /// The cassette a replay answers from (`--replay`).
    pub replay: Option<Arc<Replayer>>,
    /// What records the run's model calls (`--record`).
    pub recorder: Option<Arc<Recorder>>,
    /// What stops the drive besides a signal: the replay's first divergence.
    pub stop: CancelToken,
    /// The gate service: the agents' only way to the blackboard, and the socket human decisions poke.
    pub gate: Arc<GateService>,
}

/// Builds the runner: one provider and one runtime per tier, as team.yaml says (or the script for all),
/// named `worker` in claims.
pub fn build_engine(
    ws: &Workspace,
    store: Arc<dyn Blackboard>,
    team: TeamConfig,
    args: &Args,
    resuming: Option<agency_core::RunId>,
    worker: String,
) -> CommandResult<Runner> {
    let repo = Repo::open(&ws.root, GitOptions::default()).map_err(|e| CommandError::input(e.to_string()))?;
    sandbox_ready(&team)?;
    let personalities = config::personalities_ready(&team, &ws.config.display().to_string(), &ws.root)?;
    let agency_dir = ws.root.join(AGENCY_DIR);
    let limits = agency_llm::budget_limits(&team.budgets);
    let ledger = match resuming {
        Some(run) => ledger_from_events(store.as_ref(), run, limits).map_err(engine_error)?,
        None => BudgetLedger::new(limits),
    };
    let ledger = Arc::new(Mutex::new(ledger));
    let sink: Arc<dyn UsageSink> = Arc::new(BlackboardSink::new(store.clone()));
    // Recorded and replayed calls are redacted alike: the provider keys team.yaml names, every
    // secret-looking variable of the runner's environment, token shapes.
    let redactor = Redactor::from_process_env(&provider_key_vars(&team));
    let replay = match &args.cassette.replay {
        Some(which) => Some(
            Replayer::open(&cassette_dir(ws, which)?, &ws.root, redactor.clone())
                .map_err(|e| CommandError::input(e.to_string()))?,
        ),
        None => None,
    };
    let recorder = args
        .cassette
        .record
        .then(|| Recorder::new(cassettes_of(ws), redactor.clone()));
    let auto_approve = args.auto_approve || replay.as_ref().is_some_and(|r| r.manifest().auto_approve);
    let source = match (&args.script, &replay) {
        (None, None) => ModelSource::Live,
        _ => ModelSource::Scripted,
    };
    let mut choices = choose_for_run(&team.tiers, std::env::var_os("PATH").as_deref(), source);
    if ws.db.is_postgres() {
        hook_free(&team, &mut choices, &ws.db)?;
    }
    if recorder.is_some() || replay.is_some() {
        let what = if replay.is_some() { "replayed" } else { "recorded" };
        builtin_only(&team, &mut choices, what)?;
    }
    // Before anything is called or recorded: a dollar budget over an unpriced model would not hold.
    config::usd_budgets_priced(&team, "team.yaml", |tier| {
        calls_configured_model(source, &choices, tier)
    })?;
    let providers: BTreeMap<Tier, Arc<dyn Provider>> =
        providers(&team, args.script.as_deref(), replay.as_ref())?
            .into_iter()
            .map(|(tier, (provider, price))| {
                // Recorded inside the metering, so a budget refusal (never sent) is not a call, and outside the
                // retries, so one logical call is one recording.
                let provider = match &recorder {
                    Some(recorder) => recorder.wrap(provider),
                    None => provider,
                };
                // Metered outside the provider's retries, so one logical call is checked once; priced from
                // `models.prices`, so its calls are charged in dollars too.
                let metered: Arc<dyn Provider> = Arc::new(
                    Metered::new(provider, sink.clone())
                        .with_price(price)
                        .with_ledger(ledger.clone()),
                );
                (tier, metered)
            })
            .collect();
    let agency = std::env::current_exe()
        .map_err(|e| CommandError::internal(format!("cannot locate the agency binary for the hook: {e}")))?;
    let secrets = provider_keys(&team);
    // Resolved here, from team.yaml as the run read it and the runner's own environment, and handed to each
    // hook-gated agent in its environment: the hook must not take it from a file the agent could write.
    let rollout = team
        .effective_teachback_mode(std::env::var(&team.teachback.mode_env_var).ok().as_deref())
        .map_err(|e| CommandError::input(e.to_string()))?;
    // The agents' only way to the blackboard (their sandbox does not show it), and how a human decision
    // wakes this runner.
    let gate = GateService::start(
        &agency_dir.join(crate::gate_service::SOCKET_DIR),
        GateSetup {
            store: store.clone(),
            db: ws.db.sqlite().map(Path::to_path_buf),
            config: ws.config.is_file().then(|| ws.config.clone()),
            rollout,
        },
    )
    .map_err(|e| CommandError::internal(format!("the gate service did not start: {e}")))?;
    // Claude Code and pi agents call their model through it and never hold the key: the agents' commands
    // share their sandbox and could read it from `/proc`. Started only when such an agent may run.
    let relay = if choices
        .iter()
        .any(|c| matches!(c.runtime, ConfiguredRuntime::ClaudeCode | ConfiguredRuntime::Pi))
    {
        let relay = agency_relay::KeyRelay::start().map_err(|e| {
            CommandError::internal(format!(
                "the model-key relay did not start, so no Claude Code or pi agent can be started without handing it \
                 the key: {e}"
            ))
        })?;
        Some(Arc::new(relay))
    } else {
        None
    };
    let mut runtimes: BTreeMap<Tier, Arc<dyn Runtime>> = BTreeMap::new();
    for choice in &choices {
        let provider = providers
            .get(&choice.tier)
            .cloned()
            .ok_or_else(|| CommandError::internal("no provider"))?;
        let setup = RuntimeSetup {
            provider,
            agency: agency.clone(),
            // The hook's blackboard. Only SQLite has one: no hook-gated runtime runs on PostgreSQL
            // (`hook_free`), so the empty path is never used.
            db: ws.db.sqlite().map(Path::to_path_buf).unwrap_or_default(),
            config: ws.config.is_file().then(|| ws.config.clone()),
            rollout,
            state_dir: agency_dir.join("agents"),
            command: team.tiers.get(choice.tier).command.clone(),
            secrets: secrets.clone(),
            gate: Some(gate.clone()),
            relay: relay.clone(),
            codex_provider: codex_provider(),
            model: TierModel::of(&team, choice.tier),
            prices: agency_llm::price_table(&team),
        };
        let runtime = build_runtime(choice, &setup).map_err(|e| CommandError::input(e.to_string()))?;
        runtimes.insert(choice.tier, runtime);
    }
    let gate_timeout = chrono::Duration::minutes(i64::from(team.visibility.gate_timeout_minutes));
    let options = EngineOptions {
        auto_approve,
        worker,
        worktrees: agency_dir.join("worktrees"),
        // The blackboard is out of every agent's sandbox wherever it is kept.
        hidden: ws
            .db
            .sqlite()
            .map(agency_exec::runtime::external::blackboard_files)
            .unwrap_or_default(),
        wake: Some(gate.waker()),
        ..EngineOptions::default()
    };
    let engine = Engine::new(store, team, repo, runtimes, providers, options)
        .map_err(engine_error)?
        .with_ledger(ledger)
        .with_personalities(personalities);
    let stop = replay.as_ref().map(|r| r.stop_token()).unwrap_or_default();
    Ok(Runner {
        engine,
        runtimes: choices,
        auto_approve,
        gate_timeout,
        replay,
        recorder,
        stop,
        gate,
    })
}

/// Only the built-in agent's calls go through agency's providers, so only they can be recorded or
/// answered from a cassette: `auto` becomes the built-in agent (said in the run log), and a tier
/// configured for an agent that calls its model itself is refused, naming it, before anything runs (a
/// replay would otherwise call a live model; a recording would miss its calls).
fn builtin_only(team: &TeamConfig, choices: &mut [RuntimeChoice], what: &str) -> CommandResult {
    for choice in choices.iter_mut() {
        if team.tiers.runtime(choice.tier) == ConfiguredRuntime::Auto
            && choice.runtime != ConfiguredRuntime::Builtin
        {
            choice.runtime = ConfiguredRuntime::Builtin;
            choice.reason =
                format!("auto in a {what} run: only the built-in agent's model calls can be {what}");
        }
    }
    let external: Vec<String> = choices
        .iter()
        .filter(|c| c.runtime != ConfiguredRuntime::Builtin)
        .map(|c| format!("{} ({})", c.tier, c.runtime.as_str()))
        .collect();
    if external.is_empty() {
        return Ok(());
    }
    Err(CommandError::input(format!(
        "tiers {} run agents that call their model themselves, so their calls cannot be {what}",
        external.join(", ")
    ))
    .hint("set `runtime: builtin` (or `auto`) for those tiers in team.yaml"))
}

/// Every run has agents that run commands (implementers), so a sandbox that cannot be set up refuses the
/// run here, before anything starts, with the reason and the way out; `sandbox.mode: off` is said on
/// stderr (and, per agent, in the run's log).
pub(crate) fn sandbox_ready(team: &TeamConfig) -> CommandResult {
    match agency_exec::sandbox::configured(&team.sandbox, &[], None) {
        Sandboxing::On(policy) => policy.probe().map_err(|e| CommandError::input(e.to_string())),
        Sandboxing::Off => {
            eprintln!(
                "warning: SANDBOX OFF (team.yaml `sandbox.mode: off`): agents run unconfined; they can read the \
                 blackboard and the runner's environment and write wherever the runner can"
            );
            Ok(())
        }
    }
}

/// The runtimes a run on a PostgreSQL blackboard may use. Claude Code and Codex agents are gated by
/// `agency hook`, which reads the blackboard from a SQLite file on every tool call (no connection pool, no
/// async runtime: a few milliseconds per call), so it cannot gate a run kept in PostgreSQL. `auto` becomes
/// the built-in agent there, with the reason in the run log; a tier configured for one of them is an error
/// naming the tiers and what to do, before anything is recorded.
fn hook_free(team: &TeamConfig, choices: &mut [RuntimeChoice], db: &BlackboardAt) -> CommandResult {
    let hook_gated = |runtime: ConfiguredRuntime| {
        matches!(runtime, ConfiguredRuntime::ClaudeCode | ConfiguredRuntime::Codex)
    };
    for choice in choices.iter_mut() {
        if team.tiers.runtime(choice.tier) == ConfiguredRuntime::Auto && hook_gated(choice.runtime) {
            choice.runtime = ConfiguredRuntime::Builtin;
            choice.reason = POSTGRES_AUTO_REASON.to_string();
        }
    }
    let gated: Vec<String> = choices
        .iter()
        .filter(|c| hook_gated(c.runtime))
        .map(|c| format!("{} ({})", c.tier, c.runtime.as_str()))
        .collect();
    if gated.is_empty() {
        return Ok(());
    }
    Err(CommandError::input(format!(
        "tiers {} run agents gated by `agency hook`, which reads the blackboard only from a SQLite file; this \
         run's blackboard is PostgreSQL ({db})",
        gated.join(", ")
    ))
    .hint(
        "set `runtime: builtin` for those tiers in team.yaml (the built-in agent is gated in-process and works on \
         PostgreSQL), or run on the SQLite blackboard (drop --db / AGENCY_DB)",
    ))
}

/// Why `auto` is the built-in agent on PostgreSQL, for the run log.
const POSTGRES_AUTO_REASON: &str =
    "auto on a PostgreSQL blackboard: the hook that gates Claude Code reads SQLite only";

/// The endpoint `OPENAI_BASE_URL` names, for Codex agents (Codex itself does not read the variable); its
/// key is `OPENAI_API_KEY`, which Codex inherits.
fn codex_provider() -> Option<CodexProvider> {
    let base_url = std::env::var("OPENAI_BASE_URL").ok().filter(|u| !u.is_empty())?;
    Some(CodexProvider {
        name: "openai-base-url".into(),
        base_url,
        wire_api: "responses".into(),
        env_key: Some("OPENAI_API_KEY".into()),
    })
}

/// The values of the API keys team.yaml's providers read, redacted from everything an agent records.
fn provider_keys(team: &TeamConfig) -> Vec<String> {
    team.providers
        .values()
        .filter_map(|provider| std::env::var(provider.api_key_env()).ok())
        .filter(|key| !key.is_empty())
        .collect()
}

/// The names of the variables team.yaml's providers read their keys from.
fn provider_key_vars(team: &TeamConfig) -> Vec<String> {
    team.providers
        .values()
        .map(|provider| provider.api_key_env().to_owned())
        .collect()
}

/// Writes which runtime each tier uses and why to the run's log, each time a runner starts driving it (a
/// resumed run may run where `claude` is, or is not, installed): one `RUNTIMES` line, tiers that share a
/// runtime and reason grouped (`t1, t2, t3: builtin (configured); t4, t5: claude-code (claude found at
/// /usr/bin/claude)`), and every choice in the payload.
fn announce_runtimes(
    store: &dyn Blackboard,
    run: agency_core::RunId,
    choices: &[RuntimeChoice],
) -> CommandResult {
    let mut groups: Vec<(Vec<&str>, String)> = Vec::new();
    for choice in choices {
        let what = format!("{} ({})", choice.runtime.as_str(), choice.reason);
        match groups.iter_mut().find(|(_, w)| *w == what) {
            Some((tiers, _)) => tiers.push(choice.tier.as_str()),
            None => groups.push((vec![choice.tier.as_str()], what)),
        }
    }
    let message = groups
        .iter()
        .map(|(tiers, what)| format!("{}: {what}", tiers.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    let tiers = choices
        .iter()
        .map(|c| RuntimeChoiceNote {
            tier: Some(c.tier),
            runtime: c.runtime.as_str().to_string(),
            reason: c.reason.to_string(),
        })
        .collect();
    let payload = EventPayload::Log(LogLine {
        tiers: Some(tiers),
        ..LogLine::new("normal", Some("RUNTIMES"), message)
    });
    store
        .append_event(NewEvent::typed(run, payload))
        .map_err(store_error)?;
    Ok(())
}

/// Whether `tier`'s configured model is called in this run: always in a live run; under `--script` only by
/// the agents that call their model themselves (Claude Code, Codex), as the built-in agent's calls are
/// answered by the script.
fn calls_configured_model(source: ModelSource, choices: &[RuntimeChoice], tier: Tier) -> bool {
    match source {
        ModelSource::Live => true,
        ModelSource::Scripted => choices.iter().any(|c| {
            c.tier == tier
                && matches!(
                    c.runtime,
                    ConfiguredRuntime::ClaudeCode | ConfiguredRuntime::Codex
                )
        }),
    }
}

/// Each tier's provider with its price from `models.prices`; a script's replies cost nothing, so they are
/// unpriced. A replayed call is priced as the tier's model is, so budgets hold as they did when recorded.
fn providers(
    team: &TeamConfig,
    script: Option<&Path>,
    replay: Option<&Arc<Replayer>>,
) -> CommandResult<BTreeMap<Tier, PricedProvider>> {
    let mut out: BTreeMap<Tier, PricedProvider> = BTreeMap::new();
    if let Some(replay) = replay {
        for tier in Tier::ALL {
            let level = team.tiers.capability(tier);
            let binding = team.models.binding(level).ok_or_else(|| {
                CommandError::input(format!(
                    "tiers.{tier}: no model for its capability level ({level})"
                ))
            })?;
            let price = team.models.price(&binding.model).map(Price::from);
            out.insert(tier, (replay.provider(binding.model.clone()), price));
        }
        return Ok(out);
    }
    if let Some(path) = script {
        let scripted: Arc<dyn Provider> =
            Arc::new(ScriptedProvider::from_file(path).map_err(|e| CommandError::input(e.to_string()))?);
        for tier in Tier::ALL {
            out.insert(tier, (scripted.clone(), None));
        }
        return Ok(out);
    }
    let models = agency_llm::ModelSet::from_config(team, &agency_llm::process_env, RetryPolicy::default())
        .map_err(|e| {
            CommandError::input(e.to_string()).hint("set the variable team.yaml names, or pass --script FILE")
        })?;
    for tier in Tier::ALL {
        let model = models
            .for_tier(team, tier)
            .ok_or_else(|| CommandError::input(format!("tiers.{tier}: no model for its capability level")))?;
        out.insert(tier, (model.provider.clone(), model.price));
    }
    Ok(out)
}

/// A provider and the price its calls are charged at, when it has one.
type PricedProvider = (Arc<dyn Provider>, Option<Price>);

/// Maps a runner error to the CLI's.
pub fn engine_error(err: agency_engine::EngineError) -> CommandError {
    match err {
        agency_engine::EngineError::Store(e) => store_error(e),
        agency_engine::EngineError::Config(m) => CommandError::input(m),
        other => CommandError::internal(other.to_string()),
    }
}

/// How often the live log beside a runner polls the blackboard.
const LOG_POLL: Duration = Duration::from_millis(100);

/// How often a live log that is not a terminal (a file, a pipe) says the run still waits at a gate.
const WAITING_EVERY: Duration = Duration::from_secs(5 * 60);

/// Drives the run on this thread while another prints its live log from the blackboard.
pub fn drive_with_log(
    runner: &Runner,
    db: &BlackboardAt,
    run: agency_core::RunId,
    level: Level,
) -> CommandResult<DriveOutcome> {
    let engine = &runner.engine;
    // A run another runner drives is refused before anything is written (the runner's own lease, taken in
    // `drive`, refuses it again should one start in between).
    if let Err(refused @ StoreError::Driven { .. }) = engine.store().lock_driver(run, "agency run") {
        return Err(store_error(refused));
    }
    announce_runtimes(engine.store().as_ref(), run, &runner.runtimes)?;
    let done = Arc::new(AtomicBool::new(false));
    let gates = GateWait {
        auto_approve: runner.auto_approve,
        timeout: runner.gate_timeout,
        tty: std::io::stdout().is_terminal(),
        every: WAITING_EVERY,
    };
    let printer = {
        let done = done.clone();
        let db = db.clone();
        std::thread::spawn(move || {
            let (out, err) = (std::io::stdout(), std::io::stderr());
            follow::beside_runner(|| db.open(), run, level, Some(gates), &done, LOG_POLL, out, err)
        })
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CommandError::internal(format!("cannot start the runner: {e}")))?;
    let cancel = runner.stop.clone();
    let outcome = runtime.block_on(async {
        crate::interrupt::cancel_on_signal(cancel.clone())?;
        Ok::<_, CommandError>(engine.drive(run, &cancel).await)
    });
    done.store(true, Ordering::SeqCst);
    let _ = printer.join();
    outcome?.map_err(|err| stopped_or_failed(err, run, engine.store().as_ref()))
}

/// An engine error as the command's error; a stop asked for by Ctrl-C or SIGTERM says how to go on, with
/// the command the run was started to be resumed with (its `--script`, its `--record`).
pub fn stopped_or_failed(
    err: agency_engine::EngineError,
    run: agency_core::RunId,
    store: &dyn Blackboard,
) -> CommandError {
    let resume = || crate::commands::attached::resume_command(store, run);
    match err {
        agency_engine::EngineError::Cancelled => CommandError::new(
            ErrorKind::Interrupted,
            format!(
                "stopped: the runner of run {} stopped its agents and gave their briefs back",
                run.short()
            ),
        )
        .hint(format!("`{}` continues it", resume())),
        // Another runner drives it: nothing to resume here.
        agency_engine::EngineError::Store(refused @ StoreError::Driven { .. }) => store_error(refused),
        other => engine_error(other).hint(format!(
            "`{}` continues the run once the cause is fixed",
            resume()
        )),
    }
}

fn report(run: agency_core::RunId, outcome: &DriveOutcome) -> CommandResult {
    match (&outcome.status, &outcome.branch) {
        (RunStatus::Succeeded, Some(branch)) => {
            println!("run {} succeeded: review and merge branch {branch}", run.short());
            Ok(())
        }
        (status, _) => Err(CommandError::new(
            ErrorKind::RunFailed,
            format!("run {} ended {}", run.short(), status.as_str()),
        )
        .hint(format!("`agency inspect {}` shows where it stopped", run.short()))),
    }
}

/// The git remote the driver shares the run's branches through: `--remote NAME`, or on `--resume` the one
/// the run was started with (recorded with its resume command). A `--remote` that differs from the
/// recorded one wins, and says so.
fn remote_of(args: &Args, resuming: Option<agency_core::RunId>, store: &dyn Blackboard) -> Option<String> {
    let recorded = resuming.and_then(|run| crate::commands::attached::recorded_remote(store, run));
    match (&args.remote, recorded) {
        (Some(given), Some(recorded)) if *given != recorded => {
            println!(
                "--remote {given}: the run was started with --remote {recorded}; sharing its branches through \
                 {given} instead"
            );
            Some(given.clone())
        }
        (Some(given), _) => Some(given.clone()),
        (None, Some(recorded)) => {
            println!("sharing the run's branches through git remote {recorded}, as when it started");
            Some(recorded)
        }
        (None, None) => None,
    }
}

/// The driver's side of `--remote NAME`: the remote must be configured in the repository.
fn shared_remote(
    engine: &agency_engine::Engine,
    name: &str,
) -> CommandResult<agency_engine::remote::SharedRemote> {
    match engine.repo().remote_url(name) {
        Ok(Some(_)) => Ok(agency_engine::remote::SharedRemote {
            name: name.to_string(),
            driver: true,
            // The driver's remote is the user's, with the credentials git finds for it.
            access: agency_exec::RemoteAccess::default(),
        }),
        Ok(None) => Err(CommandError::input(format!(
            "--remote {name}: the repository has no git remote named {name}"
        ))
        .hint(format!(
            "`git remote add {name} URL` first, or name one `git remote` lists"
        ))),
        Err(err) => Err(CommandError::input(format!("--remote {name}: {err}"))),
    }
}

/// Starts a runner in the background for `run` and returns at once. The blackboard is named to it in
/// `AGENCY_DB`, not in its argv, where a connection string's password would show in `ps`.
fn detach(ws: &Workspace, run: agency_core::RunId, args: &Args) -> CommandResult {
    let exe = std::env::current_exe()?;
    let mut command = std::process::Command::new(exe);
    command
        .env("AGENCY_DB", ws.db.to_env_value())
        .arg("run")
        .arg("--resume")
        .arg(run.to_string());
    if let Some(script) = &args.script {
        command.arg("--script").arg(script);
    }
    if args.auto_approve {
        command.arg("--auto-approve");
    }
    if args.cassette.record {
        command.arg("--record");
    }
    if let Some(remote) = &args.remote {
        command.arg("--remote").arg(remote);
    }
    // Beside the SQLite file, or in .agency/ for PostgreSQL.
    let log_dir = match ws.db.sqlite().and_then(Path::parent) {
        Some(dir) => dir.to_path_buf(),
        None => ws.root.join(AGENCY_DIR),
    };
    let log = log_dir.join(format!("run-{}.log", run.short()));
    let file = std::fs::File::create(&log)?;
    let err = file.try_clone()?;
    use std::os::unix::process::CommandExt;
    command
        .stdin(std::process::Stdio::null())
        .stdout(file)
        .stderr(err)
        .process_group(0);
    let child = command.spawn()?;
    println!(
        "run {} runs in the background (pid {}, log {})",
        run.short(),
        child.id(),
        log.display()
    );
    println!("follow it with: agency watch {} --follow", run.short());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(tier: Tier, runtime: ConfiguredRuntime) -> RuntimeChoice {
        RuntimeChoice {
            tier,
            runtime,
            reason: "claude found at /usr/bin/claude".into(),
        }
    }

    #[test]
    fn recording_makes_auto_builtin_and_refuses_a_configured_external_runtime() {
        let mut team = TeamConfig::default();
        let mut choices = vec![
            choice(Tier::T3, ConfiguredRuntime::Builtin),
            choice(Tier::T4, ConfiguredRuntime::ClaudeCode),
        ];
        builtin_only(&team, &mut choices, "recorded").unwrap();
        assert_eq!(choices[1].runtime, ConfiguredRuntime::Builtin);
        assert!(
            choices[1]
                .reason
                .contains("only the built-in agent's model calls can be recorded")
        );

        team.tiers.t5.runtime = Some(ConfiguredRuntime::Codex);
        let mut choices = vec![choice(Tier::T5, ConfiguredRuntime::Codex)];
        let err = builtin_only(&team, &mut choices, "replayed")
            .unwrap_err()
            .to_string();
        assert!(err.contains("t5 (codex)"), "{err}");
        assert!(err.contains("cannot be replayed"), "{err}");
    }

    #[test]
    fn on_postgres_auto_becomes_builtin_and_a_configured_hook_runtime_is_refused() {
        let pg = BlackboardAt::Postgres("host=db user=u password=s3cret dbname=agency".into());
        let mut team = TeamConfig::default();
        assert_eq!(team.tiers.runtime(Tier::T4), ConfiguredRuntime::Auto);
        let mut choices = vec![
            choice(Tier::T3, ConfiguredRuntime::Builtin),
            choice(Tier::T4, ConfiguredRuntime::ClaudeCode),
        ];
        hook_free(&team, &mut choices, &pg).unwrap();
        assert_eq!(choices[1].runtime, ConfiguredRuntime::Builtin);
        assert_eq!(choices[1].reason, POSTGRES_AUTO_REASON);

        team.tiers.t5.runtime = Some(ConfiguredRuntime::ClaudeCode);
        let mut choices = vec![choice(Tier::T5, ConfiguredRuntime::ClaudeCode)];
        let err = hook_free(&team, &mut choices, &pg).unwrap_err().to_string();
        assert!(err.contains("t5 (claude-code)"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }
}
