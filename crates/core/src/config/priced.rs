//! Whether a budget in dollars can be kept: a `usd:` limit is charged from `models.prices`, so every model
//! the tiers call must have a price there. An unpriced model's calls would cost `$0` against the limit and a
//! run could spend without bound under it, so that is an error (`agency config check`, and `agency run` when
//! it starts) naming the model and the key to add, never a silent zero.

use std::fmt;

use crate::Tier;

use super::TeamConfig;

/// A model the tiers call that `models.prices` does not price, while a budget is set in USD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnpricedModel {
    /// The model id.
    pub model: String,
    /// Where team.yaml binds it: `models.fast-cheap.model`.
    pub field: String,
    /// The tiers that call it.
    pub tiers: Vec<Tier>,
}

/// Every model under a USD budget that has no price: what [`TeamConfig::unpriced_under_usd_budget`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnpricedUnderUsd {
    /// The `budgets` keys that set a USD limit: `budgets.run.usd`.
    pub limits: Vec<&'static str>,
    /// The unpriced models, in tier order of their first tier.
    pub models: Vec<UnpricedModel>,
}

impl fmt::Display for UnpricedUnderUsd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let limits = self.limits.join(", ");
        for (i, unpriced) in self.models.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            let tiers: Vec<&str> = unpriced.tiers.iter().map(|t| t.as_str()).collect();
            write!(
                f,
                "{model} ({}, called by {}) has no price, but a budget is set in dollars ({limits}): its calls \
                 would count $0 against it; add `models.prices.{model}: {{input: USD, output: USD}}` (USD per \
                 million tokens) to team.yaml",
                unpriced.field,
                tiers.join(", "),
                model = unpriced.model,
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for UnpricedUnderUsd {}

impl TeamConfig {
    /// The `budgets` keys that set a limit in USD.
    pub fn usd_budget_keys(&self) -> Vec<&'static str> {
        [
            ("budgets.run.usd", &self.budgets.run),
            ("budgets.workstream.usd", &self.budgets.workstream),
            ("budgets.brief.usd", &self.budgets.brief),
        ]
        .into_iter()
        .filter(|(_, limit)| limit.usd.is_some())
        .map(|(key, _)| key)
        .collect()
    }

    /// Checks that every model the tiers `calling` call has a price in `models.prices` when any budget is
    /// set in USD. `calling` says which tiers call their configured model (all of them in a live run; under
    /// `--script`, only those whose agent calls its model itself). A tier whose level has no binding is not
    /// reported here: building its provider fails with its own error.
    pub fn unpriced_under_usd_budget(&self, calling: impl Fn(Tier) -> bool) -> Result<(), UnpricedUnderUsd> {
        let limits = self.usd_budget_keys();
        if limits.is_empty() {
            return Ok(());
        }
        let mut models: Vec<UnpricedModel> = Vec::new();
        for tier in Tier::ALL.into_iter().filter(|t| calling(*t)) {
            let level = self.tiers.capability(tier);
            let Some(binding) = self.models.binding(level) else {
                continue;
            };
            if self.models.price(&binding.model).is_some() {
                continue;
            }
            match models.iter_mut().find(|m| m.model == binding.model) {
                Some(known) => known.tiers.push(tier),
                None => models.push(UnpricedModel {
                    model: binding.model.clone(),
                    field: format!("models.{level}.model"),
                    tiers: vec![tier],
                }),
            }
        }
        // The auditor's own model (`signoff.auditor_model`) is called wherever T5's sign-offs are.
        if let Some(auditor) = self.signoff.auditor_model.as_ref().filter(|_| calling(Tier::T5))
            && self.models.price(&auditor.model).is_none()
        {
            match models.iter_mut().find(|m| m.model == auditor.model) {
                Some(known) if !known.tiers.contains(&Tier::T5) => known.tiers.push(Tier::T5),
                Some(_) => {}
                None => models.push(UnpricedModel {
                    model: auditor.model.clone(),
                    field: "signoff.auditor_model.model".to_string(),
                    tiers: vec![Tier::T5],
                }),
            }
        }
        if models.is_empty() {
            Ok(())
        } else {
            Err(UnpricedUnderUsd { limits, models })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse_team_config;
    use super::*;

    fn config(yaml: &str) -> TeamConfig {
        parse_team_config(yaml, "team.yaml").unwrap()
    }

    #[test]
    fn token_budgets_and_no_budgets_need_no_prices() {
        assert_eq!(config("").unpriced_under_usd_budget(|_| true), Ok(()));
        let tokens = config("budgets:\n  run: {tokens: 1000}\n");
        assert_eq!(tokens.unpriced_under_usd_budget(|_| true), Ok(()));
    }

    #[test]
    fn a_usd_budget_names_every_unpriced_model_its_tiers_call() {
        let cfg = config(
            "budgets:\n  run: {usd: 5}\n  brief: {usd: 1}\nmodels:\n  prices:\n    claude-sonnet-4-5: {input: 3, output: 15}\n",
        );
        let err = cfg.unpriced_under_usd_budget(|_| true).unwrap_err();
        assert_eq!(err.limits, ["budgets.run.usd", "budgets.brief.usd"]);
        let found: Vec<(&str, &str, Vec<Tier>)> = err
            .models
            .iter()
            .map(|m| (m.model.as_str(), m.field.as_str(), m.tiers.clone()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "claude-opus-4-8",
                    "models.reasoning-heavy.model",
                    vec![Tier::T1, Tier::T2]
                ),
                ("claude-haiku-4-5", "models.fast-cheap.model", vec![Tier::T4]),
            ]
        );
        let message = err.to_string();
        assert!(
            message.starts_with(
                "claude-opus-4-8 (models.reasoning-heavy.model, called by t1, t2) has no price, but a budget is \
                 set in dollars (budgets.run.usd, budgets.brief.usd): its calls would count $0 against it"
            ),
            "{message}"
        );
        assert!(
            message.contains("add `models.prices.claude-haiku-4-5: {input: USD, output: USD}`"),
            "{message}"
        );
        // Only the tiers that call their model count: T4 alone here, on the unpriced haiku.
        let t4 = cfg.unpriced_under_usd_budget(|t| t == Tier::T4).unwrap_err();
        assert_eq!(t4.models.len(), 1);
        assert_eq!(t4.models[0].model, "claude-haiku-4-5");
        assert_eq!(cfg.unpriced_under_usd_budget(|t| t == Tier::T3), Ok(()));
    }

    #[test]
    fn an_unpriced_auditor_model_under_a_usd_budget_is_named_by_its_key() {
        let priced = "budgets:\n  run: {usd: 5}\nmodels:\n  prices:\n    claude-sonnet-4-5: {input: 3, output: 15}\n    \
                      claude-opus-4-8: {input: 15, output: 75}\n    claude-haiku-4-5: {input: 1, output: 5}\n";
        assert_eq!(config(priced).unpriced_under_usd_budget(|_| true), Ok(()));
        let cfg = config(&format!(
            "{priced}providers:\n  anthropic: {{kind: anthropic}}\n  openai: {{kind: openai}}\n\
             signoff:\n  auditor_model: {{provider: openai, model: gpt-audit}}\n"
        ));
        let err = cfg.unpriced_under_usd_budget(|_| true).unwrap_err();
        assert_eq!(err.models.len(), 1, "{err}");
        assert_eq!(err.models[0].model, "gpt-audit");
        assert_eq!(err.models[0].field, "signoff.auditor_model.model");
        assert_eq!(err.models[0].tiers, [Tier::T5]);
        // No T5 sign-off calls its model (a scripted run): the auditor's model is not called either.
        assert_eq!(cfg.unpriced_under_usd_budget(|t| t != Tier::T5), Ok(()));
    }
}
