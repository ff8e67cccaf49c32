//! The scripted provider: replies come from a script file instead of a model, so whole runs (the demo,
//! end-to-end tests) are reproducible offline. It is deterministic and stateless: a reply is chosen only
//! from the request (its [`CallMeta`](crate::CallMeta), its turn number and its text), so retries and resumed runs get the
//! same answer again.
//!
//! A script is YAML (or JSON) with a list of rules, tried in order; the first whose matchers all hold wins:
//!
//! ```yaml
//! model: scripted            # optional; reported as the answering model
//! replies:
//!   - role: planner          # matchers, all optional: role, tier, brief, turn, contains
//!     reply:                 # `reply`: the same answer on every matching turn
//!       text: '{"workstreams": []}'
//!   - role: implementer
//!     brief: ws1/implement
//!     replies:               # `replies`: turn 1, turn 2, ... (a rule with too few does not match)
//!       - tool_calls:
//!           - name: write_file
//!             input: {path: hello.txt, content: hi}
//!       - text: done
//!         usage: {input: 1200, output: 40}
//!   - contains: "VERDICT"    # substring of the system prompt, messages or tool results
//!     reply: {text: "VERDICT: accept\nmissing: none"}
//! ```
//!
//! A reply may carry `text`, `thinking`, `tool_calls` (`name`, `input`, optional `id`), `stop_reason`
//! (default `tool_use` when there are tool calls, else `end_turn`) and `usage` (default: a deterministic
//! estimate of one token per four bytes in and out), or instead `error: {kind, message}` to fail the call
//! (`rate_limited`, `overloaded`, `server`, `bad_request`, `auth`, `timeout`, `stream_dropped`; every time
//! the reply is chosen, since the provider keeps no state). A request no rule matches is an
//! [`LlmError::Script`] naming the role, tier, brief and turn that had no reply.

use std::path::Path;

use agency_core::Tier;
use serde::Deserialize;
use serde_json::Value;

use crate::cancel::CancelToken;
use crate::error::LlmError;
use crate::message::{Block, Request, Response, StopReason, StreamEvent, Usage};
use crate::provider::{BoxFuture, EventSink, Provider};

/// A parsed script.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The model name reported in responses (default `scripted`).
    #[serde(default = "default_model")]
    pub model: String,
    /// Rules, tried in order.
    pub replies: Vec<Rule>,
}

fn default_model() -> String {
    "scripted".to_owned()
}

/// When a rule applies and what it answers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Matches [`CallMeta::role`](crate::CallMeta::role).
    #[serde(default)]
    pub role: Option<String>,
    /// Matches [`CallMeta::tier`](crate::CallMeta::tier).
    #[serde(default)]
    pub tier: Option<Tier>,
    /// Matches [`CallMeta::brief`](crate::CallMeta::brief), the brief's stable label.
    #[serde(default)]
    pub brief: Option<String>,
    /// Matches [`Request::turn`].
    #[serde(default)]
    pub turn: Option<u32>,
    /// A substring of [`Request::searchable_text`].
    #[serde(default)]
    pub contains: Option<String>,
    /// The answer for every matching turn.
    #[serde(default)]
    pub reply: Option<Reply>,
    /// Answers by turn: the first for turn 1 (or for `turn` when set), and so on.
    #[serde(default)]
    pub replies: Option<Vec<Reply>>,
}

/// One scripted answer.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// Answer text.
    #[serde(default)]
    pub text: Option<String>,
    /// Reasoning text, streamed before the answer.
    #[serde(default)]
    pub thinking: Option<String>,
    /// Tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Tokens to report.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Fail instead of answering (every time this reply is chosen), to script provider failures.
    #[serde(default)]
    pub error: Option<ScriptedError>,
}

/// A scripted provider failure.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    /// Which failure.
    pub kind: ScriptedErrorKind,
    /// The provider's message.
    #[serde(default)]
    pub message: String,
}

