//! A fake HTTP/1.1 server on 127.0.0.1 for the provider tests: each connection gets the next canned reply
//! (raw bytes, written in pieces), every request is captured for assertions, and replies can stall or cut
//! the connection mid-stream. Plus small helpers to build SSE and JSON responses and a sleeper that records
//! retry delays instead of waiting.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agency_llm::{CancelToken, LlmError, Provider, Request, Response, RetryPolicy, StreamEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with one connection.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Writes these bytes (in small pieces) and closes the connection.
    Bytes(Vec<u8>),
    /// Writes these bytes, then keeps the connection open without writing more.
    Stall(Vec<u8>),
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Captured {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// The server; dropped with the test's runtime.
pub struct FakeServer {
    pub url: String,
    captured: Arc<Mutex<Vec<Captured>>>,
}

impl FakeServer {
    /// Serves `replies` in order, one per connection; connections past the last get the last again.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let captured = Arc::new(Mutex::new(Vec::new()));
        let next = Arc::new(AtomicUsize::new(0));
        let sink = captured.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let i = next.fetch_add(1, Ordering::SeqCst);
                let reply = replies[i.min(replies.len() - 1)].clone();
                tokio::spawn(serve(stream, reply, sink.clone()));
            }
        });
        Self { url, captured }
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.captured.lock().unwrap().clone()
    }
}

async fn serve(mut stream: TcpStream, reply: Reply, captured: Arc<Mutex<Vec<Captured>>>) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    captured.lock().unwrap().push(request);
    let (bytes, stall) = match reply {
        Reply::Bytes(bytes) => (bytes, false),
        Reply::Stall(bytes) => (bytes, true),
    };
    // Small pieces with pauses, so the client sees many reads and events split across them.
    for piece in bytes.chunks(97) {
        if stream.write_all(piece).await.is_err() {
            return;
        }
        let _ = stream.flush().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    if stall {
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<Captured> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Captured { path, headers, body })
}

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
