//! The model a tier runs on, as an external CLI (Claude Code, Codex, pi) needs to know it: the model id,
//! its price, the API its provider speaks and the provider's own endpoint. Read from team.yaml by
//! [`TierModel::of`]; the runtime choice hands it to each runtime.

use agency_core::Tier;
use agency_core::config::{ProviderKind, TeamConfig};

/// The model team.yaml gives a tier (through its capability level), as an external CLI needs to know it.
#[derive(Debug, Clone, PartialEq)]
pub struct TierModel {
    /// The model id, sent verbatim.
    pub model: String,
    /// Its price from `models.prices`, for a CLI that reports tokens but no cost (Codex), or its cost only
    /// at the end of a session (Claude Code).
    pub price: Option<agency_llm::Price>,
    /// The API its provider speaks: Claude Code takes only Anthropic models, Codex only OpenAI ones.
    pub kind: ProviderKind,
    /// Where team.yaml names it, for errors: `models.fast-cheap.model`.
    pub field: String,
    /// The provider's own endpoint, when team.yaml gives it a `base_url`: an external CLI started on this
    /// model calls it too, as the built-in agent does.
    pub endpoint: Option<Endpoint>,
    /// Its `max_tokens` in team.yaml, when set: the most output the model is said to allow in one reply,
    /// up to which the built-in agent raises the cap of a reply that was cut off.
    pub max_tokens: Option<u32>,
}

/// A provider's endpoint from team.yaml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The provider's name in team.yaml.
    pub provider: String,
    /// Its `base_url`.
    pub base_url: String,
    /// Its `api_key_env`, when set; unset, the kind's default variable (an OpenAI-compatible server with
    /// its own `base_url` is then called without a key, so a user's OpenAI key never goes elsewhere).
    pub api_key_env: Option<String>,
}

impl TierModel {
    /// The model bound to `tier`'s capability level, if team.yaml binds one to a configured provider.
    pub fn of(team: &TeamConfig, tier: Tier) -> Option<TierModel> {
        let level = team.tiers.capability(tier);
        let binding = team.models.binding(level)?;
        let provider = team.providers.get(&binding.provider)?;
        Some(TierModel {
            model: binding.model.clone(),
            price: team.models.price(&binding.model).map(agency_llm::Price::from),
            endpoint: provider.base_url.clone().map(|base_url| Endpoint {
                provider: binding.provider.clone(),
                base_url,
                api_key_env: provider.api_key_env.clone(),
            }),
            kind: provider.kind,
            field: format!("models.{level}.model"),
            max_tokens: binding.max_tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tier_model_comes_from_its_capability_level_and_provider() {
        let team = TeamConfig::default();
        let t4 = TierModel::of(&team, Tier::T4).unwrap();
        assert_eq!(
            t4,
            TierModel {
                model: "claude-haiku-4-5".into(),
                price: None,
                kind: ProviderKind::Anthropic,
                field: "models.fast-cheap.model".into(),
                endpoint: None,
                max_tokens: None,
            }
        );
        let mut unbound = TeamConfig::default();
        unbound.models.fast_cheap = None;
        assert_eq!(TierModel::of(&unbound, Tier::T4), None);
    }

    #[test]
    fn a_tier_model_carries_its_provider_endpoint_and_price_when_team_yaml_gives_them() {
        let team = agency_core::config::parse_team_config(
            "providers:\n  anthropic: {kind: anthropic, base_url: 'https://llm.corp/anthropic', api_key_env: CORP_KEY}\n\
             models:\n  prices:\n    claude-haiku-4-5: {input: 1, output: 5}\n",
            "team.yaml",
        )
        .unwrap();
        let t4 = TierModel::of(&team, Tier::T4).unwrap();
        assert_eq!(
            t4.endpoint,
            Some(Endpoint {
                provider: "anthropic".into(),
                base_url: "https://llm.corp/anthropic".into(),
                api_key_env: Some("CORP_KEY".into()),
            })
        );
        assert_eq!(t4.price.map(|p| (p.input, p.output)), Some((1.0, 5.0)));
    }
}
