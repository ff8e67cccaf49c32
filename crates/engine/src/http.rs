//! The runner's outgoing HTTP: one POST of JSON, used by the notifiers (webhook, Slack) and the forge (a
//! pull request). A leaf: it knows nothing of runs, so notify.rs and forge.rs both use it without importing
//! each other. Errors never carry a URL, whose path may be a secret (a Slack webhook's is).

use std::sync::Once;
use std::time::Duration;

use serde_json::Value;

/// How long one request may take before it counts as failed.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest piece of a failing endpoint's (or notifier command's) output kept in the log.
const MAX_DETAIL_CHARS: usize = 300;

/// Why a POST got no 2xx answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The request failed before an answer (a bad URL, connection, timeout).
    #[error("the request failed: {0}")]
    Http(String),
    /// The endpoint answered with an error status.
    #[error("the endpoint answered {status}: {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        body: String,
    },
}

/// A URL reduced to its scheme and host: webhook paths carry their secret.
pub fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(parsed) => format!("{}://{}/…", parsed.scheme(), parsed.host_str().unwrap_or("?")),
        Err(_) => "<invalid URL>".into(),
    }
}

pub(crate) fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_DETAIL_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(MAX_DETAIL_CHARS).collect();
    out.push('…');
    out
}

/// The HTTP client for `url`: rustls with `ring`, [`SEND_TIMEOUT`] (a slow endpoint must not stall the runner) for the whole request, and no proxy for
/// loopback (tests and local bridges).
pub(crate) fn http_client(url: &str) -> Result<reqwest::Client, HttpError> {
    static RING: Once = Once::new();
    RING.call_once(|| {
        // Fails only if the process already chose a provider, which is then used instead.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| HttpError::Http(format!("{} is not a URL: {e}", redact_url(url))))?;
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("agency/", env!("CARGO_PKG_VERSION")))
        .timeout(SEND_TIMEOUT);
    if matches!(
        parsed.host_str(),
        Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
    ) {
        builder = builder.no_proxy();
    }
    builder.build().map_err(|e| HttpError::Http(e.to_string()))
}

/// POSTs `body` as JSON with extra `headers`; returns the response body of a 2xx answer. Errors never carry
/// the URL (reqwest's would).
pub(crate) async fn post_json(
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
) -> Result<Value, HttpError> {
    let client = http_client(url)?;
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap_or_default());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request
        .send()
        .await
        .map_err(|e| HttpError::Http(e.without_url().to_string()))?;
    let status = response.status().as_u16();
    let text = response
        .text()
        .await
        .map_err(|e| HttpError::Http(e.without_url().to_string()))?;
    if !(200..300).contains(&status) {
        return Err(HttpError::Status {
            status,
            body: clip(text.trim()),
        });
    }
    Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
}
