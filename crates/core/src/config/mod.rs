//! The `team.yaml` model: everything a run can be configured with, its documented defaults, and the
//! parser that turns the file into a [`TeamConfig`] or into errors that name the file, the line, the
//! dotted key and what was expected.
//!
//! Reading happens in two stages, as in ripgrep's flags: serde-saphyr deserializes the text into plain
//! types (unknown keys and wrong types fail here, with their line), then [`TeamConfig::validate`] checks
//! what types cannot say (references between sections, `t1_plan` staying on, non-zero timeouts) and
//! reports every problem at once. Nothing here reads files or the environment: callers pass the text and
//! any environment value in.
//!
//! [`DEFAULT_TEAM_YAML`] is the commented file `agency init` writes; it parses to exactly
//! [`TeamConfig::default()`].

mod error;
mod forge;
mod locate;
mod models;
mod notifiers;
mod personalities;
mod policy;
mod priced;
mod sandbox;
mod secrets;
mod tiers;
mod validate;
mod visibility;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use error::{ConfigError, ConfigProblem};
pub use forge::ForgeConfig;
pub use models::{
    CapabilityLevel, ModelBinding, ModelPrice, ModelsConfig, ProviderConfig, ProviderKind, ProviderTimeouts,
    check_model_name,
};
pub use notifiers::NotifierConfig;
pub use personalities::PersonalitiesConfig;
pub use policy::{
    BudgetLimit, BudgetsConfig, Calibration, ROLLOUT_ENV_VAR, RetryConfig, RolloutMode, RunnerConfig,
    SignoffConfig, TeachbackConfig, UnboundSessionPolicy,
};
pub use priced::{UnpricedModel, UnpricedUnderUsd};
pub use sandbox::{SANDBOX_OFF_BANNER, SandboxConfig, SandboxMode, SandboxNetwork, sandbox_off_in};
pub use secrets::SecretsConfig;
pub use tiers::{Runtime, TierConfig, TiersConfig, default_capability, default_runtime};
pub use visibility::{InspectionGates, LogLevel, VisibilityConfig};

use locate::KeyLines;

/// The commented `team.yaml` that `agency init` writes: every section, its defaults, one comment per key.
pub const DEFAULT_TEAM_YAML: &str = include_str!("default_team.yaml");

/// A whole `team.yaml`. Every section and key is optional; a missing one takes its documented default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TeamConfig {
    /// Live log detail, inspection gates, strict mode, gate timeout.
    #[serde(deserialize_with = "null_as_default")]
    pub visibility: VisibilityConfig,
    /// LLM endpoints by name. Default: `anthropic` with its public API and `ANTHROPIC_API_KEY`.
    #[serde(deserialize_with = "null_as_default")]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The model behind each capability level, and model prices.
    #[serde(deserialize_with = "null_as_default")]
    pub models: ModelsConfig,
    /// Capability level, runtime and concurrency per tier.
    #[serde(deserialize_with = "null_as_default")]
    pub tiers: TiersConfig,
    /// Retry budgets and escalation limits.
    #[serde(deserialize_with = "null_as_default")]
    pub retry: RetryConfig,
    /// Teachback gate rollout, timeouts and what is allowed while pending.
    #[serde(deserialize_with = "null_as_default")]
    pub teachback: TeachbackConfig,
    /// Token and USD limits per run, workstream and brief. Default: none.
    #[serde(deserialize_with = "null_as_default")]
    pub budgets: BudgetsConfig,
    /// The two-stage check of every "done".
    #[serde(deserialize_with = "null_as_default")]
    pub signoff: SignoffConfig,
    /// Where gate and run notifications go. Default: none (the CLI and dashboard still show them).
    #[serde(deserialize_with = "null_as_default")]
    pub notifiers: Vec<NotifierConfig>,
    /// The personality library and the default specialist per tier and domain.
    #[serde(deserialize_with = "null_as_default")]
    pub personalities: PersonalitiesConfig,
    /// The runner's own limits.
    #[serde(deserialize_with = "null_as_default")]
    pub runner: RunnerConfig,
    /// Where a succeeded run is proposed for review (a GitHub pull request). Default: GitHub, when
    /// `GITHUB_TOKEN` is set and `origin` is a github.com remote.
    #[serde(deserialize_with = "null_as_default")]
    pub forge: ForgeConfig,
    /// Which environment variables hold secrets besides those whose names say so. Default: none.
    #[serde(deserialize_with = "null_as_default")]
    pub secrets: SecretsConfig,
    /// The OS sandbox agents and verify commands run in. Default: on, with the host's network.
    #[serde(deserialize_with = "null_as_default")]
    pub sandbox: SandboxConfig,
}

