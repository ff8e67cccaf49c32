//! `agency watch <run>`: the run's live log. Without `--follow` it prints what has happened and exits; with
//! it, it keeps polling the blackboard (any process may be writing) until the run ends.

use std::io::Write;
use std::thread;
use std::time::Duration;

use crate::commands::{Context, resolve_run, store_error};
use crate::error::CommandResult;
use crate::render::log::{Level, render_event};

/// How often `--follow` polls the blackboard.
const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// Events read per page, so a long run is streamed rather than loaded whole.
const PAGE: usize = 500;

/// `agency watch <run> [--verbose] [--follow]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run: its full id or any unique prefix.
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
    let level = if args.verbose {
        Level::Verbose
    } else {
        Level::Normal
    };
    let mut after = 0;
    let mut out = std::io::stdout().lock();
    loop {
        let events = store.events_after(Some(run), after, PAGE).map_err(store_error)?;
        for event in &events {
            after = event.seq;
            if let Some(line) = render_event(event, level) {
                writeln!(out, "{line}")?;
            }
        }
        if events.len() == PAGE {
            continue;
        }
        if !args.follow || store.get_run(run).map_err(store_error)?.status.is_terminal() {
            // One more read closes the window between the last page and the status check.
            if args.follow {
                for event in store.events_after(Some(run), after, PAGE).map_err(store_error)? {
                    if let Some(line) = render_event(&event, level) {
                        writeln!(out, "{line}")?;
                    }
                }
            }
            return Ok(());
        }
        out.flush()?;
        thread::sleep(POLL_INTERVAL);
    }
}
