//! What the provider tests share: testkit's fake HTTP server in its canned shape (each connection gets the
//! next raw reply, written in pieces; every request is recorded; a reply can stall or cut the connection
//! mid-stream), helpers to build those raw SSE and JSON replies, and a sleeper that records retry delays
//! instead of waiting.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agency_llm::{CancelToken, LlmError, Provider, Request, Response, RetryPolicy, StreamEvent};
/// The server: each connection gets the next canned reply (`agency_testkit::FakeHttp::canned`).
pub use agency_testkit::{Canned as Reply, FakeHttp as FakeServer};

/// A streamed `text/event-stream` response, chunked, one chunk per event.
pub fn sse(events: &[String]) -> Vec<u8> {
    let mut out = sse_head();
    for event in events {
        out.extend(chunk(event.as_bytes()));
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// The same, cut off after `keep` events: no chunk terminator, the connection just closes.
pub fn sse_cut(events: &[String], keep: usize) -> Vec<u8> {
    let mut out = sse_head();
    for event in &events[..keep] {
        out.extend(chunk(event.as_bytes()));
    }
    out
}

fn sse_head() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        .to_vec()
}

fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// A JSON error (or any) response with extra headers.
pub fn json_response(status: u16, extra_headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {status} Whatever\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in extra_headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Anthropic-style event: an `event:` line and a `data:` line.
pub fn named(event: &str, data: serde_json::Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// OpenAI-style event: a `data:` line only.
pub fn data(data: serde_json::Value) -> String {
    format!("data: {data}\n\n")
}

/// A retry policy that records its delays and returns at once.
pub fn recording_policy(max_attempts: u32) -> (RetryPolicy, Arc<Mutex<Vec<Duration>>>) {
    let slept = Arc::new(Mutex::new(Vec::new()));
    let log = slept.clone();
    let policy = RetryPolicy {
        max_attempts,
        sleep: Arc::new(move |d| {
            log.lock().unwrap().push(d);
            Box::pin(async {})
        }),
        ..RetryPolicy::default()
    };
    (policy, slept)
}

/// Runs one call with a bounded wait, so a hung client fails the test instead of hanging it.
pub async fn call(
    provider: &dyn Provider,
    request: &Request,
) -> (Result<Response, LlmError>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let cancel = CancelToken::new();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        provider.complete(request, &mut |e| events.push(e), &cancel),
    )
    .await
    .expect("the call hung");
    (result, events)
}
