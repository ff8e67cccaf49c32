//! The provider-neutral conversation: what a caller sends ([`Request`], [`Message`], [`Block`], [`ToolSpec`]),
//! what it sees while the model answers ([`StreamEvent`]) and what it gets back ([`Response`], [`StopReason`],
//! [`Usage`]). Each client maps these to its wire format; nothing here knows about HTTP.

use agency_core::{BriefId, RunId, Tier};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One model call: a stable prefix (system blocks, tools) followed by the conversation so far.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Request {
    /// System prompt blocks, most stable first (agency's rules, the tier prompt, then the agent's own
    /// personality). Clients mark the end of this prefix for prompt caching, so keep these bytes identical
    /// between calls for the same brief.
    #[serde(default)]
    pub system: Vec<String>,
    /// How many leading [`Request::system`] blocks are byte-identical for every agent of the tier (agency's
    /// rules, the tier prompt, the tool guide), before the blocks that are this agent's own. A client that
    /// caches by prefix marks the end of them too, so agents of one tier share that prefix whatever their
    /// personality. 0 when unknown: then only the whole system prompt is marked. Not part of what the model
    /// reads, so a cassette does not record it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shared_system_blocks: usize,
    /// The conversation, oldest first.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// Upper bound on output tokens.
    pub max_tokens: u32,
    /// Sampling temperature; the provider's default when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Whether and which tool the model must call; the provider's default (`auto`) when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Who is calling and why; used by the scripted provider, budgets and usage records, never sent.
    #[serde(default)]
    pub meta: CallMeta,
}

impl Request {
    /// The turn this request asks for, counted from 1: one more than the assistant messages so far.
    /// Stateless, so retries and resumed runs ask for the same turn again.
    pub fn turn(&self) -> u32 {
        let answered = self.messages.iter().filter(|m| m.role == Role::Assistant).count();
        u32::try_from(answered).unwrap_or(u32::MAX).saturating_add(1)
    }

    /// Every text the request carries (system, messages, tool results), joined by newlines; what a
    /// scripted reply's `contains` is matched against.
    pub fn searchable_text(&self) -> String {
        let mut out = self.system.join("\n");
        for message in &self.messages {
            for block in &message.content {
                let text = match block {
                    Block::Text { text } => text.as_str(),
                    Block::ToolResult { content, .. } => content.as_str(),
                    _ => continue,
                };
                out.push('\n');
                out.push_str(text);
            }
        }
        out
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The caller: instructions and tool results.
    User,
    /// The model.
    Assistant,
    /// A system note in the middle of the conversation (reminders, injected context). Clients map it to
    /// what their API accepts; see each client's docs.
    System,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who sent it.
    pub role: Role,
    /// Its content, in order.
    pub content: Vec<Block>,
}

impl Message {
    /// A user turn with one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![Block::text(text)],
        }
    }

    /// An assistant turn, typically a [`Response::content`] fed back.
    pub fn assistant(content: Vec<Block>) -> Self {
        Self {
            role: Role::Assistant,
            content,
        }
    }

    /// A mid-conversation system note.
    pub fn system(text: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: vec![Block::text(text)],
        }
    }

    /// A user turn carrying tool results.
    pub fn tool_results(results: Vec<Block>) -> Self {
        Self {
            role: Role::User,
            content: results,
        }
    }

    /// The text blocks of this message, concatenated.
    pub fn text(&self) -> String {
        concat_text(&self.content)
    }
}

/// One piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model's visible reasoning. Anthropic needs it (with its signature) sent back unchanged in
    /// tool-use loops; OpenAI-compatible clients drop it from requests.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// Opaque signature the provider uses to verify the block when it is sent back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider returned encrypted; sent back verbatim.
    RedactedThinking {
        /// Opaque payload.
        data: String,
    },
    /// A tool call made by the model.
    ToolUse {
        /// Provider-assigned call id, echoed by the matching [`Block::ToolResult`].
        id: String,
        /// Tool name.
        name: String,
        /// Arguments, assembled from the streamed partial JSON.
        input: Value,
    },
    /// The result of a tool call, sent in a user turn.
    ToolResult {
        /// The id of the [`Block::ToolUse`] this answers.
        tool_use_id: String,
        /// The tool's output as text.
        content: String,
        /// Whether the tool failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text { text: text.into() }
    }

    /// A tool result block.
    pub fn tool_result(tool_use_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Block::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error,
        }
    }
}

