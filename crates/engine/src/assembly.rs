//! Engine assembly: from team.yaml, a blackboard and what a front end was asked for (a script, a cassette to
//! record or replay, `--auto-approve`) to an [`Engine`] ready to drive, with one provider and one runtime per
//! tier. `agency run`, `agency demo` and `agency worker` build their runner here; so can any other front end.
//! [`announce_runtimes`] writes to the run's log which runtime each tier got and why.
//!
//! Everything refused is refused here, before the run starts or anything is recorded: a sandbox that cannot
//! be set up, a personality pool that cannot be found, a dollar budget over an unpriced model, a runtime a
//! PostgreSQL blackboard or a cassette cannot serve. Each refusal is an [`AssemblyError`] whose message names
//! the file or key and whose [`AssemblyError::hint`] says what to do.
//!
//! The gate service (the agents' only way to the blackboard) belongs to the front end that serves it; it is
//! started through [`RunSetup`]'s caller-supplied closure, once everything before it is known to be sound.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agency_core::Tier;
use agency_core::config::{
    PersonalitiesConfig, RolloutMode, Runtime as ConfiguredRuntime, TeamConfig, UnpricedUnderUsd,
};
use agency_core::event::EventPayload;
use agency_core::event::payload::{LogLine, RuntimeChoiceNote};
use agency_core::{NewEvent, RunId};
use agency_exec::gate::GateIssuer;
use agency_exec::runtime::personality::{Personalities, PersonalityError};
use agency_exec::runtime::{
    CodexProvider, ModelSource, Runtime, RuntimeChoice, RuntimeSetup, TierModel, build as build_runtime,
    choose_for_run,
};
use agency_exec::{GitOptions, Repo, Sandboxing};
use agency_llm::{
    BudgetLedger, CancelToken, LlmError, Metered, Price, Provider, Recorder, Replayer, RetryPolicy,
    ScriptedProvider, UsageSink,
};
use agency_store::{Blackboard, StoreError};

use crate::budget::{BlackboardSink, ledger_from_events};
use crate::{Engine, EngineError, EngineOptions};

/// The runner's gate service as assembly needs it: it issues the agents' capabilities, and wakes the
/// engine when a human decision was written.
pub trait RunGate: GateIssuer + 'static {
    /// Notified when a human decision was written, so the engine looks at the blackboard at once.
    fn waker(&self) -> Arc<tokio::sync::Notify>;
}

/// What the gate service is started with: the run's blackboard, its SQLite file (none on PostgreSQL),
/// team.yaml when there is one, and the rollout mode this runner resolved.
#[derive(Debug, Clone)]
pub struct GateStart {
    /// The run's blackboard.
    pub store: Arc<dyn Blackboard>,
    /// Its SQLite file; `None` on PostgreSQL.
    pub sqlite: Option<PathBuf>,
    /// team.yaml, when there is one.
    pub config: Option<PathBuf>,
    /// The teachback rollout mode, from team.yaml and the runner's own environment.
    pub rollout: RolloutMode,
}

/// Where the blackboard is kept, as far as assembly cares.
#[derive(Debug, Clone)]
pub enum BlackboardKind {
    /// A SQLite file: hook-gated agents can read it.
    Sqlite(PathBuf),
    /// PostgreSQL, with how to name it in a message (its password hidden).
    Postgres(String),
}

impl BlackboardKind {
    fn sqlite(&self) -> Option<&Path> {
        match self {
            BlackboardKind::Sqlite(path) => Some(path),
            BlackboardKind::Postgres(_) => None,
        }
    }
}

