//! `agency run "goal"`: runs the tiered pipeline on this repository in the foreground with the live log, or
//! in the background with `--detach`; `--resume <run>` continues a run from the blackboard after its runner
//! stopped (even killed), spawning nothing twice. `--record` writes every model call of the run to a
//! cassette in `.agency/cassettes/<run>/`; `--replay <run>` runs it again offline from that cassette and stops
//! at the first request that differs (docs/replay.md).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agency_core::config::TeamConfig;
use agency_engine::assembly::{self, Assembled, AssemblyError, BlackboardKind, RunGate, RunSetup, assemble};
use agency_engine::{DriveOutcome, Role};
use agency_exec::{GitOptions, Repo, Sandboxing};
use agency_llm::cassette::{self, Manifest};
use agency_llm::{Recorder, Replayer};
use agency_store::{Blackboard, RunStatus, StoreError};

use crate::commands::{Context, resolve_run, store_error};
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
    let (_, team) = ctx.team_config()?;
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
            let run = runner.engine.start(&goal)?;
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
    let goal = store.get_run(run)?.goal;
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

/// A runner ready to drive: the engine, which runtime each tier's agents use and why, and the gate service
/// kept alive beside it ([`agency_engine::assembly`] builds it).
pub type Runner = Assembled<GateService>;

impl RunGate for GateService {
    fn waker(&self) -> Arc<tokio::sync::Notify> {
        GateService::waker(self)
    }
}

/// Builds the runner for this workspace as `args` ask ([`agency_engine::assembly::assemble`]), named
/// `worker` in claims; the gate service is started in `.agency/`.
pub fn build_engine(
    ws: &Workspace,
    store: Arc<dyn Blackboard>,
    team: TeamConfig,
    args: &Args,
    resuming: Option<agency_core::RunId>,
    worker: String,
) -> CommandResult<Runner> {
    let sandbox_off = matches!(
        agency_exec::sandbox::configured(&team.sandbox, &[], None),
        Sandboxing::Off
    );
    let replay = match &args.cassette.replay {
        Some(which) => Some(cassette_dir(ws, which)?),
        None => None,
    };
    let agency_binary = std::env::current_exe().map_err(AssemblyError::AgencyBinary)?;
    let agency_dir = ws.root.join(AGENCY_DIR);
    let socket_dir = agency_dir.join(crate::gate_service::SOCKET_DIR);
    let setup = RunSetup {
        root: ws.root.clone(),
        agency_dir,
        config_path: ws.config.clone(),
        config_file: ws.config.is_file().then(|| ws.config.clone()),
        blackboard: match ws.db.sqlite() {
            Some(path) => BlackboardKind::Sqlite(path.to_path_buf()),
            None => BlackboardKind::Postgres(ws.db.to_string()),
        },
        store,
        team,
        worker,
        resuming,
        script: args.script.clone(),
        replay,
        record: args.cassette.record.then(|| cassettes_of(ws)),
        auto_approve: args.auto_approve,
        agency_binary,
    };
    let runner = assemble(setup, |start| {
        GateService::start(
            &socket_dir,
            GateSetup {
                store: start.store,
                db: start.sqlite,
                config: start.config,
                rollout: start.rollout,
            },
        )
    })?;
    if sandbox_off {
        warn_sandbox_off();
    }
    Ok(runner)
}

/// Every run has agents that run commands (implementers), so a sandbox that cannot be set up refuses the
/// run here, before anything starts, with the reason and the way out; `sandbox.mode: off` is said on
/// stderr (and, per agent, in the run's log).
pub(crate) fn sandbox_ready(team: &TeamConfig) -> CommandResult {
    if let Sandboxing::Off = assembly::sandbox_probe(team)? {
        warn_sandbox_off();
    }
    Ok(())
}

fn warn_sandbox_off() {
    eprintln!(
        "warning: SANDBOX OFF (team.yaml `sandbox.mode: off`): agents run unconfined; they can read the \
         blackboard and the runner's environment and write wherever the runner can"
    );
}

/// Maps a runner error to the CLI's.
pub fn engine_error(err: agency_engine::EngineError) -> CommandError {
    err.into()
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
    assembly::announce_runtimes(engine.store().as_ref(), run, &runner.runtimes)?;
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
