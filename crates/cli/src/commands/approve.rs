//! `agency approve <run>`: approves the run's pending gate by writing `gate_approved` to the blackboard —
//! the universal approval path; a live runner is poked through its gate service and sees it at once (on its
//! next poll when it cannot be reached).

use agency_core::GateId;
use agency_core::RunId;
use agency_core::gate::{Gate, GateDecision};
use agency_store::Blackboard;

use crate::commands::{Context, decider, gate_to_decide, resolve_run};
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
    let unconfined = agency_core::config::sandbox_off_in(&store.get_run(run)?.config);
    let gate = crate::commands::gate_to_decide(&*store, run)?;
    println!(
        "{}",
        approve_pending(ctx, &*store, run, Some(gate.id), args.note)?
    );
    undecided_amendments(&gate);
    // Said where the human decides: nothing confined the agents whose work this gate lets through.
    if unconfined {
        eprintln!("warning: {}", agency_core::config::SANDBOX_OFF_BANNER);
    }
    Ok(())
}

/// Approves `run`'s pending gate, signed by [`decider`], and says so in one line: what `agency approve`
/// and the terminal `inspect` both call. `shown` is the gate the human was shown, when there was one: if
/// another gate waits by now, nothing is decided and the error says so.
pub fn approve_pending(
    ctx: &Context,
    store: &dyn Blackboard,
    run: RunId,
    shown: Option<GateId>,
    note: Option<String>,
) -> CommandResult<String> {
    let gate = gate_to_decide(store, run)?;
    check_shown(&gate, shown)?;
    store.decide_gate(gate.id, GateDecision::Approve { by: decider(), note })?;
    // A waiting runner sees it now rather than at its next poll.
    crate::gate_service::poke_workspace(ctx);
    Ok(format!("approved  gate {} of run {}", gate.kind, run.short()))
}

/// The path amendments `gate` listed, said after its decision: deciding the gate does not decide them,
/// each is approved or rejected on its own.
pub(crate) fn undecided_amendments(gate: &Gate) {
    let Some(listed) = gate.summary.get("amendments").and_then(|a| a.as_array()) else {
        return;
    };
    for amendment in listed {
        let seq = amendment.get("seq").and_then(|s| s.as_i64()).unwrap_or_default();
        eprintln!(
            "undecided path amendment {}: `agency amendment approve {} {seq}` or `agency amendment reject {} {seq} \
             --reason ...`",
            amendment.get("line").and_then(|l| l.as_str()).unwrap_or_default(),
            gate.run.short(),
            gate.run.short()
        );
    }
}

/// Refuses to decide `gate` when the human was shown another one.
pub(crate) fn check_shown(gate: &Gate, shown: Option<GateId>) -> CommandResult {
    match shown {
        Some(id) if id != gate.id => Err(crate::error::CommandError::new(
            crate::error::ErrorKind::NothingToDo,
            format!(
                "the gate shown was decided; gate {} of run {} waits now: look at it first",
                gate.kind,
                gate.run.short()
            ),
        )),
        _ => Ok(()),
    }
}
