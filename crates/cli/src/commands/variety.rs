//! `agency variety score`: the PACT variety score of a piece of work and the gates derived from it, with
//! the same core functions the runner and the hook use. `agency variety calibration`: Learning II's table
//! (domain × dimension: matches, drift, bump) as the runner computes it when it scores new workstreams.

use agency_core::calibration::{Calibration, DRIFT_THRESHOLD, LEARNING_II_MAX_BUMP, LEARNING_II_MIN_MATCHES};
use agency_core::variety::{DIMENSION_NAMES, Variety, validate_dimension};
use agency_engine::calibration::{RECENT_RUNS, records, run_records};
use clap::Subcommand;

use crate::commands::{Context, resolve_run};
use crate::error::{CommandError, CommandResult};

/// `agency variety ...`
#[derive(Debug, Subcommand)]
pub enum VarietyCommand {
    /// Sum the four dimensions (each 1–4) and print the score, route and gates.
    Score(ScoreArgs),
    /// Learning II: per domain and dimension, how many finished briefs match, the share whose outcome
    /// shows the dimension under-predicted (drift), and the bump new briefs of the domain get.
    Calibration(CalibrationArgs),
}

/// `agency variety calibration [--run R] [--json]`
#[derive(Debug, clap::Args)]
pub struct CalibrationArgs {
    /// Only the records of this run (default: the newest 50 runs, as the runner reads them).
    #[arg(long)]
    pub run: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The four dimensions, as typed. Kept as text so that `true` or `2.5` get the same error, naming the
/// dimension, as everywhere else agency reads a dimension.
#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    /// 1 routine · 2 familiar · 3 novel · 4 unprecedented.
    #[arg(long, value_name = "1-4")]
    pub novelty: String,
    /// 1 single concern · 2 a few · 3 many · 4 cross-cutting.
    #[arg(long, value_name = "1-4")]
    pub scope: String,
    /// 1 clear · 2 mostly clear · 3 ambiguous · 4 unknown.
    #[arg(long, value_name = "1-4")]
    pub uncertainty: String,
    /// 1 low · 2 medium · 3 high · 4 critical.
    #[arg(long, value_name = "1-4")]
    pub risk: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `agency variety`.
pub fn run(ctx: &Context, cmd: VarietyCommand) -> CommandResult {
    match cmd {
        VarietyCommand::Score(args) => score(args),
        VarietyCommand::Calibration(args) => calibration(ctx, args),
    }
}

fn calibration(ctx: &Context, args: CalibrationArgs) -> CommandResult {
    let store = ctx.open_store()?;
    let gathered = match &args.run {
        Some(typed) => {
            let run = resolve_run(&*store, typed)?;
            run_records(&*store, run)
        }
        None => records(&*store, RECENT_RUNS),
    }
    .map_err(|e| CommandError::internal(format!("reading the calibration records: {e}")))?;
    let table = Calibration::from_records(&gathered);
    if args.json {
        let out = serde_json::json!({
            "records": gathered.len(),
            "min_matches": LEARNING_II_MIN_MATCHES,
            "max_bump": LEARNING_II_MAX_BUMP,
            "drift_threshold": DRIFT_THRESHOLD,
            "cells": table.cells,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    if table.cells.is_empty() {
        println!("no finished, scored briefs yet: nothing to calibrate");
        return Ok(());
    }
    println!(
        "{:<16} {:<12} {:>7} {:>6} {:>5}  under-predicted when",
        "domain", "dimension", "matches", "drift", "bump"
    );
    for cell in &table.cells {
        println!(
            "{:<16} {:<12} {:>7} {:>6.2} {:>5}  {}",
            cell.domain,
            cell.dimension.as_str(),
            cell.matches,
            cell.drift,
            if cell.bump > 0 {
                format!("+{}", cell.bump)
            } else {
                "0".to_string()
            },
            cell.dimension.evidence()
        );
    }
    println!(
        "a dimension is raised by {LEARNING_II_MAX_BUMP} for new briefs of a domain with at least \
         {LEARNING_II_MIN_MATCHES} matches and a drift of at least {DRIFT_THRESHOLD} (teachback.calibration: off \
         turns that off)"
    );
    Ok(())
}

fn parse_dimension(text: &str, name: &str) -> CommandResult<i64> {
    // Parse as JSON so that `true`, `2.5` and `"3"` are refused by the shared validator with one message.
    let value = serde_json::from_str::<serde_json::Value>(text.trim())
        .unwrap_or_else(|_| serde_json::Value::String(text.to_string()));
    validate_dimension(&value, name)
        .map(i64::from)
        .map_err(|err| CommandError::input(err.to_string()))
}

fn score(args: ScoreArgs) -> CommandResult {
    let [novelty, scope, uncertainty, risk] = [&args.novelty, &args.scope, &args.uncertainty, &args.risk];
    let values = [
        parse_dimension(novelty, DIMENSION_NAMES[0])?,
        parse_dimension(scope, DIMENSION_NAMES[1])?,
        parse_dimension(uncertainty, DIMENSION_NAMES[2])?,
        parse_dimension(risk, DIMENSION_NAMES[3])?,
    ];
    let variety = Variety::new(values[0], values[1], values[2], values[3])
        .map_err(|err| CommandError::input(err.to_string()))?;
    let score = variety.score();
    let gates = variety.gates();
    if args.json {
        let out = serde_json::json!({
            "variety_dimensions": variety,
            "variety_score": score,
            "gates": gates,
            "default_tier_path": gates.workflow_route.default_tier_path(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let path: Vec<&str> = gates
        .workflow_route
        .default_tier_path()
        .iter()
        .map(|t| t.as_str())
        .collect();
    println!(
        "score {score}  (novelty {} + scope {} + uncertainty {} + risk {})",
        variety.novelty, variety.scope, variety.uncertainty, variety.risk
    );
    println!("route             {}", gates.workflow_route);
    println!("teachback         {}", gates.teachback_mode.as_str());
    // What the derived gate does in a run, said where it is shown (docs/hooks.md, "The auditor").
    println!(
        "auditor required  {}",
        if gates.auditor_required {
            "yes (a slice's sign-off adds an auditor beside the T5 judge; a rejection by either rejects)"
        } else {
            "no"
        }
    );
    println!("tier path         {}", path.join(" → "));
    Ok(())
}
