//! `agency watch <run>`: the run's live log. Without `--follow` it prints what has happened and exits; with
//! it, it keeps polling the blackboard (any process may be writing) until the run ends.

use std::time::Duration;

use agency_core::config::LogLevel;

use crate::commands::{Context, resolve_run, store_error};
use crate::error::CommandResult;
use crate::render::follow::{FollowError, Follower};
use crate::render::log::Level;

/// How often `--follow` polls the blackboard.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// `agency watch <run> [--verbose] [--follow]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run: its short or full id, or any unique part at either end.
    pub run: String,
    /// Also show per-agent lines (spawns, completions, teachbacks, usage).
    #[arg(long, short)]
    pub verbose: bool,
    /// Keep following new events until the run ends.
    #[arg(long, short)]
    pub follow: bool,
}

/// Runs `agency watch`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let store = ctx.open_store()?;
    let run = resolve_run(&*store, &args.run)?;
    // team.yaml's `visibility.log_level` is the default; `--verbose` adds the per-agent lines either way.
    // A team.yaml that cannot be read does not stop anyone reading a log: said, and the normal level used.
    let configured = match ctx.team_config() {
        Ok((_, team)) => team.visibility.log_level,
        Err(err) => {
            eprintln!("agency: {err}; the log is shown at the normal level");
            LogLevel::Normal
        }
    };
    let level = log_level(args.verbose, configured);
    // Without --follow the log is over once it has been read; with it, once the run has ended.
    let finished = || {
        if args.follow {
            Ok(store.get_run(run)?.status.is_terminal())
        } else {
            Ok(true)
        }
    };
    Follower::new(run, level, std::io::stdout().lock())
        .follow(&*store, POLL_INTERVAL, finished)
        .map_err(|err| match err {
            FollowError::Store(e) => store_error(e),
            FollowError::Write(e) => e.into(),
        })
}

/// The live log's level: verbose when `--verbose` is given or team.yaml's `visibility.log_level` says so.
pub(crate) fn log_level(verbose_flag: bool, configured: LogLevel) -> Level {
    if verbose_flag || configured == LogLevel::Verbose {
        Level::Verbose
    } else {
        Level::Normal
    }
}
