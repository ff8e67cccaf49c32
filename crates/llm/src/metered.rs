//! Metering around any provider: before the call, reserve its worst-case estimate in the shared
//! [`BudgetLedger`] and refuse it (fail closed, reported to the [`UsageSink`]) if a limit would be passed;
//! after it, settle the real usage and cost, and hand a [`UsageRecord`] with latency, model and brief to the
//! sink. A call that fails releases its reservation, since providers report no usage for failed calls.
//! Stack it outside [`Retrying`](crate::Retrying) so one logical call is checked once.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use crate::budget::{BudgetLedger, CallScope, Spend};
use crate::cancel::CancelToken;
use crate::error::LlmError;
use crate::message::StreamEvent;
use crate::message::{Request, Response};
use crate::price::{Price, cost};
use crate::provider::{BoxFuture, EventSink, Provider};
use crate::usage::{ProviderTrouble, UsageRecord, UsageSink};

/// A provider whose calls are budgeted and recorded.
pub struct Metered<P> {
    inner: P,
    price: Option<Price>,
    ledger: Option<Arc<Mutex<BudgetLedger>>>,
    sink: Arc<dyn UsageSink>,
}

impl<P: std::fmt::Debug> std::fmt::Debug for Metered<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metered")
            .field("inner", &self.inner)
            .field("price", &self.price)
            .field("budgeted", &self.ledger.is_some())
            .finish_non_exhaustive()
    }
}

impl<P: Provider> Metered<P> {
    /// Wraps `inner`, reporting to `sink`; no price and no budget until set.
    pub fn new(inner: P, sink: Arc<dyn UsageSink>) -> Self {
        Self {
            inner,
            price: None,
            ledger: None,
            sink,
        }
    }

    /// Prices calls at `price` (`None`: unpriced, they count tokens only).
    pub fn with_price(mut self, price: impl Into<Option<Price>>) -> Self {
        self.price = price.into();
        self
    }

