//! The fake OpenAI Responses API as Codex uses it (harness/PROTOCOLS.md §7): `POST /v1/responses` streamed
//! as SSE (`response.created`, `response.output_item.added`, text delta, `response.output_item.done`,
//! `response.completed` with usage), and `GET /v1/models`. It also answers `POST /v1/chat/completions`
//! (streamed chunks, usage in the last), as a local OpenAI-compatible server (Ollama, vLLM) does, from the
//! same script.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::http::{RecordedRequest, Response, Server};
use crate::{Reply, scripted};

/// A fake OpenAI server; stops when dropped.
#[derive(Debug)]
pub struct FakeOpenAi {
    server: Server,
    script: Arc<Mutex<Vec<Reply>>>,
    rules: Arc<Mutex<Vec<Rule>>>,
    input_tokens: Arc<AtomicU64>,
}

/// A conversation of its own: requests with a user message containing `marker` are answered from `script`,
/// by that conversation's own assistant turns.
type Rule = (String, Vec<Reply>);

impl FakeOpenAi {
    /// Starts a server answering from `script`: reply *i* for an input holding *i* assistant turns
    /// (assistant messages and tool calls count), "done" past the end.
    pub fn start(script: Vec<Reply>) -> std::io::Result<FakeOpenAi> {
        let script = Arc::new(Mutex::new(script));
        let rules: Arc<Mutex<Vec<Rule>>> = Arc::new(Mutex::new(Vec::new()));
        let ids = Arc::new(AtomicUsize::new(1));
        let input_tokens = Arc::new(AtomicU64::new(10));
        let (shared, shared_rules, tokens) = (script.clone(), rules.clone(), input_tokens.clone());
        let server = Server::start(Arc::new(move |request: &RecordedRequest| {
            let users = user_messages(&request.body);
            let rules = shared_rules.lock().unwrap_or_else(PoisonError::into_inner);
            let script = match rules.iter().find(|(marker, _)| users.contains(marker.as_str())) {
                Some((_, script)) => script.clone(),
                None => shared.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            };
            drop(rules);
            respond(request, &script, &ids, tokens.load(Ordering::SeqCst))
        }))?;
        Ok(FakeOpenAi {
            server,
            script,
            rules,
            input_tokens,
        })
    }

    /// Answers the conversations with a user message containing `marker` (Codex sends its environment
    /// before the prompt, so any user message counts) from `script` instead; the first matching rule wins.
    pub fn set_rule(&self, marker: impl Into<String>, script: Vec<Reply>) {
        self.rules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((marker.into(), script));
    }

    /// `http://127.0.0.1:PORT/v1`, for a provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.server.addr())
    }

    /// Makes every response from now on report `tokens` input tokens (10 until set), so that a test can have
    /// a client spend more than a budget allows.
    pub fn set_input_tokens(&self, tokens: u64) {
        self.input_tokens.store(tokens, Ordering::SeqCst);
    }

    /// Replaces the script.
    pub fn set_script(&self, script: Vec<Reply>) {
        *self.script.lock().unwrap_or_else(PoisonError::into_inner) = script;
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.recorded()
    }

    /// The bodies of the `POST /v1/responses` requests.
    pub fn response_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.method == "POST"
                    && r.path
                        .split('?')
                        .next()
                        .is_some_and(|p| p.ends_with("/responses"))
            })
            .map(|r| r.body)
            .collect()
    }

    /// The bodies of the `POST /v1/chat/completions` requests.
    pub fn chat_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.method == "POST"
                    && r.path
                        .split('?')
                        .next()
                        .is_some_and(|p| p.ends_with("/chat/completions"))
            })
            .map(|r| r.body)
            .collect()
    }

    /// Every tool output the client sent back (`function_call_output`, `custom_tool_call_output`), deduplicated.
    pub fn tool_outputs(&self) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        for body in self.response_requests() {
            for item in body["input"].as_array().into_iter().flatten() {
                let kind = item["type"].as_str().unwrap_or_default();
                if kind.ends_with("_output") && !out.contains(item) {
                    out.push(item.clone());
                }
            }
        }
        out
    }
}

/// A request's conversation: the Responses API's `input`, or chat completions' `messages`.
fn conversation(body: &Value) -> &Value {
    if body.get("messages").is_some() {
        &body["messages"]
    } else {
        &body["input"]
    }
}

