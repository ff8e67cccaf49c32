//! `agency-relay`: the runner's model-key relay. An agent that calls its model itself (Claude Code, Codex)
//! needs a key, and anything in its environment is readable by the commands it runs: in agency's sandbox
//! they share its user and PID namespace, so `/proc/<agent>/environ` shows the key whatever the client
//! scrubs from its children's environments. So in a run the agent is not given the key. It is given a
//! base URL on this relay instead, on loopback, whose path holds a capability (a random token) for that
//! agent alone, and a placeholder key; the relay swaps in the real key and forwards the request to the
//! provider, and streams the answer back as it comes.
//!
//! What the capability allows is what the key allowed the agent already: calling its own model, at the
//! provider the runner chose for its tier. It ends when the agent ends ([`Ticket`] is revoked on drop),
//! and it never leaves the machine: the provider sees the real key, not the token.
//!
//! The relay is a plain HTTP/1 reverse proxy on its own thread with a one-thread tokio runtime: bodies are
//! passed through as bytes (compressed or not, as the provider sent them), headers are copied except the
//! hop-by-hop ones and the client's own credentials.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, Once, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use tokio::sync::oneshot;

/// The largest request body the relay forwards. A model request with a long conversation and images runs
/// to a few tens of megabytes; axum's default (2 MB) would refuse those.
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;
/// How long the relay waits to connect to the provider.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The key the agent is given in place of the real one: clients insist on having one set.
pub const PLACEHOLDER_KEY: &str = "agency-relay-holds-the-key";

/// How the provider expects its key.
#[derive(Clone, PartialEq, Eq)]
pub enum UpstreamAuth {
    /// Anthropic's `x-api-key: <key>`.
    ApiKey(String),
    /// `Authorization: Bearer <key>` (OpenAI, and Anthropic's `ANTHROPIC_AUTH_TOKEN`).
    Bearer(String),
}

impl fmt::Debug for UpstreamAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpstreamAuth::ApiKey(_) => f.write_str("ApiKey(<redacted>)"),
            UpstreamAuth::Bearer(_) => f.write_str("Bearer(<redacted>)"),
        }
    }
}

/// Where one agent's requests go and with which key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The provider's base URL as the client would have used it (`https://api.anthropic.com`); the path
    /// the client asks for is appended.
    pub upstream: String,
    /// The key, as the provider expects it.
    pub auth: UpstreamAuth,
}

type Routes = Mutex<HashMap<String, Route>>;

/// What the relay's handlers share.
struct Shared {
    routes: Arc<Routes>,
    /// For providers elsewhere: the system's proxy settings apply, as for agency's own model client.
    client: reqwest::Client,
    /// For a provider on loopback (a local server): never through a proxy.
    direct: reqwest::Client,
}