/// The failures a script can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedErrorKind {
    /// HTTP 429.
    RateLimited,
    /// HTTP 529.
    Overloaded,
    /// HTTP 500.
    Server,
    /// HTTP 400.
    BadRequest,
    /// HTTP 401.
    Auth,
    /// No answer in time.
    Timeout,
    /// The stream ended early.
    StreamDropped,
}

impl ScriptedError {
    fn to_error(&self) -> LlmError {
        let message = self.message.clone();
        match self.kind {
            ScriptedErrorKind::RateLimited => LlmError::RateLimited {
                retry_after: None,
                message,
            },
            ScriptedErrorKind::Overloaded => LlmError::Overloaded {
                retry_after: None,
                message,
            },
            ScriptedErrorKind::Server => LlmError::Server {
                status: 500,
                message,
                retry_after: None,
            },
            ScriptedErrorKind::BadRequest => LlmError::BadRequest { status: 400, message },
            ScriptedErrorKind::Auth => LlmError::Auth { status: 401, message },
            ScriptedErrorKind::Timeout => LlmError::Timeout(message),
            ScriptedErrorKind::StreamDropped => LlmError::StreamDropped(message),
        }
    }
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// Call id (default `call_<turn>_<n>`).
    #[serde(default)]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Arguments.
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl Script {
    /// Parses a script from YAML (JSON is accepted too, being YAML).
    pub fn from_yaml(text: &str) -> Result<Self, LlmError> {
        let script: Script =
            serde_saphyr::from_str(text).map_err(|e| LlmError::Script(format!("script: {e}")))?;
        script.validate()?;
        Ok(script)
    }

    /// Reads a script file; `.json` files are parsed as JSON, anything else as YAML.
    pub fn from_file(path: &Path) -> Result<Self, LlmError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LlmError::Script(format!("{}: cannot read the script: {e}", path.display())))?;
        let parsed = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str::<Script>(&text).map_err(|e| e.to_string())
        } else {
            serde_saphyr::from_str::<Script>(&text).map_err(|e| e.to_string())
        };
        let script = parsed.map_err(|e| LlmError::Script(format!("{}: {e}", path.display())))?;
        script
            .validate()
            .map_err(|e| LlmError::Script(format!("{}: {e}", path.display())))?;
        Ok(script)
    }

    fn validate(&self) -> Result<(), LlmError> {
        for (i, rule) in self.replies.iter().enumerate() {
            if rule.reply.is_some() == rule.replies.is_some() {
                return Err(LlmError::Script(format!(
                    "replies[{i}]: expected exactly one of `reply` or `replies`"
                )));
            }
        }
        Ok(())
    }

    /// The reply for `request`, or an error naming what had none.
    pub fn reply_for(&self, request: &Request) -> Result<&Reply, LlmError> {
        let turn = request.turn();
        let mut text = None;
        for rule in &self.replies {
            let meta = &request.meta;
            let matches = rule.role.as_ref().is_none_or(|r| meta.role.as_ref() == Some(r))
                && rule.tier.is_none_or(|t| meta.tier == Some(t))
                && rule.brief.as_ref().is_none_or(|b| meta.brief.as_ref() == Some(b))
                && rule.turn.is_none_or(|t| t == turn)
                && rule.contains.as_ref().is_none_or(|needle| {
                    text.get_or_insert_with(|| request.searchable_text())
                        .contains(needle.as_str())
                });
            if !matches {
                continue;
            }
            let reply = match (&rule.reply, &rule.replies, rule.turn) {
                (Some(reply), _, _) => Some(reply),
                (None, Some(replies), Some(_)) => replies.first(),
                (None, Some(replies), None) => replies.get(usize::try_from(turn).unwrap_or(usize::MAX) - 1),
                (None, None, _) => None,
            };
            if let Some(reply) = reply {
                return Ok(reply);
            }
        }
        Err(LlmError::Script(missing(request)))
    }
}

