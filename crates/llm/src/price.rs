//! Prices and cost: a price per model (USD per million tokens for input, output, cache reads and cache
//! writes, as configured in team.yaml) and the cost of one call. A leaf: the budget ledger and the usage
//! record both price calls with it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::message::Usage;

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
