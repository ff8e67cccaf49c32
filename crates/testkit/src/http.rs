//! A minimal HTTP/1.1 server on 127.0.0.1: one thread accepting, one per connection, keep-alive,
//! `Content-Length` bodies only (what Claude Code, Codex and reqwest send). Enough for fakes, not more.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

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
}

/// A response to write.
pub(crate) struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Headers besides the ones every response has (`retry-after`, say).
    pub headers: Vec<(&'static str, String)>,
    /// A fault: the body is cut short (see [`Cut`]).
    pub cut: Option<Cut>,
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
    pub fn json(status: u16, body: &Value) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: body.to_string().into_bytes(),
            headers: Vec::new(),
            cut: None,
        }
    }

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
                let (handler, requests) = (handler.clone(), requests2.clone());
                std::thread::spawn(move || serve(stream, &*handler, &requests));
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
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some((
        RecordedRequest {
            method,
            path,
            headers,
            body,
        },
        close,
    ))
}
