//! Providers built from team.yaml: a capability level (or the judge's own binding) names a provider and a
//! model; the provider section gives the protocol, base URL, key variable and timeouts. The result is a
//! retrying client plus what the runner needs to fill requests and price them.
//!
//! Keys come only from the environment, read through the lookup the caller passes (the process
//! environment in production, a map in tests):
//! - Anthropic always needs one; a missing key is [`LlmError::MissingKey`] naming the variable.
//! - OpenAI-compatible providers need one when they use OpenAI's public endpoint or name `api_key_env`
//!   explicitly. A provider with its own `base_url` and no `api_key_env` (Ollama, a local vLLM) is called
//!   without a key, so a user's OpenAI key is never sent to some other server by default.
//!
//! On OpenAI's own endpoint the output limit is sent as `max_completion_tokens` (the only field its
//! reasoning models accept); everywhere else as `max_tokens`, which every compatible server knows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agency_core::Tier;
use agency_core::config::{
    BudgetLimit, BudgetsConfig, CapabilityLevel, ModelBinding, ModelPrice, ProviderConfig, ProviderKind,
    TeamConfig,
};

use crate::anthropic::{AnthropicClient, AnthropicConfig};
use crate::budget::{BudgetLimits, Limit};
use crate::error::LlmError;
use crate::http::{ApiKey, Timeouts};
use crate::message::{Message, Request};
use crate::openai::{MaxTokensField, OpenAiClient, OpenAiConfig};
use crate::price::{Price, PriceTable};
use crate::provider::{Provider, complete};
use crate::retry::{RetryPolicy, Retrying};

