//! `agency amendment`: path amendments (seed 001). An agent of a run proposes one for its own workstream
//! through the runner's gate service (`propose`; it never writes the blackboard itself); a human lists
//! them and approves or rejects each (`list`, `approve`, `reject`). What an approval may change is decided
//! in `agency_flow::amendments`, recorded by `agency_engine::amendments`.

use agency_core::Tier;
use agency_core::event::payload::PathChange;
use agency_engine::amendments::{self, Recorded};
use serde_json::json;

use crate::commands::{Context, decider, resolve_run};
use crate::error::{CommandError, CommandResult, ErrorKind};
use crate::hook::ENV_BRIEF;

/// `agency amendment <list|approve|reject|propose>`
#[derive(Debug, clap::Subcommand)]
pub enum AmendmentCommand {
    /// List a run's path amendments and their decisions.
    List(ListArgs),
    /// Approve one path amendment: the workstream's path changes (refused, saying why, if it cannot)
    Approve(DecideArgs),
    /// Reject one path amendment: the path stays.
    Reject(RejectArgs),
    /// Propose a different path for your workstream (an agent in a run, through the runner).
    Propose(ProposeArgs),
}

/// `agency amendment list <run> [--json]`
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The run: its short or full id, or any unique part at either end.
    pub run: String,
    /// One JSON object per amendment.
    #[arg(long)]
    pub json: bool,
}

/// `agency amendment approve <run> <number> [--note ...]`
#[derive(Debug, clap::Args)]
pub struct DecideArgs {
    /// The run.
    pub run: String,
    /// The amendment's number (`#12`: 12), as `list` and the gate show it.
    pub number: i64,
    /// A note recorded with the approval.
    #[arg(long)]
    pub note: Option<String>,
}

/// `agency amendment reject <run> <number> --reason ...`
#[derive(Debug, clap::Args)]
pub struct RejectArgs {
    /// The run.
    pub run: String,
    /// The amendment's number.
    pub number: i64,
    /// Why.
    #[arg(long)]
    pub reason: String,
}

/// `agency amendment propose --reason ... (--add-tiers t3 --insert-before t5 | --shallower-path ...)`
#[derive(Debug, clap::Args)]
pub struct ProposeArgs {
    /// Why the path should change.
    #[arg(long)]
    pub reason: String,
    /// Tiers to add, comma-separated (`t3`).
    #[arg(long, value_delimiter = ',', value_parser = parse_tier)]
    pub add_tiers: Vec<Tier>,
    /// The tier of the remaining path the added tiers go before (`t5`).
    #[arg(long, value_parser = parse_tier)]
    pub insert_before: Option<Tier>,
    /// A whole shallower path instead, comma-separated (`t4,t5`).
    #[arg(long, value_delimiter = ',', value_parser = parse_tier)]
    pub shallower_path: Vec<Tier>,
    /// Why the shallower path is enough.
    #[arg(long)]
    pub shallower_path_reason: Option<String>,
}

fn parse_tier(text: &str) -> Result<Tier, String> {
    Tier::ALL
        .into_iter()
        .find(|t| t.as_str() == text.trim())
        .ok_or_else(|| format!("expected a tier t1..t5, found {text:?}"))
}

/// Runs `agency amendment`.
pub fn run(ctx: &Context, command: AmendmentCommand) -> CommandResult {
    match command {
        AmendmentCommand::List(args) => list(ctx, args),
        AmendmentCommand::Approve(args) => decide(ctx, &args.run, args.number, true, args.note),
        AmendmentCommand::Reject(args) => decide(ctx, &args.run, args.number, false, Some(args.reason)),
        AmendmentCommand::Propose(args) => propose(args),
    }
}

fn list(ctx: &Context, args: ListArgs) -> CommandResult {
    let store = ctx.open_store()?;
    let run = resolve_run(&*store, &args.run)?;
    let all = amendments::recorded(&*store, run)?;
    if args.json {
        for r in &all {
            println!(
                "{}",
                json!({
                    "seq": r.seq,
                    "workstream": r.workstream(),
                    "proposed_by": r.proposal.proposed_by,
                    "reason": r.proposal.reason,
                    "amendment": r.proposal.amendment,
                    "decision": r.decision.as_ref().map(|d| json!({
                        "approved": d.approved, "by": d.by, "note": d.note,
                        "path_before": d.path_before, "path_after": d.path_after,
                    })),
                })
            );
        }
        return Ok(());
    }
    if all.is_empty() {
        println!("run {} has no path amendments", run.short());
    }
    for r in &all {
        println!("{}  {}", r.line(), status(r));
    }
    Ok(())
}

fn status(r: &Recorded) -> String {
    match &r.decision {
        None => "undecided".into(),
        Some(d) if d.approved => format!(
            "approved by {}: path {}",
            d.by,
            amendments::path_text(&d.path_after)
        ),
        Some(d) => format!(
            "rejected by {}: {}",
            d.by,
            d.note.as_deref().unwrap_or("no reason given")
        ),
    }
}

fn decide(ctx: &Context, typed: &str, number: i64, approve: bool, note: Option<String>) -> CommandResult {
    let store = ctx.open_store()?;
    let run = resolve_run(&*store, typed)?;
    let event = amendments::decide(&*store, run, number, approve, &decider(), note)
        .map_err(|e| CommandError::new(ErrorKind::Input, e))?;
    // A waiting runner sees it now rather than at its next poll.
    crate::gate_service::poke_workspace(ctx);
    match event.typed() {
        Ok(agency_core::event::EventPayload::PathAmendmentDecided(d)) if d.approved => println!(
            "approved  path amendment #{number} of run {}: {} now runs {}",
            run.short(),
            d.workstream,
            amendments::path_text(&d.path_after)
        ),
        _ => println!("rejected  path amendment #{number} of run {}", run.short()),
    }
    Ok(())
}

/// An agent's proposal goes through its runner's gate service, for its own brief: the blackboard is not
/// the agent's to write. Without a gate service there is no run to propose to, and the command says so.
fn propose(args: ProposeArgs) -> CommandResult {
    let env = crate::hook::HookEnv::from_process();
    let Some(gate) = env.gate else {
        return Err(CommandError::new(
            ErrorKind::Usage,
            "`agency amendment propose` is for an agent in a run: no runner's gate service is set for this \
             process (nothing was recorded)",
        )
        .hint("a human proposes by rejecting the gate with the reason, or re-plans the run"));
    };
    let brief = std::env::var(ENV_BRIEF)
        .ok()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| CommandError::new(ErrorKind::Usage, format!("which brief? {ENV_BRIEF} is not set")))?;
    let change = PathChange {
        workstream: String::new(),
        add_tiers: args.add_tiers,
        insert_before: args.insert_before,
        shallower_path: (!args.shallower_path.is_empty()).then_some(args.shallower_path),
        shallower_path_reason: args.shallower_path_reason,
    };
    let answer = crate::gate_service::request(
        &gate.socket,
        &crate::gate_service::Request::Amend {
            brief,
            token: gate.token.clone(),
            reason: args.reason,
            change,
        },
        std::time::Duration::from_secs(10),
    )
    .map_err(|problem| {
        CommandError::new(
            ErrorKind::Input,
            format!("the runner refused the path amendment: {problem}"),
        )
    })?;
    println!("{}", answer["message"].as_str().unwrap_or("recorded"));
    Ok(())
}
