//! The OpenAI-compatible chat-completions client (`POST {base}/chat/completions`, always streamed). The
//! same code talks to OpenAI, Ollama (`http://localhost:11434/v1`), vLLM, LM Studio, llama.cpp's server and
//! OpenRouter: only the base URL, the key variable (optional for local servers) and two switches differ.
//!
//! Request mapping:
//! - system blocks become one leading `system` message (blocks joined by a blank line);
//! - a user turn's tool results become `tool` messages (first, right after the assistant's `tool_calls`),
//!   then its text becomes one `user` message; a failed tool's output is prefixed with `Error: ` since the
//!   format has no error flag;
//! - assistant tool calls become `tool_calls` with arguments as a JSON string; thinking blocks are dropped;
//! - mid-conversation [`Role::System`] messages are sent as `system` messages, which OpenAI accepts; for
//!   local models whose chat template rejects a late system message, [`OpenAiConfig::fold_mid_system`]
//!   folds them into user messages wrapped in `<system-reminder>` tags, as the Anthropic client does;
//! - `stream_options: {include_usage: true}` asks for the final usage chunk (turn it off for servers that
//!   reject the field).
//!
//! A server that ignores `stream: true` and answers with one `chat.completion` document is read whole and
//! replayed through the stream assembler.
//!
//! OpenAI itself caches prompt prefixes automatically; field order is fixed and `messages` comes last so
//! repeated calls for one brief share a byte-identical prefix.

mod stream;

use std::borrow::Cow;

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Serialize;
use serde_json::{Value, json};

use crate::cancel::CancelToken;
use crate::error::LlmError;
use crate::http::{self, ApiKey, Timeouts};
use crate::message::{Block, Message, Request, Response, Role, StreamEvent, ToolChoice};
use crate::provider::{BoxFuture, EventSink, Provider};

/// OpenAI's endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The conventional key variable.
pub const DEFAULT_KEY_VAR: &str = "OPENAI_API_KEY";

/// Which request field carries the output limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxTokensField {
    /// `max_tokens`: understood by every compatible server.
    #[default]
    MaxTokens,
    /// `max_completion_tokens`: required by OpenAI's reasoning models.
    MaxCompletionTokens,
}

/// How to reach an OpenAI-compatible server and what to ask for.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// API root including `/v1` (default [`DEFAULT_BASE_URL`]).
    pub base_url: String,
    /// Model name as the server knows it.
    pub model: String,
    /// Bearer key; `None` for local servers that need none.
    pub api_key: Option<ApiKey>,
    /// Network timeouts.
    pub timeouts: Timeouts,
    /// Which field carries `max_tokens`.
    pub max_tokens_field: MaxTokensField,
    /// Send `stream_options.include_usage` (default on).
    pub include_usage: bool,
    /// Fold mid-conversation system messages into user messages (default off).
    pub fold_mid_system: bool,
}

impl OpenAiConfig {
    /// Defaults for `model` at `base_url`.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>, api_key: Option<ApiKey>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key,
            timeouts: Timeouts::default(),
            max_tokens_field: MaxTokensField::default(),
            include_usage: true,
            fold_mid_system: false,
        }
    }
}

/// A [`Provider`] for OpenAI-compatible chat completions.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    config: OpenAiConfig,
    url: String,
    headers: HeaderMap,
    http: reqwest::Client,
}

impl OpenAiClient {
    /// Builds a client; fails only on an unusable base URL or key.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        let http = http::build_client(&config.base_url, config.timeouts)?;
        let url = http::join_url(&config.base_url, "chat/completions");
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        if let Some(key) = &config.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                LlmError::Config("the API key contains characters not allowed in a header".into())
            })?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
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
        let limit = Some(request.max_tokens);
        let completion = self.config.max_tokens_field == MaxTokensField::MaxCompletionTokens;
        let body = WireRequest {
            model: &self.config.model,
            max_tokens: if completion { None } else { limit },
            max_completion_tokens: if completion { limit } else { None },
            temperature: request.temperature,
            stop: &request.stop,
            tool_choice: request.tool_choice.as_ref().map(|choice| match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Any => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
                ToolChoice::None => json!("none"),
            }),
            stream: true,
            stream_options: self
                .config
                .include_usage
                .then_some(StreamOptions { include_usage: true }),
            tools: request
                .tools
                .iter()
                .map(|t| WireTool {
                    kind: "function",
                    function: WireFunction {
                        name: &t.name,
                        description: &t.description,
                        parameters: &t.input_schema,
                    },
                })
                .collect(),
            messages: messages(request, self.config.fold_mid_system),
        };
        serde_json::to_vec(&body).map_err(|e| LlmError::Protocol(format!("cannot encode the request: {e}")))
    }

    async fn call(&self, request: &Request, sink: EventSink<'_>) -> Result<Response, LlmError> {
        let body = self.request_body(request)?;
        let read = self.config.timeouts.read;
        let response = http::post(&self.http, &self.url, self.headers.clone(), body, read).await?;
        let mut state = stream::StreamState::default();
        let done = if http::is_json(&response) {
            let completion = http::read_json(response, read).await?;
            state.replay_completion(completion, &mut *sink)?
        } else {
            http::read_sse(response, read, |event| state.on_event(&event, &mut *sink)).await?
        };
        let response = state.finish(done, &self.config.model, &mut *sink)?;
        sink(StreamEvent::Stop(response.stop_reason.clone()));
        Ok(response)
    }
}

