//! An [`LlmError`] kept in a cassette, so that a replay fails the call the same way.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::LlmError;

/// An [`LlmError`] as a cassette keeps it, so a replay fails the call the same way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedError {
    /// The variant: `rate_limited`, `overloaded`, `server`, `bad_request`, `auth`, `timeout`, `connection`,
    /// `stream_dropped`, `protocol`, `config`, `script`, `cassette`, `missing_key`.
    pub kind: String,
    /// Its message.
    pub message: String,
    /// The HTTP status, for the variants that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The `retry-after` in seconds, when the provider sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<f64>,
}

impl RecordedError {
    /// The recordable form of `error`; `None` for a cancelled call or a budget refusal, which are the
    /// runner's doing, not the model's, and happen again by themselves.
    pub(crate) fn of(error: &LlmError) -> Option<Self> {
        let plain = |kind: &str, message: &str| RecordedError {
            kind: kind.into(),
            message: message.into(),
            status: None,
            retry_after_secs: None,
        };
        let secs = |d: &Option<Duration>| d.map(|d| d.as_secs_f64());
        Some(match error {
            LlmError::RateLimited { retry_after, message } => RecordedError {
                retry_after_secs: secs(retry_after),
                ..plain("rate_limited", message)
            },
            LlmError::Overloaded { retry_after, message } => RecordedError {
                retry_after_secs: secs(retry_after),
                ..plain("overloaded", message)
            },
            LlmError::Server {
                status,
                message,
                retry_after,
            } => RecordedError {
                status: Some(*status),
                retry_after_secs: secs(retry_after),
                ..plain("server", message)
            },
            LlmError::BadRequest { status, message } => RecordedError {
                status: Some(*status),
                ..plain("bad_request", message)
            },
            LlmError::Auth { status, message } => RecordedError {
                status: Some(*status),
                ..plain("auth", message)
            },
            LlmError::Timeout(m) => plain("timeout", m),
            LlmError::Connection(m) => plain("connection", m),
            LlmError::StreamDropped(m) => plain("stream_dropped", m),
            LlmError::Protocol(m) => plain("protocol", m),
            LlmError::Config(m) => plain("config", m),
            LlmError::Script(m) => plain("script", m),
            LlmError::Cassette(m) => plain("cassette", m),
            LlmError::MissingKey { var } => plain("missing_key", var),
            LlmError::Cancelled | LlmError::Budget(_) => return None,
        })
    }

    /// The error again.
    pub(crate) fn to_error(&self) -> LlmError {
        let message = self.message.clone();
        let retry_after = self
            .retry_after_secs
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let status = self.status.unwrap_or(0);
        match self.kind.as_str() {
            "rate_limited" => LlmError::RateLimited { retry_after, message },
            "overloaded" => LlmError::Overloaded { retry_after, message },
            "server" => LlmError::Server {
                status,
                message,
                retry_after,
            },
            "bad_request" => LlmError::BadRequest { status, message },
            "auth" => LlmError::Auth { status, message },
            "timeout" => LlmError::Timeout(message),
            "connection" => LlmError::Connection(message),
            "stream_dropped" => LlmError::StreamDropped(message),
            "protocol" => LlmError::Protocol(message),
            "config" => LlmError::Config(message),
            "script" => LlmError::Script(message),
            "missing_key" => LlmError::MissingKey { var: message },
            _ => LlmError::Cassette(message),
        }
    }
}
