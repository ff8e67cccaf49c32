//! `agency config check`: parses team.yaml with the same code the runner uses and reports every problem
//! with file, line and path, or a short summary of what the configuration means. A budget in dollars over a
//! model without a price is an error here too (`agency run` refuses it as well): see [`usd_budgets_priced`].
//! `agency config explain`: what each tier (and the judge) will use — runtime and why, capability level,
//! provider, endpoint, model, price, and the key variable with whether it is set (never its value).

use std::path::Path;

use agency_core::config::TeamConfig;
use agency_core::gate::GateKind;
use agency_exec::runtime::personality::Personalities;
use clap::Subcommand;

use crate::commands::Context;
use crate::error::CommandResult;

/// `agency config ...`
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate team.yaml and summarise it.
    Check,
    /// Show which runtime, provider, model and key variable each tier and the judge will use, and whether
    /// each key is set (its value is never printed).
    Explain,
}

/// Runs `agency config`.
pub fn run(ctx: &Context, cmd: ConfigCommand) -> CommandResult {
    match cmd {
        ConfigCommand::Check => check(ctx),
        ConfigCommand::Explain => super::explain::run(ctx),
    }
}

/// Reads and validates the configuration the current workspace uses ([`Context::team_config`]).
pub fn load(ctx: &Context) -> CommandResult<(String, TeamConfig)> {
    ctx.team_config()
}

fn check(ctx: &Context) -> CommandResult {
    let (path, config) = ctx.team_config()?;
    // Every tier may call its model in a live run.
    usd_budgets_priced(&config, &path, |_| true)?;
    let root = match ctx.workspace() {
        Ok(ws) => ws.root,
        Err(_) => ctx.cwd.clone(),
    };
    let pool = personalities_ready(&config, &path, &root)?;
    println!("{path}: ok");
    match &config.personalities.dir {
        Some(dir) => println!(
            "personalities: {} in {} (and agency's own, one per tier)",
            pool.from_folder(),
            root.join(dir).display()
        ),
        None => println!("personalities: agency's own, one per tier (no personalities.dir)"),
    }
    let gates: Vec<&str> = GateKind::ALL
        .into_iter()
        .filter(|g| config.visibility.gate_enabled(*g))
        .map(|g| g.as_str())
        .collect();
    println!("gates on: {}", gates.join(", "));
    Ok(())
}

/// Refuses a budget in dollars over a model that the tiers `calling` call and `models.prices` does not
/// price: its calls would count $0 against the limit, so the limit would not hold. `path` names team.yaml.
pub fn usd_budgets_priced(
    config: &TeamConfig,
    path: &str,
    calling: impl Fn(agency_core::Tier) -> bool,
) -> CommandResult {
    Ok(agency_engine::assembly::usd_budgets_priced(
        config, path, calling,
    )?)
}

/// Loads the talent pool team.yaml configures and checks every slug its registry names, so a missing
/// `personalities.dir` or a misspelled slug stops `config check` and `agency run` instead of passing in
/// silence. A registry changed from the default with no `dir` to look the slugs up in is refused too: it
/// would name personalities that cannot be found. `path` names team.yaml, `root` is the repository `dir`
/// is relative to.
pub fn personalities_ready(config: &TeamConfig, path: &str, root: &Path) -> CommandResult<Personalities> {
    Ok(agency_engine::assembly::personalities_ready(config, path, root)?)
}
