//! Claude Code's `--output-format stream-json --verbose` events, mapped to [`AgentEvent`]s.
//!
//! One JSON object per line (harness/PROTOCOLS.md §5): `system/init` (session id, model, permission mode),
//! `assistant` (text and `tool_use` blocks), `user` (`tool_result` blocks), `result` (usage, cost,
//! `permission_denials`, the final text). A tool call is recorded when its result arrives, so it can say
//! whether it ran: a result that is an error and reads like a refusal (the gate's reason, or Claude Code's
//! "requested permissions … haven't granted"), or that Claude Code refused itself (`<tool_use_error>`),
//! counts as denied. The `result` event's `permission_denials` is authoritative, so any denial recorded
//! there that the heuristic missed is noted then.
//!
//! Every `tool_use` block, a sub-agent's too (its lines carry `parent_tool_use_id`), is also kept in
//! [`StreamState::tool_calls`] for the gate-coverage audit, unless Claude Code refused it before any hook
//! ran (a `<tool_use_error>` result: a tool not offered, an input that fails the tool's schema).
//!
//! Spending is reported as each model call answers, not only when the session ends: the first `assistant`
//! event of each message carries its call's usage, as of the start of the answer (its input and cache
//! tokens, and the output tokens counted so far). The `result` event's usage and `total_cost_usd` are the
//! session's totals, so the `result`'s record is what those calls did not report yet. Claude Code reports
//! no cost before the `result`, so when team.yaml prices the tier's model ([`StreamState::price`]) each
//! call's record is costed at that price as it comes, and the `result`'s record carries the rest of
//! Claude Code's own total (never below zero; priced at team.yaml's price when Claude Code gives none).
//! Unpriced, the `result` carries the whole total. A long session thus spends the run's token and dollar
//! budgets, and shows in the live log, while it runs.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use agency_llm::{CallMeta, Price, StopReason, Usage, UsageRecord, cost};
use serde_json::Value;

use crate::runtime::AgentEvent;
use crate::runtime::coverage::{CallTarget, StreamCall};
use crate::runtime::redact::truncate;

/// What the mapper learned from the stream besides events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamState {
    /// The session id, from the first event that carries one.
    pub session_id: Option<String>,
    /// The model, from `system/init`.
    pub model: Option<String>,
    /// The final `result` event's text, once it came.
    pub result: Option<String>,
    /// Whether the result was an error (an API failure, a turn limit).
    pub is_error: bool,
    /// The result's subtype (`success`, `error_max_turns`, ...).
    pub subtype: Option<String>,
    /// Tool calls seen, by id: name and summary, until their result arrives.
    pending: BTreeMap<String, (String, String)>,
    /// Tool call ids recorded as allowed.
    allowed: BTreeSet<String>,
    /// Messages whose usage was reported, by id (a message comes as one event per content block).
    calls: BTreeSet<String>,
    /// The tokens those reports came to, which the `result`'s totals include.
    reported: Usage,
    /// What they were costed at, which the `result`'s `total_cost_usd` includes.
    reported_usd: f64,
    /// The price of the tier's model from team.yaml, which costs each call as it answers.
    pub price: Option<Price>,
    /// Every tool call of the session, sub-agents' included, for the gate-coverage audit
    /// ([`crate::runtime::coverage`]).
    pub tool_calls: Vec<StreamCall>,
}

impl StreamState {
    /// A fresh state whose calls are costed at `price` (none: Claude Code's total alone).
    pub fn priced(price: Option<Price>) -> Self {
        Self {
            price,
            ..Self::default()
        }
    }

    /// Whether the `result` event arrived (the turn is over).
    pub fn finished(&self) -> bool {
        self.result.is_some()
    }
}

/// Maps one stream line to events, updating `state`. Lines that are not JSON objects become notes.
pub fn map_line(line: &str, state: &mut StreamState, meta: &CallMeta) -> Vec<AgentEvent> {
    let line = line.trim();
    if line.is_empty() {
        return Vec::new();
    }
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        return vec![AgentEvent::Note(format!("claude-code: {}", truncate(line, 300)))];
    };
    if state.session_id.is_none()
        && let Some(id) = event.get("session_id").and_then(Value::as_str)
    {
        state.session_id = Some(id.to_owned());
    }
    let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default();
    match (text("type"), text("subtype")) {
        ("system", "init") => {
            state.model = Some(text("model").to_owned());
            vec![AgentEvent::Note(format!(
                "claude-code session {} started (model {}, permission mode {})",
                text("session_id"),
                text("model"),
                text("permissionMode")
            ))]
        }
        ("assistant", _) => {
            let mut out = Vec::from_iter(call_usage(&event, state, meta));
            out.extend(assistant(&event, state));
            out
        }
        ("user", _) => tool_results(&event, state),
        ("result", _) => result(&event, state, meta),
        _ => Vec::new(),
    }
}

