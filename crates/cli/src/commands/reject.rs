//! `agency reject <run> --reason ...`: rejects the run's pending gate. What follows depends on the gate
//! ([`agency_core::gate::GateKind::on_reject`]): a tier's gate retries its brief with the reason, a budget or escalation gate
//! stops the run; the command says which.

use agency_core::GateId;
use agency_core::RunId;
use agency_core::gate::GateDecision;
use agency_store::Blackboard;

use crate::commands::{Context, decider, gate_to_decide, resolve_run};
use crate::error::{CommandError, CommandResult};

/// `agency reject <run> --reason ...`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run: its short or full id, or any unique part at either end.
    pub run: String,
    /// Why: given to the tier when its brief is retried, and recorded on the gate.
    #[arg(long)]
    pub reason: String,
}

/// Runs `agency reject`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    if args.reason.trim().is_empty() {
        return Err(empty_reason());
    }
    let store = ctx.open_store()?;
    let run = resolve_run(&*store, &args.run)?;
    let gate = crate::commands::gate_to_decide(&*store, run)?;
    println!(
        "{}",
        reject_pending(ctx, &*store, run, Some(gate.id), args.reason)?
    );
    crate::commands::approve::undecided_amendments(&gate);
    Ok(())
}

fn empty_reason() -> CommandError {
    CommandError::input(
        "--reason must say why; it is recorded on the gate and given to the tier when its brief is retried",
    )
}

/// Rejects `run`'s pending gate with `reason`, signed by [`decider`], and says in one line what follows:
/// what `agency reject` and the terminal `inspect` both call. `shown` is the gate the human was shown, when
/// there was one: if another gate waits by now, nothing is decided.
pub fn reject_pending(
    ctx: &Context,
    store: &dyn Blackboard,
    run: RunId,
    shown: Option<GateId>,
    reason: String,
) -> CommandResult<String> {
    if reason.trim().is_empty() {
        return Err(empty_reason());
    }
    let gate = gate_to_decide(store, run)?;
    crate::commands::approve::check_shown(&gate, shown)?;
    store.decide_gate(
        gate.id,
        GateDecision::Reject {
            by: decider(),
            reason,
        },
    )?;
    // A waiting runner sees it now rather than at its next poll.
    crate::gate_service::poke_workspace(ctx);
    Ok(format!(
        "rejected  gate {} of run {}: {}",
        gate.kind,
        run.short(),
        gate.kind.on_reject()
    ))
}