/// Every user message of a request's input, as JSON text.
fn user_messages(body: &Value) -> String {
    conversation(body)
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["role"] == "user")
        .map(|item| item["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn turns(body: &Value) -> usize {
    conversation(body).as_array().map_or(0, |items| {
        items
            .iter()
            .filter(|it| {
                it["role"] == "assistant"
                    || matches!(
                        it["type"].as_str(),
                        Some("function_call" | "custom_tool_call" | "local_shell_call")
                    )
            })
            .count()
    })
}

fn respond(request: &RecordedRequest, script: &[Reply], ids: &AtomicUsize, input_tokens: u64) -> Response {
    let path = request.path.split('?').next().unwrap_or_default();
    if path.ends_with("/models") {
        return Response::json(
            200,
            &json!({"object": "list", "data": [{"id": "gpt-fake", "object": "model", "owned_by": "fake"}], "models": []}),
        );
    }
    if request.method == "POST" && path.ends_with("/chat/completions") {
        let reply = scripted(script, turns(&request.body));
        return Response::sse(chat_stream(&request.body, &reply, ids, input_tokens));
    }
    if request.method != "POST" || !path.ends_with("/responses") {
        return Response::json(404, &json!({"error": {"message": "not found"}}));
    }
    let reply = scripted(script, turns(&request.body));
    Response::sse(stream(&request.body, &reply, ids, input_tokens))
}

fn sse(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn stream(body: &Value, reply: &Reply, ids: &AtomicUsize, input_tokens: u64) -> String {
    let next = || ids.fetch_add(1, Ordering::SeqCst);
    let first = reply
        .blocks()
        .into_iter()
        .next()
        .cloned()
        .unwrap_or_else(|| Reply::text(""));
    let item = match &first {
        Reply::ToolUse { name, input } => json!({"type": "function_call", "id": format!("fc_{}", next()),
            "call_id": format!("call_{}", next()), "name": name, "arguments": input.to_string(), "status": "completed"}),
        Reply::Custom { name, input } => json!({"type": "custom_tool_call", "id": format!("ctc_{}", next()),
            "call_id": format!("call_{}", next()), "name": name, "input": input, "status": "completed"}),
        Reply::Text(text) => json!({"type": "message", "id": format!("msg_{}", next()), "role": "assistant",
            "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        Reply::Blocks(_) => json!({"type": "message", "id": format!("msg_{}", next()), "role": "assistant",
            "status": "completed", "content": []}),
    };
    let base = json!({"id": format!("resp_{}", next()), "object": "response", "model": body["model"],
        "status": "in_progress", "output": []});
    let usage = json!({"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": input_tokens + 5});
    let mut out = sse(
        "response.created",
        &json!({"type": "response.created", "response": base}),
    );
    out += &sse(
        "response.output_item.added",
        &json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
    );
    if let Reply::Text(text) = &first {
        out += &sse(
            "response.output_text.delta",
            &json!({"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                    "content_index": 0, "delta": text}),
        );
    }
    out += &sse(
        "response.output_item.done",
        &json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    );
    let mut done = base;
    done["status"] = json!("completed");
    done["output"] = json!([item]);
    done["usage"] = usage;
    out + &sse(
        "response.completed",
        &json!({"type": "response.completed", "response": done}),
    )
}

/// A chat-completions stream: the reply's first block as one delta, then the finish reason with usage.
fn chat_stream(body: &Value, reply: &Reply, ids: &AtomicUsize, input_tokens: u64) -> String {
    let id = format!("chatcmpl-{}", ids.fetch_add(1, Ordering::SeqCst));
    let first = reply
        .blocks()
        .into_iter()
        .next()
        .cloned()
        .unwrap_or_else(|| Reply::text(""));
    let (delta, finish) = match &first {
        Reply::ToolUse { name, input } => (
            json!({"role": "assistant", "tool_calls": [{"index": 0, "type": "function",
                "id": format!("call_{}", ids.fetch_add(1, Ordering::SeqCst)),
                "function": {"name": name, "arguments": input.to_string()}}]}),
            "tool_calls",
        ),
        Reply::Custom { name, input } => (
            json!({"role": "assistant", "tool_calls": [{"index": 0, "type": "function",
                "id": format!("call_{}", ids.fetch_add(1, Ordering::SeqCst)),
                "function": {"name": name, "arguments": json!({"input": input}).to_string()}}]}),
            "tool_calls",
        ),
        Reply::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
        Reply::Blocks(_) => (json!({"role": "assistant", "content": ""}), "stop"),
    };
    let chunk = |choice: Value, usage: Value| {
        let mut chunk = json!({"id": id, "object": "chat.completion.chunk", "created": 0,
            "model": body["model"], "choices": [choice]});
        if !usage.is_null() {
            chunk["usage"] = usage;
        }
        format!("data: {chunk}\n\n")
    };
    let usage =
        json!({"prompt_tokens": input_tokens, "completion_tokens": 5, "total_tokens": input_tokens + 5});
    chunk(
        json!({"index": 0, "delta": delta, "finish_reason": null}),
        Value::Null,
    ) + &chunk(json!({"index": 0, "delta": {}, "finish_reason": finish}), usage)
        + "data: [DONE]\n\n"
}
