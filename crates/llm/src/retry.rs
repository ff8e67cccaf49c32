//! Retries around any provider. Rate limits (429), overload (529), server errors (5xx), timeouts, connection
//! failures and streams that dropped before the first event are retried with exponential backoff and jitter,
//! or after the provider's `retry-after` when it sent one; everything else (400, 401, 403, ...) is returned
//! at once with the provider's message. A call that already streamed events to the caller is never
//! repeated, so a sink never sees an answer twice. Retrying is bounded in time ([`RetryPolicy::give_up_after`],
//! a provider's `timeouts.outage_seconds`): a short outage is waited out inside the call, a longer one is
//! returned to the caller (the runner then pauses the run at an outage gate). Sleeping goes through
//! [`RetryPolicy::sleep`], so tests can record delays instead of waiting.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cancel::CancelToken;
use crate::error::LlmError;
use crate::message::{Request, Response, StreamEvent};
use crate::provider::{BoxFuture, EventSink, Provider};

/// How long a call retries a provider in trouble by default before it gives up: a provider's
/// `timeouts.outage_seconds` in team.yaml.
pub const DEFAULT_GIVE_UP_AFTER: Duration = Duration::from_secs(60);

/// How a retry waits: given the delay, a future that completes after it.
pub type Sleeper = Arc<dyn Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync>;

/// How often and how patiently to retry.
#[derive(Clone)]
pub struct RetryPolicy {
    /// Attempts in all, the first included; 1 means never retry. The default sets no practical limit:
    /// [`RetryPolicy::give_up_after`] ends the retrying.
    pub max_attempts: u32,
    /// The first backoff; doubled for each further retry.
    pub base_delay: Duration,
    /// No single wait is longer, whether computed or asked for by `retry-after`.
    pub max_delay: Duration,
    /// How long a call may go on retrying, counted from its first attempt (the attempts' own time and the
    /// waits between them): no wait goes past it, and no attempt starts after it. `None`: only
    /// [`RetryPolicy::max_attempts`] bounds the retrying.
    pub give_up_after: Option<Duration>,
    /// How to wait (default: `tokio::time::sleep`).
    pub sleep: Sleeper,
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("base_delay", &self.base_delay)
            .field("max_delay", &self.max_delay)
            .field("give_up_after", &self.give_up_after)
            .finish_non_exhaustive()
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: u32::MAX,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            give_up_after: Some(DEFAULT_GIVE_UP_AFTER),
            sleep: Arc::new(|d| Box::pin(tokio::time::sleep(d))),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1 for the first retry). `retry-after` wins when given; otherwise
    /// `base · 2^(retry-1)`, scaled by a jitter factor in [0.5, 1] drawn from `unit` in [0, 1) so that
    /// callers rate-limited together do not retry together. Never more than `max_delay`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, unit: f64) -> Duration {
        let delay = match retry_after {
            Some(asked) => asked,
            None => {
                let factor = 2f64.powi(i32::try_from(retry.saturating_sub(1)).unwrap_or(i32::MAX));
                let backoff = self.base_delay.as_secs_f64() * factor;
                let jittered = backoff * (0.5 + 0.5 * unit.clamp(0.0, 1.0));
                Duration::try_from_secs_f64(jittered).unwrap_or(self.max_delay)
            }
        };
        delay.min(self.max_delay)
    }

    /// The wait before the next attempt, given the wait [`RetryPolicy::delay`] proposes and what the call
    /// has spent so far; `None` when the time bound is reached (give up).
    fn wait_within_bound(&self, proposed: Duration, spent: Duration) -> Option<Duration> {
        match self.give_up_after {
            None => Some(proposed),
            Some(bound) => {
                let left = bound.checked_sub(spent).filter(|left| !left.is_zero())?;
                Some(proposed.min(left))
            }
        }
    }
}

/// A pseudo-random number in [0, 1) for jitter; needs to differ between processes, not to be secret.
fn jitter_unit() -> f64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) ^ seed;
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// A provider that retries another one under a [`RetryPolicy`].
#[derive(Debug)]
pub struct Retrying<P> {
    inner: P,
    policy: RetryPolicy,
}

impl<P: Provider> Retrying<P> {
    /// Wraps `inner`.
    pub fn new(inner: P, policy: RetryPolicy) -> Self {
        Self { inner, policy }
    }

    async fn call(
        &self,
        request: &Request,
        sink: EventSink<'_>,
        cancel: &CancelToken,
    ) -> Result<Response, LlmError> {
        let mut attempt = 1;
        let started = std::time::Instant::now();
        // What the waits asked for: with a sleeper that does not really sleep (a test's), the bound is kept
        // on this rather than on the clock.
        let mut waited = Duration::ZERO;
        loop {
            let mut streamed = false;
            let result = {
                let mut counting = |event: StreamEvent| {
                    // An inner wrapper's retry notice is not part of an answer.
                    streamed |= !matches!(event, StreamEvent::Retrying { .. });
                    sink(event);
                };
                self.inner.complete(request, &mut counting, cancel).await
            };
            let error = match result {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            if !error.is_retryable() || streamed || attempt >= self.policy.max_attempts {
                return Err(error);
            }
            let proposed = self.policy.delay(attempt, error.retry_after(), jitter_unit());
            let spent = started.elapsed().max(waited);
            let Some(delay) = self.policy.wait_within_bound(proposed, spent) else {
                return Err(error);
            };
            waited += delay;
            sink(StreamEvent::Retrying {
                attempt,
                delay,
                error: error.to_string(),
                stalled: error.is_stall(),
            });
            let sleep = (self.policy.sleep)(delay);
            cancel.until_cancelled(sleep).await.ok_or(LlmError::Cancelled)?;
            attempt += 1;
        }
    }
}

impl<P: Provider> Provider for Retrying<P> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_bounded_jitter_and_respects_retry_after() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay(1, None, 1.0), Duration::from_secs(1));
        assert_eq!(policy.delay(1, None, 0.0), Duration::from_millis(500));
        assert_eq!(policy.delay(3, None, 1.0), Duration::from_secs(4));
        assert_eq!(policy.delay(30, None, 1.0), Duration::from_secs(60));
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(7)), 0.3),
            Duration::from_secs(7)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(600)), 0.3),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn waits_stop_at_the_time_bound() {
        let policy = RetryPolicy {
            give_up_after: Some(Duration::from_secs(10)),
            ..RetryPolicy::default()
        };
        let secs = Duration::from_secs;
        assert_eq!(policy.wait_within_bound(secs(4), secs(2)), Some(secs(4)));
        // The last wait is cut to the bound, so the last attempt is made at it.
        assert_eq!(policy.wait_within_bound(secs(8), secs(7)), Some(secs(3)));
        assert_eq!(policy.wait_within_bound(secs(1), secs(10)), None);
        assert_eq!(policy.wait_within_bound(secs(1), secs(11)), None);
        let unbounded = RetryPolicy {
            give_up_after: None,
            ..RetryPolicy::default()
        };
        assert_eq!(unbounded.wait_within_bound(secs(8), secs(7000)), Some(secs(8)));
    }

    #[test]
    fn jitter_stays_in_range() {
        for _ in 0..1000 {
            let u = jitter_unit();
            assert!((0.0..1.0).contains(&u));
        }
    }
}
