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

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agency_core::event::EventPayload;
use agency_core::event::payload::LogLine;
use agency_core::placement::Offer;
use agency_core::{NewEvent, Tier};
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
    /// Take only briefs of these tiers (`t4,t5`; repeatable). Default: every tier.
    #[arg(long, value_name = "TIERS", value_delimiter = ',')]
    pub tiers: Vec<String>,
    /// Take only briefs of tiers whose runtime here (team.yaml `tiers.tN.runtime`, as `agency run` would
    /// choose it) is one of these (`claude-code,codex`; repeatable). Default: any.
    #[arg(long, value_name = "RUNTIMES", value_delimiter = ',')]
    pub runtime: Vec<String>,
    /// Labels this worker offers (`gpu,big-tests`; repeatable): it takes briefs of workstreams that need
    /// them (team.yaml `runner.workstream_labels`) as well as those that need none.
    #[arg(long, value_name = "LABELS", value_delimiter = ',')]
    pub label: Vec<String>,
}

/// What `--tiers`, `--runtime` and `--label` ask for, read before anything else is done: bad names are
/// usage errors at once.
struct OfferFlags {
    /// `--tiers`, if given.
    tiers: Option<BTreeSet<Tier>>,
    /// `--runtime`, if given.
    runtimes: Option<BTreeSet<&'static str>>,
    /// `--label`.
    labels: BTreeSet<String>,
}

impl OfferFlags {
    fn read(args: &Args) -> CommandResult<OfferFlags> {
        let mut tiers = None;
        if !args.tiers.is_empty() {
            let mut named = BTreeSet::new();
            for name in &args.tiers {
                let tier = name.trim().parse::<Tier>().map_err(|_| {
                    CommandError::new(
                        ErrorKind::Usage,
                        format!("--tiers {name:?}: expected tiers t1 to t5, comma-separated"),
                    )
                })?;
                named.insert(tier);
            }
            tiers = Some(named);
        }
        let mut runtimes = None;
        if !args.runtime.is_empty() {
            let mut named = BTreeSet::new();
            for name in &args.runtime {
                let known = KNOWN_RUNTIMES
                    .iter()
                    .find(|known| **known == name.trim())
                    .ok_or_else(|| {
                        CommandError::new(
                            ErrorKind::Usage,
                            format!(
                                "--runtime {name:?}: expected one of {}",
                                KNOWN_RUNTIMES.join(", ")
                            ),
                        )
                    })?;
                named.insert(*known);
            }
            runtimes = Some(named);
        }
        let mut labels = BTreeSet::new();
        for label in &args.label {
            let label = label.trim();
            if !agency_core::placement::valid_label(label) {
                return Err(CommandError::new(
                    ErrorKind::Usage,
                    format!("--label {label:?}: expected 1 to 64 letters, digits, `-`, `_` or `.`"),
                ));
            }
            labels.insert(label.to_string());
        }
        Ok(OfferFlags {
            tiers,
            runtimes,
            labels,
        })
    }

    /// The offer, given the runtime chosen for each tier here: a tier is offered when `--tiers` names it
    /// (or is absent) and its runtime is one `--runtime` names (or that is absent). A usage error when
    /// that leaves no tier.
    fn offer(self, choices: &[agency_exec::runtime::RuntimeChoice]) -> CommandResult<Offer> {
        let mut tiers = self.tiers;
        if let Some(runtimes) = &self.runtimes {
            let running: BTreeSet<Tier> = choices
                .iter()
                .filter(|choice| runtimes.contains(choice.runtime.as_str()))
                .map(|choice| choice.tier)
                .collect();
            tiers = Some(match tiers {
                Some(named) => named.intersection(&running).copied().collect(),
                None => running,
            });
        }
        if tiers.as_ref().is_some_and(BTreeSet::is_empty) {
            let here = choices
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            return Err(CommandError::new(
                ErrorKind::Usage,
                "--tiers and --runtime leave this worker no tier to take",
            )
            .hint(format!("the runtimes here: {here}")));
        }
        Ok(Offer {
            tiers,
            labels: self.labels,
        })
    }
}

/// The runtimes `--runtime` may name.
const KNOWN_RUNTIMES: [&str; 5] = ["builtin", "claude-code", "codex", "pi", "command"];

/// Runs `agency worker`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let offer_flags = OfferFlags::read(&args)?;
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
        script: args.script.clone(),
        auto_approve: false,
        detach: false,
        verbose: false,
        remote: None,
        cassette: Default::default(),
    };
    let name = agency_engine::Role::Worker.name_here();
    let mut runner = build_engine(&ws, store.clone(), team, &run_args, Some(run), name.clone())?;
    let offer = offer_flags.offer(&runner.runtimes)?;
    runner.engine = runner.engine.offering(offer.clone());
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
            format!("{name} works on this run ({runtimes}){place}; it offers {offer}"),
        )
    });
    store
        .append_event(NewEvent::typed(run, payload))
        .map_err(store_error)?;
    println!(
        "{name} works on run {}; it offers {offer}; it stops when the run ends",
        run.short()
    );
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
