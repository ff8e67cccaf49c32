//! Usage and cost: a price per model (USD per million tokens for input, output, cache reads and cache
//! writes, as configured in team.yaml), the cost of one call, and the record of each call that the runner
//! turns into a `usage` event through its [`UsageSink`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::budget::BudgetExceeded;
use crate::message::{CallMeta, StopReason, Usage};

/// What a model costs, in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Price {
    /// Uncached input.
    #[serde(default)]
    pub input: f64,
    /// Output.
    #[serde(default)]
    pub output: f64,
    /// Input read from the prompt cache.
    #[serde(default)]
    pub cache_read: f64,
    /// Input written to the prompt cache.
    #[serde(default)]
    pub cache_write: f64,
}

/// The cost in USD of `usage` at `price`.
pub fn cost(usage: &Usage, price: &Price) -> f64 {
    let per_token = |tokens: u64, usd_per_million: f64| tokens as f64 * usd_per_million / 1_000_000.0;
    per_token(usage.input, price.input)
        + per_token(usage.output, price.output)
        + per_token(usage.cache_read, price.cache_read)
        + per_token(usage.cache_write, price.cache_write)
}

/// Prices by model name.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PriceTable(pub BTreeMap<String, Price>);

impl PriceTable {
    /// The price of `model`, if configured.
    pub fn get(&self, model: &str) -> Option<&Price> {
        self.0.get(model)
    }
}

/// One completed call, as the runner records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// Who called and why.
    pub meta: CallMeta,
    /// Provider family (`anthropic`, `openai`, `scripted`).
    pub provider: String,
    /// The model that answered.
    pub model: String,
    /// Tokens used.
    pub usage: Usage,
    /// Cost in USD; `None` when the model has no configured price.
    pub cost_usd: Option<f64>,
    /// Wall time from request to final event.
    #[serde(with = "millis")]
    pub latency: Duration,
    /// Why the model stopped.
    pub stop_reason: StopReason,
}

/// Where usage records and budget refusals go; the runner implements it to write `usage` and
/// `budget_exhausted` events and open the `budget` gate.
pub trait UsageSink: Send + Sync {
    /// A call completed.
    fn record_usage(&self, record: &UsageRecord);

    /// A call was refused before it was made because `exceeded`.
    fn budget_exhausted(&self, meta: &CallMeta, exceeded: &BudgetExceeded);

    /// A call met trouble at the provider, reported the moment it is noticed (the runner logs it at once,
    /// not when the call ends): an attempt failed and is retried, or the provider went silent and the call
    /// gives up. Ignored by default.
    fn provider_trouble(&self, meta: &CallMeta, trouble: &ProviderTrouble) {
        let _ = (meta, trouble);
    }
}

/// Trouble a call met at the provider (see [`UsageSink::provider_trouble`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderTrouble {
    /// The model called.
    pub model: String,
    /// What went wrong, as the error says it.
    pub error: String,
    /// The provider went silent past the idle timeout (a stalled stream or no response).
    pub stalled: bool,
    /// The attempt that failed (from 1) and the wait before the next one; `None`: the call gives up.
    pub retry: Option<(u32, Duration)>,
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_a_weighted_sum_per_million() {
        let price = Price {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let usage = Usage {
            input: 1_000_000,
            output: 100_000,
            cache_read: 2_000_000,
            cache_write: 400_000,
        };
        let usd = cost(&usage, &price);
        assert!((usd - (3.0 + 1.5 + 0.6 + 1.5)).abs() < 1e-9, "{usd}");
        assert_eq!(cost(&Usage::default(), &price), 0.0);
    }

    #[test]
    fn price_table_reads_from_yaml() {
        let yaml =
            "claude-sonnet-4-5: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}\nlocal: {}\n";
        let table: PriceTable = serde_saphyr::from_str(yaml).unwrap();
        assert_eq!(table.get("claude-sonnet-4-5").map(|p| p.output), Some(15.0));
        assert_eq!(table.get("local"), Some(&Price::default()));
        assert_eq!(table.get("other"), None);
    }
}
