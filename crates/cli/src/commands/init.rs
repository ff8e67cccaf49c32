//! `agency init`: makes a repository an agency workspace — writes `.agency/team.yaml` (every setting with its
//! default and a comment) and creates the blackboard. Never overwrites an existing configuration unless
//! `--force` is given.

use std::fs;

use crate::commands::Context;
use crate::error::{CommandError, CommandResult, ErrorKind};
use crate::workspace::{AGENCY_DIR, Workspace, find_git_root};
use agency_core::config::DEFAULT_TEAM_YAML;

/// `agency init [--force]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Overwrite an existing .agency/team.yaml with the defaults.
    #[arg(long)]
    pub force: bool,
}

/// Runs `agency init`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let root = find_git_root(&ctx.cwd).ok_or_else(|| {
        CommandError::new(
            ErrorKind::NoWorkspace,
            format!("{} is not inside a git repository", ctx.cwd.display()),
        )
        .hint("run `git init` first, or change to your repository")
    })?;
    let ws = Workspace::at(root, &ctx.overrides);
    let agency_dir = ws.root.join(AGENCY_DIR);
    fs::create_dir_all(&agency_dir)?;
    // The blackboard and worktrees are local state, never commits.
    let ignore = agency_dir.join(".gitignore");
    if !ignore.exists() {
        fs::write(&ignore, "*\n!team.yaml\n!.gitignore\n")?;
    }
    if ws.config.exists() && !args.force {
        println!(
            "kept      {} (exists; --force rewrites it with the defaults)",
            ws.config.display()
        );
    } else {
        if let Some(parent) = ws.config.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&ws.config, DEFAULT_TEAM_YAML)?;
        println!("wrote     {}", ws.config.display());
    }
    // A PostgreSQL blackboard's schema is created or migrated here too.
    let existed = ws.db.exists() && !ws.db.is_postgres();
    ws.db.open()?;
    println!("{} {}", if existed { "kept     " } else { "created  " }, ws.db);
    println!("next: agency config check, then agency run \"<goal>\"");
    Ok(())
}
