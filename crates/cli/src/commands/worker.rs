//! `agency worker <run>`: runs agents for a run that another `agency run` drives on the same blackboard
//! (PostgreSQL, or SQLite on one machine). The worker claims the run's pending briefs while no gate holds it,
//! runs their agents with the providers and runtimes `agency run` would build, and records their outcomes;
//! the driver keeps the tiers, gates and merges. It stops when the run ends.
//!
//! A worker works in the repository it is started in: its agents' worktrees are made there, and the
//! driver merges their branches from there, so on another machine the repository must be at the same path
//! on a shared filesystem (docs/operations.md).

use std::path::PathBuf;

use agency_core::NewEvent;
use agency_core::event::EventPayload;
use agency_core::event::payload::LogLine;
use agency_llm::CancelToken;
use agency_store::RunStatus;

use crate::commands::run::{Args as RunArgs, build_engine, stopped_or_failed};
use crate::commands::{Context, config, resolve_run, store_error};
use crate::error::{CommandError, CommandResult, ErrorKind};

/// `agency worker RUN [--concurrency N] [--script FILE]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run to work on: its short or full id, or any unique part at either end.
    pub run: String,
    /// At most this many agents at once (default: team.yaml's runner.concurrency).
    #[arg(long, value_name = "N")]
    pub concurrency: Option<u32>,
    /// Answer every model call from this script instead of a provider (offline, reproducible runs).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
}

/// Runs `agency worker`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let ws = ctx.workspace()?;
    let (_, mut team) = config::load(ctx)?;
    if let Some(concurrency) = args.concurrency {
        if concurrency == 0 {
            return Err(CommandError::new(
                ErrorKind::Usage,
                "--concurrency must be at least 1",
            ));
        }
        team.runner.concurrency = concurrency;
    }
    let store = ctx.open_store()?;
    let run = resolve_run(&*store, &args.run)?;
    let status = store.get_run(run).map_err(store_error)?.status;
    if status.is_terminal() {
        return finished(run, status);
    }
    let run_args = RunArgs {
        goal: None,
        goal_file: None,
        resume: Some(args.run.clone()),
        script: args.script,
        auto_approve: false,
        detach: false,
        verbose: false,
        cassette: Default::default(),
    };
    let name = agency_engine::Role::Worker.name_here();
    let runner = build_engine(&ws, store.clone(), team, &run_args, Some(run), name.clone())?;
    let runtimes = runner
        .runtimes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    let payload = EventPayload::Log(LogLine {
        worker: Some(name.clone()),
        ..LogLine::new(
            "verbose",
            Some("WORKER"),
            format!("{name} works on this run ({runtimes})"),
        )
    });
    store
        .append_event(NewEvent::typed(run, payload))
        .map_err(store_error)?;
    println!("{name} works on run {}; it stops when the run ends", run.short());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CommandError::internal(format!("cannot start the worker: {e}")))?;
    let cancel = CancelToken::new();
    let status = runtime
        .block_on(async {
            crate::interrupt::cancel_on_signal(cancel.clone())?;
            Ok::<_, CommandError>(runner.engine.work(run, &cancel).await)
        })?
        .map_err(|err| stopped_or_failed(err, run, store.as_ref()))?;
    finished(run, status)
}

/// Exit 0 when the run succeeded, as `agency run` does; the run's status otherwise.
fn finished(run: agency_core::RunId, status: RunStatus) -> CommandResult {
    if status == RunStatus::Succeeded {
        println!("run {} succeeded", run.short());
        return Ok(());
    }
    Err(CommandError::new(
        ErrorKind::RunFailed,
        format!("run {} ended {}", run.short(), status.as_str()),
    )
    .hint(format!("`agency inspect {}` shows where it stopped", run.short())))
}
