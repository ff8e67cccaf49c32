//! `agency models check`: sends one tiny request to the model behind every capability level and to the
//! sign-off judge, and prints what answered — before a run finds out the hard way that a key is missing or a
//! base URL is wrong. The probes run at once and are not retried: a check should report, not wait.

use std::time::Duration;

use agency_core::config::{CapabilityLevel, TeamConfig};
use agency_llm::{ConfiguredModel, LlmError, RetryPolicy, check_model, process_env};
use tokio::task::JoinSet;

use crate::commands::Context;
use crate::error::{CommandError, CommandResult};

/// `agency models …`
#[derive(Debug, clap::Subcommand)]
pub enum ModelsCommand {
    /// Send one tiny request per capability level (and to the judge) and report what answered.
    Check,
}

/// One row of the report.
#[derive(Debug)]
struct Row {
    label: String,
    provider: String,
    model: String,
    latency: Option<Duration>,
    result: Result<String, String>,
}

/// Runs `agency models`.
pub fn run(ctx: &Context, cmd: ModelsCommand) -> CommandResult {
    match cmd {
        ModelsCommand::Check => check(ctx),
    }
}

fn check(ctx: &Context) -> CommandResult {
    let (_, team) = ctx.team_config()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CommandError::internal(format!("cannot start the async runtime: {e}")))?;
    let rows = runtime.block_on(probe_all(&team));
    println!(
        "{:<16}  {:<12}  {:<28}  {:>8}  RESULT",
        "LEVEL", "PROVIDER", "MODEL", "LATENCY"
    );
    for row in &rows {
        let latency = row
            .latency
            .map(|d| format!("{:.2}s", d.as_secs_f64()))
            .unwrap_or_else(|| "-".into());
        let result = match &row.result {
            Ok(answer) => format!("ok: {answer}"),
            Err(err) => format!("error: {err}"),
        };
        println!(
            "{:<16}  {:<12}  {:<28}  {latency:>8}  {result}",
            row.label, row.provider, row.model
        );
    }
    let failed = rows.iter().filter(|r| r.result.is_err()).count();
    if failed > 0 {
        return Err(CommandError::input(format!(
            "{failed} of {} model checks failed",
            rows.len()
        ))
        .hint("check the provider's base_url and the key variable team.yaml names (`agency config explain`)"));
    }
    Ok(())
}

/// Probes every level and the judge at once; rows keep the levels' order, the judge last.
async fn probe_all(team: &TeamConfig) -> Vec<Row> {
    let mut targets: Vec<(String, Result<ConfiguredModel, LlmError>)> = CapabilityLevel::ALL
        .into_iter()
        .map(|level| {
            let model = agency_llm::model_for_level(team, level, &process_env, no_retries());
            (level.to_string(), model)
        })
        .collect();
    let judge = match &team.signoff.judge_model {
        Some(binding) => agency_llm::model_for_binding(team, binding, &process_env, no_retries()),
        None => agency_llm::model_for_level(team, team.signoff.judge, &process_env, no_retries()),
    };
    targets.push(("judge".to_string(), judge));
    let mut rows: Vec<Option<Row>> = Vec::new();
    let mut probes = JoinSet::new();
    for (index, (label, model)) in targets.into_iter().enumerate() {
        match model {
            Ok(model) => {
                rows.push(None);
                probes.spawn(async move {
                    let outcome = check_model(&model).await;
                    let row = Row {
                        label,
                        provider: model.provider_name.clone(),
                        model: outcome.model,
                        latency: Some(outcome.latency),
                        result: outcome
                            .result
                            .map(|text| first_line(&text, 40))
                            .map_err(|e| first_line(&e.to_string(), 200)),
                    };
                    (index, row)
                });
            }
            Err(err) => rows.push(Some(Row {
                label,
                provider: "-".into(),
                model: "-".into(),
                latency: None,
                result: Err(err.to_string()),
            })),
        }
    }
    while let Some(joined) = probes.join_next().await {
        if let Ok((index, row)) = joined
            && let Some(slot) = rows.get_mut(index)
        {
            *slot = Some(row);
        }
    }
    rows.into_iter().flatten().collect()
}

/// A check reports what happens now; retrying a missing key or a 401 only delays the answer.
fn no_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    }
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.trim().lines().next().unwrap_or("").trim();
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max - 1).collect::<String>())
    } else if line.is_empty() {
        "(empty answer)".into()
    } else {
        line.to_string()
    }
}
