//! Assembles an Anthropic Messages event stream into a [`Response`], forwarding deltas as [`StreamEvent`]s.
//! Usage comes from `message_start` (input and cache counts) and `message_delta` (output, and on newer API
//! versions updated input counts: later values win). Unknown event and block types are ignored, as the API's
//! versioning policy asks of clients.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::LlmError;
use crate::http::error_from_stream;
use crate::message::{Block, Response, StopReason, StreamEvent, Usage, parse_tool_input as parse_input};
use crate::sse::SseEvent;

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: usize,
        content_block: WireBlockStart,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDelta,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlockStart {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

enum Partial {
    Text(String),
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

/// What has arrived so far.
#[derive(Default)]
pub(crate) struct StreamState {
    blocks: BTreeMap<usize, Partial>,
    usage: Usage,
    model: Option<String>,
    stop_reason: Option<StopReason>,
}

impl StreamState {
    /// Takes one SSE event; `Ok(true)` at `message_stop`.
    pub fn on_event(
        &mut self,
        event: &SseEvent,
        sink: &mut dyn FnMut(StreamEvent),
    ) -> Result<bool, LlmError> {
        if event.event.as_deref() == Some("error") {
            return Err(error_from_stream(&event.data));
        }
        let parsed: WireEvent = serde_json::from_str(&event.data)
            .map_err(|e| LlmError::Protocol(format!("bad event {:?}: {e}: {}", event.event, event.data)))?;
        match parsed {
            WireEvent::MessageStart { message } => {
                self.model = message.model;
                self.merge_usage(message.usage.unwrap_or_default());
            }
            WireEvent::ContentBlockStart { index, content_block } => {
                let partial = match content_block {
                    WireBlockStart::Text { text } => {
                        emit_nonempty(sink, &text, StreamEvent::TextDelta);
                        Partial::Text(text)
                    }
                    WireBlockStart::Thinking { thinking } => {
                        emit_nonempty(sink, &thinking, StreamEvent::ThinkingDelta);
                        Partial::Thinking {
                            thinking,
                            signature: None,
                        }
                    }
                    WireBlockStart::RedactedThinking { data } => Partial::Redacted(data),
                    WireBlockStart::ToolUse { id, name } => {
                        sink(StreamEvent::ToolUseStart {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        Partial::ToolUse {
                            id,
                            name,
                            json: String::new(),
                        }
                    }
                    // Server-side tool blocks and future types carry nothing the caller can act on.
                    WireBlockStart::Other => return Ok(false),
                };
                self.blocks.insert(index, partial);
            }
            WireEvent::ContentBlockDelta { index, delta } => self.apply_delta(index, delta, sink)?,
            WireEvent::ContentBlockStop { index } => {
                if let Some(Partial::ToolUse { id, name, json }) = self.blocks.get(&index)
                    && let Ok(input) = parse_input(json)
                {
                    sink(StreamEvent::ToolUse {
                        id: id.clone(),
                        name: name.clone(),
                        input,
                    });
                }
            }
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(stop_reason(&reason));
                }
                self.merge_usage(usage.unwrap_or_default());
            }
            WireEvent::MessageStop => return Ok(true),
            WireEvent::Error => return Err(error_from_stream(&event.data)),
            WireEvent::Other => {}
        }
        Ok(false)
    }

    /// Replays a complete, non-streamed message as the events that would have carried it; `Ok(true)` when
    /// it was whole.
    pub fn replay_message(
        &mut self,
        message: &Value,
        sink: &mut dyn FnMut(StreamEvent),
    ) -> Result<bool, LlmError> {
        if message["type"] == "error" {
            return Err(error_from_stream(&message.to_string()));
        }
        let mut events = vec![json!({"type": "message_start", "message": {
            "model": message["model"], "usage": message["usage"]}})];
        let blocks = message["content"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (index, block) in blocks.iter().enumerate() {
            events.push(json!({"type": "content_block_start", "index": index, "content_block": block}));
            let delta = match block["type"].as_str() {
                Some("tool_use") => {
                    Some(json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}))
                }
                Some("thinking") => block["signature"]
                    .as_str()
                    .map(|s| json!({"type": "signature_delta", "signature": s})),
                _ => None,
            };
            if let Some(delta) = delta {
                events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
            }
            events.push(json!({"type": "content_block_stop", "index": index}));
        }
        events.push(json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"]}}));
        events.push(json!({"type": "message_stop"}));
        for event in events {
            if self.on_event(
                &SseEvent {
                    event: None,
                    data: event.to_string(),
                },
                sink,
            )? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn apply_delta(
        &mut self,
        index: usize,
        delta: WireDelta,
        sink: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), LlmError> {
        let Some(block) = self.blocks.get_mut(&index) else {
            return Err(LlmError::Protocol(format!(
                "content_block_delta for unknown block {index}"
            )));
        };
        match (block, delta) {
            (Partial::Text(text), WireDelta::TextDelta { text: more }) => {
                text.push_str(&more);
                sink(StreamEvent::TextDelta(more));
            }
            (Partial::Thinking { thinking, .. }, WireDelta::ThinkingDelta { thinking: more }) => {
                thinking.push_str(&more);
                sink(StreamEvent::ThinkingDelta(more));
            }
            (Partial::Thinking { signature, .. }, WireDelta::SignatureDelta { signature: more }) => {
                signature.get_or_insert_with(String::new).push_str(&more);
            }
            (Partial::ToolUse { id, json, .. }, WireDelta::InputJsonDelta { partial_json }) => {
                json.push_str(&partial_json);
                sink(StreamEvent::ToolUseInputDelta {
                    id: id.clone(),
                    partial_json,
                });
            }
            // Citations and other annotations do not change the text.
            _ => {}
        }
        Ok(())
    }

    fn merge_usage(&mut self, usage: WireUsage) {
        let u = &mut self.usage;
        u.input = usage.input_tokens.unwrap_or(u.input);
        u.output = usage.output_tokens.unwrap_or(u.output);
        u.cache_write = usage.cache_creation_input_tokens.unwrap_or(u.cache_write);
        u.cache_read = usage.cache_read_input_tokens.unwrap_or(u.cache_read);
    }

    /// The assembled response after `message_stop`. A tool call whose arguments were cut off by
    /// `max_tokens` is dropped; elsewhere, unparsable arguments are a protocol error.
    pub fn finish(self, requested_model: &str) -> Result<Response, LlmError> {
        let has_tool_use = self.blocks.values().any(|b| matches!(b, Partial::ToolUse { .. }));
        let stop_reason = self.stop_reason.unwrap_or(if has_tool_use {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        let mut content = Vec::with_capacity(self.blocks.len());
        for partial in self.blocks.into_values() {
            content.push(match partial {
                Partial::Text(text) => Block::Text { text },
                Partial::Thinking { thinking, signature } => Block::Thinking { thinking, signature },
                Partial::Redacted(data) => Block::RedactedThinking { data },
                Partial::ToolUse { id, name, json } => match parse_input(&json) {
                    Ok(input) => Block::ToolUse { id, name, input },
                    Err(_) if stop_reason == StopReason::MaxTokens => continue,
                    Err(e) => {
                        return Err(LlmError::Protocol(format!(
                            "arguments of tool call {name} ({id}): {e}"
                        )));
                    }
                },
            });
        }
        Ok(Response {
            content,
            stop_reason,
            usage: self.usage,
            model: self.model.unwrap_or_else(|| requested_model.to_owned()),
        })
    }
}

fn emit_nonempty(sink: &mut dyn FnMut(StreamEvent), text: &str, make: fn(String) -> StreamEvent) {
    if !text.is_empty() {
        sink(make(text.to_owned()));
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}