fn concat_text(blocks: &[Block]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name the model uses to call it.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
}

/// Whether and which tool the model must call, e.g. to force a structured answer through a `submit_plan` tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "name", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must call some tool.
    Any,
    /// The model must call this tool.
    Tool(String),
    /// The model must not call tools.
    None,
}

/// Who is calling and why. Never sent to a provider; keys scripted replies, budgets and usage records.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CallMeta {
    /// The run this call belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunId>,
    /// The brief this call works on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brief_id: Option<BriefId>,
    /// A stable label for the brief (e.g. its workstream id and kind), the same in every run, so scripts
    /// can name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brief: Option<String>,
    /// The workstream, for per-workstream budgets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workstream: Option<String>,
    /// The role or personality speaking (`planner`, `implementer`, `judge`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The tier speaking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// The brief's attempt, from 0 (a retry is the next attempt); cassettes key calls on it. 0 for a call
    /// with no brief behind it.
    #[serde(default)]
    pub attempt: u32,
}

/// What the model streams while it answers. The final [`Response`] holds the same content assembled.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// More answer text.
    TextDelta(String),
    /// More reasoning text.
    ThinkingDelta(String),
    /// A tool call started.
    ToolUseStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments, as streamed.
    ToolUseInputDelta {
        /// Call id.
        id: String,
        /// The raw fragment; not valid JSON on its own.
        partial_json: String,
    },
    /// A tool call is complete and its arguments parsed.
    ToolUse {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Parsed arguments.
        input: Value,
    },
    /// The model stopped.
    Stop(StopReason),
    /// The call failed before anything streamed and will be tried again after `delay` (sent by
    /// [`Retrying`](crate::Retrying), so a live log can say why nothing is happening).
    Retrying {
        /// The attempt that failed, from 1.
        attempt: u32,
        /// The wait before the next attempt.
        delay: std::time::Duration,
        /// Why it failed.
        error: String,
        /// It failed because the provider went silent past the idle timeout ([`LlmError::is_stall`]).
        ///
        /// [`LlmError::is_stall`]: crate::LlmError::is_stall
        stalled: bool,
    },
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit `max_tokens`.
    MaxTokens,
    /// It produced a stop sequence.
    StopSequence,
    /// It refused (Anthropic `refusal`, OpenAI `content_filter`).
    Refusal,
    /// Anything else the provider said, verbatim.
    Other(String),
}

/// The model's complete answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Content blocks in order: text, thinking, tool calls.
    pub content: Vec<Block>,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Tokens used.
    pub usage: Usage,
    /// The model that answered, as the provider named it.
    pub model: String,
}

impl Response {
    /// The text blocks, concatenated.
    pub fn text(&self) -> String {
        concat_text(&self.content)
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

/// Tokens one call used. The four counts are disjoint, so cost is a plain weighted sum:
/// `input` excludes tokens read from or written to the prompt cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Uncached input tokens.
    #[serde(default)]
    pub input: u64,
    /// Output tokens (including reasoning).
    #[serde(default)]
    pub output: u64,
    /// Input tokens served from the prompt cache.
    #[serde(default)]
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write: u64,
}

impl Usage {
    /// All tokens, for token budgets.
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// Tool arguments from the concatenated `partial_json` fragments; no fragments means no arguments.
pub(crate) fn parse_tool_input(json: &str) -> Result<Value, String> {
    if json.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(json).map_err(|e| format!("not valid JSON ({e}): {json}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_counts_assistant_messages() {
        let mut req = Request {
            messages: vec![Message::user("hi")],
            ..Request::default()
        };
        assert_eq!(req.turn(), 1);
        req.messages.push(Message::assistant(vec![Block::text("a")]));
        req.messages.push(Message::system("note"));
        req.messages.push(Message::user("more"));
        assert_eq!(req.turn(), 2);
    }

    #[test]
    fn blocks_round_trip_with_type_tags() {
        let block = Block::tool_result("toolu_1", "ok", false);
        let json = serde_json::to_string(&block).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}"#
        );
        let back: Block = serde_json::from_str(&json).unwrap_or_else(|_| Block::text(""));
        assert_eq!(back, block);
    }
}