impl Provider for OpenAiClient {
    fn kind(&self) -> &'static str {
        "openai"
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
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    messages: Vec<WireMessage<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> WireMessage<'a> {
    fn text(role: &'static str, content: Cow<'a, str>) -> Self {
        Self {
            role,
            content: Some(content),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireCall<'a>,
}

#[derive(Serialize)]
struct WireCall<'a> {
    name: &'a str,
    arguments: String,
}

fn messages(request: &Request, fold_mid_system: bool) -> Vec<WireMessage<'_>> {
    let mut out = Vec::new();
    let system: Vec<&str> = request
        .system
        .iter()
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .collect();
    if !system.is_empty() {
        out.push(WireMessage::text("system", Cow::Owned(system.join("\n\n"))));
    }
    for message in &request.messages {
        push_message(&mut out, message, fold_mid_system);
    }
    out
}

fn push_message<'a>(out: &mut Vec<WireMessage<'a>>, message: &'a Message, fold_mid_system: bool) {
    match message.role {
        Role::System if fold_mid_system => {
            let text = message.text();
            out.push(WireMessage::text(
                "user",
                Cow::Owned(format!("<system-reminder>\n{text}\n</system-reminder>")),
            ));
        }
        Role::System => out.push(WireMessage::text("system", joined_text(&message.content))),
        Role::User => {
            for block in &message.content {
                if let Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } = block
                {
                    let content = if *is_error {
                        Cow::Owned(format!("Error: {content}"))
                    } else {
                        Cow::Borrowed(content.as_str())
                    };
                    out.push(WireMessage {
                        role: "tool",
                        content: Some(content),
                        tool_calls: Vec::new(),
                        tool_call_id: Some(tool_use_id),
                    });
                }
            }
            let text = joined_text(&message.content);
            if !text.is_empty() {
                out.push(WireMessage::text("user", text));
            }
        }
        Role::Assistant => {
            let text = joined_text(&message.content);
            let tool_calls: Vec<WireToolCall<'a>> = message
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::ToolUse { id, name, input } => Some(WireToolCall {
                        id,
                        kind: "function",
                        function: WireCall {
                            name,
                            arguments: input.to_string(),
                        },
                    }),
                    _ => None,
                })
                .collect();
            let content = if text.is_empty() && !tool_calls.is_empty() {
                None
            } else {
                Some(text)
            };
            out.push(WireMessage {
                role: "assistant",
                content,
                tool_calls,
                tool_call_id: None,
            });
        }
    }
}

/// The text blocks of a turn: borrowed when there is one, joined by blank lines when there are several.
fn joined_text(blocks: &[Block]) -> Cow<'_, str> {
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    match texts.as_slice() {
        [] => Cow::Borrowed(""),
        [one] => Cow::Borrowed(one),
        many => Cow::Owned(many.join("\n\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolSpec;
    use serde_json::json;

    fn body(config: OpenAiConfig, request: &Request) -> Value {
        let client = OpenAiClient::new(config).unwrap();
        serde_json::from_slice(&client.request_body(request).unwrap()).unwrap()
    }

    fn conversation() -> Request {
        Request {
            system: vec!["persona".into(), "brief".into()],
            messages: vec![
                Message::user("do it"),
                Message::assistant(vec![
                    Block::Thinking {
                        thinking: "hmm".into(),
                        signature: None,
                    },
                    Block::ToolUse {
                        id: "c1".into(),
                        name: "Read".into(),
                        input: json!({"path": "a"}),
                    },
                ]),
                Message::system("reminder"),
                Message {
                    role: Role::User,
                    content: vec![Block::tool_result("c1", "nope", true), Block::text("and then?")],
                },
            ],
            tools: vec![ToolSpec {
                name: "Read".into(),
                description: "read".into(),
                input_schema: json!({}),
            }],
            max_tokens: 50,
            ..Request::default()
        }
    }

    #[test]
    fn wire_messages_for_a_tool_round_trip() {
        let config = OpenAiConfig::new("http://localhost:11434/v1", "qwen", None);
        let body = body(config, &conversation());
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "persona\n\nbrief"},
                {"role": "user", "content": "do it"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{\"path\":\"a\"}"}}]},
                {"role": "system", "content": "reminder"},
                {"role": "tool", "content": "Error: nope", "tool_call_id": "c1"},
                {"role": "user", "content": "and then?"},
            ])
        );
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(body["max_tokens"], json!(50));
        assert_eq!(body["tools"][0]["function"]["name"], json!("Read"));
    }

    #[test]
    fn folding_and_max_completion_tokens() {
        let mut config = OpenAiConfig::new("http://127.0.0.1:1/v1", "o-model", Some(ApiKey::new("k")));
        config.fold_mid_system = true;
        config.include_usage = false;
        config.max_tokens_field = MaxTokensField::MaxCompletionTokens;
        let mut request = conversation();
        request.tool_choice = Some(ToolChoice::Any);
        let body = body(config, &request);
        assert_eq!(body["tool_choice"], json!("required"));
        assert_eq!(
            body["messages"][3],
            json!({"role": "user", "content": "<system-reminder>\nreminder\n</system-reminder>"})
        );
        assert_eq!(body["max_completion_tokens"], json!(50));
        assert_eq!(body.get("max_tokens"), None);
        assert_eq!(body.get("stream_options"), None);
    }
}
