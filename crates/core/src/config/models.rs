//! Providers and capability levels: where model calls go and which model fills each level.
//!
//! Tiers name a capability level (`reasoning-heavy`, `capable`, `fast-cheap`), never a model; this section
//! is the only place model names appear, so swapping providers is a config change. API keys never live
//! here: a provider names the environment variable that holds its key.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A capability level, the tiers' currency for "how strong a model".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CapabilityLevel {
    /// Planning, architecture, final acceptance, judging.
    ReasoningHeavy,
    /// Coordination and verification.
    Capable,
    /// High-volume atomic implementation work.
    FastCheap,
}

impl CapabilityLevel {
    /// Every level, strongest first.
    pub const ALL: [CapabilityLevel; 3] = [
        CapabilityLevel::ReasoningHeavy,
        CapabilityLevel::Capable,
        CapabilityLevel::FastCheap,
    ];

    /// The name written in team.yaml.
    pub fn as_str(self) -> &'static str {
        match self {
            CapabilityLevel::ReasoningHeavy => "reasoning-heavy",
            CapabilityLevel::Capable => "capable",
            CapabilityLevel::FastCheap => "fast-cheap",
        }
    }
}

impl fmt::Display for CapabilityLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// The Anthropic Messages API.
    Anthropic,
    /// The OpenAI Chat Completions API, or any server compatible with it.
    Openai,
}

impl ProviderKind {
    /// The endpoint used when `base_url` is not set.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Openai => "https://api.openai.com/v1",
        }
    }

    /// The environment variable read for the key when `api_key_env` is not set.
    pub fn default_api_key_env(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Openai => "OPENAI_API_KEY",
        }
    }
}

/// One LLM endpoint, referenced by name from `models`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The protocol it speaks.
    pub kind: ProviderKind,
    /// The endpoint; unset means the kind's public API (see [`ProviderConfig::base_url`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key; unset means the kind's usual one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// How long to wait on this provider.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub timeouts: ProviderTimeouts,
}

impl ProviderConfig {
    /// A provider of this kind with every default.
    pub fn of_kind(kind: ProviderKind) -> Self {
        ProviderConfig {
            kind,
            base_url: None,
            api_key_env: None,
            timeouts: ProviderTimeouts::default(),
        }
    }

    /// The endpoint to call: `base_url`, or the kind's default.
    pub fn base_url(&self) -> &str {
        self.base_url.as_deref().unwrap_or(self.kind.default_base_url())
    }

    /// The environment variable to read the key from: `api_key_env`, or the kind's default.
    pub fn api_key_env(&self) -> &str {
        self.api_key_env
            .as_deref()
            .unwrap_or(self.kind.default_api_key_env())
    }
}

/// Time limits for one provider's requests, in seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderTimeouts {
    /// Establishing the connection. Default 10.
    pub connect_seconds: u32,
    /// The longest silence allowed inside a streamed reply before it is retried. Default 120.
    pub idle_seconds: u32,
    /// One whole request, streaming included. Default 900.
    pub request_seconds: u32,
    /// How long one call retries a provider in trouble (overloaded, rate-limited, erroring, unreachable,
    /// silent) before it gives up and the run pauses at an outage gate. Default 60.
    pub outage_seconds: u32,
}

impl Default for ProviderTimeouts {
    fn default() -> Self {
        ProviderTimeouts {
            connect_seconds: 10,
            idle_seconds: 120,
            request_seconds: 900,
            outage_seconds: 60,
        }
    }
}

/// The model that fills one capability level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelBinding {
    /// A key of `providers`.
    pub provider: String,
    /// The provider's model id, sent verbatim.
    pub model: String,
    /// Cap on output tokens per call; unset leaves the client's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature, 0 to 2; unset leaves the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
}

impl ModelBinding {
    /// A binding with no token cap and the provider's temperature.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        ModelBinding {
            provider: provider.into(),
            model: model.into(),
            max_tokens: None,
            temperature: None,
        }
    }
}

/// What a model costs, in USD per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the prompt cache; unset bills them at `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Input tokens written to the prompt cache; unset bills them at `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

/// Which model fills each capability level, and what models cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ModelsConfig {
    /// The model for `reasoning-heavy` work.
    #[serde(rename = "reasoning-heavy", skip_serializing_if = "Option::is_none")]
    pub reasoning_heavy: Option<ModelBinding>,
    /// The model for `capable` work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capable: Option<ModelBinding>,
    /// The model for `fast-cheap` work.
    #[serde(rename = "fast-cheap", skip_serializing_if = "Option::is_none")]
    pub fast_cheap: Option<ModelBinding>,
    /// Prices by model id, for cost accounting and USD budgets; a model without a price counts tokens only,
    /// and a USD budget over it is an error ([`super::TeamConfig::unpriced_under_usd_budget`]).
    #[serde(deserialize_with = "super::null_as_default")]
    pub prices: BTreeMap<String, ModelPrice>,
}

impl ModelsConfig {
    /// The model bound to a level, if one is configured.
    pub fn binding(&self, level: CapabilityLevel) -> Option<&ModelBinding> {
        match level {
            CapabilityLevel::ReasoningHeavy => self.reasoning_heavy.as_ref(),
            CapabilityLevel::Capable => self.capable.as_ref(),
            CapabilityLevel::FastCheap => self.fast_cheap.as_ref(),
        }
    }

    /// The price of a model id, if one is configured.
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        self.prices.get(model)
    }
}

impl Default for ModelsConfig {
    fn default() -> Self {
        ModelsConfig {
            reasoning_heavy: Some(ModelBinding::new("anthropic", "claude-opus-4-8")),
            capable: Some(ModelBinding::new("anthropic", "claude-sonnet-4-5")),
            fast_cheap: Some(ModelBinding::new("anthropic", "claude-haiku-4-5")),
            prices: BTreeMap::new(),
        }
    }
}

/// The providers a fresh config knows: Anthropic with its defaults.
pub(crate) fn default_providers() -> BTreeMap<String, ProviderConfig> {
    BTreeMap::from([(
        "anthropic".to_string(),
        ProviderConfig::of_kind(ProviderKind::Anthropic),
    )])
}

/// A model id that can be handed to a provider or a CLI as one command-line value: not empty, not starting
/// with `-` (a CLI would read it as a flag), no whitespace or control characters (no model id has them).
pub fn check_model_name(model: &str) -> Result<(), String> {
    if model.is_empty() {
        return Err("expected a model id, found nothing".to_owned());
    }
    if model.starts_with('-') {
        return Err(format!(
            "the model id {model:?} starts with `-`, which a command line would read as a flag"
        ));
    }
    if let Some(c) = model.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "the model id {model:?} contains {c:?}; expected no whitespace or control characters"
        ));
    }
    Ok(())
}
