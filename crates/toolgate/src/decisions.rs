//! The record of the gate's decisions that the runner audits (`agency_exec::runtime::coverage`) when no
//! gate service answers the agent (in a run the service keeps that record itself): for an agent whose
//! runtime names the file in [`GATE_LOG_ENV`], every PreToolUse answer appends one JSON line (`tool_name`,
//! `tool_use_id`, `tool_input`, `gate_decision`). One `write` of one line to a file opened for appending:
//! concurrent hooks (parallel tool calls) do not interleave.
//!
//! A decision that cannot be recorded is not given: an allow becomes a block, since the audit would fail the
//! brief for the call anyway, and the call is better refused now than found later.

use std::io::Write;

use serde_json::{Value, json};

use crate::answer::Answer;
use crate::event::HookEvent;

/// The variable naming the file the hook appends its decisions to: the runtime sets it
/// (`agency_exec::runtime::coverage::GATE_LOG_ENV`, the same name: agency-cli's tests check that the two
/// agree, as this crate does not depend on the runtimes).
pub const GATE_LOG_ENV: &str = "AGENCY_GATE_LOG";

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
