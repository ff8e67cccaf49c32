//! `agency config explain`: for every tier and the sign-off judge, which runtime runs it (and why), which
//! capability level, provider, endpoint and model it calls, what that model costs, and which environment
//! variable holds the key — with whether it is set. The key's value is never read into the output: only
//! its presence. This is the answer to "why did the run call that model" before a run is started.

use std::ffi::OsString;

use agency_core::Tier;
use agency_core::config::{CapabilityLevel, ModelBinding, TeamConfig};
use agency_exec::runtime::choose_all;

use crate::commands::Context;
use crate::error::CommandResult;

/// One row of the table: a tier or the judge.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    who: String,
    runtime: String,
    level: String,
    provider: String,
    endpoint: String,
    model: String,
    price: String,
    key: String,
}

/// Runs `agency config explain`.
pub fn run(ctx: &Context) -> CommandResult {
    let (path, team) = ctx.team_config()?;
    let path_var = std::env::var_os("PATH");
    let rows = explain(&team, path_var.as_ref(), &|name| std::env::var_os(name));
    println!("{path}");
    print_table(&rows);
    let missing: Vec<&str> = rows
        .iter()
        .filter(|row| row.key.ends_with("(not set)"))
        .map(|row| row.who.as_str())
        .collect();
    if !missing.is_empty() {
        println!(
            "\nnot set for: {} — export the variable, or point the provider at another one with \
             `api_key_env` (a local OpenAI-compatible server: `kind: openai`, `base_url`)",
            missing.join(", ")
        );
    }
    Ok(())
}

/// The rows for every tier, then the judge. `env` reads an environment variable (only its presence is
/// used).
fn explain(team: &TeamConfig, path: Option<&OsString>, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<Row> {
    let choices = choose_all(&team.tiers, path.map(OsString::as_os_str));
    let mut rows: Vec<Row> = Tier::ALL
        .into_iter()
        .zip(choices)
        .map(|(tier, choice)| {
            let level = team.tiers.capability(tier);
            let runtime = format!("{} ({})", choice.runtime.as_str(), choice.reason);
            model_row(
                team,
                tier.to_string(),
                runtime,
                level,
                team.models.binding(level),
                env,
            )
        })
        .collect();
    let (level, binding) = match &team.signoff.judge_model {
        Some(binding) => (None, Some(binding)),
        None => (Some(team.signoff.judge), team.models.binding(team.signoff.judge)),
    };
    let mut judge = model_row(
        team,
        "judge".into(),
        "read-only model call".into(),
        level.unwrap_or(team.signoff.judge),
        binding,
        env,
    );
    if level.is_none() {
        judge.level = "judge_model".into();
    }
    rows.push(judge);
    rows
}

fn model_row(
    team: &TeamConfig,
    who: String,
    runtime: String,
    level: CapabilityLevel,
    binding: Option<&ModelBinding>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Row {
    let unbound = |what: &str| Row {
        who: who.clone(),
        runtime: runtime.clone(),
        level: level.to_string(),
        provider: what.to_string(),
        endpoint: "-".into(),
        model: "-".into(),
        price: "-".into(),
        key: "-".into(),
    };
    let Some(binding) = binding else {
        return unbound(&format!("(models.{level} is not set)"));
    };
    let Some(provider) = team.providers.get(&binding.provider) else {
        return Row {
            model: binding.model.clone(),
            ..unbound(&format!("(no provider `{}`)", binding.provider))
        };
    };
    let key_var = provider.api_key_env();
    let key_set = env(key_var).is_some_and(|value| !value.is_empty());
    let price = match team.models.price(&binding.model) {
        Some(price) => format!("${}/${} per Mtok", price.input, price.output),
        None => "unpriced".into(),
    };
    Row {
        who,
        runtime,
        level: level.to_string(),
        provider: binding.provider.clone(),
        endpoint: provider.base_url().to_string(),
        model: binding.model.clone(),
        price,
        key: format!("{key_var} ({})", if key_set { "set" } else { "not set" }),
    }
}

fn print_table(rows: &[Row]) {
    let header = Row {
        who: "TIER".into(),
        runtime: "RUNTIME".into(),
        level: "LEVEL".into(),
        provider: "PROVIDER".into(),
        endpoint: "ENDPOINT".into(),
        model: "MODEL".into(),
        price: "PRICE".into(),
        key: "KEY".into(),
    };
    let all: Vec<&Row> = std::iter::once(&header).chain(rows).collect();
    let width = |field: fn(&Row) -> &str| all.iter().map(|r| field(r).chars().count()).max().unwrap_or(0);
    let widths = [
        width(|r| &r.who),
        width(|r| &r.runtime),
        width(|r| &r.level),
        width(|r| &r.provider),
        width(|r| &r.endpoint),
        width(|r| &r.model),
        width(|r| &r.price),
    ];
    for row in all {
        let cells = [
            &row.who,
            &row.runtime,
            &row.level,
            &row.provider,
            &row.endpoint,
            &row.model,
            &row.price,
        ];
        let mut line = String::new();
        for (cell, width) in cells.iter().zip(widths) {
            line.push_str(&format!("{cell:<width$}  "));
        }
        line.push_str(&row.key);
        println!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agency_core::config::parse_team_config;

    const TEAM: &str = "\
providers:
  anthropic: {kind: anthropic}
  local:
    kind: openai
    base_url: http://127.0.0.1:11434/v1
    api_key_env: LOCAL_KEY
models:
  capable: {provider: local, model: qwen3-coder}
  prices:
    qwen3-coder: {input: 0.5, output: 1.5}
tiers:
  t4: {runtime: builtin, capability: capable}
";

    #[test]
    fn names_each_tiers_model_and_whether_its_key_is_set_without_its_value() {
        let team = parse_team_config(TEAM, "team.yaml").expect("team parses");
        let env = |name: &str| (name == "LOCAL_KEY").then(|| OsString::from("sk-secret-value"));
        let rows = explain(&team, None, &env);
        let t4 = rows.iter().find(|r| r.who == "t4").expect("t4 row");
        assert_eq!(t4.provider, "local");
        assert_eq!(t4.endpoint, "http://127.0.0.1:11434/v1");
        assert_eq!(t4.model, "qwen3-coder");
        assert_eq!(t4.price, "$0.5/$1.5 per Mtok");
        assert_eq!(t4.key, "LOCAL_KEY (set)");
        assert!(t4.runtime.starts_with("builtin (configured)"), "{}", t4.runtime);
        let t1 = rows.iter().find(|r| r.who == "t1").expect("t1 row");
        assert_eq!(t1.provider, "anthropic");
        assert_eq!(t1.key, "ANTHROPIC_API_KEY (not set)");
        assert_eq!(t1.price, "unpriced");
        assert_eq!(rows.last().map(|r| r.who.as_str()), Some("judge"));
        assert!(rows.iter().all(|r| !format!("{r:?}").contains("sk-secret-value")));
    }

    #[test]
    fn auto_runtime_says_why_it_resolved_as_it_did() {
        let team = parse_team_config(TEAM, "team.yaml").expect("team parses");
        let rows = explain(&team, Some(&OsString::from("/nonexistent")), &|_| None);
        let t5 = rows.iter().find(|r| r.who == "t5").expect("t5 row");
        assert!(t5.runtime.contains("claude not on PATH"), "{}", t5.runtime);
    }
}
