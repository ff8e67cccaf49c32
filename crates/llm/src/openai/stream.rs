//! Assembles a chat-completions chunk stream into a [`Response`]. Tool calls arrive as `tool_calls` deltas
//! keyed by `index` (id and name in the first, arguments split over many); servers that omit the index get
//! one slot per new id. Reasoning arrives as `reasoning_content` (vLLM, DeepSeek) or `reasoning` (Ollama,
//! OpenRouter). Usage comes in a final chunk with empty `choices` when `include_usage` was asked for, or
//! with the last choice on servers that always send it. The stream ends with `data: [DONE]`; a server that
//! closes after a `finish_reason` without it is accepted, one that closes before is
//! [`LlmError::StreamDropped`].

use serde::Deserialize;
use serde_json::Value;

use crate::error::LlmError;
use crate::http::error_from_stream;
use crate::message::{Block, Response, StopReason, StreamEvent, Usage, parse_tool_input as parse_input};
use crate::sse::SseEvent;

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

struct PartialCall {
    index: usize,
    id: String,
    name: String,
    arguments: String,
}

/// What has arrived so far.
#[derive(Default)]
pub(crate) struct StreamState {
    text: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    model: Option<String>,
    finish_reason: Option<String>,
}

impl StreamState {
    /// Takes one SSE event; `Ok(true)` at `[DONE]`.
    pub fn on_event(
        &mut self,
        event: &SseEvent,
        sink: &mut dyn FnMut(StreamEvent),
    ) -> Result<bool, LlmError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        if event.event.as_deref() == Some("error") {
            return Err(error_from_stream(data));
        }
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|e| LlmError::Protocol(format!("bad chunk ({e}): {data}")))?;
        if chunk.error.is_some() {
            return Err(error_from_stream(data));
        }
        if chunk.model.is_some() {
            self.model = chunk.model;
        }
        if let Some(usage) = chunk.usage {
            let cached = usage
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0);
            self.usage = Some(Usage {
                input: usage.prompt_tokens.saturating_sub(cached),
                output: usage.completion_tokens,
                cache_read: cached,
                cache_write: 0,
            });
        }
        // With n = 1 there is one choice; anything else is not ours to merge.
        if let Some(choice) = chunk.choices.into_iter().next() {
            self.apply(choice.delta.unwrap_or_default(), sink);
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        Ok(false)
    }

    /// Replays a complete, non-streamed `chat.completion` as one chunk whose deltas are its messages;
    /// `Ok(true)`, as a whole document is never cut short.
    pub fn replay_completion(
        &mut self,
        mut completion: Value,
        sink: &mut dyn FnMut(StreamEvent),
    ) -> Result<bool, LlmError> {
        if let Some(choices) = completion.get_mut("choices").and_then(Value::as_array_mut) {
            for choice in choices {
                if let Some(message) = choice.get_mut("message").map(Value::take) {
                    choice["delta"] = message;
                }
            }
        }
        self.on_event(
            &SseEvent {
                event: None,
                data: completion.to_string(),
            },
            sink,
        )?;
        Ok(true)
    }

    fn apply(&mut self, delta: Delta, sink: &mut dyn FnMut(StreamEvent)) {
        if let Some(reasoning) = delta
            .reasoning_content
            .or(delta.reasoning)
            .filter(|r| !r.is_empty())
        {
            self.reasoning.push_str(&reasoning);
            sink(StreamEvent::ThinkingDelta(reasoning));
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            self.text.push_str(&text);
            sink(StreamEvent::TextDelta(text));
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.apply_call(call, sink);
        }
    }

    fn apply_call(&mut self, delta: ToolCallDelta, sink: &mut dyn FnMut(StreamEvent)) {
        let index = match (delta.index, &delta.id) {
            (Some(index), _) => index,
            (None, Some(id)) if !self.calls.iter().any(|c| &c.id == id) => self.calls.len(),
            (None, _) => self.calls.last().map_or(0, |c| c.index),
        };
        let (name, arguments) = match delta.function {
            Some(f) => (f.name, f.arguments),
            None => (None, None),
        };
        let position = match self.calls.iter().position(|c| c.index == index) {
            Some(position) => position,
            None => {
                let id = delta.id.clone().unwrap_or_else(|| format!("call_{index}"));
                let name = name.clone().unwrap_or_default();
                sink(StreamEvent::ToolUseStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                self.calls.push(PartialCall {
                    index,
                    id,
                    name,
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let Some(call) = self.calls.get_mut(position) else {
            return;
        };
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(name) = name.filter(|n| !n.is_empty())
            && call.name.is_empty()
        {
            call.name = name;
        }
        if let Some(arguments) = arguments.filter(|a| !a.is_empty()) {
            call.arguments.push_str(&arguments);
            sink(StreamEvent::ToolUseInputDelta {
                id: call.id.clone(),
                partial_json: arguments,
            });
        }
    }

    /// The assembled response. `done` says whether `[DONE]` arrived.
    pub fn finish(
        self,
        done: bool,
        requested_model: &str,
        sink: &mut dyn FnMut(StreamEvent),
    ) -> Result<Response, LlmError> {
        let Some(reason) = self.finish_reason else {
            let what = if done {
                "[DONE] without a finish_reason"
            } else {
                "the connection closed mid-answer"
            };
            return Err(LlmError::StreamDropped(what.into()));
        };
        let mut stop_reason = match reason.as_str() {
            "stop" => StopReason::EndTurn,
            "length" => StopReason::MaxTokens,
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "content_filter" => StopReason::Refusal,
            other => StopReason::Other(other.to_owned()),
        };
        let mut content = Vec::new();
        if !self.reasoning.is_empty() {
            content.push(Block::Thinking {
                thinking: self.reasoning,
                signature: None,
            });
        }
        if !self.text.is_empty() {
            content.push(Block::Text { text: self.text });
        }
        let mut calls = self.calls;
        calls.sort_by_key(|c| c.index);
        for call in calls {
            let input = match parse_input(&call.arguments) {
                Ok(input) => input,
                Err(_) if stop_reason == StopReason::MaxTokens => continue,
                Err(e) => {
                    return Err(LlmError::Protocol(format!(
                        "arguments of tool call {} ({}): {e}",
                        call.name, call.id
                    )));
                }
            };
            sink(StreamEvent::ToolUse {
                id: call.id.clone(),
                name: call.name.clone(),
                input: input.clone(),
            });
            content.push(Block::ToolUse {
                id: call.id,
                name: call.name,
                input,
            });
        }
        // Some servers say `stop` after tool calls; callers key on ToolUse to run them.
        if stop_reason == StopReason::EndTurn && content.iter().any(|b| matches!(b, Block::ToolUse { .. })) {
            stop_reason = StopReason::ToolUse;
        }
        Ok(Response {
            content,
            stop_reason,
            usage: self.usage.unwrap_or_default(),
            model: self.model.unwrap_or_else(|| requested_model.to_owned()),
        })
    }
}
