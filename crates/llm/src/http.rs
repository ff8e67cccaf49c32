//! HTTP plumbing shared by the two real clients: API keys that never print, timeouts, the reqwest client
//! (rustls with the `ring` provider), posting a body and reading its SSE stream with an idle timeout, and
//! mapping error statuses and bodies (Anthropic's `{type:"error", error:{type, message}}`, OpenAI's
//! `{error:{message, type, code}}`, Ollama's `{error:"..."}`) to [`LlmError`].

use std::fmt;
use std::future::Future;
use std::sync::Once;
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::LlmError;
use crate::sse::{SseEvent, SseParser};

/// An API key. Its `Debug` form is redacted so it cannot leak into logs or events.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// Reads the key from environment variable `var`; a missing or empty variable is
    /// [`LlmError::MissingKey`] naming it.
    pub fn from_env(var: &str) -> Result<Self, LlmError> {
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(Self(key.trim().to_owned())),
            _ => Err(LlmError::MissingKey { var: var.to_owned() }),
        }
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// How long to wait for the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// To establish the TCP/TLS connection.
    pub connect: Duration,
    /// For response headers, and then between two reads of the stream (an idle timeout).
    pub read: Duration,
    /// For the whole request, streaming included.
    pub request: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(120),
            request: Duration::from_secs(900),
        }
    }
}

/// Runs one whole request under `limit`.
pub(crate) async fn within<T>(
    limit: Duration,
    work: impl Future<Output = Result<T, LlmError>>,
) -> Result<T, LlmError> {
    tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
        Err(LlmError::Timeout(format!(
            "the request took longer than {}s",
            limit.as_secs_f64()
        )))
    })
}

const USER_AGENT: &str = concat!("agency/", env!("CARGO_PKG_VERSION"));

/// Longest provider message kept in an error; error pages can be large HTML documents.
const MAX_MESSAGE_CHARS: usize = 2000;

/// Builds the HTTP client for `base_url`. Loopback URLs bypass any proxy set in the environment.
pub(crate) fn build_client(base_url: &str, timeouts: Timeouts) -> Result<reqwest::Client, LlmError> {
    static RING: Once = Once::new();
    RING.call_once(|| {
        // Fails only if the process already chose a provider, which is then used instead.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let url = reqwest::Url::parse(base_url)
        .map_err(|e| LlmError::Config(format!("base URL {base_url:?} is not a URL: {e}")))?;
    let mut builder = reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .connect_timeout(timeouts.connect);
    let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]" | "::1"));
    if loopback {
        builder = builder.no_proxy();
    }
    builder
        .build()
        .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))
}

/// Joins a base URL and a path without doubling or dropping the slash.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'))
}

/// Posts `body` and waits for a successful response's headers; error statuses become typed errors.
pub(crate) async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: HeaderMap,
    body: Vec<u8>,
    read_timeout: Duration,
) -> Result<reqwest::Response, LlmError> {
    let send = client.post(url).headers(headers).body(body).send();
    let response = tokio::time::timeout(read_timeout, send)
        .await
        .map_err(|_| LlmError::Timeout(format!("no response within {}s", read_timeout.as_secs_f64())))?
        .map_err(send_error)?;
    let status = response.status().as_u16();
    if response.status().is_success() {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let text = match tokio::time::timeout(read_timeout, response.text()).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    };
    Err(error_from_status(status, &headers, &text))
}

/// Whether a successful response is one JSON document rather than an event stream: a server or proxy that
/// ignored `stream: true`. Clients then read it whole and replay it through their stream assembler.
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// The whole body of a JSON response.
pub(crate) async fn read_json(
    response: reqwest::Response,
    read_timeout: Duration,
) -> Result<Value, LlmError> {
    let bytes = tokio::time::timeout(read_timeout, response.bytes())
        .await
        .map_err(|_| LlmError::Timeout(format!("the body was silent for {}s", read_timeout.as_secs_f64())))?
        .map_err(|e| LlmError::StreamDropped(error_chain(&e)))?;
    serde_json::from_slice(&bytes).map_err(|e| LlmError::Protocol(format!("the response is not JSON: {e}")))
}

