//! `agency goal`: the goals of one session in plan.md (seed pi-goals): list, show, add, complete (the
//! two-stage sign-off of `agency-signoff`), cancel, log, and one session's loop and judge (`loop`, `judge`). plan.md is only ever patched line by line; the
//! sign-off records live on the blackboard (see [`records`]). docs/goals.md describes the format.

mod complete;
mod edit;
pub mod goal_loop;
pub mod hooks;
pub mod install;
pub mod loop_judge;
pub mod plan_file;
pub mod records;
pub mod session;
mod view;

use std::path::PathBuf;

use clap::Subcommand;

use crate::commands::Context;
use crate::error::CommandResult;

use plan_file::PlanFile;

/// `agency goal [--plan FILE] <command>`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file (default: plan.md at the repository's top level).
    #[arg(
        long,
        global = true,
        env = "AGENCY_PLAN",
        value_name = "FILE",
        hide_env_values = true
    )]
    pub plan: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: GoalCommand,
}

/// The goal subcommands.
#[derive(Debug, Subcommand)]
pub enum GoalCommand {
    /// List the goals with their status, subtasks and sign-off.
    List {
        /// Print one JSON object (goals with their subtasks and sign-off state) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show one goal's contract, subtasks and last sign-off.
    Show {
        /// The goal's id.
        id: String,
    },
    /// Append a goal to plan.md.
    Add(edit::AddArgs),
    /// Sign a goal off: verify in a clean checkout, mechanical checks, then a read-only judge.
    Complete(complete::CompleteArgs),
    /// Cancel a goal (not a sign-off), with a reason in the log.
    Cancel {
        /// The goal's id.
        id: String,
        /// Why it is dropped.
        #[arg(long)]
        reason: String,
    },
    /// Register `agency hook` for the goal events in .claude/settings.json (or a Codex hooks.json).
    InstallHooks(install::InstallArgs),
    /// Control one session's goal loop (pi's `/goal`): start, pause, resume, clear, status, verdict.
    Loop(goal_loop::LoopArgs),
    /// Set or show one session's sign-off judge (pi's `/judge model`), as PROVIDER/MODEL.
    Judge(goal_loop::JudgeArgs),
    /// Set drafted (open) goals active: the user agreed their contracts (pi's plan mode, Ready).
    Agree {
        /// The goals' ids.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Add a subtask checkbox to a goal (the only active one unless --goal names it).
    Subgoal {
        /// The subtask, one line.
        text: String,
        /// The goal's id (default: the only active goal).
        #[arg(long, value_name = "ID")]
        goal: Option<String>,
    },
    /// Move the signed-off and cancelled goals under `## Archive` at the end of plan.md (pi's `/plan`).
    Archive,
    /// Print the plan's log, or append MESSAGE to it.
    Log {
        /// A line to append.
        message: Option<String>,
    },
}

/// Runs `agency goal`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let plan = PlanFile::locate(&ctx.cwd, args.plan.as_deref());
    match args.command {
        GoalCommand::List { json: false } => view::list(ctx, &plan),
        GoalCommand::List { json: true } => view::list_json(ctx, &plan),
        GoalCommand::Agree { ids } => edit::agree(&plan, &ids),
        GoalCommand::Subgoal { text, goal } => edit::subgoal(&plan, goal.as_deref(), &text),
        GoalCommand::Show { id } => view::show(ctx, &plan, &id),
        GoalCommand::Add(add) => edit::add(&plan, add),
        GoalCommand::Complete(complete) => complete::run(ctx, &plan, complete),
        GoalCommand::Cancel { id, reason } => edit::cancel(&plan, &id, &reason),
        GoalCommand::InstallHooks(install) => install::run(ctx, install),
        GoalCommand::Loop(args) => goal_loop::run(ctx, &plan, args),
        GoalCommand::Judge(args) => goal_loop::judge(ctx, &plan, args),
        GoalCommand::Archive => edit::archive(ctx, &plan),
        GoalCommand::Log { message: None } => view::log(&plan),
        GoalCommand::Log {
            message: Some(message),
        } => edit::log(&plan, &message),
    }
}
