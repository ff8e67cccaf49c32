//! A minimal HTTP/1.1 server on 127.0.0.1: one thread accepting, one per connection, keep-alive,
//! `Content-Length` bodies only (what Claude Code, Codex and reqwest send). Enough for fakes, not more.
//!
//! The model fakes are built on it, and tests use it directly as [`FakeHttp`] in two shapes: a server
//! that answers each request through a closure (a webhook receiver, a fake GitHub API, a fake
//! OpenAI-compatible endpoint), and one that answers each *connection* with the next of a list of raw
//! byte replies ([`Canned`]), written in small pieces, for testing an HTTP client against chunked
//! streams, cut streams and stalls.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

/// One request as the fake received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `GET`, `POST`, `HEAD`.
    pub method: String,
    /// The path with its query string.
    pub path: String,
    /// Headers, names lower-cased.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
    /// The body's bytes as they were sent.
    pub raw_body: Vec<u8>,
}

impl RecordedRequest {
    /// The value of header `name` (any case), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }
}

/// A response to write.
#[derive(Debug, Clone)]
pub struct Response {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) body: Vec<u8>,
    /// Headers besides the ones every response has (`retry-after`, say).
    pub(crate) headers: Vec<(&'static str, String)>,
    /// A fault: the body is cut short (see [`Cut`]).
    pub(crate) cut: Option<Cut>,
}

/// How a faulty response's body ends early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// After this many bytes the connection is closed: a stream dropped mid-message.
    Drop(usize),
    /// After this many bytes nothing more is sent for this long, then the connection is closed: a stalled
    /// stream.
    Stall(usize, std::time::Duration),
}

impl Response {
    /// `body` as `content_type` with `status`.
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
            headers: Vec::new(),
            cut: None,
        }
    }

    /// A JSON body with `status`.
    pub fn json(status: u16, body: &Value) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: body.to_string().into_bytes(),
            headers: Vec::new(),
            cut: None,
        }
    }

    /// A whole `text/event-stream` body (sent with its length, not chunked), status 200.
    pub fn sse(body: String) -> Response {
        Response {
            status: 200,
            content_type: "text/event-stream",
            body: body.into_bytes(),
            headers: Vec::new(),
            cut: None,
        }
    }
}

type Handler = dyn Fn(&RecordedRequest) -> Response + Send + Sync;

/// What one connection gets: the server's way of serving it.
type Connection = dyn Fn(TcpStream, &Mutex<Vec<RecordedRequest>>) + Send + Sync;

/// A running server; stops accepting when dropped.
#[derive(Debug)]
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    pub requests: Arc<Mutex<Vec<RecordedRequest>>>,
}

impl Server {
    pub fn start(handler: Arc<Handler>) -> std::io::Result<Server> {
        Server::serving(Arc::new(move |stream, requests| {
            serve(stream, &*handler, requests)
        }))
    }

    fn serving(connection: Arc<Connection>) -> std::io::Result<Server> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let requests: Arc<Mutex<Vec<RecordedRequest>>> = Arc::default();
        let (stop2, requests2) = (stop.clone(), requests.clone());
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (connection, requests) = (connection.clone(), requests2.clone());
                std::thread::spawn(move || connection(stream, &requests));
            }
        });
        Ok(Server {
            addr,
            stop,
            accept: Some(accept),
            requests,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn recorded(&self) -> Vec<RecordedRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn serve(stream: TcpStream, handler: &Handler, requests: &Mutex<Vec<RecordedRequest>>) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Some((request, close)) = read_request(&mut reader) {
        requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        let response = handler(&request);
        let extra: String = response
            .headers
            .iter()
            .map(|(name, value)| format!("{name}: {value}\r\n"))
            .collect();
        let head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\n{extra}{}\r\n",
            response.status,
            if response.status < 400 { "OK" } else { "Error" },
            response.content_type,
            response.body.len(),
            if close { "Connection: close\r\n" } else { "" },
        );
        let body: &[u8] = if request.method == "HEAD" {
            &[]
        } else {
            &response.body
        };
        if let Some(cut) = response.cut {
            let (sent, stall) = match cut {
                Cut::Drop(sent) => (sent, None),
                Cut::Stall(sent, stall) => (sent, Some(stall)),
            };
            let _ = writer
                .write_all(head.as_bytes())
                .and_then(|()| writer.write_all(&body[..sent.min(body.len())]))
                .and_then(|()| writer.flush());
            if let Some(stall) = stall {
                std::thread::sleep(stall);
            }
            let _ = writer.shutdown(std::net::Shutdown::Both);
            return;
        }
        if writer
            .write_all(head.as_bytes())
            .and_then(|()| writer.write_all(body))
            .is_err()
            || close
        {
            return;
        }
        let _ = writer.flush();
    }
}

/// Reads one request; `None` at end of stream or on garbage. The flag says the client asked to close.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(RecordedRequest, bool)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let close = headers
        .get("connection")
        .is_some_and(|v| v.eq_ignore_ascii_case("close"));
    Some((
        RecordedRequest {
            method,
            path,
            headers,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            raw_body: body,
        },
        close,
    ))
}

/// A fake HTTP server for tests, on 127.0.0.1; it records every request and stops when dropped.
#[derive(Debug)]
pub struct FakeHttp {
    server: Server,
}

impl FakeHttp {
    /// Answers every request with `answer(request)`, over keep-alive connections.
    pub fn start(
        answer: impl Fn(&RecordedRequest) -> Response + Send + Sync + 'static,
    ) -> std::io::Result<FakeHttp> {
        Ok(FakeHttp {
            server: Server::start(Arc::new(answer))?,
        })
    }

    /// Answers connection *i* with `replies[i]` (past the end, the last again): after reading one request,
    /// writes the reply's bytes as they are — status line, headers and body, chunked or cut short as the
    /// test wrote them — in pieces of 97 bytes a millisecond apart, so a client sees many reads and
    /// messages split across them; then closes the connection, or for [`Canned::Stall`] holds it open
    /// for 30 s.
    pub fn canned(replies: Vec<Canned>) -> std::io::Result<FakeHttp> {
        let replies = Arc::new(replies);
        let next = Arc::new(AtomicUsize::new(0));
        let connection = move |stream: TcpStream, requests: &Mutex<Vec<RecordedRequest>>| {
            let i = next.fetch_add(1, Ordering::SeqCst);
            let Some(reply) = replies.get(i.min(replies.len().saturating_sub(1))) else {
                return;
            };
            write_canned(stream, reply, requests);
        };
        Ok(FakeHttp {
            server: Server::serving(Arc::new(connection))?,
        })
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.recorded()
    }
}

/// What [`FakeHttp::canned`] sends on one connection: a whole raw response, headers included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Canned {
    /// Writes these bytes and closes the connection.
    Bytes(Vec<u8>),
    /// Writes these bytes, then keeps the connection open without writing more.
    Stall(Vec<u8>),
}

/// How long a [`Canned::Stall`] holds its connection: longer than any client timeout a test sets.
const STALL: Duration = Duration::from_secs(30);

fn write_canned(stream: TcpStream, reply: &Canned, requests: &Mutex<Vec<RecordedRequest>>) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let Some((request, _)) = read_request(&mut reader) else {
        return;
    };
    requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(request);
    let (bytes, stall) = match reply {
        Canned::Bytes(bytes) => (bytes, false),
        Canned::Stall(bytes) => (bytes, true),
    };
    for piece in bytes.chunks(97) {
        if writer.write_all(piece).and_then(|()| writer.flush()).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if stall {
        std::thread::sleep(STALL);
    }
    let _ = writer.shutdown(std::net::Shutdown::Both);
}