/// The relay: a loopback listener and the routes of the agents it serves. Dropping it stops the listener.
pub struct KeyRelay {
    addr: SocketAddr,
    routes: Arc<Routes>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for KeyRelay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRelay")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl KeyRelay {
    /// Binds a loopback port and starts serving on a thread of its own.
    pub fn start() -> io::Result<KeyRelay> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let routes: Arc<Routes> = Arc::default();
        let shared = Arc::new(Shared {
            routes: routes.clone(),
            client: client(false)?,
            direct: client(true)?,
        });
        let (shutdown, stopped) = oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("agency-relay".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let app = Router::new()
                        .route("/t/{token}/{*rest}", any(forward))
                        .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
                        .with_state(shared);
                    // An error here ends the relay; every agent's next call then fails to connect and says so.
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })?;
        Ok(KeyRelay {
            addr,
            routes,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// A capability for `route`: the base URL an agent is given. Revoked when the ticket is dropped.
    pub fn issue(&self, route: Route) -> io::Result<Ticket> {
        let token = random_token()?;
        self.routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token.clone(), route);
        Ok(Ticket {
            base_url: format!("http://{}/t/{token}", self.addr),
            token,
            routes: Arc::downgrade(&self.routes),
        })
    }

    /// How many capabilities are live (for tests and the log).
    pub fn live_tickets(&self) -> usize {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

impl Drop for KeyRelay {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One agent's capability on the relay. Dropping it revokes it.
pub struct Ticket {
    base_url: String,
    token: String,
    routes: Weak<Routes>,
}

impl Ticket {
    /// The base URL the agent calls its model at (the token is in its path).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The token, a secret: to be redacted from whatever is recorded.
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("token", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(routes) = self.routes.upgrade() {
            routes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&self.token);
        }
    }
}

/// The HTTP client for the providers: rustls with ring (as agency's own model client), the system's proxy
/// settings unless `direct`, no overall timeout (an answer streams for as long as the model writes).
fn client(direct: bool) -> io::Result<reqwest::Client> {
    static RING: Once = Once::new();
    RING.call_once(|| {
        // Fails only if the process already chose a provider, which is then used instead.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let builder = reqwest::Client::builder()
        .user_agent(concat!("agency-relay/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(CONNECT_TIMEOUT);
    let builder = if direct { builder.no_proxy() } else { builder };
    builder.build().map_err(io::Error::other)
}

/// Whether `url` names this machine's loopback.
fn on_loopback(url: &str) -> bool {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .is_some_and(|host| matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]" | "::1"))
}

/// 32 bytes from the OS's random source, as hex.
fn random_token() -> io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Headers that belong to one connection, not to the request or answer, and are not forwarded.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
    )
}

/// Forwards one request on `token`'s route and streams the answer back.
async fn forward(
    State(shared): State<Arc<Shared>>,
    Path((token, rest)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let route = shared
        .routes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&token)
        .cloned();
    let Some(route) = route else {
        return error(
            StatusCode::FORBIDDEN,
            "permission_error",
            "agency's model relay: this capability is not valid (its agent has ended, or it never was)"
                .into(),
        );
    };
    let mut url = format!("{}/{}", route.upstream.trim_end_matches('/'), rest);
    if let Some(query) = uri.query() {
        url.push('?');
        url.push_str(query);
    }
    let mut out = HeaderMap::new();
    for (name, value) in &headers {
        // The client's own credentials are the placeholder; they are replaced, never forwarded.
        if !hop_by_hop(name) && *name != header::AUTHORIZATION && name.as_str() != "x-api-key" {
            out.append(name.clone(), value.clone());
        }
    }
    let credential = match &route.auth {
        UpstreamAuth::ApiKey(key) => {
            HeaderValue::from_str(key).map(|v| (HeaderName::from_static("x-api-key"), v))
        }
        UpstreamAuth::Bearer(key) => {
            HeaderValue::from_str(&format!("Bearer {key}")).map(|v| (header::AUTHORIZATION, v))
        }
    };
    match credential {
        Ok((name, mut value)) => {
            value.set_sensitive(true);
            out.insert(name, value);
        }
        Err(_) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "api_error",
                "agency's model relay: the configured key is not a valid header value".into(),
            );
        }
    }
    let client = if on_loopback(&route.upstream) {
        &shared.direct
    } else {
        &shared.client
    };
    let sent = client.request(method, &url).headers(out).body(body).send().await;
    let answer = match sent {
        Ok(answer) => answer,
        Err(e) => {
            // Said without the URL's query or any header: neither holds the key, but keep it short.
            return error(
                StatusCode::BAD_GATEWAY,
                "api_error",
                format!("agency's model relay could not reach {}: {e}", route.upstream),
            );
        }
    };
    let status = answer.status();
    let mut reply_headers = HeaderMap::new();
    for (name, value) in answer.headers() {
        if !hop_by_hop(name) {
            reply_headers.append(name.clone(), value.clone());
        }
    }
    let chunks = futures_util::stream::unfold(Some(answer), |answer| async move {
        let mut answer = answer?;
        match answer.chunk().await {
            Ok(Some(bytes)) => Some((Ok::<Bytes, reqwest::Error>(bytes), Some(answer))),
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    });
    let mut response = Response::new(Body::from_stream(chunks));
    *response.status_mut() = status;
    *response.headers_mut() = reply_headers;
    response
}

/// An error in the shape Anthropic's API uses, which clients show as the call's error.
fn error(status: StatusCode, kind: &str, message: String) -> Response {
    let body = serde_json::json!({"type": "error", "error": {"type": kind, "message": message}});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A one-shot HTTP server that records the request it got and answers `reply` in pieces; with `hold`,
    /// the pieces after the first wait until it is sent to.
    async fn upstream_held(
        reply: &'static [&'static str],
        mut hold: Option<oneshot::Receiver<()>>,
    ) -> (String, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = socket.read(&mut buf).await.unwrap();
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen);
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length: ")
                                .map(str::to_owned)
                        })
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if seen.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                .await
                .unwrap();
            for (i, piece) in reply.iter().enumerate() {
                if i == 1
                    && let Some(hold) = hold.take()
                {
                    let _ = hold.await;
                }
                socket
                    .write_all(format!("{:x}\r\n{piece}\r\n", piece.len()).as_bytes())
                    .await
                    .unwrap();
                socket.flush().await.unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            socket.write_all(b"0\r\n\r\n").await.unwrap();
            String::from_utf8_lossy(&seen).into_owned()
        });
        (format!("http://{addr}"), task)
    }

    async fn upstream(reply: &'static [&'static str]) -> (String, tokio::task::JoinHandle<String>) {
        upstream_held(reply, None).await
    }

    fn plain_client() -> reqwest::Client {
        client(true).unwrap()
    }

    #[test]
    fn loopback_is_told_apart_from_elsewhere() {
        assert!(on_loopback("http://127.0.0.1:8080/v1") && on_loopback("http://localhost:1"));
        assert!(!on_loopback("https://api.anthropic.com") && !on_loopback("not a url"));
    }

    #[tokio::test]
    async fn a_request_reaches_the_provider_with_the_real_key_and_the_answer_streams_back() {
        let (base, seen) = upstream(&["event: a\n\n", "event: b\n\n"]).await;
        let relay = KeyRelay::start().unwrap();
        let ticket = relay
            .issue(Route {
                upstream: base,
                auth: UpstreamAuth::ApiKey("sk-real-key-5150".into()),
            })
            .unwrap();
        let answer = plain_client()
            .post(format!("{}/v1/messages?beta=true", ticket.base_url()))
            .header("x-api-key", PLACEHOLDER_KEY)
            .header("anthropic-version", "2023-06-01")
            .body(r#"{"model":"m"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.headers()["content-type"], "text/event-stream");
        assert_eq!(answer.text().await.unwrap(), "event: a\n\nevent: b\n\n");
        let request = seen.await.unwrap();
        assert!(
            request.starts_with("POST /v1/messages?beta=true HTTP/1.1"),
            "{request}"
        );
        assert!(request.contains("x-api-key: sk-real-key-5150"), "{request}");
        assert!(request.contains("anthropic-version: 2023-06-01"), "{request}");
        assert!(!request.contains(PLACEHOLDER_KEY), "{request}");
        assert!(!request.contains(ticket.token()), "{request}");
        assert!(request.ends_with(r#"{"model":"m"}"#), "{request}");
    }

    #[tokio::test]
    async fn the_answer_is_passed_on_as_it_comes_not_when_it_ends() {
        let (release, hold) = oneshot::channel();
        let (base, _seen) = upstream_held(&["event: first\n\n", "event: second\n\n"], Some(hold)).await;
        let relay = KeyRelay::start().unwrap();
        let ticket = relay
            .issue(Route {
                upstream: base,
                auth: UpstreamAuth::ApiKey("k".into()),
            })
            .unwrap();
        let mut answer = plain_client()
            .post(format!("{}/v1/messages", ticket.base_url()))
            .body("{}")
            .send()
            .await
            .unwrap();
        // The provider holds the rest of its answer until the first piece has reached the client: a relay
        // that buffered the whole answer would never pass it on.
        let first = tokio::time::timeout(Duration::from_secs(10), answer.chunk())
            .await
            .expect("the first piece did not arrive while the provider was still answering")
            .unwrap()
            .unwrap();
        assert_eq!(&first[..], b"event: first\n\n");
        release.send(()).unwrap();
        assert_eq!(answer.text().await.unwrap(), "event: second\n\n");
    }

    #[tokio::test]
    async fn a_bearer_key_replaces_the_clients_authorization() {
        let (base, seen) = upstream(&["{}"]).await;
        let relay = KeyRelay::start().unwrap();
        let ticket = relay
            .issue(Route {
                upstream: format!("{base}/v1/"),
                auth: UpstreamAuth::Bearer("sk-openai-real".into()),
            })
            .unwrap();
        let answer = plain_client()
            .post(format!("{}/responses", ticket.base_url()))
            .header("authorization", format!("Bearer {PLACEHOLDER_KEY}"))
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let request = seen.await.unwrap();
        assert!(request.starts_with("POST /v1/responses HTTP/1.1"), "{request}");
        assert!(
            request.contains("authorization: Bearer sk-openai-real"),
            "{request}"
        );
        assert!(!request.contains(PLACEHOLDER_KEY), "{request}");
    }

    #[tokio::test]
    async fn a_revoked_or_unknown_capability_is_refused_without_reaching_the_provider() {
        let relay = KeyRelay::start().unwrap();
        let ticket = relay
            .issue(Route {
                // Nothing listens there: a forwarded request would fail with 502, not 403.
                upstream: "http://127.0.0.1:9".into(),
                auth: UpstreamAuth::ApiKey("k".into()),
            })
            .unwrap();
        let url = format!("{}/v1/messages", ticket.base_url());
        assert_eq!(relay.live_tickets(), 1);
        drop(ticket);
        assert_eq!(relay.live_tickets(), 0);
        let answer = plain_client().post(&url).body("{}").send().await.unwrap();
        assert_eq!(answer.status(), 403);
        let body = answer.text().await.unwrap();
        assert!(
            body.contains("permission_error") && body.contains("not valid"),
            "{body}"
        );
    }

    #[tokio::test]
    async fn a_provider_that_cannot_be_reached_is_a_502_naming_it_without_the_key() {
        let relay = KeyRelay::start().unwrap();
        let ticket = relay
            .issue(Route {
                upstream: "http://127.0.0.1:9".into(),
                auth: UpstreamAuth::ApiKey("sk-never-shown".into()),
            })
            .unwrap();
        let answer = plain_client()
            .post(format!("{}/v1/messages", ticket.base_url()))
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 502);
        let body = answer.text().await.unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed["error"]["type"], "api_error", "{body}");
        assert!(body.contains("127.0.0.1:9"), "{body}");
        assert!(!body.contains("sk-never-shown"), "{body}");
    }

    #[test]
    fn debug_output_hides_keys_and_tokens() {
        let relay = KeyRelay::start().unwrap();
        let route = Route {
            upstream: "http://x".into(),
            auth: UpstreamAuth::Bearer("sk-secret".into()),
        };
        assert!(!format!("{route:?}").contains("sk-secret"));
        let ticket = relay.issue(route).unwrap();
        assert!(!format!("{ticket:?}").contains(ticket.token()));
        assert_eq!(ticket.token().len(), 64);
    }
}
