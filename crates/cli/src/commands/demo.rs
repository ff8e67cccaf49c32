//! `agency demo`: the whole pipeline offline. It lays out a small repository with a real bug and a failing
//! test (`examples/demo`, compiled in), answers every model call from a script, and runs the real thing:
//! plan, gate, a blocking teachback, the fix in a worktree, the verify command run by agency, an
//! independent verifier, T1 acceptance and an integration branch — printing the live log as it goes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agency_core::config::{DEFAULT_TEAM_YAML, parse_team_config};
use agency_core::redact::Redactor;
use agency_exec::{GitOptions, Repo};
use agency_store::{Blackboard, RedactingBlackboard, SqliteBlackboard};

use crate::commands::Context;
use crate::commands::run::{Args as RunArgs, build_engine, drive_with_log, sandbox_ready};
use crate::error::{CommandError, CommandResult, ErrorKind};
use crate::render::log::Level;
use crate::workspace::{Overrides, Workspace};

/// The demo repository's files, as compiled in.
const FILES: [(&str, &str); 4] = [
    (
        ".gitignore",
        include_str!("../../../../examples/demo/repo/.gitignore"),
    ),
    (
        "pagination.py",
        include_str!("../../../../examples/demo/repo/pagination.py"),
    ),
    (
        "test_pagination.py",
        include_str!("../../../../examples/demo/repo/test_pagination.py"),
    ),
    (
        "README.md",
        include_str!("../../../../examples/demo/repo/README.md"),
    ),
];
/// The scripted model's replies.
const SCRIPT: &str = include_str!("../../../../examples/demo/script.yaml");
/// The demo's goal.
pub const GOAL: &str =
    "Fix the pagination bug: page 1 must start at the first item, and every test must pass.";

/// `agency demo [--dir DIR] [--interactive] [--verbose]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to lay out the demo repository (default: a new directory under the system temp dir). Must not
    /// exist yet.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Wait for `agency approve` at each gate instead of approving automatically.
    #[arg(long)]
    pub interactive: bool,
    /// Show per-agent lines (spawns, teachbacks, tool calls, verification) in the live log.
    #[arg(long, short)]
    pub verbose: bool,
}

/// Runs `agency demo`.
pub fn run(_ctx: &Context, args: Args) -> CommandResult {
    let dir = match args.dir {
        Some(dir) => dir,
        None => std::env::temp_dir().join(format!("agency-demo-{}", agency_core::RunId::new().short())),
    };
    if dir.exists() {
        return Err(CommandError::input(format!(
            "{} already exists; the demo needs a new directory",
            dir.display()
        )));
    }
    prerequisites(std::env::var_os("PATH").as_deref())?;
    let team = parse_team_config(DEFAULT_TEAM_YAML, "team.yaml")
        .map_err(|e| CommandError::internal(e.to_string()))?;
    // The sandbox is probed before anything is laid out, as `agency run` would refuse it after.
    sandbox_ready(&team)?;
    lay_out(&dir)?;
    let agency_dir = dir.join(".agency");
    std::fs::create_dir_all(&agency_dir)?;
    std::fs::write(agency_dir.join(".gitignore"), "*\n")?;
    std::fs::write(agency_dir.join("team.yaml"), DEFAULT_TEAM_YAML)?;
    std::fs::write(agency_dir.join("demo-script.yaml"), SCRIPT)?;
    let db = agency_dir.join("agency.db");
    let store: Arc<dyn Blackboard> = Arc::new(SqliteBlackboard::open(&db)?);
    let redactor = Redactor::from_process_env(&team.secret_env_names());
    let store = RedactingBlackboard::wrap(store, redactor);
    let run_args = RunArgs {
        goal: Some(GOAL.to_string()),
        goal_file: None,
        resume: None,
        script: Some(agency_dir.join("demo-script.yaml")),
        auto_approve: !args.interactive,
        detach: false,
        verbose: args.verbose,
        remote: None,
        cassette: Default::default(),
    };
    let workspace = Workspace::at(dir.clone(), &Overrides::default());
    let runner = build_engine(
        &workspace,
        store,
        team,
        &run_args,
        None,
        agency_engine::Role::Driver.name_here(),
    )?;
    println!("demo repository: {}", dir.display());
    println!("goal: {GOAL}");
    if args.interactive {
        println!(
            "gates wait for you: in another terminal, cd {} && agency approve <run>",
            dir.display()
        );
    }
    let run = runner.engine.start(GOAL)?;
    let level = if args.verbose {
        Level::Verbose
    } else {
        Level::Normal
    };
    let outcome = drive_with_log(&runner, &workspace.db, run.id, level)?;
    match outcome.branch {
        Some(branch) => {
            println!("done: branch {branch} in {}", dir.display());
            println!(
                "see it with: git -C {} log --oneline --graph {branch}",
                dir.display()
            );
            Ok(())
        }
        None => Err(CommandError::new(
            ErrorKind::RunFailed,
            format!("the demo run ended {}", outcome.status.as_str()),
        )
        .hint(format!(
            "cd {} && agency inspect {}",
            dir.display(),
            run.id.short()
        ))),
    }
}

/// The programs the demo needs, with what each is for and how to get it (Debian's package names; other
/// systems name them alike).
const PREREQUISITES: [(&str, &str); 2] = [
    (
        "git",
        "every agent works in a git worktree: install git (`apt-get install git`)",
    ),
    (
        "python3",
        "the demo's verify command is `python3 -m unittest`: install Python 3 (`apt-get install python3`)",
    ),
];

/// Fails fast, naming every missing program and its fix, before the demo lays anything out.
fn prerequisites(path: Option<&std::ffi::OsStr>) -> CommandResult {
    let missing: Vec<String> = PREREQUISITES
        .iter()
        .filter(|(program, _)| agency_exec::runtime::choice::find_program(program, path).is_none())
        .map(|(program, why)| format!("`{program}` is not on PATH: {why}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(CommandError::input(format!(
        "the demo cannot start:\n  {}",
        missing.join("\n  ")
    )))
}

/// Writes the demo repository and commits it.
fn lay_out(dir: &Path) -> CommandResult {
    std::fs::create_dir_all(dir)?;
    for (name, text) in FILES {
        std::fs::write(dir.join(name), text)?;
    }
    let git =
        |e: agency_exec::GitError| CommandError::internal(format!("setting up the demo repository: {e}"));
    let repo = Repo::init(dir, "main", GitOptions::default()).map_err(git)?;
    repo.commit_all("pagination: a library with an off-by-one")
        .map_err(git)?;
    Ok(())
}
