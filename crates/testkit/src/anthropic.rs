//! The fake Anthropic Messages API (harness/PROTOCOLS.md §2–3): `POST /v1/messages` streamed as SSE with
//! `event:` lines (Claude Code falls back to a non-streaming request without them), or as one JSON message
//! when the request does not stream; `count_tokens`; 404 for `HEAD /` warm-ups and anything else.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::http::{Cut, RecordedRequest, Response, Server};
use crate::prompt_cache::{CacheUsage, PromptCache};
use crate::{Reply, scripted};

/// A fake Anthropic server; stops when dropped.
#[derive(Debug)]
pub struct FakeAnthropic {
    server: Server,
    script: Arc<Mutex<Vec<Reply>>>,
    rules: Arc<Mutex<Vec<Rule>>>,
    input_tokens: Arc<AtomicU64>,
    prompt_cache: Arc<Mutex<Option<PromptCache>>>,
    faults: Arc<Mutex<Faults>>,
}

/// A way for the fake to fail a `POST /v1/messages` (issue 33's fault suite).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// An error status with Anthropic's error body: 529 (`overloaded_error`), 429 (`rate_limit_error`),
    /// 500 (`api_error`), ...; with `retry_after` seconds in a `retry-after` header when given.
    Status {
        /// The HTTP status.
        status: u16,
        /// The `retry-after` header's seconds, if any.
        retry_after: Option<u32>,
    },
    /// The streamed answer starts (`message_start`), then the connection is closed mid-message.
    DropMidStream,
    /// The streamed answer starts, then nothing more is sent for this long before the connection closes.
    Stall(std::time::Duration),
}

/// An outage of one model that begins in the middle of a run ([`FakeAnthropic::set_outage_of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOutage {
    /// How each request fails once the outage has begun.
    pub fault: Fault,
    /// The model whose requests fail (`model` in the request body); other models answer normally.
    pub model: String,
    /// The outage begins at the first request for `model` whose history holds at least this many assistant
    /// turns (an agent in the middle of its work), and then fails every request for `model`.
    pub from_turn: usize,
    /// The outage ends by itself once this many requests have failed (a short outage); `None`: it lasts
    /// until [`FakeAnthropic::set_outage_of`] ends it.
    pub requests: Option<usize>,
}

/// Faults to serve before answering normally: `next` one request each, in order; `always` every request
/// while set (an outage); `of_model` the requests for one model once its outage has begun.
#[derive(Debug, Default)]
struct Faults {
    next: std::collections::VecDeque<Fault>,
    always: Option<Fault>,
    of_model: Option<(ModelOutage, bool)>,
    served: usize,
}

impl Faults {
    /// The fault for a messages request with `body`, if one is due.
    fn due(&mut self, body: &Value) -> Option<Fault> {
        let fault = self.next.pop_front().or(self.always).or_else(|| {
            let (outage, begun) = self.of_model.as_mut()?;
            if body["model"].as_str() != Some(outage.model.as_str()) {
                return None;
            }
            *begun |= assistant_turns(body) >= outage.from_turn;
            if !*begun || outage.requests == Some(0) {
                return None;
            }
            if let Some(left) = &mut outage.requests {
                *left -= 1;
            }
            Some(outage.fault)
        })?;
        self.served += 1;
        Some(fault)
    }
}

/// A conversation of its own: requests whose first user message contains `marker` (a sub-agent's prompt)
/// are answered from `script`, by that conversation's own assistant turns.
type Rule = (String, Vec<Reply>);

impl FakeAnthropic {
    /// Starts a server answering tool-bearing requests from `script` (reply *i* for a history holding *i*
    /// assistant turns, "done" past the end) and tool-less ones (title generation) with "ok".
    pub fn start(script: Vec<Reply>) -> std::io::Result<FakeAnthropic> {
        let script = Arc::new(Mutex::new(script));
        let rules: Arc<Mutex<Vec<Rule>>> = Arc::new(Mutex::new(Vec::new()));
        let ids = Arc::new(AtomicUsize::new(1));
        let input_tokens = Arc::new(AtomicU64::new(10));
        let faults: Arc<Mutex<Faults>> = Arc::default();
        let (shared, shared_rules, tokens) = (script.clone(), rules.clone(), input_tokens.clone());
        let shared_faults = faults.clone();
        let prompt_cache: Arc<Mutex<Option<PromptCache>>> = Arc::default();
        let cache = prompt_cache.clone();
        let server = Server::start(Arc::new(move |request: &RecordedRequest| {
            if request.method == "POST" && is_messages(&request.path) {
                let mut faults = shared_faults.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(fault) = faults.due(&request.body) {
                    drop(faults);
                    return faulty(fault, &request.body);
                }
            }
            let first = first_user_message(&request.body);
            let rules = shared_rules.lock().unwrap_or_else(PoisonError::into_inner);
            let ruled = rules.iter().find(|(marker, _)| first.contains(marker.as_str()));
            let (script, by_rule) = match ruled {
                Some((_, script)) => (script.clone(), true),
                None => (
                    shared.lock().unwrap_or_else(PoisonError::into_inner).clone(),
                    false,
                ),
            };
            drop(rules);
            let usage = |body: &Value| match &mut *cache.lock().unwrap_or_else(PoisonError::into_inner) {
                Some(cache) => cache.usage(body),
                None => CacheUsage {
                    input: tokens.load(Ordering::SeqCst),
                    ..CacheUsage::default()
                },
            };
            respond(request, &script, by_rule, &ids, usage)
        }))?;
        Ok(FakeAnthropic {
            server,
            script,
            rules,
            input_tokens,
            faults,
            prompt_cache,
        })
    }

