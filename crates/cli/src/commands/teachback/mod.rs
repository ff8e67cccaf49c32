//! `agency teachback ...`: the teachback state machine from the command line. An agent submits its
//! restatement; a reviewer (human or lead) approves it or asks for corrections; `show` and `list` read the
//! state; `start` opens a brief for a plain Claude Code session and binds the session to it; `report`
//! counts the gate's denials for calibrating a rollout; `check` raises the stall ALERTs that are due.
//!
//! Every change goes through [`agency_core::teachback::transition`] and is written with its event in one
//! compare-and-set, so a concurrent change is refused rather than overwritten.

mod read;
mod review;
mod start;

use agency_core::BriefId;
use agency_store::Blackboard;
use clap::Subcommand;

use crate::commands::{Context, store_error};
use crate::error::{CommandError, CommandResult, ErrorKind};
use crate::hook::ENV_BRIEF;

/// `agency teachback ...`
#[derive(Debug, Subcommand)]
pub enum TeachbackCommand {
    /// Send your teachback (the agent's side): moves the brief to under_review (active when advisory).
    Submit(review::SubmitArgs),
    /// Approve a teachback under review: the agent may work.
    Approve(review::ApproveArgs),
    /// Ask for corrections to a teachback under review; the agent must resubmit.
    Correct(review::CorrectArgs),
    /// Show a brief's teachback: state, mode, the teachback itself and the latest review.
    Show(read::ShowArgs),
    /// List briefs with their teachback state.
    List(read::ListArgs),
    /// Open a brief for a plain Claude Code session (or bind the session to an existing one).
    Start(start::StartArgs),
    /// Count the gate's denials and would-have-denials per brief and tool.
    Report(read::ReportArgs),
    /// Raise the ALERTs due for teachbacks stalled past their timeout (once per stall).
    Check(read::CheckArgs),
}

/// Runs `agency teachback`.
pub fn run(ctx: &Context, cmd: TeachbackCommand) -> CommandResult {
    match cmd {
        TeachbackCommand::Submit(args) => review::submit(ctx, args),
        TeachbackCommand::Approve(args) => review::approve(ctx, args),
        TeachbackCommand::Correct(args) => review::correct(ctx, args),
        TeachbackCommand::Show(args) => read::show(ctx, args),
        TeachbackCommand::List(args) => read::list(ctx, args),
        TeachbackCommand::Start(args) => start::start(ctx, args),
        TeachbackCommand::Report(args) => read::report(ctx, args),
        TeachbackCommand::Check(args) => read::check(ctx, args),
    }
}

/// The brief named on the command line, or by `AGENCY_BRIEF` (how a runner-spawned agent knows its own).
fn resolve_brief(store: &dyn Blackboard, typed: Option<&str>) -> CommandResult<BriefId> {
    let from_env = std::env::var(ENV_BRIEF).ok().filter(|v| !v.is_empty());
    let Some(typed) = typed.map(String::from).or(from_env) else {
        return Err(CommandError::new(ErrorKind::Usage, "which brief? none was given")
            .hint(format!(
                "pass the brief id (or any unique part at either end), or set {ENV_BRIEF}"
            ))
            .hint("`agency teachback list` shows the briefs"));
    };
    store.resolve_brief(&typed).map_err(|err| {
        let mut error = store_error(err);
        error.hints = vec!["`agency teachback list` shows the briefs and their ids".into()];
        error
    })
}

/// The team configuration, or the defaults when the workspace has no team.yaml.
fn team_config(ctx: &Context) -> CommandResult<agency_core::config::TeamConfig> {
    let ws = ctx.workspace()?;
    if !ws.config.is_file() {
        return Ok(agency_core::config::TeamConfig::default());
    }
    let text = std::fs::read_to_string(&ws.config)?;
    agency_core::config::parse_team_config(&text, &ws.config.display().to_string())
        .map_err(|err| CommandError::input(err.to_string()))
}
