//! `agency ack <run> --note … --resume | --cancel`: a human's acknowledgement of an algedonic HALT. A HALT
//! (security, data, ethics) stops all work of its run on a `halt` gate; this decides that gate — resume
//! (the raising brief gets a fresh attempt with the note; the stopped agents start again) or cancel (the run
//! ends, cancelled). The decision is signed with the process's uid ([`decider`]), as `agency approve` is.

use agency_core::gate::{GateDecision, GateKind, GateStatus};

use crate::commands::{Context, decider, resolve_run};
use crate::error::{CommandError, CommandResult, ErrorKind};

/// `agency ack <run> --note … (--resume | --cancel)`
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("decision").required(true).args(["resume", "cancel"])))]
pub struct Args {
    /// The run: its short or full id, or any unique part at either end.
    pub run: String,
    /// What you checked and decided; recorded on the gate, and given to the brief that raised the HALT
    /// when the run resumes.
    #[arg(long)]
    pub note: String,
    /// The run goes on: the brief that raised the HALT gets a fresh attempt with your note.
    #[arg(long)]
    pub resume: bool,
    /// The run ends, cancelled.
    #[arg(long)]
    pub cancel: bool,
}

/// Runs `agency ack`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    if args.note.trim().is_empty() {
        return Err(CommandError::input(
            "--note must say what you checked: it is recorded on the halt gate and given to the agent when the run resumes",
        ));
    }
    let store = ctx.open_store()?;
    let run = resolve_run(&*store, &args.run)?;
    let halt = store
        .list_gates(run)?
        .into_iter()
        .find(|g| g.kind == GateKind::Halt && g.status == GateStatus::Pending)
        .ok_or_else(|| {
            CommandError::new(
                ErrorKind::NothingToDo,
                format!("run {} has no HALT waiting for an acknowledgement", run.short()),
            )
            .hint(format!(
                "`agency inspect {}` shows what the run waits on; other gates are decided with `agency approve` or `agency reject`",
                run.short()
            ))
        })?;
    let by = decider();
    let decision = if args.resume {
        GateDecision::Approve {
            by,
            note: Some(args.note),
        }
    } else {
        GateDecision::Reject {
            by,
            reason: args.note,
        }
    };
    store.decide_gate(halt.id, decision)?;
    // A waiting runner sees it now rather than at its next poll.
    crate::gate_service::poke_workspace(ctx);
    let what = halt.summary["message"].as_str().unwrap_or("the HALT");
    if args.resume {
        println!("resumed   run {} after {what}", run.short());
    } else {
        println!("cancelled run {} after {what}", run.short());
    }
    Ok(())
}
