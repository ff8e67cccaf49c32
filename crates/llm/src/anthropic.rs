//! The Anthropic Messages API client (`POST {base}/v1/messages`, always streamed).
//!
//! Request mapping:
//! - `system` blocks become the top-level `system` array; tools get `input_schema` as given.
//! - **Prompt caching**: with [`AnthropicConfig::prompt_caching`] on (the default), `cache_control:
//!   {type: ephemeral}` marks at most four blocks, the API's limit: the last tool; the last of the system
//!   blocks every agent of the tier shares ([`Request::shared_system_blocks`]: agency's rules, the tier
//!   prompt, the tool guide), so the next agent of the tier reads them from the cache whatever its
//!   personality; the last system block (the stable prefix: tools, then system); and the last block of the
//!   last message (so each turn of an agent loop reads the previous turns from the cache). The API caches
//!   a prefix only from a minimum length (1,024 tokens on most models, more on some), so a short shared
//!   prefix is marked in vain but harmlessly. Field order is fixed and `messages` comes last, so two calls
//!   for the same brief serialise to byte-identical prefixes.
//! - **Mid-conversation system messages** ([`Role::System`]) are not accepted by the public API inside
//!   `messages`. Each one is folded into a user turn as a text block wrapped in `<system-reminder>` tags
//!   (the convention Claude models are trained on for injected context), merged with an adjacent user turn
//!   if there is one, since user turns may not follow each other. Within a merged user turn, tool results
//!   stay first, as the API requires.
//! - Thinking blocks are sent back with their signature; unsigned ones (e.g. from a scripted transcript)
//!   are dropped because the API would reject them.
//!
//! The response stream (`message_start`, `content_block_*`, `message_delta`, `message_stop`, `ping`,
//! `error`) is assembled in the `stream` submodule. A server that ignores `stream: true` and answers with one JSON
//! message (some proxies do) is replayed through the same assembler.

mod stream;

use std::borrow::Cow;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::Value;

use crate::cancel::CancelToken;
use crate::error::LlmError;
use crate::http::{self, ApiKey, Timeouts};
use crate::message::{Block, Message, Request, Response, Role, StreamEvent, ToolChoice};
use crate::provider::{BoxFuture, EventSink, Provider};

/// The `anthropic-version` header this client speaks.
pub const API_VERSION: &str = "2023-06-01";

/// The public API endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The conventional key variable.
pub const DEFAULT_KEY_VAR: &str = "ANTHROPIC_API_KEY";

/// How to reach Anthropic and what to ask for.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// API root without `/v1` (default [`DEFAULT_BASE_URL`]).
    pub base_url: String,
    /// Model id, e.g. `claude-sonnet-4-5`.
    pub model: String,
    /// The key, sent as `x-api-key`.
    pub api_key: ApiKey,
    /// Network timeouts.
    pub timeouts: Timeouts,
    /// Whether to mark the stable prefix and the conversation for prompt caching.
    pub prompt_caching: bool,
    /// Extended thinking budget in tokens; must be below `max_tokens`, and `temperature` must be unset.
    pub thinking_budget: Option<u32>,
    /// Values for the `anthropic-beta` header.
    pub betas: Vec<String>,
}

impl AnthropicConfig {
    /// Defaults for `model` with `api_key`.
    pub fn new(model: impl Into<String>, api_key: ApiKey) -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.to_owned(),
            model: model.into(),
            api_key,
            timeouts: Timeouts::default(),
            prompt_caching: true,
            thinking_budget: None,
            betas: Vec::new(),
        }
    }
}

/// A [`Provider`] for the Anthropic Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    config: AnthropicConfig,
    url: String,
    headers: HeaderMap,
    http: reqwest::Client,
}

impl AnthropicClient {
    /// Builds a client; fails only on an unusable base URL, beta name or key.
    pub fn new(config: AnthropicConfig) -> Result<Self, LlmError> {
        let http = http::build_client(&config.base_url, config.timeouts)?;
        let url = http::join_url(&config.base_url, "v1/messages");
        let mut headers = HeaderMap::new();
        let mut key = HeaderValue::from_str(config.api_key.expose()).map_err(|_| {
            LlmError::Config("the API key contains characters not allowed in a header".into())
        })?;
        key.set_sensitive(true);
        headers.insert(HeaderName::from_static("x-api-key"), key);
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        if !config.betas.is_empty() {
            let betas = HeaderValue::from_str(&config.betas.join(","))
                .map_err(|_| LlmError::Config(format!("invalid anthropic-beta value {:?}", config.betas)))?;
            headers.insert(HeaderName::from_static("anthropic-beta"), betas);
        }
        Ok(Self {
            config,
            url,
            headers,
            http,
        })
    }