    /// Fails the next `POST /v1/messages` requests with `faults`, one each, in order; then answers
    /// normally again.
    pub fn fail_next(&self, faults: impl IntoIterator<Item = Fault>) {
        self.faults
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next
            .extend(faults);
    }

    /// Fails every `POST /v1/messages` with `fault` until called with `None`: an outage, then recovery.
    pub fn set_outage(&self, fault: Option<Fault>) {
        self.faults.lock().unwrap_or_else(PoisonError::into_inner).always = fault;
    }

    /// Fails the requests for one model from the middle of a run on, until called with `None` (see
    /// [`ModelOutage`]): a provider overloaded for the model the implementers use, say, while the others
    /// answer.
    pub fn set_outage_of(&self, outage: Option<ModelOutage>) {
        self.faults
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .of_model = outage.map(|o| (o, false));
    }

    /// Whether the outage set with [`FakeAnthropic::set_outage_of`] has begun.
    pub fn model_outage_begun(&self) -> bool {
        self.faults
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .of_model
            .as_ref()
            .is_some_and(|(_, begun)| *begun)
    }

    /// How many requests were answered with a fault so far.
    pub fn faults_served(&self) -> usize {
        self.faults.lock().unwrap_or_else(PoisonError::into_inner).served
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// Replaces the script (for a second run against the same server).
    pub fn set_script(&self, script: Vec<Reply>) {
        *self.script.lock().unwrap_or_else(PoisonError::into_inner) = script;
    }

    /// Answers the conversations whose first user message contains `marker` — a sub-agent started with a
    /// prompt the main script wrote — from `script` instead (harness/PROTOCOLS.md §3's rules), tool-less
    /// requests included.
    pub fn set_rule(&self, marker: impl Into<String>, script: Vec<Reply>) {
        self.rules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((marker.into(), script));
    }

    /// Makes every reply from now on report `tokens` input tokens (10 until set), so that a test can have a
    /// client spend more than a budget allows.
    pub fn set_input_tokens(&self, tokens: u64) {
        self.input_tokens.store(tokens, Ordering::SeqCst);
    }

    /// Models the prompt cache from now on ([`crate::prompt_cache`]): prefixes up to a `cache_control`
    /// breakpoint of at least `min_tokens` (1,024 for most models) are remembered, and every reply reports
    /// its input as the API would bill it, in `input_tokens`, `cache_read_input_tokens` and
    /// `cache_creation_input_tokens`, sized at four bytes of JSON a token. Without it every reply reports
    /// the fixed [`FakeAnthropic::set_input_tokens`] and no cache.
    pub fn model_prompt_cache(&self, min_tokens: u64) {
        *self.prompt_cache.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(PromptCache::new(min_tokens));
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.recorded()
    }

    /// The bodies of the `POST /v1/messages` requests that offered tools (the agent loop's).
    pub fn message_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST" && is_messages(&r.path) && has_tools(&r.body))
            .map(|r| r.body)
            .collect()
    }

    /// Every `tool_result` block the client sent back, in request order (repeats included).
    pub fn tool_results(&self) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        for body in self.message_requests() {
            for message in body["messages"].as_array().into_iter().flatten() {
                for block in message["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" && !out.contains(block) {
                        out.push(block.clone());
                    }
                }
            }
        }
        out
    }
}

fn is_messages(path: &str) -> bool {
    path.split('?')
        .next()
        .is_some_and(|p| p.ends_with("/v1/messages"))
}

