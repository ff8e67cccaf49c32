//! `agency pause <run>`: opens a manual `pause` gate; the runner holds at its next tier boundary until
//! `agency resume` releases it.

use agency_core::gate::{GateKind, GateStatus};
use agency_store::NewGate;

use crate::commands::{Context, decider, resolve_run};
use crate::error::{CommandError, CommandResult, ErrorKind};

/// `agency pause <run>`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run: its short or full id, or any unique part at either end.
    pub run: String,
}

/// Runs `agency pause`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let store = ctx.open_store()?;
    let run = resolve_run(&*store, &args.run)?;
    let status = store.get_run(run)?.status;
    if status.is_terminal() {
        return Err(CommandError::new(
            ErrorKind::NothingToDo,
            format!(
                "run {} has ended ({}); there is nothing to pause",
                run.short(),
                status.as_str()
            ),
        ));
    }
    let gates = store.list_gates(run)?;
    if gates
        .iter()
        .any(|g| g.kind == GateKind::Pause && g.status == GateStatus::Pending)
    {
        return Err(CommandError::new(
            ErrorKind::NothingToDo,
            format!("run {} is already paused", run.short()),
        )
        .hint(format!("`agency resume {}` releases it", run.short())));
    }
    let summary =
        serde_json::json!({ "requested_by": decider(), "message": "Paused at the next tier boundary" });
    store.open_gate(NewGate::new(run, GateKind::Pause, summary))?;
    // A waiting runner sees it now rather than at its next poll.
    crate::gate_service::poke_workspace(ctx);
    println!("paused    run {} (holds at its next tier boundary)", run.short());
    Ok(())
}
