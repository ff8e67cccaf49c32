//! The one error type every provider returns. Variants say what went wrong in terms a caller can act on:
//! whether a retry may help ([`LlmError::is_retryable`]), what the provider said, which variable to set.

use std::time::Duration;

use crate::budget::BudgetExceeded;

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// HTTP 429: too many requests or tokens; retry after the given delay if the provider sent one.
    #[error("rate limited by the provider{}: {message}", after(retry_after))]
    RateLimited {
        /// The provider's `retry-after`, if any.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// HTTP 529 or an `overloaded_error`: the provider is busy.
    #[error("the provider is overloaded{}: {message}", after(retry_after))]
    Overloaded {
        /// The provider's `retry-after`, if any.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// HTTP 5xx.
    #[error("provider server error (HTTP {status}): {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// The provider's `retry-after`, if any.
        retry_after: Option<Duration>,
    },
    /// HTTP 400 and other 4xx the request itself caused; not retried.
    #[error("the provider rejected the request (HTTP {status}): {message}")]
    BadRequest {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// HTTP 401/403: the key is wrong or lacks permission; not retried.
    #[error("the provider refused the credentials (HTTP {status}): {message}")]
    Auth {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// No response, or no bytes for longer than the read timeout.
    #[error("the provider did not answer in time ({0})")]
    Timeout(String),
    /// The connection could not be made or broke before a response arrived.
    #[error("could not reach the provider: {0}")]
    Connection(String),
    /// The response stream ended before the model finished.
    #[error("the response stream ended early: {0}")]
    StreamDropped(String),
    /// The provider sent something that does not follow its protocol.
    #[error("unexpected response from the provider: {0}")]
    Protocol(String),
    /// The call was cancelled by the caller.
    #[error("the call was cancelled")]
    Cancelled,
    /// The API key variable is not set.
    #[error("no API key: set the environment variable {var}")]
    MissingKey {
        /// The variable to set.
        var: String,
    },
    /// The provider configuration is unusable (bad base URL, TLS set-up).
    #[error("invalid provider configuration: {0}")]
    Config(String),
    /// The script has no reply for this request, or the script file is invalid.
    #[error("{0}")]
    Script(String),
    /// A cassette could not be written or read, or a replayed request differs from the recorded one.
    #[error("{0}")]
    Cassette(String),
    /// A budget would be exceeded; the call was not made.
    #[error(transparent)]
    Budget(#[from] BudgetExceeded),
}

fn after(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!(" (retry after {:.1}s)", d.as_secs_f64()),
        None => String::new(),
    }
}

impl LlmError {
    /// Whether the same request may succeed later: rate limits, overload, server errors, timeouts,
    /// connection failures and streams that dropped before anything was received.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Overloaded { .. }
                | LlmError::Server { .. }
                | LlmError::Timeout(_)
                | LlmError::Connection(_)
                | LlmError::StreamDropped(_)
        )
    }

    /// Whether the provider went silent: no response, or no bytes of a stream, within the idle timeout (or
    /// the whole request past its limit).
    pub fn is_stall(&self) -> bool {
        matches!(self, LlmError::Timeout(_))
    }

    /// The delay the provider asked for, if it named one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. }
            | LlmError::Overloaded { retry_after, .. }
            | LlmError::Server { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}