/// The output cap used when a binding sets no `max_tokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// How the caller reads an environment variable.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment, for [`EnvLookup`].
pub fn process_env(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// A model ready to call, with what requests to it should carry.
#[derive(Debug, Clone)]
pub struct ConfiguredModel {
    /// The provider's name in team.yaml.
    pub provider_name: String,
    /// The model id.
    pub model: String,
    /// Output cap for its requests.
    pub max_tokens: u32,
    /// Sampling temperature for its requests.
    pub temperature: Option<f32>,
    /// Its price, if configured.
    pub price: Option<Price>,
    /// The retrying client.
    pub provider: Arc<dyn Provider>,
}

impl From<&ModelPrice> for Price {
    /// Unset cache prices bill at the input price, as team.yaml documents.
    fn from(p: &ModelPrice) -> Self {
        Price {
            input: p.input,
            output: p.output,
            cache_read: p.cache_read.unwrap_or(p.input),
            cache_write: p.cache_write.unwrap_or(p.input),
        }
    }
}

impl From<&BudgetLimit> for Limit {
    fn from(l: &BudgetLimit) -> Self {
        Limit {
            tokens: l.tokens,
            usd: l.usd,
        }
    }
}

/// The `models.prices` section, as the prices calls are costed at.
pub fn price_table(config: &TeamConfig) -> PriceTable {
    PriceTable(
        config
            .models
            .prices
            .iter()
            .map(|(model, price)| (model.clone(), Price::from(price)))
            .collect(),
    )
}

/// The ledger limits of the `budgets` section.
pub fn budget_limits(budgets: &BudgetsConfig) -> BudgetLimits {
    BudgetLimits {
        run: (&budgets.run).into(),
        workstream: (&budgets.workstream).into(),
        brief: (&budgets.brief).into(),
    }
}

/// The model bound to `level`.
pub fn model_for_level(
    config: &TeamConfig,
    level: CapabilityLevel,
    env: EnvLookup<'_>,
    retry: RetryPolicy,
) -> Result<ConfiguredModel, LlmError> {
    let binding = config
        .models
        .binding(level)
        .ok_or_else(|| LlmError::Config(format!("models.{level}: no model is configured for this level")))?;
    model_for_binding(config, binding, env, retry)
}

/// The model of one binding (a level's, or `signoff.judge_model`).
pub fn model_for_binding(
    config: &TeamConfig,
    binding: &ModelBinding,
    env: EnvLookup<'_>,
    retry: RetryPolicy,
) -> Result<ConfiguredModel, LlmError> {
    let provider_config = config.providers.get(&binding.provider).ok_or_else(|| {
        LlmError::Config(format!(
            "model {}: no provider named {:?} in providers",
            binding.model, binding.provider
        ))
    })?;
    let client = client_for(provider_config, &binding.model, env)?;
    Ok(ConfiguredModel {
        provider_name: binding.provider.clone(),
        model: binding.model.clone(),
        max_tokens: binding.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        temperature: binding.temperature,
        price: config.models.price(&binding.model).map(Price::from),
        provider: Arc::new(Retrying::new(client, outage_bounded(provider_config, retry))),
    })
}

/// `retry`, giving up once the provider has been in trouble for its `timeouts.outage_seconds`: past that
/// the caller is told (the runner pauses the run at an outage gate) rather than kept waiting.
fn outage_bounded(config: &ProviderConfig, retry: RetryPolicy) -> RetryPolicy {
    RetryPolicy {
        give_up_after: Some(Duration::from_secs(config.timeouts.outage_seconds.into())),
        ..retry
    }
}

/// One client for `model` at the provider `config` describes, without retries.
pub fn client_for(
    config: &ProviderConfig,
    model: &str,
    env: EnvLookup<'_>,
) -> Result<Box<dyn Provider>, LlmError> {
    let timeouts = Timeouts {
        connect: Duration::from_secs(config.timeouts.connect_seconds.into()),
        read: Duration::from_secs(config.timeouts.idle_seconds.into()),
        request: Duration::from_secs(config.timeouts.request_seconds.into()),
    };
    let base_url = config.base_url().to_owned();
    let var = config.api_key_env();
    let key = || match env(var) {
        Some(key) if !key.trim().is_empty() => Ok(ApiKey::new(key.trim())),
        _ => Err(LlmError::MissingKey { var: var.to_owned() }),
    };
    match config.kind {
        ProviderKind::Anthropic => {
            let mut anthropic = AnthropicConfig::new(model, key()?);
            anthropic.base_url = base_url;
            anthropic.timeouts = timeouts;
            Ok(Box::new(AnthropicClient::new(anthropic)?))
        }
        ProviderKind::Openai => {
            let public = base_url.trim_end_matches('/') == ProviderKind::Openai.default_base_url();
            let api_key = if public || config.api_key_env.is_some() {
                Some(key()?)
            } else {
                None
            };
            let mut openai = OpenAiConfig::new(base_url, model, api_key);
            openai.timeouts = timeouts;
            if public {
                openai.max_tokens_field = MaxTokensField::MaxCompletionTokens;
            }
            Ok(Box::new(OpenAiClient::new(openai)?))
        }
    }
}

/// Every model a run calls, built once when the run starts, so a missing key or an unknown provider stops
/// the run before any call and briefs share their clients (and connection pools).
#[derive(Debug, Clone)]
pub struct ModelSet {
    levels: Vec<(CapabilityLevel, ConfiguredModel)>,
    judge: ConfiguredModel,
    auditor: Option<ConfiguredModel>,
}

impl ModelSet {
    /// Builds the model of each capability level and the sign-off judge's.
    pub fn from_config(
        config: &TeamConfig,
        env: EnvLookup<'_>,
        retry: RetryPolicy,
    ) -> Result<Self, LlmError> {
        let mut levels = Vec::with_capacity(CapabilityLevel::ALL.len());
        for level in CapabilityLevel::ALL {
            levels.push((level, model_for_level(config, level, env, retry.clone())?));
        }
        let judge = match &config.signoff.judge_model {
            Some(binding) => model_for_binding(config, binding, env, retry.clone())?,
            None => levels
                .iter()
                .find(|(level, _)| *level == config.signoff.judge)
                .map(|(_, model)| model.clone())
                .ok_or_else(|| {
                    LlmError::Config(format!("signoff.judge: no model for {}", config.signoff.judge))
                })?,
        };
        let auditor = match &config.signoff.auditor_model {
            Some(binding) => Some(model_for_binding(config, binding, env, retry)?),
            None => None,
        };
        Ok(Self {
            levels,
            judge,
            auditor,
        })
    }

    /// The model of a capability level.
    pub fn level(&self, level: CapabilityLevel) -> Option<&ConfiguredModel> {
        self.levels
            .iter()
            .find(|(l, _)| *l == level)
            .map(|(_, model)| model)
    }

    /// The model a tier uses: its configured capability level's.
    pub fn for_tier(&self, config: &TeamConfig, tier: Tier) -> Option<&ConfiguredModel> {
        self.level(config.tiers.capability(tier))
    }

    /// The sign-off judge's model.
    pub fn judge(&self) -> &ConfiguredModel {
        &self.judge
    }

    /// The auditor's model, when `signoff.auditor_model` names one (else a run's auditor runs as its judge).
    pub fn auditor(&self) -> Option<&ConfiguredModel> {
        self.auditor.as_ref()
    }

    /// Each level with its model, strongest first.
    pub fn levels(&self) -> impl Iterator<Item = (CapabilityLevel, &ConfiguredModel)> {
        self.levels.iter().map(|(level, model)| (*level, model))
    }
}

/// What one `agency models check` probe found.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    /// The model asked.
    pub model: String,
    /// How long the answer took.
    pub latency: Duration,
    /// The answer's text, or why there was none.
    pub result: Result<String, LlmError>,
}

