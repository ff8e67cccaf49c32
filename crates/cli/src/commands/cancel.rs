//! `agency cancel <run> [--reason …]`: ends a run for good. The run is marked `cancelled` first; a live
//! runner sees that at its next turn, stops its agents (each in its own process group) and lets go of the
//! run. Once nobody drives it, what was left open — briefs still pending, running or verifying, gates still
//! waiting — is closed with the reason, so `agency runs`, `inspect` and the dashboard show an ended run and
//! `agency gc` collects its worktrees and branches.

use std::time::{Duration, Instant};

use agency_core::BriefStatus;
use agency_core::event::payload::{BriefStatusChange, LogLine};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::GateDecision;
use agency_store::{Blackboard, RunStatus, StoreError};

use crate::commands::{Context, decider, resolve_run, store_error};
use crate::error::{CommandError, CommandResult, ErrorKind};

/// `agency cancel <run> [--reason TEXT] [--wait SECONDS]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run: its short or full id, or any unique part at either end.
    pub run: String,
    /// Why, recorded with the cancellation.
    #[arg(long)]
    pub reason: Option<String>,
    /// How long to wait for a live runner to stop before giving up on closing its briefs.
    #[arg(long, default_value_t = 30)]
    pub wait: u64,
}

/// Runs `agency cancel`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let store = ctx.open_store()?;
    let run = resolve_run(&*store, &args.run)?;
    let status = store.get_run(run)?.status;
    if status.is_terminal() {
        return Err(CommandError::new(
            ErrorKind::NothingToDo,
            format!(
                "run {} has already ended ({}); there is nothing to cancel",
                run.short(),
                status.as_str()
            ),
        )
        .hint("`agency gc` collects the worktrees and branches of ended runs".to_string()));
    }
    let had_runner = agency_store::runner_attached(&*store, run) == Some(true);
    let by = decider();
    let reason = args.reason.unwrap_or_else(|| "cancelled by a human".into());
    store.append_event(NewEvent::typed(
        run,
        EventPayload::Log(LogLine {
            by: Some(by.clone()),
            ..LogLine::new(
                "normal",
                Some("CANCELLED"),
                format!("cancelled by {by}: {reason}"),
            )
        }),
    ))?;
    store.set_run_status(run, None, RunStatus::Cancelled)?;
    // A waiting runner sees it now rather than at its next poll.
    crate::gate_service::poke_workspace(ctx);
    // The runner stops at its next turn; its lease is free once it has stopped its agents.
    let deadline = Instant::now() + Duration::from_secs(args.wait);
    let lease = loop {
        match store.lock_driver(run, "agency cancel") {
            Ok(lease) => break Some(lease),
            Err(StoreError::Driven { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(StoreError::Driven { .. }) => break None,
            Err(other) => return Err(store_error(other)),
        }
    };
    let Some(_lease) = lease else {
        println!(
            "cancelled run {} — its runner has not stopped within {} s; it stops at its next turn, and \
             `agency cancel {}` again then closes what it left open",
            run.short(),
            args.wait,
            run.short()
        );
        return Ok(());
    };
    let closed = close_open_work(&*store, run, &reason)?;
    println!(
        "cancelled run {} ({}{}); `agency gc` collects its worktrees and branches",
        run.short(),
        if had_runner {
            "its runner stopped"
        } else {
            "no runner was attached"
        },
        if closed > 0 {
            format!(", {closed} open brief(s) and gate(s) closed")
        } else {
            String::new()
        }
    );
    Ok(())
}

/// Closes what nobody will finish now: briefs still pending, running or verifying are cancelled, gates
/// still waiting are rejected, each with `reason`. Returns how many were closed.
fn close_open_work(
    store: &dyn Blackboard,
    run: agency_core::RunId,
    reason: &str,
) -> Result<usize, StoreError> {
    let mut closed = 0;
    for status in [BriefStatus::Pending, BriefStatus::Running, BriefStatus::Verifying] {
        for brief in store.list_briefs_by_status(run, status)? {
            let event =
                NewEvent::brief_moved(&brief, BriefStatus::Cancelled, BriefStatusChange::because(reason));
            match store.update_brief_status(brief.id, status, BriefStatus::Cancelled, event) {
                Ok(_) => closed += 1,
                // It moved meanwhile (a worker finishing): it is no longer open as it was.
                Err(StoreError::Conflict { .. }) => {}
                Err(other) => return Err(other),
            }
        }
    }
    for gate in store.pending_gates(Some(run))? {
        let decision = GateDecision::Reject {
            by: decider(),
            reason: format!("the run was cancelled: {reason}"),
        };
        store.decide_gate(gate.id, decision)?;
        closed += 1;
    }
    Ok(closed)
}