fn has_tools(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// The first user message of a request, as JSON text (its content may be a string or blocks).
fn first_user_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

/// Assistant turns in the history; `role: "system"` entries mid-conversation are tolerated (§2).
fn assistant_turns(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count())
}

/// `by_rule`: the request matched a rule, whose script answers it even without tools (a one-shot model call
/// such as pi's loop judge).
fn respond(
    request: &RecordedRequest,
    script: &[Reply],
    by_rule: bool,
    ids: &AtomicUsize,
    usage: impl FnOnce(&Value) -> CacheUsage,
) -> Response {
    let path = request.path.split('?').next().unwrap_or_default();
    if request.method != "POST" {
        return Response::json(
            404,
            &json!({"type": "error", "error": {"type": "not_found_error", "message": "not found"}}),
        );
    }
    if path.ends_with("/count_tokens") {
        return Response::json(200, &json!({"input_tokens": 100}));
    }
    if !is_messages(path) {
        return Response::json(
            404,
            &json!({"type": "error", "error": {"type": "not_found_error", "message": "not found"}}),
        );
    }
    let body = &request.body;
    let reply = if has_tools(body) || by_rule {
        scripted(script, assistant_turns(body))
    } else {
        Reply::text("ok")
    };
    let model = body["model"].as_str().unwrap_or("claude-fake");
    let message = message(model, &reply, ids, usage(body));
    if body["stream"] == true {
        Response::sse(stream(&message))
    } else {
        Response::json(200, &message)
    }
}

fn message(model: &str, reply: &Reply, ids: &AtomicUsize, usage: CacheUsage) -> Value {
    let next = || ids.fetch_add(1, Ordering::SeqCst);
    let blocks: Vec<Value> = reply
        .blocks()
        .into_iter()
        .map(|block| match block {
            Reply::ToolUse { name, input } => {
                json!({"type": "tool_use", "id": format!("toolu_{:04}", next()), "name": name, "input": input})
            }
            Reply::Custom { name, input } => {
                json!({"type": "tool_use", "id": format!("toolu_{:04}", next()), "name": name, "input": {"input": input}})
            }
            Reply::Text(text) => json!({"type": "text", "text": text}),
            Reply::Blocks(_) => json!({"type": "text", "text": ""}),
        })
        .collect();
    let stop = if blocks.iter().any(|b| b["type"] == "tool_use") {
        "tool_use"
    } else {
        "end_turn"
    };
    json!({
        "id": format!("msg_{:04}", next()), "type": "message", "role": "assistant", "model": model,
        "content": blocks, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": usage.input, "output_tokens": 5,
                  "cache_creation_input_tokens": usage.cache_write, "cache_read_input_tokens": usage.cache_read},
    })
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn stream(message: &Value) -> String {
    let mut head = message.clone();
    head["content"] = json!([]);
    head["stop_reason"] = Value::Null;
    head["usage"]["output_tokens"] = json!(1);
    let mut out = event(
        "message_start",
        &json!({"type": "message_start", "message": head}),
    );
    for (index, block) in message["content"].as_array().into_iter().flatten().enumerate() {
        let (start, delta) = if block["type"] == "tool_use" {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        };
        out += &event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        );
        out += &event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
        out += &event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        );
    }
    out += &event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null},
                "usage": {"output_tokens": 5}}),
    );
    out + &event("message_stop", &json!({"type": "message_stop"}))
}

/// The response of `fault` to a messages request with `body`.
fn faulty(fault: Fault, body: &Value) -> Response {
    match fault {
        Fault::Status { status, retry_after } => {
            let kind = match status {
                529 => "overloaded_error",
                429 => "rate_limit_error",
                _ => "api_error",
            };
            let mut response = Response::json(
                status,
                &json!({"type": "error", "error": {"type": kind, "message": format!("fake fault: {status}")}}),
            );
            if let Some(seconds) = retry_after {
                response.headers.push(("retry-after", seconds.to_string()));
            }
            response
        }
        Fault::DropMidStream | Fault::Stall(_) => {
            let model = body["model"].as_str().unwrap_or("claude-fake");
            let message = message(
                model,
                &Reply::text("this answer never arrives whole"),
                &AtomicUsize::new(1),
                CacheUsage {
                    input: 10,
                    ..CacheUsage::default()
                },
            );
            let whole = stream(&message);
            // Up to the end of the first event (`message_start`): the answer has begun.
            let begun = whole.find("\n\n").map_or(whole.len(), |at| at + 2);
            let mut response = Response::sse(whole);
            response.cut = Some(match fault {
                Fault::Stall(stall) => Cut::Stall(begun, stall),
                _ => Cut::Drop(begun),
            });
            response
        }
    }
}
