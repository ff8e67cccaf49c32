//! The record of the gate's decisions that the runner audits ([`agency_exec::runtime::coverage`]): for an
//! agent started by a runner, which names the file in [`GATE_LOG_ENV`], every PreToolUse answer appends one
//! JSON line (`tool_name`, `tool_use_id`, `tool_input`, `gate_decision`). One `write` of one line to a file
//! opened for appending: concurrent hooks (parallel tool calls) do not interleave.
//!
//! A decision that cannot be recorded is not given: an allow becomes a block, since the audit would fail the
//! brief for the call anyway, and the call is better refused now than found later.

use std::io::Write;

use agency_exec::runtime::coverage::GATE_LOG_ENV;
use serde_json::{Value, json};

use super::answer::Answer;
use super::event::HookEvent;

/// Records `answer` to `event` when a log is asked for, and returns the answer to give.
pub fn record(event: &HookEvent, answer: Answer) -> Answer {
    if event.event_name != "PreToolUse" {
        return answer;
    }
    let denied = matches!(answer, Answer::Deny(_) | Answer::Block(_));
    match log_decision(
        &json!(event.tool_name),
        &json!(event.tool_use_id),
        &json!(event.tool_input),
        denied,
    ) {
        Ok(()) => answer,
        Err(problem) => Answer::Block(problem),
    }
}

/// Records the gate service's answer to a PreToolUse event the hook forwarded to it (the event as the
/// client sent it, the answer's exit code and stdout). `Err` says why an allowed call could not be
/// recorded; the caller then blocks it, as [`record`] does.
pub fn record_forwarded(event: &Value, code: u8, stdout: &str) -> Result<(), String> {
    if event["hook_event_name"] != "PreToolUse" {
        return Ok(());
    }
    let answer: Value = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    let denied = code == 2
        || answer["hookSpecificOutput"]["permissionDecision"] == "deny"
        || answer["decision"] == "block";
    log_decision(
        &event["tool_name"],
        &event["tool_use_id"],
        &event["tool_input"],
        denied,
    )
}

/// Appends one decision to the log [`GATE_LOG_ENV`] names, if any. A deny that cannot be written is let
/// be (the call does not run either way); an allow that cannot be written is an `Err` with the reason.
fn log_decision(
    tool_name: &Value,
    tool_use_id: &Value,
    tool_input: &Value,
    denied: bool,
) -> Result<(), String> {
    let Some(log) = std::env::var_os(GATE_LOG_ENV).filter(|v| !v.is_empty()) else {
        return Ok(());
    };
    let line = json!({
        "tool_name": tool_name,
        "tool_use_id": tool_use_id,
        "tool_input": tool_input,
        "gate_decision": if denied { "deny" } else { "allow" },
    });
    match append(&log, &line) {
        Ok(()) => Ok(()),
        Err(_) if denied => Ok(()),
        Err(e) => Err(format!(
            "agency hook: cannot record the gate's decision in {} ({GATE_LOG_ENV}): {e}; the call is blocked, \
             since the runner would find it undecided",
            std::path::Path::new(&log).display()
        )),
    }
}

/// Appends one JSON line to the decision log: one `write`, so parallel hooks do not interleave.
fn append(log: &std::ffi::OsStr, line: &Value) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut file| file.write_all(format!("{line}\n").as_bytes()))
}
