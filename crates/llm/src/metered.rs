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
use crate::message::{Request, Response};
use crate::provider::{BoxFuture, EventSink, Provider};
use crate::usage::{Price, UsageRecord, UsageSink, cost};

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

    /// Prices calls at `price`.
    pub fn with_price(mut self, price: Price) -> Self {
        self.price = Some(price);
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
        let result = self.inner.complete(request, sink, cancel).await;
        let latency = started.elapsed();
        let response = match result {
            Ok(response) => response,
            Err(error) => {
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

    fn complete<'a>(
        &'a self,
        request: &'a Request,
        sink: EventSink<'a>,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.call(request, sink, cancel))
    }
}