/// What a front end asks for: the inputs of [`assemble`].
#[derive(Debug)]
pub struct RunSetup {
    /// The repository's top level.
    pub root: PathBuf,
    /// Its `.agency/` directory: worktrees, agent state, the gate service's socket.
    pub agency_dir: PathBuf,
    /// team.yaml's path, for messages.
    pub config_path: PathBuf,
    /// team.yaml, when it is a file.
    pub config_file: Option<PathBuf>,
    /// Where the blackboard is kept.
    pub blackboard: BlackboardKind,
    /// The blackboard.
    pub store: Arc<dyn Blackboard>,
    /// team.yaml as parsed.
    pub team: TeamConfig,
    /// The name this runner claims briefs under.
    pub worker: String,
    /// The run being resumed, whose recorded spending the budget ledger starts from.
    pub resuming: Option<RunId>,
    /// Answer every model call from this script (`--script`).
    pub script: Option<PathBuf>,
    /// Answer every model call from this cassette directory (`--replay`).
    pub replay: Option<PathBuf>,
    /// Record every model call in a cassette under this directory (`--record`).
    pub record: Option<PathBuf>,
    /// Approve every gate at once (`--auto-approve`); a replayed run approves as its recording did.
    pub auto_approve: bool,
    /// The `agency` binary whose `hook` subcommand gates Claude Code, Codex and pi.
    pub agency_binary: PathBuf,
}

/// A runner ready to drive: the engine, which runtime each tier's agents use and why, and what the front
/// end keeps alive beside it.
#[derive(Debug)]
pub struct Assembled<G> {
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
    pub gate: Arc<G>,
}

