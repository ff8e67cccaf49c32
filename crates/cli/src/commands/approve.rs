//! `agency approve <run>`: approves the run's pending gate by writing `gate_approved` to the blackboard —
//! the universal approval path; a live runner is poked through its gate service and sees it at once (on its
//! next poll when it cannot be reached).

use agency_core::gate::GateDecision;

use crate::commands::{Context, decider, gate_to_decide, resolve_run, store_error};
use crate::error::CommandResult;

/// `agency approve <run> [--note ...]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run: its short or full id, or any unique part at either end.
    pub run: String,
    /// A note written to the blackboard with the approval.
    #[arg(long)]
    pub note: Option<String>,
}

/// Runs `agency approve`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let store = ctx.open_store()?;
    let run = resolve_run(&*store, &args.run)?;
    let gate = gate_to_decide(&*store, run)?;
    let unconfined = agency_core::config::sandbox_off_in(&store.get_run(run).map_err(store_error)?.config);
    store
        .decide_gate(
            gate.id,
            GateDecision::Approve {
                by: decider(),
                note: args.note,
            },
        )
        .map_err(store_error)?;
    // A waiting runner sees it now rather than at its next poll.
    crate::gate_service::poke_workspace(ctx);
    println!("approved  gate {} of run {}", gate.kind, run.short());
    if unconfined {
        eprintln!("warning: {}", agency_core::config::SANDBOX_OFF_BANNER);
    }
    Ok(())
}