    /// The exact JSON body sent for `request`.
    pub fn request_body(&self, request: &Request) -> Result<Vec<u8>, LlmError> {
        let body = WireRequest {
            model: &self.config.model,
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            stop_sequences: &request.stop,
            thinking: self.config.thinking_budget.map(|budget_tokens| Thinking {
                kind: "enabled",
                budget_tokens,
            }),
            stream: true,
            tool_choice: request.tool_choice.as_ref().map(|choice| match choice {
                ToolChoice::Auto => WireToolChoice {
                    kind: "auto",
                    name: None,
                },
                ToolChoice::Any => WireToolChoice {
                    kind: "any",
                    name: None,
                },
                ToolChoice::Tool(name) => WireToolChoice {
                    kind: "tool",
                    name: Some(name),
                },
                ToolChoice::None => WireToolChoice {
                    kind: "none",
                    name: None,
                },
            }),
            system: system_blocks(
                &request.system,
                request.shared_system_blocks,
                self.config.prompt_caching,
            ),
            tools: tools(request, self.config.prompt_caching),
            messages: messages(&request.messages, self.config.prompt_caching),
        };
        serde_json::to_vec(&body).map_err(|e| LlmError::Protocol(format!("cannot encode the request: {e}")))
    }

    async fn call(&self, request: &Request, sink: EventSink<'_>) -> Result<Response, LlmError> {
        let body = self.request_body(request)?;
        let read = self.config.timeouts.read;
        let response = http::post(&self.http, &self.url, self.headers.clone(), body, read).await?;
        let mut state = stream::StreamState::default();
        let ended = if http::is_json(&response) {
            let message = http::read_json(response, read).await?;
            state.replay_message(&message, &mut *sink)?
        } else {
            http::read_sse(response, read, |event| state.on_event(&event, &mut *sink)).await?
        };
        if !ended {
            return Err(LlmError::StreamDropped(
                "the connection closed before message_stop".into(),
            ));
        }
        let response = state.finish(&self.config.model)?;
        sink(StreamEvent::Stop(response.stop_reason.clone()));
        Ok(response)
    }
}

impl Provider for AnthropicClient {
    fn kind(&self) -> &'static str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn complete<'a>(
        &'a self,
        request: &'a Request,
        sink: EventSink<'a>,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(crate::cancel::run(
            cancel,
            http::within(self.config.timeouts.request, self.call(request, sink)),
        ))
    }
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<WireBlock<'a>>,
    messages: Vec<WireMessage<'a>>,
}

#[derive(Serialize)]
struct WireToolChoice<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<WireBlock<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl WireBlock<'_> {
    fn is_tool_result(&self) -> bool {
        matches!(self, WireBlock::ToolResult { .. })
    }

    /// Marks this block as a cache breakpoint; blocks that cannot carry one are left alone.
    fn mark_cached(&mut self) {
        match self {
            WireBlock::Text { cache_control, .. } | WireBlock::ToolResult { cache_control, .. } => {
                *cache_control = Some(EPHEMERAL);
            }
            _ => {}
        }
    }
}

/// The system blocks, with up to two breakpoints: after the blocks every agent of the tier shares (so
/// another agent of the tier reads them from the cache, whatever its personality) and after the last one
/// (so this agent's next turn reads its whole system prompt). With the last tool's and the last message's,
/// that makes four, the API's limit.
fn system_blocks(system: &[String], shared: usize, caching: bool) -> Vec<WireBlock<'_>> {
    let mut blocks: Vec<WireBlock<'_>> = Vec::with_capacity(system.len());
    // The index, among the blocks sent, of the last shared block.
    let mut shared_end = None;
    for (index, text) in system.iter().enumerate() {
        if !text.is_empty() {
            blocks.push(WireBlock::Text {
                text: Cow::Borrowed(text.as_str()),
                cache_control: None,
            });
        }
        if index + 1 == shared && !blocks.is_empty() {
            shared_end = Some(blocks.len() - 1);
        }
    }
    if !caching {
        return blocks;
    }
    if let Some(end) = shared_end
        && let Some(block) = blocks.get_mut(end)
    {
        block.mark_cached();
    }
    if let Some(last) = blocks.last_mut() {
        last.mark_cached();
    }
    blocks
}