/// Why a runner could not be assembled. The message is the user's; [`AssemblyError::hint`] says what to do.
#[derive(Debug, thiserror::Error)]
pub enum AssemblyError {
    /// The repository cannot be opened.
    #[error("{0}")]
    Repo(#[source] agency_exec::GitError),
    /// The sandbox team.yaml asks for cannot be set up here.
    #[error("{0}")]
    Sandbox(#[source] agency_exec::SandboxError),
    /// A personality registry is configured without a `personalities.dir` to find it in.
    #[error(
        "{path}: personalities.registry names personalities but personalities.dir is not set, so none of them \
         can be found"
    )]
    PersonalitiesWithoutDir {
        /// team.yaml's path.
        path: String,
    },
    /// The personality pool cannot be loaded.
    #[error("{path}: {source}")]
    Personalities {
        /// team.yaml's path.
        path: String,
        /// What is wrong with it.
        source: PersonalityError,
    },
    /// A dollar budget over a model without a price.
    #[error("{path}: {source}")]
    Unpriced {
        /// team.yaml's path.
        path: String,
        /// Which limit and which model.
        source: UnpricedUnderUsd,
    },
    /// Tiers configured for agents whose calls cannot be recorded or replayed.
    #[error("tiers {tiers} run agents that call their model themselves, so their calls cannot be {what}")]
    NotBuiltin {
        /// The tiers, each with its runtime.
        tiers: String,
        /// `recorded` or `replayed`.
        what: &'static str,
    },
    /// Tiers configured for hook-gated agents on a PostgreSQL blackboard.
    #[error(
        "tiers {tiers} run agents gated by `agency hook`, which reads the blackboard only from a SQLite file; this \
         run's blackboard is PostgreSQL ({db})"
    )]
    HookGatedOnPostgres {
        /// The tiers, each with its runtime.
        tiers: String,
        /// The blackboard, its password hidden.
        db: String,
    },
    /// A tier's capability level has no model.
    #[error("tiers.{tier}: no model for its capability level{}", .level.as_ref().map(|l| format!(" ({l})")).unwrap_or_default())]
    NoModel {
        /// The tier.
        tier: Tier,
        /// Its capability level, when the message names it.
        level: Option<String>,
    },
    /// The cassette cannot be replayed or the script read.
    #[error("{0}")]
    Calls(#[source] LlmError),
    /// team.yaml's models cannot be set up (a key variable unset, ...).
    #[error("{0}")]
    Models(#[source] LlmError),
    /// `signoff.auditor_model` cannot be set up.
    #[error("signoff.auditor_model: {0}")]
    AuditorModel(#[source] LlmError),
    /// The teachback rollout mode is not one agency knows.
    #[error("{0}")]
    Rollout(#[source] agency_core::config::ConfigError),
    /// The agency binary cannot be found for the hook.
    #[error("cannot locate the agency binary for the hook: {0}")]
    AgencyBinary(#[source] std::io::Error),
    /// The gate service did not start.
    #[error("the gate service did not start: {0}")]
    GateService(String),
    /// The model-key relay did not start.
    #[error(
        "the model-key relay did not start, so no Claude Code or pi agent can be started without handing it the \
         key: {0}"
    )]
    Relay(#[source] std::io::Error),
    /// A tier was left without a provider (a bug).
    #[error("no provider")]
    NoProvider,
    /// A tier's runtime cannot be built.
    #[error("{0}")]
    Runtime(#[source] agency_exec::runtime::RuntimeError),
    /// The engine refused (its blackboard, its configuration).
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl AssemblyError {
    /// Whether the user's input (team.yaml, a flag, the repository) is at fault rather than the machine.
    pub fn is_input(&self) -> bool {
        !matches!(
            self,
            AssemblyError::AgencyBinary(_)
                | AssemblyError::GateService(_)
                | AssemblyError::Relay(_)
                | AssemblyError::NoProvider
                | AssemblyError::Engine(_)
        )
    }

    /// What to do about it, when there is something to say.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            AssemblyError::PersonalitiesWithoutDir { .. } => Some(
                "set personalities.dir to a checkout of agency-agents (a folder of division folders of .md \
                 personalities), or remove the registry to use agency's own personalities",
            ),
            AssemblyError::Personalities { source, .. } => Some(match source {
                PersonalityError::Read { .. } => {
                    "personalities.dir is relative to the repository's top level; clone agency-agents there or \
                     point dir at an existing checkout"
                }
                PersonalityError::Unknown(_) => {
                    "a slug is a personality file's name without `.md`; files without front matter (READMEs, \
                     playbooks) are not personalities"
                }
                _ => "fix the file named above",
            }),
            AssemblyError::Unpriced { .. } => Some(
                "a price is USD per million tokens, from the provider's price list; or drop the `usd:` limit and \
                 keep a `tokens:` one",
            ),
            AssemblyError::NotBuiltin { .. } => {
                Some("set `runtime: builtin` (or `auto`) for those tiers in team.yaml")
            }
            AssemblyError::HookGatedOnPostgres { .. } => Some(
                "set `runtime: builtin` for those tiers in team.yaml (the built-in agent is gated in-process and \
                 works on PostgreSQL), or run on the SQLite blackboard (drop --db / AGENCY_DB)",
            ),
            AssemblyError::Models(_) | AssemblyError::AuditorModel(_) => {
                Some("set the variable team.yaml names, or pass --script FILE")
            }
            _ => None,
        }
    }
}

/// Builds the runner: one provider and one runtime per tier, as team.yaml says (or the script, or the
/// cassette, for all), the gate service started by `start_gate` once everything before it is sound.
pub fn assemble<G: RunGate>(
    setup: RunSetup,
    start_gate: impl FnOnce(GateStart) -> Result<Arc<G>, String>,
) -> Result<Assembled<G>, AssemblyError> {
    let RunSetup {
        root,
        agency_dir,
        config_path,
        config_file,
        blackboard,
        store,
        team,
        worker,
        resuming,
        script,
        replay,
        record,
        auto_approve,
        agency_binary,
    } = setup;
    let repo = Repo::open(&root, GitOptions::default()).map_err(AssemblyError::Repo)?;
    sandbox_probe(&team)?;
    let personalities = personalities_ready(&team, &config_path.display().to_string(), &root)?;
    let limits = agency_llm::budget_limits(&team.budgets);
    let ledger = match resuming {
        Some(run) => ledger_from_events(store.as_ref(), run, limits)?,
        None => BudgetLedger::new(limits),
    };
    let ledger = Arc::new(Mutex::new(ledger));
    let sink: Arc<dyn UsageSink> = Arc::new(BlackboardSink::new(store.clone()));
    // Recorded and replayed calls are redacted alike: the provider keys team.yaml names, every
    // secret-looking variable of the runner's environment, token shapes.
    let redactor = agency_core::redact::Redactor::from_process_env(&provider_key_vars(&team));
    let replay = match &replay {
        Some(dir) => Some(Replayer::open(dir, &root, redactor.clone()).map_err(AssemblyError::Calls)?),
        None => None,
    };
    let recorder = record.map(|dir| Recorder::new(dir, redactor.clone()));
    let auto_approve = auto_approve || replay.as_ref().is_some_and(|r| r.manifest().auto_approve);
    let source = match (&script, &replay) {
        (None, None) => ModelSource::Live,
        _ => ModelSource::Scripted,
    };
    let mut choices = choose_for_run(&team.tiers, std::env::var_os("PATH").as_deref(), source);
    if let BlackboardKind::Postgres(db) = &blackboard {
        hook_free(&team, &mut choices, db)?;
    }
    if recorder.is_some() || replay.is_some() {
        let what = if replay.is_some() { "replayed" } else { "recorded" };
        builtin_only(&team, &mut choices, what)?;
    }
    // Before anything is called or recorded: a dollar budget over an unpriced model would not hold.
    usd_budgets_priced(&team, "team.yaml", |tier| {
        calls_configured_model(source, &choices, tier)
    })?;
    let providers: BTreeMap<Tier, Arc<dyn Provider>> = providers(&team, script.as_deref(), replay.as_ref())?
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
    let secrets = provider_keys(&team);
    // `signoff.auditor_model`: the auditor's own model, metered and recorded like the tiers'. A scripted or
    // replayed run answers the auditor from its script like every call (by role), so it has none.
    let auditor = match (&team.signoff.auditor_model, source, &replay) {
        (Some(binding), ModelSource::Live, None) => {
            let model = agency_llm::model_for_binding(
                &team,
                binding,
                &agency_llm::process_env,
                agency_llm::RetryPolicy::default(),
            )
            .map_err(AssemblyError::AuditorModel)?;
            let provider = match &recorder {
                Some(recorder) => recorder.wrap(model.provider),
                None => model.provider,
            };
            let metered: Arc<dyn Provider> = Arc::new(
                Metered::new(provider, sink.clone())
                    .with_price(model.price)
                    .with_ledger(ledger.clone()),
            );
            let runtime: Arc<dyn agency_exec::runtime::Runtime> = Arc::new(
                agency_exec::runtime::BuiltinRuntime::new(metered.clone())
                    .with_secrets(secrets.clone())
                    .with_max_tokens_ceiling(binding.max_tokens),
            );
            Some((runtime, metered))
        }
        _ => None,
    };
    // Resolved here, from team.yaml as the run read it and the runner's own environment, and handed to each
    // hook-gated agent in its environment: the hook must not take it from a file the agent could write.
    let rollout = team
        .effective_teachback_mode(std::env::var(&team.teachback.mode_env_var).ok().as_deref())
        .map_err(AssemblyError::Rollout)?;
    let sqlite = blackboard.sqlite().map(Path::to_path_buf);
    // The agents' only way to the blackboard (their sandbox does not show it), and how a human decision
    // wakes this runner.
    let gate = start_gate(GateStart {
        store: store.clone(),
        sqlite: sqlite.clone(),
        config: config_file.clone(),
        rollout,
    })
    .map_err(AssemblyError::GateService)?;
    // Claude Code and pi agents call their model through it and never hold the key: the agents' commands
    // share their sandbox and could read it from `/proc`. Started only when such an agent may run.
    let relay = if choices
        .iter()
        .any(|c| matches!(c.runtime, ConfiguredRuntime::ClaudeCode | ConfiguredRuntime::Pi))
    {
        Some(Arc::new(
            agency_relay::KeyRelay::start().map_err(AssemblyError::Relay)?,
        ))
    } else {
        None
    };
    let mut runtimes: BTreeMap<Tier, Arc<dyn Runtime>> = BTreeMap::new();
    for choice in &choices {
        let provider = providers
            .get(&choice.tier)
            .cloned()
            .ok_or(AssemblyError::NoProvider)?;
        let issuer: Arc<dyn GateIssuer> = gate.clone();
        let setup = RuntimeSetup {
            provider,
            agency: agency_binary.clone(),
            // The hook's blackboard. Only SQLite has one: no hook-gated runtime runs on PostgreSQL
            // (`hook_free`), so the empty path is never used.
            db: sqlite.clone().unwrap_or_default(),
            config: config_file.clone(),
            rollout,
            state_dir: agency_dir.join("agents"),
            command: team.tiers.get(choice.tier).command.clone(),
            secrets: secrets.clone(),
            gate: Some(issuer),
            relay: relay.clone(),
            codex_provider: codex_provider(),
            model: TierModel::of(&team, choice.tier),
            prices: agency_llm::price_table(&team),
        };
        let runtime = build_runtime(choice, &setup).map_err(AssemblyError::Runtime)?;
        runtimes.insert(choice.tier, runtime);
    }
    let gate_timeout = chrono::Duration::minutes(i64::from(team.visibility.gate_timeout_minutes));
    let options = EngineOptions {
        auto_approve,
        worker,
        worktrees: agency_dir.join("worktrees"),
        // The blackboard is out of every agent's sandbox wherever it is kept.
        hidden: sqlite
            .as_deref()
            .map(agency_exec::runtime::external::blackboard_files)
            .unwrap_or_default(),
        wake: Some(gate.waker()),
        ..EngineOptions::default()
    };
    let mut engine = Engine::new(store, team, repo, runtimes, providers, options)?
        .with_ledger(ledger)
        .with_personalities(personalities);
    if let Some((runtime, provider)) = auditor {
        engine = engine.with_auditor(runtime, provider);
    }
    let stop = replay.as_ref().map(|r| r.stop_token()).unwrap_or_default();
    Ok(Assembled {
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

/// Writes which runtime each tier uses and why to the run's log, each time a runner starts driving it (a
/// resumed run may run where `claude` is, or is not, installed): one `RUNTIMES` line, tiers that share a
/// runtime and reason grouped (`t1, t2, t3: builtin (configured); t4, t5: claude-code (claude found at
/// /usr/bin/claude)`), and every choice in the payload.
pub fn announce_runtimes(
    store: &dyn Blackboard,
    run: RunId,
    choices: &[RuntimeChoice],
) -> Result<(), StoreError> {
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
    store.append_event(NewEvent::typed(run, payload))?;
    Ok(())
}

/// Every run has agents that run commands (implementers), so a sandbox that cannot be set up refuses the
/// run before anything starts. Whether the sandbox is off is the front end's to say (`agency run` warns on
/// stderr; each agent's line in the run log says it too).
pub fn sandbox_probe(team: &TeamConfig) -> Result<Sandboxing, AssemblyError> {
    let sandboxing = agency_exec::sandbox::configured(&team.sandbox, &[], None);
    if let Sandboxing::On(policy) = &sandboxing {
        policy.probe().map_err(AssemblyError::Sandbox)?;
    }
    Ok(sandboxing)
}

/// Loads the talent pool team.yaml configures and checks every slug its registry names, so a missing
/// `personalities.dir` or a misspelled slug stops `config check` and `agency run` instead of passing in
/// silence. A registry changed from the default with no `dir` to look the slugs up in is refused too: it
/// would name personalities that cannot be found. `path` names team.yaml, `root` is the repository `dir`
/// is relative to.
pub fn personalities_ready(
    config: &TeamConfig,
    path: &str,
    root: &Path,
) -> Result<Personalities, AssemblyError> {
    let wanted = &config.personalities;
    if wanted.dir.is_none() && wanted.registry != PersonalitiesConfig::default().registry {
        return Err(AssemblyError::PersonalitiesWithoutDir { path: path.into() });
    }
    Personalities::from_config(wanted, root).map_err(|source| AssemblyError::Personalities {
        path: path.into(),
        source,
    })
}

/// A budget in dollars needs a price for every model whose calls it would meter, or it would never stop a
/// run: refused here (`agency run`, `agency config check`) instead of letting spending through. `calling`
/// says whether a tier's configured model is called at all. `path` names team.yaml in the message.
pub fn usd_budgets_priced(
    config: &TeamConfig,
    path: &str,
    calling: impl Fn(Tier) -> bool,
) -> Result<(), AssemblyError> {
    config
        .unpriced_under_usd_budget(calling)
        .map_err(|source| AssemblyError::Unpriced {
            path: path.into(),
            source,
        })
}

/// Only the built-in agent's calls go through agency's providers, so only they can be recorded or
/// answered from a cassette: `auto` becomes the built-in agent (said in the run log), and a tier
/// configured for an agent that calls its model itself is refused, naming it, before anything runs (a
/// replay would otherwise call a live model; a recording would miss its calls).
fn builtin_only(
    team: &TeamConfig,
    choices: &mut [RuntimeChoice],
    what: &'static str,
) -> Result<(), AssemblyError> {
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
    Err(AssemblyError::NotBuiltin {
        tiers: external.join(", "),
        what,
    })
}

/// The runtimes a run on a PostgreSQL blackboard may use. Claude Code and Codex agents are gated by
/// `agency hook`, which reads the blackboard from a SQLite file on every tool call (no connection pool, no
/// async runtime: a few milliseconds per call), so it cannot gate a run kept in PostgreSQL. `auto` becomes
/// the built-in agent there, with the reason in the run log; a tier configured for one of them is an error
/// naming the tiers and what to do, before anything is recorded. `db` names the blackboard, password hidden.
fn hook_free(team: &TeamConfig, choices: &mut [RuntimeChoice], db: &str) -> Result<(), AssemblyError> {
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
    Err(AssemblyError::HookGatedOnPostgres {
        tiers: gated.join(", "),
        db: db.to_string(),
    })
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

/// A provider and the price its calls are charged at, when it has one.
type PricedProvider = (Arc<dyn Provider>, Option<Price>);

/// Each tier's provider with its price from `models.prices`; a script's replies cost nothing, so they are
/// unpriced. A replayed call is priced as the tier's model is, so budgets hold as they did when recorded.
fn providers(
    team: &TeamConfig,
    script: Option<&Path>,
    replay: Option<&Arc<Replayer>>,
) -> Result<BTreeMap<Tier, PricedProvider>, AssemblyError> {
    let mut out: BTreeMap<Tier, PricedProvider> = BTreeMap::new();
    if let Some(replay) = replay {
        for tier in Tier::ALL {
            let level = team.tiers.capability(tier);
            let binding = team.models.binding(level).ok_or_else(|| AssemblyError::NoModel {
                tier,
                level: Some(level.to_string()),
            })?;
            let price = team.models.price(&binding.model).map(Price::from);
            out.insert(tier, (replay.provider(binding.model.clone()), price));
        }
        return Ok(out);
    }
    if let Some(path) = script {
        let scripted: Arc<dyn Provider> =
            Arc::new(ScriptedProvider::from_file(path).map_err(AssemblyError::Calls)?);
        for tier in Tier::ALL {
            out.insert(tier, (scripted.clone(), None));
        }
        return Ok(out);
    }
    let models = agency_llm::ModelSet::from_config(team, &agency_llm::process_env, RetryPolicy::default())
        .map_err(AssemblyError::Models)?;
    for tier in Tier::ALL {
        let model = models
            .for_tier(team, tier)
            .ok_or(AssemblyError::NoModel { tier, level: None })?;
        out.insert(tier, (model.provider.clone(), model.price));
    }
    Ok(out)
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
        let err = builtin_only(&team, &mut choices, "replayed").unwrap_err();
        assert!(err.is_input());
        let err = err.to_string();
        assert!(err.contains("t5 (codex)"), "{err}");
        assert!(err.contains("cannot be replayed"), "{err}");
    }

    #[test]
    fn on_postgres_auto_becomes_builtin_and_a_configured_hook_runtime_is_refused() {
        let mut team = TeamConfig::default();
        assert_eq!(team.tiers.runtime(Tier::T4), ConfiguredRuntime::Auto);
        let mut choices = vec![
            choice(Tier::T3, ConfiguredRuntime::Builtin),
            choice(Tier::T4, ConfiguredRuntime::ClaudeCode),
        ];
        hook_free(&team, &mut choices, "host=db user=u password=*** dbname=agency").unwrap();
        assert_eq!(choices[1].runtime, ConfiguredRuntime::Builtin);
        assert_eq!(choices[1].reason, POSTGRES_AUTO_REASON);

        team.tiers.t5.runtime = Some(ConfiguredRuntime::ClaudeCode);
        let mut choices = vec![choice(Tier::T5, ConfiguredRuntime::ClaudeCode)];
        let err = hook_free(&team, &mut choices, "host=db").unwrap_err();
        assert!(err.hint().is_some_and(|h| h.contains("runtime: builtin")));
        assert!(err.to_string().contains("t5 (claude-code)"), "{err}");
    }
}