fn blocks(event: &Value) -> impl Iterator<Item = &Value> {
    event
        .pointer("/message/content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn assistant(event: &Value, state: &mut StreamState) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    for block in blocks(event) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or_default();
                if !text.trim().is_empty() {
                    out.push(AgentEvent::Said(truncate(text, 2_000)));
                }
            }
            Some("tool_use") => {
                let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                let name = block.get("name").and_then(Value::as_str).unwrap_or_default();
                let summary = summarize(block.get("input").unwrap_or(&Value::Null));
                let target = CallTarget::Id(id.to_owned());
                if !state.tool_calls.iter().any(|call| call.target == target) {
                    state.tool_calls.push(StreamCall {
                        tool: name.to_owned(),
                        summary: summary.clone(),
                        target,
                    });
                }
                state.pending.insert(id.to_owned(), (name.to_owned(), summary));
            }
            _ => {}
        }
    }
    out
}

/// The usage of the model call behind an `assistant` event, the first time its message is seen.
fn call_usage(event: &Value, state: &mut StreamState, meta: &CallMeta) -> Option<AgentEvent> {
    let message = event.get("message")?;
    let id = message.get("id").and_then(Value::as_str)?;
    let usage = tokens(message.get("usage")?);
    if !state.calls.insert(id.to_owned()) {
        return None;
    }
    state.reported = Usage {
        input: state.reported.input + usage.input,
        output: state.reported.output + usage.output,
        cache_read: state.reported.cache_read + usage.cache_read,
        cache_write: state.reported.cache_write + usage.cache_write,
    };
    let model = message.get("model").and_then(Value::as_str);
    // Claude Code prices the session only in its `result`: until then, at team.yaml's price.
    let cost_usd = state.price.map(|price| cost(&usage, &price));
    state.reported_usd += cost_usd.unwrap_or(0.0);
    Some(AgentEvent::Usage(UsageRecord {
        meta: meta.clone(),
        provider: "claude-code".to_owned(),
        model: model.map_or_else(|| state.model.clone().unwrap_or_default(), str::to_owned),
        usage,
        cost_usd,
        latency: Duration::ZERO,
        stop_reason: stop_reason(
            message
                .get("stop_reason")
                .and_then(Value::as_str)
                .unwrap_or("streaming"),
        ),
    }))
}

/// The tokens of an Anthropic `usage` object.
fn tokens(usage: &Value) -> Usage {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input: count("input_tokens"),
        output: count("output_tokens"),
        cache_read: count("cache_read_input_tokens"),
        cache_write: count("cache_creation_input_tokens"),
    }
}

fn stop_reason(text: &str) -> StopReason {
    match text {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_owned()),
    }
}

fn tool_results(event: &Value, state: &mut StreamState) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    for block in blocks(event) {
        if block.get("type").and_then(Value::as_str) != Some("tool_result") {
            continue;
        }
        let id = block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some((name, summary)) = state.pending.remove(id) else {
            continue;
        };
        let is_error = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
        let content = match block.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        // Refused by Claude Code itself before any hook ran (a tool not offered, an input that fails the
        // tool's schema): nothing for the gate to have decided.
        let refused = is_error && content.trim_start().starts_with("<tool_use_error>");
        if refused {
            let target = CallTarget::Id(id.to_owned());
            state.tool_calls.retain(|call| call.target != target);
        }
        // Refused, it did not run: recorded as such, not as allowed.
        let allowed = !(refused || is_error && reads_like_denial(&content));
        if allowed {
            state.allowed.insert(id.to_owned());
        }
        out.push(AgentEvent::ToolCall {
            name,
            summary,
            allowed,
        });
        if !allowed {
            out.push(AgentEvent::Note(format!("denied: {}", truncate(&content, 500))));
        }
    }
    out
}

