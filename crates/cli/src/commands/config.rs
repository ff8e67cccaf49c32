//! `agency config check`: parses team.yaml with the same code the runner uses and reports every problem
//! with file, line and path, or a short summary of what the configuration means.

use std::fs;

use agency_core::config::{TeamConfig, parse_team_config};
use agency_core::gate::GateKind;
use clap::Subcommand;

use crate::commands::Context;
use crate::error::{CommandError, CommandResult, ErrorKind};

/// `agency config ...`
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate team.yaml and summarise it.
    Check,
}

/// Runs `agency config`.
pub fn run(ctx: &Context, cmd: ConfigCommand) -> CommandResult {
    match cmd {
        ConfigCommand::Check => check(ctx),
    }
}

/// Reads and validates the configuration the current workspace uses.
pub fn load(ctx: &Context) -> CommandResult<(String, TeamConfig)> {
    let path = match &ctx.overrides.config {
        Some(path) => path.clone(),
        None => ctx.workspace()?.config,
    };
    let text = fs::read_to_string(&path).map_err(|err| {
        CommandError::new(
            ErrorKind::NoWorkspace,
            format!("cannot read {}: {err}", path.display()),
        )
        .hint("run `agency init` to write a default team.yaml")
    })?;
    let shown = path.display().to_string();
    let config = parse_team_config(&text, &shown).map_err(|err| CommandError::input(err.to_string()))?;
    Ok((shown, config))
}

fn check(ctx: &Context) -> CommandResult {
    let (path, config) = load(ctx)?;
    println!("{path}: ok");
    let gates: Vec<&str> = GateKind::ALL
        .into_iter()
        .filter(|g| config.visibility.gate_enabled(*g))
        .map(|g| g.as_str())
        .collect();
    println!("gates on: {}", gates.join(", "));
    Ok(())
}