fn send_error(e: reqwest::Error) -> LlmError {
    if e.is_timeout() {
        LlmError::Timeout(e.to_string())
    } else {
        LlmError::Connection(error_chain(&e))
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Reads the SSE stream of `response`, handing each event to `on_event` until it returns `Ok(true)` (the
/// protocol's end marker). Returns whether the end marker was seen: `Ok(false)` means the server closed the
/// stream without it, which each client judges. A read error mid-stream is [`LlmError::StreamDropped`]; no
/// bytes for `read_timeout` is [`LlmError::Timeout`].
pub(crate) async fn read_sse(
    mut response: reqwest::Response,
    read_timeout: Duration,
    mut on_event: impl FnMut(SseEvent) -> Result<bool, LlmError>,
) -> Result<bool, LlmError> {
    let mut parser = SseParser::default();
    loop {
        let chunk = match tokio::time::timeout(read_timeout, response.chunk()).await {
            Err(_) => {
                return Err(LlmError::Timeout(format!(
                    "the stream was silent for {}s",
                    read_timeout.as_secs_f64()
                )));
            }
            Ok(Err(e)) => return Err(LlmError::StreamDropped(error_chain(&e))),
            Ok(Ok(None)) => break,
            Ok(Ok(Some(bytes))) => bytes,
        };
        for event in parser.feed(&chunk) {
            if on_event(event)? {
                return Ok(true);
            }
        }
    }
    match parser.finish() {
        Some(event) => on_event(event),
        None => Ok(false),
    }
}

/// Maps an HTTP error status and its body to a typed error.
pub(crate) fn error_from_status(status: u16, headers: &HeaderMap, body: &str) -> LlmError {
    let (kind, message) = error_kind_and_message(body);
    let retry_after = retry_after(headers);
    if kind.as_deref() == Some("overloaded_error") || status == 529 {
        return LlmError::Overloaded { retry_after, message };
    }
    match status {
        429 => LlmError::RateLimited { retry_after, message },
        401 | 403 => LlmError::Auth { status, message },
        408 => LlmError::Timeout(message),
        500..=599 => LlmError::Server {
            status,
            message,
            retry_after,
        },
        _ => LlmError::BadRequest { status, message },
    }
}

/// Maps an error reported inside an already-open stream (Anthropic's `event: error`, OpenAI-compatible
/// servers' `data: {"error": ...}`), where only the error's type says what happened.
pub(crate) fn error_from_stream(data: &str) -> LlmError {
    let (kind, message) = error_kind_and_message(data);
    let status = match kind.as_deref() {
        Some("overloaded_error") => {
            return LlmError::Overloaded {
                retry_after: None,
                message,
            };
        }
        Some("rate_limit_error" | "rate_limit_exceeded") => {
            return LlmError::RateLimited {
                retry_after: None,
                message,
            };
        }
        Some("authentication_error") => 401,
        Some("permission_error") => 403,
        Some("not_found_error") => 404,
        Some("request_too_large") => 413,
        Some("invalid_request_error") => 400,
        _ => 500,
    };
    error_from_status(status, &HeaderMap::new(), data)
}

/// The provider's error type (if it names one) and a message for humans, from any of the known body shapes.
fn error_kind_and_message(body: &str) -> (Option<String>, String) {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let kind = error
        .and_then(|e| e.get("type").or_else(|| e.get("code")))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let message = error
        .and_then(|e| e.get("message").and_then(Value::as_str).or_else(|| e.as_str()))
        .or_else(|| {
            parsed
                .as_ref()
                .and_then(|v| v.get("message"))
                .and_then(Value::as_str)
        })
        .map(str::to_owned)
        .unwrap_or_else(|| body.trim().to_owned());
    let message = if message.is_empty() {
        "(empty response body)".to_owned()
    } else {
        message
    };
    let message = match &kind {
        Some(kind) => format!("{kind}: {message}"),
        None => message,
    };
    (kind, truncate(message))
}

fn truncate(mut message: String) -> String {
    if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
        message.truncate(cut);
        message.push('…');
    }
    message
}

/// The delay a response asks for: `retry-after-ms` (OpenAI) or `retry-after` in seconds.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn anthropic_error_body() {
        let body =
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too big"}}"#;
        assert_eq!(
            error_from_status(400, &HeaderMap::new(), body),
            LlmError::BadRequest {
                status: 400,
                message: "invalid_request_error: max_tokens: too big".into()
            }
        );
        let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert!(matches!(
            error_from_status(529, &HeaderMap::new(), overloaded),
            LlmError::Overloaded { .. }
        ));
        assert!(matches!(
            error_from_stream(overloaded),
            LlmError::Overloaded { .. }
        ));
    }

    #[test]
    fn openai_and_ollama_error_bodies() {
        let body = r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        assert_eq!(
            error_from_status(401, &HeaderMap::new(), body),
            LlmError::Auth {
                status: 401,
                message: "invalid_request_error: Incorrect API key".into()
            }
        );
        let ollama = r#"{"error":"model \"llama9\" not found, try pulling it first"}"#;
        assert_eq!(
            error_from_status(404, &HeaderMap::new(), ollama),
            LlmError::BadRequest {
                status: 404,
                message: "model \"llama9\" not found, try pulling it first".into()
            }
        );
        assert_eq!(
            error_from_status(502, &HeaderMap::new(), "<html>bad gateway</html>"),
            LlmError::Server {
                status: 502,
                message: "<html>bad gateway</html>".into(),
                retry_after: None
            }
        );
    }

    #[test]
    fn retry_after_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
        headers.clear();
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn keys_never_print() {
        assert_eq!(format!("{:?}", ApiKey::new("sk-secret")), "ApiKey(<redacted>)");
        assert_eq!(
            ApiKey::from_env("AGENCY_TEST_SURELY_UNSET_VAR"),
            Err(LlmError::MissingKey {
                var: "AGENCY_TEST_SURELY_UNSET_VAR".into()
            })
        );
    }

    #[test]
    fn urls_join_with_one_slash() {
        assert_eq!(
            join_url("http://h/v1/", "/chat/completions"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(join_url("http://h", "v1/messages"), "http://h/v1/messages");
    }
}
