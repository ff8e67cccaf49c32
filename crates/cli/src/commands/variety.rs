//! `agency variety score`: the PACT variety score of a piece of work and the gates derived from it, with
//! the same core functions the runner and the hook use.

use agency_core::variety::{DIMENSION_NAMES, Variety, validate_dimension};
use clap::Subcommand;

use crate::error::{CommandError, CommandResult};

/// `agency variety ...`
#[derive(Debug, Subcommand)]
pub enum VarietyCommand {
    /// Sum the four dimensions (each 1–4) and print the score, route and gates.
    Score(ScoreArgs),
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
pub fn run(cmd: VarietyCommand) -> CommandResult {
    match cmd {
        VarietyCommand::Score(args) => score(args),
    }
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
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| CommandError::internal(e.to_string()))?
        );
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
    println!(
        "auditor required  {}",
        if gates.auditor_required { "yes" } else { "no" }
    );
    println!("tier path         {}", path.join(" → "));
    Ok(())
}
