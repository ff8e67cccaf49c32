//! `agency resume <run>`: releases a manual pause by approving the run's pending `pause` gate.

use agency_core::gate::{GateDecision, GateKind, GateStatus};

use crate::commands::{Context, decider, resolve_run};
use crate::error::{CommandError, CommandResult, ErrorKind};

/// `agency resume <run>`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run: its short or full id, or any unique part at either end.
    pub run: String,
}

/// Runs `agency resume`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let store = ctx.open_store()?;
    let run = resolve_run(&*store, &args.run)?;
    let pause = store
        .list_gates(run)?
        .into_iter()
        .find(|g| g.kind == GateKind::Pause && g.status == GateStatus::Pending)
        .ok_or_else(|| {
            CommandError::new(
                ErrorKind::NothingToDo,
                format!("run {} is not paused", run.short()),
            )
        })?;
    store.decide_gate(
        pause.id,
        GateDecision::Approve {
            by: decider(),
            note: None,
        },
    )?;
    // A waiting runner sees it now rather than at its next poll.
    crate::gate_service::poke_workspace(ctx);
    println!("resumed   run {}", run.short());
    Ok(())
}
