//! `agency worker <run>`: runs agents for a run that another `agency run` drives on the same blackboard
//! (PostgreSQL, or SQLite on one machine). The worker claims the run's pending briefs while no gate holds it,
//! runs their agents with the providers and runtimes `agency run` would build, and records their outcomes;
//! the driver keeps the tiers, gates and merges. It stops when the run ends.
//!
//! Without `--repo`, a worker works in the repository it is started in: its agents' worktrees are made
//! there, and the driver merges their branches from there. With `--repo URL` (and a PostgreSQL `--db`) it
//! needs no disk in common with the driver: it keeps its own clone of the git remote the driver shares the
//! run through (`agency run --remote NAME`), fetches what each brief starts from, and pushes each slice
//! before reporting it ([`agency_engine::remote`], docs/operations.md).

use std::path::{Path, PathBuf};

use agency_core::NewEvent;
use agency_core::event::EventPayload;
use agency_core::event::payload::LogLine;
use agency_engine::remote::SharedRemote;
use agency_exec::{RemoteAccess, Repo, redact_url_credentials};
use agency_llm::CancelToken;
use agency_store::RunStatus;

use crate::commands::run::{Args as RunArgs, build_engine, stopped_or_failed};
use crate::commands::{Context, config, resolve_run, store_error};
use crate::error::{CommandError, CommandResult, ErrorKind};

/// `agency worker RUN [--concurrency N] [--script FILE] [--repo URL [--dir PATH]]`
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
    /// Work from a clone of this git remote (the one the driver shares the run through with `agency run
    /// --remote`) instead of the repository here; needs a PostgreSQL --db.
    #[arg(long, value_name = "URL")]
    pub repo: Option<String>,
    /// Where the clone of --repo is kept (default: the directory `git clone` would make here); made on
    /// first use, reused afterwards.
    #[arg(long, value_name = "PATH", requires = "repo")]
    pub dir: Option<PathBuf>,
}

/// Runs `agency worker`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let clone = match &args.repo {
        Some(url) => Some(remote_clone(ctx, url, args.dir.as_deref())?),
        None => None,
    };
    // In a clone, everything is read from there: team.yaml (unless --config names one), the repository.
    let ctx = &match &clone {
        Some((dir, _)) => Context {
            cwd: dir.clone(),
            overrides: ctx.overrides.clone(),
        },
        None => ctx.clone(),
    };
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
        remote: None,
        cassette: Default::default(),
    };
    let name = agency_engine::Role::Worker.name_here();
    let mut runner = build_engine(&ws, store.clone(), team, &run_args, Some(run), name.clone())?;
    if let Some((_, access)) = &clone {
        runner.engine = runner.engine.sharing_through(SharedRemote {
            name: CLONE_REMOTE.to_string(),
            driver: false,
            access: access.clone(),
        });
    }
    let runtimes = runner
        .runtimes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    let place = match &args.repo {
        Some(url) => format!(
            " from a clone of {} at {}",
            redact_url_credentials(url),
            ws.root.display()
        ),
        None => String::new(),
    };
    let payload = EventPayload::Log(LogLine {
        worker: Some(name.clone()),
        ..LogLine::new(
            "verbose",
            Some("WORKER"),
            format!("{name} works on this run ({runtimes}){place}"),
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

/// The name of the remote in a worker's clone.
const CLONE_REMOTE: &str = "origin";

/// The worker's clone of `url`: `dir` (or the directory `git clone` would make here) made the first time,
/// and on later starts checked to be a clone of the same URL; with the access its fetches and pushes need.
/// Credentials in the URL are used for each call but never written to the clone's `.git/config`, which the
/// agents working in its worktrees can read. Needs a PostgreSQL `--db`: a SQLite file is on one machine.
fn remote_clone(ctx: &Context, url: &str, dir: Option<&Path>) -> CommandResult<(PathBuf, RemoteAccess)> {
    let shown = redact_url_credentials(url);
    let (recorded, access) = RemoteAccess::for_url(url);
    let postgres = ctx
        .overrides
        .db
        .as_deref()
        .and_then(Path::to_str)
        .is_some_and(agency_store::is_postgres);
    if !postgres {
        return Err(CommandError::new(
            ErrorKind::Usage,
            "--repo needs the run's PostgreSQL blackboard: pass --db postgres://… (or set AGENCY_DB)",
        )
        .hint("a SQLite blackboard is a file on the driver's machine; workers elsewhere cannot share it"));
    }
    let dir = match dir {
        Some(dir) => ctx.cwd.join(dir),
        None => ctx.cwd.join(clone_name(url).ok_or_else(|| {
            CommandError::new(
                ErrorKind::Usage,
                format!("--repo {shown}: no directory name in the URL; pass --dir PATH"),
            )
        })?),
    };
    let options = agency_exec::GitOptions::default();
    if dir.join(".git").exists() {
        let repo = Repo::open(&dir, options).map_err(|e| CommandError::input(e.to_string()))?;
        let origin = repo
            .remote_url(CLONE_REMOTE)
            .map_err(|e| CommandError::input(e.to_string()))?;
        if origin.as_deref() != Some(recorded.as_str()) {
            return Err(CommandError::input(format!(
                "{} is a clone of {}, not of {shown}",
                dir.display(),
                origin
                    .as_deref()
                    .map_or("nothing (no origin remote)".into(), redact_url_credentials),
            ))
            .hint("pass another --dir, or the URL that clone was made from"));
        }
        return Ok((dir, access));
    }
    if dir.exists() && std::fs::read_dir(&dir).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(CommandError::input(format!(
            "--dir {}: the directory is not empty and holds no git clone",
            dir.display()
        )));
    }
    println!("cloning {shown} into {}", dir.display());
    Repo::clone_from(&recorded, &dir, options, &access)
        .map_err(|e| CommandError::input(format!("cloning {shown}: {e}")))?;
    Ok((dir, access))
}

/// The directory `git clone URL` would make: the URL's last path part without `.git`.
fn clone_name(url: &str) -> Option<String> {
    let last = url.trim_end_matches('/').rsplit(['/', ':']).next()?;
    let name = last.strip_suffix(".git").unwrap_or(last);
    (!name.is_empty() && name != "." && name != "..").then(|| name.to_string())
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

#[cfg(test)]
mod tests {
    use super::clone_name;

    #[test]
    fn a_clone_is_named_as_git_clone_would_name_it() {
        assert_eq!(
            clone_name("https://git.example/acme/widget.git").as_deref(),
            Some("widget")
        );
        assert_eq!(
            clone_name("git@github.com:acme/widget.git").as_deref(),
            Some("widget")
        );
        assert_eq!(clone_name("/srv/git/widget/").as_deref(), Some("widget"));
        assert_eq!(clone_name("https://git.example/").as_deref(), Some("git.example"));
        assert_eq!(clone_name("..").as_deref(), None);
    }
}