fn missing(request: &Request) -> String {
    let meta = &request.meta;
    let or_none = |v: Option<&str>| v.map_or("(none)".to_owned(), str::to_owned);
    let first_user = request.messages.first().map(|m| m.text()).unwrap_or_default();
    let excerpt: String = first_user.chars().take(80).collect();
    format!(
        "the script has no reply for role {}, tier {}, brief {}, turn {} (first message: {excerpt:?})",
        or_none(meta.role.as_deref()),
        or_none(meta.tier.map(Tier::as_str)),
        or_none(meta.brief.as_deref()),
        request.turn(),
    )
}

/// A [`Provider`] answering from a [`Script`].
#[derive(Debug, Clone)]
pub struct ScriptedProvider {
    script: Script,
}

impl ScriptedProvider {
    /// Answers from `script`.
    pub fn new(script: Script) -> Self {
        Self { script }
    }

    /// Answers from the script file at `path`.
    pub fn from_file(path: &Path) -> Result<Self, LlmError> {
        Script::from_file(path).map(Self::new)
    }

    fn answer(&self, request: &Request, sink: EventSink<'_>) -> Result<Response, LlmError> {
        let reply = self.script.reply_for(request)?;
        if let Some(error) = &reply.error {
            return Err(error.to_error());
        }
        let turn = request.turn();
        let mut content = Vec::new();
        if let Some(thinking) = &reply.thinking {
            sink(StreamEvent::ThinkingDelta(thinking.clone()));
            content.push(Block::Thinking {
                thinking: thinking.clone(),
                signature: None,
            });
        }
        if let Some(text) = &reply.text {
            sink(StreamEvent::TextDelta(text.clone()));
            content.push(Block::text(text.clone()));
        }
        for (n, call) in reply.tool_calls.iter().enumerate() {
            let id = call
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{turn}_{}", n + 1));
            sink(StreamEvent::ToolUseStart {
                id: id.clone(),
                name: call.name.clone(),
            });
            sink(StreamEvent::ToolUseInputDelta {
                id: id.clone(),
                partial_json: call.input.to_string(),
            });
            sink(StreamEvent::ToolUse {
                id: id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
            });
            content.push(Block::ToolUse {
                id,
                name: call.name.clone(),
                input: call.input.clone(),
            });
        }
        let stop_reason = reply
            .stop_reason
            .clone()
            .unwrap_or(if reply.tool_calls.is_empty() {
                StopReason::EndTurn
            } else {
                StopReason::ToolUse
            });
        sink(StreamEvent::Stop(stop_reason.clone()));
        let usage = reply.usage.unwrap_or_else(|| estimated_usage(request, &content));
        Ok(Response {
            content,
            stop_reason,
            usage,
            model: self.script.model.clone(),
        })
    }
}

/// One token per four bytes each way: deterministic, and close enough for budget tests.
fn estimated_usage(request: &Request, content: &[Block]) -> Usage {
    let out_bytes: usize = content
        .iter()
        .map(|b| match b {
            Block::Text { text } => text.len(),
            Block::Thinking { thinking, .. } => thinking.len(),
            Block::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
            _ => 0,
        })
        .sum();
    let tokens = |bytes: usize| u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX);
    Usage {
        input: tokens(request.searchable_text().len()),
        output: tokens(out_bytes),
        ..Usage::default()
    }
}

impl Provider for ScriptedProvider {
    fn kind(&self) -> &'static str {
        "scripted"
    }

    fn model(&self) -> &str {
        &self.script.model
    }

    fn complete<'a>(
        &'a self,
        request: &'a Request,
        sink: EventSink<'a>,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(crate::cancel::run(
            cancel,
            async move { self.answer(request, sink) },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{CallMeta, Message};
    use serde_json::json;

    const SCRIPT: &str = r#"