fn result(event: &Value, state: &mut StreamState, meta: &CallMeta) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    let denials = event
        .get("permission_denials")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for denial in denials {
        let id = denial
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if state.allowed.contains(id) {
            let name = denial
                .get("tool_name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            out.push(AgentEvent::Note(format!(
                "claude-code reports {name} ({id}) as denied"
            )));
        }
    }
    let subtype = event.get("subtype").and_then(Value::as_str).unwrap_or_default();
    let stop = event
        .get("stop_reason")
        .and_then(Value::as_str)
        .unwrap_or(subtype);
    // The session's totals, less what its calls reported as they answered (their output tokens were
    // counted at the start of each answer; the rest is here).
    let total = event.get("usage").map(tokens).unwrap_or_default();
    let reported = std::mem::take(&mut state.reported);
    let reported_usd = std::mem::take(&mut state.reported_usd);
    state.calls.clear();
    let rest = Usage {
        input: total.input.saturating_sub(reported.input),
        output: total.output.saturating_sub(reported.output),
        cache_read: total.cache_read.saturating_sub(reported.cache_read),
        cache_write: total.cache_write.saturating_sub(reported.cache_write),
    };
    // Claude Code's own total, less what the calls were already costed at; without one, the rest at
    // team.yaml's price.
    let cost_usd = match event.get("total_cost_usd").and_then(Value::as_f64) {
        Some(total_usd) => Some((total_usd - reported_usd).max(0.0)),
        None => state.price.map(|price| cost(&rest, &price)),
    };
    out.push(AgentEvent::Usage(UsageRecord {
        meta: meta.clone(),
        provider: "claude-code".to_owned(),
        model: state.model.clone().unwrap_or_default(),
        usage: rest,
        cost_usd,
        latency: Duration::from_millis(event.get("duration_ms").and_then(Value::as_u64).unwrap_or(0)),
        stop_reason: stop_reason(stop),
    }));
    state.is_error = event.get("is_error").and_then(Value::as_bool).unwrap_or(false);
    state.subtype = Some(subtype.to_owned());
    state.result = Some(
        event
            .get("result")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    );
    out.push(AgentEvent::Note(format!(
        "claude-code finished: {subtype} after {} turns{}",
        event.get("num_turns").and_then(Value::as_u64).unwrap_or(0),
        if state.is_error { " (error)" } else { "" }
    )));
    out
}

/// Whether an error tool result is a refusal rather than a tool that ran and failed.
fn reads_like_denial(content: &str) -> bool {
    const MARKERS: [&str; 5] = [
        "teachback gate",
        "haven't granted",
        "PreToolUse",
        "hook error",
        "permission",
    ];
    MARKERS.iter().any(|m| content.contains(m))
}