impl Default for TeamConfig {
    fn default() -> Self {
        TeamConfig {
            visibility: VisibilityConfig::default(),
            providers: models::default_providers(),
            models: ModelsConfig::default(),
            tiers: TiersConfig::default(),
            retry: RetryConfig::default(),
            teachback: TeachbackConfig::default(),
            budgets: BudgetsConfig::default(),
            signoff: SignoffConfig::default(),
            notifiers: Vec::new(),
            personalities: PersonalitiesConfig::default(),
            runner: RunnerConfig::default(),
            forge: ForgeConfig::default(),
            secrets: SecretsConfig::default(),
            sandbox: SandboxConfig::default(),
        }
    }
}

impl TeamConfig {
    /// The environment variables this configuration says hold secrets, whatever their names: every
    /// provider's `api_key_env`, the forge's `token_env`, each Slack notifier's `webhook_url_env` and
    /// `secrets.extra_env`. With the variables whose names look secret, their values are what
    /// [`crate::redact::Redactor::from_env`] redacts.
    pub fn secret_env_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .providers
            .values()
            .map(|provider| provider.api_key_env().to_string())
            .chain(std::iter::once(self.forge.token_env.clone()))
            .chain(self.notifiers.iter().filter_map(|notifier| match notifier {
                NotifierConfig::Slack { webhook_url_env } => Some(webhook_url_env.clone()),
                NotifierConfig::Command { .. } | NotifierConfig::Webhook { .. } => None,
            }))
            .chain(self.secrets.extra_env.iter().cloned())
            .filter(|name| !name.is_empty())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Checks what types cannot express, reporting every problem (without lines: use
    /// [`parse_team_config`] for a file). `origin` names the config in messages, e.g. `team.yaml`.
    pub fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        self.validate_located(origin, |_| None)
    }

    fn validate_located(
        &self,
        origin: &str,
        line_of: impl Fn(&str) -> Option<u64>,
    ) -> Result<(), ConfigError> {
        let mut problems: Vec<ConfigProblem> = validate::check(self)
            .into_iter()
            .map(|issue| ConfigProblem {
                origin: origin.to_string(),
                line: line_of(&issue.path),
                path: issue.path,
                message: issue.message,
            })
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        // File order reads best; problems without a line keep section order after those with one.
        problems.sort_by_key(|p| p.line.unwrap_or(u64::MAX));
        Err(ConfigError::new(problems))
    }

    /// The teachback rollout mode in force. `env_value` is the value of the `teachback.mode_env_var`
    /// variable (`AGENCY_TEACHBACK_MODE`), read by the caller; set and not empty, it overrides the file.
    pub fn effective_teachback_mode(&self, env_value: Option<&str>) -> Result<RolloutMode, ConfigError> {
        self.teachback.effective_mode(env_value)
    }
}

/// Reads a key written with no value as its default, so that a section whose lines are all commented out
/// (`budgets:` and nothing under it) means "the defaults", as it reads.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Parses and validates a `team.yaml`. An empty file is the default config.
///
/// `file_name` is how messages name the file (`team.yaml`, `.agency/team.yaml`). A syntax, unknown-key or
/// type error stops parsing and is reported alone; semantic problems are all reported together.
pub fn parse_team_config(text: &str, file_name: &str) -> Result<TeamConfig, ConfigError> {
    let options = serde_saphyr::options! {
        // `yes`/`on` as booleans is YAML 1.1; a config that means "true" should say true.
        strict_booleans: true,
        // We render our own one-line messages.
        with_snippet: false,
    };
    let mut serde_path = None;
    let parsed = serde_saphyr::with_deserializer_from_str_with_options(text, options, |deserializer| {
        serde_path_to_error::deserialize::<_, Option<TeamConfig>>(deserializer).map_err(|err| {
            serde_path = Some(err.path().to_string());
            err.into_inner()
        })
    });
    let config = match parsed {
        // A file holding only comments is an empty document: all defaults.
        Ok(config) => config.unwrap_or_default(),
        Err(err) => {
            return Err(ConfigError::new(vec![error::problem_from_yaml(
                &err,
                serde_path.as_deref(),
                text,
                file_name,
            )]));
        }
    };
    let lines = KeyLines::index(text);
    config.validate_located(file_name, |path| lines.line_of(path))?;
    Ok(config)
}

#[cfg(test)]
mod tests;