/// Sends one tiny request to `model` and reports what answered.
pub async fn check_model(model: &ConfiguredModel) -> CheckOutcome {
    let request = Request {
        messages: vec![Message::user("Reply with the single word: ok")],
        max_tokens: 16,
        ..Request::default()
    };
    let started = Instant::now();
    let result = complete(model.provider.as_ref(), &request)
        .await
        .map(|r| r.text());
    CheckOutcome {
        model: model.model.clone(),
        latency: started.elapsed(),
        result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> TeamConfig {
        agency_core::config::parse_team_config(yaml, "team.yaml").unwrap()
    }

    fn env(var: &str) -> Option<String> {
        (var == "ANTHROPIC_API_KEY" || var == "MY_VLLM_KEY").then(|| "k".to_owned())
    }

    #[test]
    fn levels_resolve_to_clients_with_prices_and_limits() {
        let cfg = config(
            "models:\n  capable: {provider: anthropic, model: claude-sonnet-4-5, max_tokens: 4000}\n  prices:\n    claude-sonnet-4-5: {input: 3, output: 15}\n",
        );
        let model = model_for_level(&cfg, CapabilityLevel::Capable, &env, RetryPolicy::default()).unwrap();
        assert_eq!(
            (model.provider.kind(), model.provider.model()),
            ("anthropic", "claude-sonnet-4-5")
        );
        assert_eq!(model.max_tokens, 4000);
        assert_eq!(
            model.price,
            Some(Price {
                input: 3.0,
                output: 15.0,
                cache_read: 3.0,
                cache_write: 3.0
            })
        );
        let fast = model_for_level(&cfg, CapabilityLevel::FastCheap, &env, RetryPolicy::default()).unwrap();
        assert_eq!((fast.max_tokens, fast.price), (DEFAULT_MAX_TOKENS, None));
    }

    #[test]
    fn a_missing_key_names_its_variable() {
        let cfg = config("");
        let err =
            model_for_level(&cfg, CapabilityLevel::Capable, &|_| None, RetryPolicy::default()).unwrap_err();
        assert_eq!(
            err,
            LlmError::MissingKey {
                var: "ANTHROPIC_API_KEY".into()
            }
        );
        assert_eq!(
            err.to_string(),
            "no API key: set the environment variable ANTHROPIC_API_KEY"
        );
    }

    #[test]
    fn local_openai_compatible_servers_need_no_key_unless_one_is_named() {
        let cfg = config(
            "providers:\n  ollama: {kind: openai, base_url: 'http://localhost:11434/v1'}\n  vllm: {kind: openai, base_url: 'http://gpu:8000/v1', api_key_env: MY_VLLM_KEY}\n  openai: {kind: openai}\nmodels:\n  fast-cheap: {provider: ollama, model: qwen2.5-coder}\n  capable: {provider: vllm, model: q}\n  reasoning-heavy: {provider: openai, model: gpt-5}\n",
        );
        let none = |_: &str| None;
        assert!(model_for_level(&cfg, CapabilityLevel::FastCheap, &none, RetryPolicy::default()).is_ok());
        assert_eq!(
            model_for_level(&cfg, CapabilityLevel::Capable, &none, RetryPolicy::default()).unwrap_err(),
            LlmError::MissingKey {
                var: "MY_VLLM_KEY".into()
            }
        );
        assert!(model_for_level(&cfg, CapabilityLevel::Capable, &env, RetryPolicy::default()).is_ok());
        assert_eq!(
            model_for_level(
                &cfg,
                CapabilityLevel::ReasoningHeavy,
                &none,
                RetryPolicy::default()
            )
            .unwrap_err(),
            LlmError::MissingKey {
                var: "OPENAI_API_KEY".into()
            }
        );
    }

    /// `signoff.auditor_model` builds a model of its own, on its own provider; unset, there is none (a run's
    /// auditor then runs as its judge).
    #[test]
    fn the_auditor_model_is_built_on_its_own_provider() {
        let cfg = config(
            "providers:\n  anthropic: {kind: anthropic}\n  local: {kind: openai, base_url: http://127.0.0.1:9/v1}\n\
             signoff:\n  auditor_model: {provider: local, model: gpt-audit}\n",
        );
        let models = ModelSet::from_config(&cfg, &env, RetryPolicy::default()).unwrap();
        let auditor = models.auditor().unwrap();
        assert_eq!(
            (auditor.provider_name.as_str(), auditor.model.as_str()),
            ("local", "gpt-audit")
        );
        assert_eq!(auditor.provider.model(), "gpt-audit");
        let plain = ModelSet::from_config(&config(""), &env, RetryPolicy::default()).unwrap();
        assert!(plain.auditor().is_none());
    }

    /// Every team.yaml example in docs/providers.md parses, validates and builds its clients.
    #[test]
    fn the_provider_docs_examples_are_valid() {
        let doc = include_str!("../../../docs/providers.md");
        let blocks: Vec<&str> = doc
            .split("```yaml\n")
            .skip(1)
            .filter_map(|b| b.split("```").next())
            .collect();
        assert!(blocks.len() >= 8, "found {} yaml blocks", blocks.len());
        let all_keys = |_: &str| Some("k".to_owned());
        let mut checked = 0;
        for block in blocks {
            if block.starts_with("model: scripted") {
                crate::scripted::Script::from_yaml(block).unwrap();
                checked += 1;
            } else if block.contains("models:") || block.starts_with("budgets:") {
                let cfg = config(block);
                for level in CapabilityLevel::ALL {
                    model_for_level(&cfg, level, &all_keys, RetryPolicy::default()).unwrap();
                }
                for binding in [&cfg.signoff.judge_model, &cfg.signoff.auditor_model]
                    .into_iter()
                    .flatten()
                {
                    model_for_binding(&cfg, binding, &all_keys, RetryPolicy::default()).unwrap();
                }
                checked += 1;
            }
        }
        assert!(checked >= 7, "checked {checked}");
    }

    #[test]
    fn a_model_set_serves_tiers_and_the_judge() {
        let cfg = config(
            "providers:\n  anthropic: {kind: anthropic}\n  openai: {kind: openai}\nsignoff:\n  judge_model: {provider: openai, model: gpt-5}\ntiers:\n  t4: {capability: capable}\n",
        );
        let env = |_: &str| Some("k".to_owned());
        let set = ModelSet::from_config(&cfg, &env, RetryPolicy::default()).unwrap();
        assert_eq!(set.for_tier(&cfg, Tier::T1).unwrap().model, "claude-opus-4-8");
        assert_eq!(set.for_tier(&cfg, Tier::T4).unwrap().model, "claude-sonnet-4-5");
        assert_eq!(
            (set.judge().model.as_str(), set.judge().provider.kind()),
            ("gpt-5", "openai")
        );
        assert_eq!(set.levels().count(), 3);
        let default_judge = ModelSet::from_config(&config(""), &env, RetryPolicy::default()).unwrap();
        assert_eq!(default_judge.judge().model, "claude-opus-4-8");
    }

    #[test]
    fn budgets_map_to_ledger_limits() {
        let cfg = config("budgets:\n  run: {tokens: 5000000, usd: 50}\n  brief: {tokens: 400000}\n");
        let limits = budget_limits(&cfg.budgets);
        assert_eq!(
            limits.run,
            Limit {
                tokens: Some(5_000_000),
                usd: Some(50.0)
            }
        );
        assert_eq!(limits.workstream, Limit::default());
        assert_eq!(limits.brief.tokens, Some(400_000));
    }
}