    /// Checks and charges calls against `ledger`, shared with every other provider of the run.
    pub fn with_ledger(mut self, ledger: Arc<Mutex<BudgetLedger>>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    fn ledger(&self) -> Option<MutexGuard<'_, BudgetLedger>> {
        // A panic elsewhere while holding the lock leaves plain numbers behind; they are still usable.
        self.ledger
            .as_ref()
            .map(|l| l.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    async fn call(
        &self,
        request: &Request,
        sink: EventSink<'_>,
        cancel: &CancelToken,
    ) -> Result<Response, LlmError> {
        let scope = CallScope::from_meta(&request.meta);
        let estimate = Spend::estimate(request, self.price.as_ref());
        if let Some(mut ledger) = self.ledger() {
            let reserved = ledger.reserve(&scope, estimate);
            drop(ledger);
            if let Err(exceeded) = reserved {
                self.sink.budget_exhausted(&request.meta, &exceeded);
                return Err(exceeded.into());
            }
        }
        let started = Instant::now();
        let result = {
            // Each retry is told to the usage sink as it happens, so a live log shows why a call is slow.
            let mut watching = |event: StreamEvent| {
                if let StreamEvent::Retrying {
                    attempt,
                    delay,
                    error,
                    stalled,
                } = &event
                {
                    self.sink.provider_trouble(
                        &request.meta,
                        &ProviderTrouble {
                            model: self.inner.model().to_owned(),
                            error: error.clone(),
                            stalled: *stalled,
                            retry: Some((*attempt, *delay)),
                        },
                    );
                }
                sink(event);
            };
            self.inner.complete(request, &mut watching, cancel).await
        };
        let latency = started.elapsed();
        let response = match result {
            Ok(response) => response,
            Err(error) => {
                if error.is_stall() {
                    self.sink.provider_trouble(
                        &request.meta,
                        &ProviderTrouble {
                            model: self.inner.model().to_owned(),
                            error: error.to_string(),
                            stalled: true,
                            retry: None,
                        },
                    );
                }
                if let Some(mut ledger) = self.ledger() {
                    ledger.release(&scope, estimate);
                }
                return Err(error);
            }
        };
        if let Some(mut ledger) = self.ledger() {
            ledger.settle(&scope, estimate, Spend::of(&response.usage, self.price.as_ref()));
        }
        self.sink.record_usage(&UsageRecord {
            meta: request.meta.clone(),
            provider: self.inner.kind().to_owned(),
            model: response.model.clone(),
            usage: response.usage,
            cost_usd: self.price.as_ref().map(|p| cost(&response.usage, p)),
            latency,
            stop_reason: response.stop_reason.clone(),
        });
        Ok(response)
    }
}

impl<P: Provider> Provider for Metered<P> {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn price(&self) -> Option<Price> {
        self.price
    }

    fn complete<'a>(
        &'a self,
        request: &'a Request,
        sink: EventSink<'a>,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.call(request, sink, cancel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{BudgetLimits, Scope};
    use crate::message::{CallMeta, Message};
    use crate::provider::complete;
    use crate::scripted::{Script, ScriptedProvider};

    #[derive(Default)]
    struct Records(Mutex<Vec<UsageRecord>>);

    impl UsageSink for Records {
        fn record_usage(&self, record: &UsageRecord) {
            self.0.lock().unwrap().push(record.clone());
        }

        fn budget_exhausted(&self, _meta: &CallMeta, _exceeded: &crate::BudgetExceeded) {}
    }

    const SCRIPT: &str =
        "replies:\n  - reply: {text: ok, usage: {input: 2000, output: 100, cache_write: 400}}\n";

    /// The built-in agent costs its usage records at `Provider::price` of the metered provider it holds
    /// (behind an `Arc<dyn Provider>`), so that price must be the one the ledger was charged at.
    #[tokio::test]
    async fn a_priced_call_charges_the_ledger_what_its_record_and_its_price_say() {
        let price = Price {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let ledger = Arc::new(Mutex::new(BudgetLedger::new(BudgetLimits::default())));
        let records = Arc::new(Records::default());
        let provider: Arc<dyn Provider> = Arc::new(
            Metered::new(
                ScriptedProvider::new(Script::from_yaml(SCRIPT).unwrap()),
                records.clone(),
            )
            .with_price(price)
            .with_ledger(ledger.clone()),
        );
        assert_eq!(provider.price(), Some(price));
        let request = Request {
            messages: vec![Message::user("go")],
            max_tokens: 200,
            ..Request::default()
        };
        let response = complete(provider.as_ref(), &request).await.unwrap();
        // 2000·3 + 100·15 + 400·3.75 µ$.
        let expected = 0.009;
        let charged = ledger.lock().unwrap().spent(&Scope::Run).usd;
        assert!((charged - expected).abs() < 1e-12, "{charged}");
        let from_price = cost(&response.usage, &provider.price().unwrap());
        assert!((from_price - expected).abs() < 1e-12, "{from_price}");
        let recorded = records.0.lock().unwrap()[0].cost_usd.unwrap();
        assert!((recorded - expected).abs() < 1e-12, "{recorded}");

        // Unpriced, nothing claims a price or a cost: the call counts tokens only.
        let unpriced: Arc<dyn Provider> = Arc::new(
            Metered::new(
                ScriptedProvider::new(Script::from_yaml(SCRIPT).unwrap()),
                records.clone(),
            )
            .with_price(None)
            .with_ledger(ledger.clone()),
        );
        assert_eq!(unpriced.price(), None);
        complete(unpriced.as_ref(), &request).await.unwrap();
        assert_eq!(records.0.lock().unwrap()[1].cost_usd, None);
        let spent = ledger.lock().unwrap().spent(&Scope::Run);
        assert!((spent.usd - expected).abs() < 1e-12, "{}", spent.usd);
        assert_eq!(spent.tokens, 2 * 2500);
    }
}