model: script-model
replies:
  - role: planner
    reply: {text: "the plan"}
  - role: implementer
    brief: ws1
    replies:
      - tool_calls:
          - {name: write_file, input: {path: a.txt, content: hi}}
      - text: done
        usage: {input: 7, output: 3}
  - contains: SUBTASK
    turn: 1
    replies:
      - {text: sub}
  - role: broken
    reply: {error: {kind: bad_request, message: "prompt is too long"}}
"#;

    fn request(role: &str, brief: Option<&str>, turns: usize, text: &str) -> Request {
        let mut messages = vec![Message::user(text)];
        for _ in 0..turns {
            messages.push(Message::assistant(vec![Block::text("x")]));
            messages.push(Message::user("go on"));
        }
        Request {
            messages,
            max_tokens: 100,
            meta: CallMeta {
                role: Some(role.into()),
                brief: brief.map(str::to_owned),
                ..CallMeta::default()
            },
            ..Request::default()
        }
    }

    async fn run(
        provider: &ScriptedProvider,
        request: &Request,
    ) -> (Result<Response, LlmError>, Vec<StreamEvent>) {
        let mut events = Vec::new();
        let result = provider
            .complete(request, &mut |e| events.push(e), &CancelToken::new())
            .await;
        (result, events)
    }

    #[tokio::test]
    async fn replies_by_role_brief_turn_and_substring() {
        let provider = ScriptedProvider::new(Script::from_yaml(SCRIPT).unwrap());
        let (plan, _) = run(&provider, &request("planner", None, 3, "goal")).await;
        assert_eq!(plan.unwrap().text(), "the plan");

        let (first, events) = run(&provider, &request("implementer", Some("ws1"), 0, "do")).await;
        let first = first.unwrap();
        assert_eq!(first.stop_reason, StopReason::ToolUse);
        assert_eq!(first.model, "script-model");
        assert_eq!(
            first.tool_calls().collect::<Vec<_>>(),
            vec![(
                "call_1_1",
                "write_file",
                &json!({"path": "a.txt", "content": "hi"})
            )]
        );
        assert!(events.contains(&StreamEvent::Stop(StopReason::ToolUse)));
        assert!(first.usage.input > 0);

        let (second, _) = run(&provider, &request("implementer", Some("ws1"), 1, "do")).await;
        let second = second.unwrap();
        assert_eq!(
            (second.text(), second.usage),
            (
                "done".into(),
                Usage {
                    input: 7,
                    output: 3,
                    ..Usage::default()
                }
            )
        );

        let (sub, _) = run(&provider, &request("helper", None, 0, "a SUBTASK here")).await;
        assert_eq!(sub.unwrap().text(), "sub");

        let (broken, events) = run(&provider, &request("broken", None, 0, "x")).await;
        assert_eq!(
            broken.unwrap_err(),
            LlmError::BadRequest {
                status: 400,
                message: "prompt is too long".into()
            }
        );
        assert!(events.is_empty());
    }

    #[tokio::test]
    async fn a_missing_reply_names_role_brief_and_turn() {
        let provider = ScriptedProvider::new(Script::from_yaml(SCRIPT).unwrap());
        let (result, _) = run(&provider, &request("implementer", Some("ws1"), 2, "do")).await;
        assert_eq!(
            result.unwrap_err(),
            LlmError::Script(
                "the script has no reply for role implementer, tier (none), brief ws1, turn 3 (first message: \"do\")"
                    .into()
            )
        );
    }

    #[test]
    fn a_rule_needs_exactly_one_of_reply_and_replies() {
        let err = Script::from_yaml("replies:\n  - role: x\n").unwrap_err();
        assert_eq!(
            err,
            LlmError::Script("replies[0]: expected exactly one of `reply` or `replies`".into())
        );
        assert!(Script::from_yaml("replies:\n  - role: x\n    reply: {txt: typo}\n").is_err());
    }
}
