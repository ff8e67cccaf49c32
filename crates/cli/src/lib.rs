//! The `agency` command line as a library: argument parsing, one module per subcommand, and the rendering of
//! the live log and the inspection tree. `main.rs` only calls [`main`].
//!
//! Arguments are parsed in two stages: clap records what the user typed ([`Cli`]); each command then
//! validates it into the objects it works with, reporting problems as a [`CommandError`] whose kind decides
//! the exit code (docs/cli.md lists them).

/// std's `print!` over [`stdout::print`]: a closed pipe ends the command quietly instead of panicking.
/// Defined before the modules so that it shadows std's in every one of them.
macro_rules! print {
    ($($arg:tt)*) => { $crate::stdout::print(format_args!($($arg)*)) };
}

/// std's `println!` over [`stdout::print`]: a closed pipe ends the command quietly instead of panicking.
macro_rules! println {
    () => { $crate::stdout::print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::stdout::print(format_args!("{}\n", format_args!($($arg)*))) };
}

pub mod cli_doc;
pub mod commands;
pub mod error;
pub mod gate_service;
pub mod hook;
pub mod interrupt;
pub mod render;
pub mod stdout;
pub mod tui;
pub mod workspace;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::CommandResult;
use crate::workspace::Overrides;

/// agency: run teams of coding agents whose work proves itself.
#[derive(Debug, Parser)]
#[command(name = "agency", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The blackboard: a SQLite file (default: .agency/agency.db at the repository's top level) or a
    /// PostgreSQL connection string (postgres://USER:PASSWORD@HOST/DB or 'host=HOST user=USER dbname=DB').
    #[arg(
        long,
        global = true,
        env = "AGENCY_DB",
        value_name = "PATH|URL",
        hide_env_values = true
    )]
    pub db: Option<PathBuf>,
    /// The team configuration (default: .agency/team.yaml at the repository's top level).
    #[arg(
        long,
        global = true,
        env = "AGENCY_CONFIG",
        value_name = "PATH",
        hide_env_values = true
    )]
    pub config: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the whole pipeline offline on a sample repository with a real bug.
    Demo(commands::demo::Args),
    /// Set up agency in this git repository: .agency/team.yaml and the blackboard.
    Init(commands::init::Args),
    /// Run a team on a goal in this repository (or resume a run).
    Run(commands::run::Args),
    /// Check and explain the team configuration.
    #[command(subcommand)]
    Config(commands::config::ConfigCommand),
    /// Score work on the four variety dimensions and show the gates it implies; show Learning II's
    /// calibration.
    #[command(subcommand)]
    Variety(commands::variety::VarietyCommand),
    /// List runs, newest first.
    Runs(commands::runs::Args),
    /// Show a run's live log.
    Watch(commands::watch::Args),
    /// Show a run's state: interactive in a terminal, else as a tree, or one tier or brief in full.
    Inspect(commands::inspect::Args),
    /// Show what you approve: the plan, a brief, a diff, verify output, the judge's account, a teachback,
    /// the cost.
    Show(commands::show::Args),
    /// Approve the run's pending gate.
    Approve(commands::approve::Args),
    /// Reject the run's pending gate; the tier is re-invoked with the reason.
    Reject(commands::reject::Args),
    /// Pause a run at its next tier boundary.
    Pause(commands::pause::Args),
    /// Release a manual pause.
    Resume(commands::resume::Args),
    /// Acknowledge a HALT: resume the run or cancel it.
    Ack(commands::ack::Args),
    /// End a run for good: stop its runner and agents, close what is open.
    Cancel(commands::cancel::Args),
    /// The Claude Code / Codex hook (event on stdin), and `agency hook install`.
    Hook(commands::hook::Args),
    /// Submit, review and inspect teachbacks.
    #[command(subcommand)]
    Teachback(commands::teachback::TeachbackCommand),
    /// The session's goals in plan.md: list, show, add, complete (sign-off), cancel, log.
    Goal(commands::goal::Args),
    /// Check the configured models: one tiny request per capability level and the judge.
    #[command(subcommand)]
    Models(commands::models::ModelsCommand),
    /// Remove the worktrees and branches of finished runs.
    Gc(commands::gc::Args),
    /// Serve the web dashboard: runs, live logs and gate decisions in a browser, behind a token.
    Dashboard(commands::dashboard::Args),
    /// Run agents for a run another `agency run` drives on the same blackboard.
    Worker(commands::worker::Args),
    /// Path amendments: list, approve or reject them; an agent in a run proposes one.
    #[command(subcommand)]
    Amendment(commands::amendment::AmendmentCommand),
}

impl Cli {
    fn overrides(&self) -> Overrides {
        Overrides {
            db: self.db.clone(),
            config: self.config.clone(),
        }
    }
}

/// Runs the CLI with the process's arguments and returns its exit code.
pub fn main() -> ExitCode {
    // The hook runs on every tool call: answer it before building the whole command line parser.
    if hook::is_hook_invocation(&std::env::args_os().collect::<Vec<_>>()) {
        return hook::run();
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help/version to stdout and usage errors to stderr, and knows which exit code fits.
            let code = err.exit_code();
            let _ = err.print();
            return ExitCode::from(u8::try_from(code).unwrap_or(2));
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of the output went away (`agency watch <run> | head -1`): it has what it wanted.
        Err(err) if err.is_closed_pipe() => ExitCode::SUCCESS,
        Err(err) => err.report(),
    }
}

/// Dispatches a parsed command line.
pub fn run(cli: Cli) -> CommandResult {
    let overrides = cli.overrides();
    let cwd = std::env::current_dir()?;
    let ctx = commands::Context { cwd, overrides };
    match cli.command {
        Command::Demo(args) => commands::demo::run(&ctx, args),
        Command::Init(args) => commands::init::run(&ctx, args),
        Command::Run(args) => commands::run::run(&ctx, args),
        Command::Config(cmd) => commands::config::run(&ctx, cmd),
        Command::Variety(cmd) => commands::variety::run(&ctx, cmd),
        Command::Runs(args) => commands::runs::run(&ctx, args),
        Command::Watch(args) => commands::watch::run(&ctx, args),
        Command::Inspect(args) => commands::inspect::run(&ctx, args),
        Command::Show(args) => commands::show::run(&ctx, args),
        Command::Approve(args) => commands::approve::run(&ctx, args),
        Command::Reject(args) => commands::reject::run(&ctx, args),
        Command::Pause(args) => commands::pause::run(&ctx, args),
        Command::Resume(args) => commands::resume::run(&ctx, args),
        Command::Ack(args) => commands::ack::run(&ctx, args),
        Command::Cancel(args) => commands::cancel::run(&ctx, args),
        Command::Hook(args) => commands::hook::run(&ctx, args),
        Command::Teachback(cmd) => commands::teachback::run(&ctx, cmd),
        Command::Goal(args) => commands::goal::run(&ctx, args),
        Command::Models(cmd) => commands::models::run(&ctx, cmd),
        Command::Gc(args) => commands::gc::run(&ctx, args),
        Command::Dashboard(args) => commands::dashboard::run(&ctx, args),
        Command::Worker(args) => commands::worker::run(&ctx, args),
        Command::Amendment(cmd) => commands::amendment::run(&ctx, cmd),
    }
}
