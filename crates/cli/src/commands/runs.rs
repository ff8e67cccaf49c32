//! `agency runs`: the runs on this blackboard, newest first, with the short ids other commands accept.

use crate::commands::{Context, store_error};
use crate::error::{CommandError, CommandResult};

/// `agency runs [--json]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `agency runs`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let store = ctx.open_store()?;
    let runs = store.list_runs().map_err(store_error)?;
    if args.json {
        let text = serde_json::to_string_pretty(&runs).map_err(|e| CommandError::internal(e.to_string()))?;
        println!("{text}");
        return Ok(());
    }
    if runs.is_empty() {
        println!("no runs yet; start one with `agency run \"<goal>\"`");
        return Ok(());
    }
    println!("{:<8}  {:<14}  {:<16}  GOAL", "RUN", "STATUS", "CREATED");
    for run in runs {
        println!(
            "{:<8}  {:<14}  {:<16}  {}",
            run.id.short(),
            run.status.as_str(),
            run.created_at.format("%Y-%m-%d %H:%M"),
            first_line(&run.goal, 60)
        );
    }
    Ok(())
}

/// The goal's first line, cut to `max` characters.
fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max - 1).collect::<String>())
    } else {
        line.to_string()
    }
}