fn tools(request: &Request, caching: bool) -> Vec<WireTool<'_>> {
    let mut tools: Vec<WireTool<'_>> = request
        .tools
        .iter()
        .map(|t| WireTool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.input_schema,
            cache_control: None,
        })
        .collect();
    if caching && let Some(last) = tools.last_mut() {
        last.cache_control = Some(EPHEMERAL);
    }
    tools
}

fn messages(messages: &[Message], caching: bool) -> Vec<WireMessage<'_>> {
    let mut out: Vec<WireMessage<'_>> = Vec::new();
    for message in messages {
        let role = match message.role {
            Role::Assistant => "assistant",
            Role::User | Role::System => "user",
        };
        let blocks: Vec<WireBlock<'_>> = message
            .content
            .iter()
            .filter_map(|b| wire_block(b, message.role == Role::System))
            .collect();
        if blocks.is_empty() {
            // The API rejects empty turns (e.g. one that held only unsigned thinking).
            continue;
        }
        match out.last_mut() {
            Some(previous) if previous.role == role => previous.content.extend(blocks),
            _ => out.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    for message in &mut out {
        // Tool results must open a user turn; a stable sort keeps everything else in order.
        message.content.sort_by_key(|b| !b.is_tool_result());
    }
    if caching && let Some(last) = out.last_mut().and_then(|m| m.content.last_mut()) {
        last.mark_cached();
    }
    out
}

fn wire_block(block: &Block, from_system: bool) -> Option<WireBlock<'_>> {
    Some(match block {
        Block::Text { text } if text.is_empty() => return None,
        Block::Text { text } if from_system => WireBlock::Text {
            text: Cow::Owned(format!("<system-reminder>\n{text}\n</system-reminder>")),
            cache_control: None,
        },
        Block::Text { text } => WireBlock::Text {
            text: Cow::Borrowed(text),
            cache_control: None,
        },
        Block::Thinking {
            thinking,
            signature: Some(signature),
        } => WireBlock::Thinking { thinking, signature },
        Block::Thinking { signature: None, .. } => return None,
        Block::RedactedThinking { data } => WireBlock::RedactedThinking { data },
        Block::ToolUse { id, name, input } => WireBlock::ToolUse { id, name, input },
        Block::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => WireBlock::ToolResult {
            tool_use_id,
            content,
            is_error: *is_error,
            cache_control: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolSpec;
    use serde_json::json;

    fn client(caching: bool) -> AnthropicClient {
        let mut config = AnthropicConfig::new("claude-test", ApiKey::new("k"));
        config.base_url = "http://127.0.0.1:9".into();
        config.prompt_caching = caching;
        AnthropicClient::new(config).unwrap()
    }

    fn body(client: &AnthropicClient, request: &Request) -> Value {
        serde_json::from_slice(&client.request_body(request).unwrap()).unwrap()
    }

    #[test]
    fn mid_conversation_system_is_folded_into_user_turns_with_tool_results_first() {
        let request = Request {
            system: vec!["persona".into(), "brief".into()],
            messages: vec![
                Message::user("do it"),
                Message::system("reminder one"),
                Message::assistant(vec![Block::ToolUse {
                    id: "t1".into(),
                    name: "Read".into(),
                    input: json!({}),
                }]),
                Message::system("reminder two"),
                Message::tool_results(vec![Block::tool_result("t1", "file text", false)]),
            ],
            max_tokens: 100,
            ..Request::default()
        };
        let body = body(&client(false), &request);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [
                    {"type": "text", "text": "do it"},
                    {"type": "text", "text": "<system-reminder>\nreminder one\n</system-reminder>"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "file text"},
                    {"type": "text", "text": "<system-reminder>\nreminder two\n</system-reminder>"}]},
            ])
        );
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "persona"}, {"type": "text", "text": "brief"}])
        );
    }

    #[test]
    fn cache_breakpoints_on_last_tool_last_system_block_and_last_message() {
        let request = Request {
            system: vec!["persona".into(), "brief".into()],
            messages: vec![Message::user("go")],
            tools: vec![
                ToolSpec {
                    name: "a".into(),
                    description: "A".into(),
                    input_schema: json!({"type": "object"}),
                },
                ToolSpec {
                    name: "b".into(),
                    description: "B".into(),
                    input_schema: json!({"type": "object"}),
                },
            ],
            max_tokens: 100,
            temperature: Some(0.5),
            stop: vec!["STOP".into()],
            tool_choice: Some(ToolChoice::Tool("b".into())),
            ..Request::default()
        };
        let body = body(&client(true), &request);
        let eph = json!({"type": "ephemeral"});
        assert_eq!(body["tools"][0].get("cache_control"), None);
        assert_eq!(body["tools"][1]["cache_control"], eph);
        assert_eq!(body["system"][0].get("cache_control"), None);
        assert_eq!(body["system"][1]["cache_control"], eph);
        assert_eq!(body["messages"][0]["content"][0]["cache_control"], eph);
        assert_eq!(body["stream"], json!(true));
        assert_eq!(body["temperature"], json!(0.5));
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "b"}));
        assert_eq!(body["stop_sequences"], json!(["STOP"]));
    }

    /// Every `cache_control` marker in a request body, by where it is.
    fn markers(body: &Value) -> Vec<String> {
        let mut out = Vec::new();
        for (i, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
            if tool.get("cache_control").is_some() {
                out.push(format!("tools[{i}]"));
            }
        }
        for (i, block) in body["system"].as_array().into_iter().flatten().enumerate() {
            if block.get("cache_control").is_some() {
                out.push(format!("system[{i}]"));
            }
        }
        for (m, message) in body["messages"].as_array().into_iter().flatten().enumerate() {
            for (i, block) in message["content"].as_array().into_iter().flatten().enumerate() {
                if block.get("cache_control").is_some() {
                    out.push(format!("messages[{m}][{i}]"));
                }
            }
        }
        out
    }

    #[test]
    fn the_tiers_shared_system_blocks_get_a_breakpoint_of_their_own_within_the_limit_of_four() {
        let tool = ToolSpec {
            name: "read_file".into(),
            description: "Read".into(),
            input_schema: json!({"type": "object"}),
        };
        let mut request = Request {
            system: vec![
                "rules".into(),
                "tier".into(),
                "guide".into(),
                "personality".into(),
            ],
            shared_system_blocks: 3,
            messages: vec![
                Message::user("brief"),
                Message::assistant(vec![Block::text("ok")]),
                Message::user("go on"),
            ],
            tools: vec![tool.clone(), tool],
            max_tokens: 100,
            ..Request::default()
        };
        let marked = markers(&body(&client(true), &request));
        assert_eq!(marked, ["tools[1]", "system[2]", "system[3]", "messages[2][0]"]);
        // An empty block is not sent: the marker stays on the last shared block that is.
        request.system = vec!["rules".into(), "".into(), "tier".into(), "personality".into()];
        assert_eq!(
            markers(&body(&client(true), &request)),
            ["tools[1]", "system[1]", "system[2]", "messages[2][0]"]
        );
        // All shared, or none known: one marker on the system prompt.
        request.shared_system_blocks = 4;
        assert_eq!(markers(&body(&client(true), &request)).len(), 3);
        request.shared_system_blocks = 0;
        assert_eq!(
            markers(&body(&client(true), &request)),
            ["tools[1]", "system[2]", "messages[2][0]"]
        );
        assert!(markers(&body(&client(false), &request)).is_empty());
    }

    #[test]
    fn turns_left_empty_are_dropped_and_their_neighbours_merged() {
        let request = Request {
            messages: vec![
                Message::user("a"),
                Message::assistant(vec![Block::Thinking {
                    thinking: "x".into(),
                    signature: None,
                }]),
                Message::user("b"),
            ],
            max_tokens: 10,
            ..Request::default()
        };
        let body = body(&client(false), &request);
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])
        );
    }

    #[test]
    fn unsigned_thinking_and_empty_text_are_not_sent() {
        let request = Request {
            messages: vec![
                Message::user("q"),
                Message::assistant(vec![
                    Block::Thinking {
                        thinking: "hmm".into(),
                        signature: None,
                    },
                    Block::Thinking {
                        thinking: "ok".into(),
                        signature: Some("sig".into()),
                    },
                    Block::text(""),
                    Block::text("a"),
                ]),
            ],
            max_tokens: 10,
            ..Request::default()
        };
        let body = body(&client(false), &request);
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "thinking", "thinking": "ok", "signature": "sig"}, {"type": "text", "text": "a"}])
        );
    }
}