/// The file path or command of a Claude Code tool call, else its JSON.
fn summarize(input: &Value) -> String {
    let field = ["file_path", "command", "path", "pattern", "description"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str));
    truncate(&field.map_or_else(|| input.to_string(), str::to_owned), 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay(fixture: &str) -> (Vec<AgentEvent>, StreamState) {
        let mut state = StreamState::default();
        let meta = CallMeta::default();
        let events = fixture
            .lines()
            .flat_map(|l| map_line(l, &mut state, &meta))
            .collect();
        (events, state)
    }

    fn tool_calls(events: &[AgentEvent]) -> Vec<(String, String, bool)> {
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolCall {
                    name,
                    summary,
                    allowed,
                } => Some((name.clone(), summary.clone(), *allowed)),
                _ => None,
            })
            .collect()
    }

    /// Tools a read-only agent was not offered, and an input that failed the schema: Claude Code refused them,
    /// so none ran, and none is recorded as allowed.
    #[test]
    fn calls_claude_code_refused_itself_are_recorded_as_denied() {
        let (events, _) = replay(include_str!(
            "../../../tests/fixtures/claude-code/not-offered.jsonl"
        ));
        let calls: Vec<(String, bool)> = tool_calls(&events)
            .into_iter()
            .map(|(name, _, allowed)| (name, allowed))
            .collect();
        assert_eq!(
            calls,
            [
                ("Write".to_string(), false),
                ("Bash".to_string(), false),
                ("Read".to_string(), false)
            ]
        );
    }

    #[test]
    fn a_recorded_allowed_write_maps_to_events() {
        let (events, state) = replay(include_str!(
            "../../../tests/fixtures/claude-code/write-allowed.jsonl"
        ));
        assert_eq!(
            state.session_id.as_deref(),
            Some("e68d9403-3f25-4d0a-9b48-58bf3cb7d901")
        );
        assert_eq!(state.model.as_deref(), Some("claude-opus-4-8[1m]"));
        assert_eq!((state.result.as_deref(), state.is_error), (Some("done"), false));
        assert_eq!(tool_calls(&events), [("Write".into(), "hello.txt".into(), true)]);
        assert!(events.contains(&AgentEvent::Said("done".into())));
        // One record per model call as it answered (10 in, 1 out so far each), then the rest with the cost.
        let usage: Vec<(u64, u64, Option<f64>, StopReason)> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Usage(u) => {
                    Some((u.usage.input, u.usage.output, u.cost_usd, u.stop_reason.clone()))
                }
                _ => None,
            })
            .collect();
        let streaming = StopReason::Other("streaming".into());
        assert_eq!(
            usage,
            [
                (10, 1, None, streaming.clone()),
                (10, 1, None, streaming),
                (0, 8, Some(0.00035), StopReason::EndTurn)
            ]
        );
        // Together they are the session's totals.
        let (input, output) = usage.iter().fold((0, 0), |(i, o), u| (i + u.0, o + u.1));
        assert_eq!((input, output), (20, 10));
    }

    #[test]
    fn a_call_is_counted_once_however_many_blocks_its_message_comes_in() {
        let call = |block: &str| {
            format!(
                r#"{{"type":"assistant","message":{{"id":"msg_1","model":"m","content":[{block}],"usage":{{"input_tokens":100,"output_tokens":3,"cache_read_input_tokens":50}}}}}}"#
            )
        };
        let stream = [
            call(r#"{"type":"text","text":"Writing it."}"#),
            call(r#"{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"a"}}"#),
            r#"{"type":"result","subtype":"success","usage":{"input_tokens":100,"output_tokens":40,"cache_read_input_tokens":50},"total_cost_usd":0.01}"#.to_owned(),
        ]
        .join("\n");
        let (events, _) = replay(&stream);
        let usage: Vec<(u64, u64, u64)> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Usage(u) => Some((u.usage.input, u.usage.output, u.usage.cache_read)),
                _ => None,
            })
            .collect();
        assert_eq!(usage, [(100, 3, 50), (0, 37, 0)]);
    }

    #[test]
    fn a_result_without_usage_takes_nothing_back() {
        let stream = concat!(
            r#"{"type":"assistant","message":{"id":"msg_1","content":[],"usage":{"input_tokens":100,"output_tokens":3}}}"#,
            "\n",
            r#"{"type":"result","subtype":"success","total_cost_usd":0.01}"#
        );
        let (events, _) = replay(stream);
        let totals: Vec<(u64, Option<f64>)> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Usage(u) => Some((u.usage.total(), u.cost_usd)),
                _ => None,
            })
            .collect();
        assert_eq!(totals, [(103, None), (0, Some(0.01))]);
    }

    #[test]
    fn a_priced_model_costs_each_call_as_it_answers_and_the_result_the_rest_of_the_total() {
        let call = |id: &str| {
            format!(
                r#"{{"type":"assistant","message":{{"id":"{id}","model":"m","content":[],"usage":{{"input_tokens":1000,"output_tokens":10}}}}}}"#
            )
        };
        let result = |cost: &str| {
            format!(
                r#"{{"type":"result","subtype":"success","usage":{{"input_tokens":2000,"output_tokens":100}}{cost}}}"#
            )
        };
        let price = Price {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let costs = |cost: &str| -> Vec<f64> {
            let mut state = StreamState {
                price: Some(price),
                ..StreamState::default()
            };
            [call("msg_1"), call("msg_2"), result(cost)]
                .iter()
                .flat_map(|l| map_line(l, &mut state, &CallMeta::default()))
                .filter_map(|e| match e {
                    AgentEvent::Usage(u) => Some(u.cost_usd.expect("every record is costed")),
                    _ => None,
                })
                .collect()
        };
        // Each call: 1000·3 + 10·15 µ$ = $0.00315.
        let reported = costs(r#","total_cost_usd":0.01"#);
        assert_eq!(reported.len(), 3);
        assert!((reported[0] - 0.00315).abs() < 1e-12, "{reported:?}");
        // The session costs what Claude Code says it did, counted once.
        assert!(
            (reported.iter().sum::<f64>() - 0.01).abs() < 1e-12,
            "{reported:?}"
        );
        // Without Claude Code's total, the rest (0 in, 80 out) at team.yaml's price.
        let unreported = costs("");
        assert!(
            (unreported[2] - 80.0 * 15.0 / 1e6).abs() < 1e-12,
            "{unreported:?}"
        );
        // A total below what the calls were costed at takes nothing back.
        assert_eq!(costs(r#","total_cost_usd":0.001"#)[2], 0.0);
    }

    #[test]
    fn a_recorded_denial_maps_to_a_denied_tool_call() {
        let (events, state) = replay(include_str!(
            "../../../tests/fixtures/claude-code/write-denied.jsonl"
        ));
        assert!(state.finished());
        assert_eq!(tool_calls(&events), [("Write".into(), "hello.txt".into(), false)]);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, AgentEvent::Note(n) if n.contains("haven't granted")))
        );
        // Already recorded as denied, so the result's permission_denials adds nothing.
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, AgentEvent::Note(n) if n.contains("reports Write")))
        );
    }

    #[test]
    fn garbage_lines_become_notes() {
        let mut state = StreamState::default();
        let events = map_line("not json", &mut state, &CallMeta::default());
        assert_eq!(events, [AgentEvent::Note("claude-code: not json".into())]);
    }
}
