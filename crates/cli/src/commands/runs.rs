//! `agency runs`: the runs on this blackboard, newest first, with the short ids other commands accept.

use crate::commands::Context;
use crate::commands::attached::{resume_command, run_kind, status_text};
use crate::error::CommandResult;
use agency_store::runner_attached;

/// `agency runs [--json]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also list the records of goal sign-offs and of Claude Code, Codex and pi sessions.
    #[arg(long)]
    pub all: bool,
}

/// Runs `agency runs`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let store = ctx.open_store()?;
    let all_runs = store.list_runs()?;
    let records = all_runs.iter().filter(|r| run_kind(r) != "team").count();
    let runs: Vec<_> = all_runs
        .into_iter()
        .filter(|r| args.all || run_kind(r) == "team")
        .collect();
    if args.json {
        let listed: Vec<serde_json::Value> = runs
            .iter()
            .map(|run| {
                let mut value = serde_json::to_value(run).unwrap_or_default();
                value["kind"] = serde_json::json!(run_kind(run));
                if run_kind(run) == "team" && !run.status.is_terminal() {
                    value["runner_attached"] = serde_json::json!(runner_attached(&*store, run.id));
                }
                value
            })
            .collect();
        let text = serde_json::to_string_pretty(&listed)?;
        println!("{text}");
        return Ok(());
    }
    if runs.is_empty() {
        println!("no runs yet; start one with `agency run \"<goal>\"`");
    } else {
        println!(
            "{:<8}  {:<8}  {:<28}  {:<16}  GOAL",
            "RUN", "KIND", "STATUS", "CREATED"
        );
    }
    let mut unattached = Vec::new();
    for run in &runs {
        let status = status_text(&*store, run);
        if status.ends_with("(no runner attached)") {
            unattached.push(run.id);
        }
        println!(
            "{:<8}  {:<8}  {:<28}  {:<16}  {}",
            run.id.short(),
            run_kind(run),
            status,
            run.created_at.format("%Y-%m-%d %H:%M"),
            first_line(&run.goal, 60)
        );
    }
    for run in unattached {
        println!(
            "run {} has no runner: `{}` resumes it, `agency cancel {}` ends it",
            run.short(),
            resume_command(&*store, run),
            run.short()
        );
    }
    if !args.all && records > 0 {
        println!("({records} goal and session record(s) not shown; `agency runs --all` lists them)");
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
