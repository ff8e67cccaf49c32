//! Usage: the record of each call that the runner turns into a `usage` event through its [`UsageSink`]
//! (its cost from [`crate::price`]), and the provider trouble a sink hears about.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::budget::BudgetExceeded;
use crate::message::{CallMeta, StopReason, Usage};

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
