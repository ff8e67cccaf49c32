//! The record of the gate's decisions that the runner audits ([`agency_exec::runtime::coverage`]): for an
//! agent started by a runner, which names the file in [`GATE_LOG_ENV`], every PreToolUse answer appends one
//! JSON line (`tool_name`, `tool_use_id`, `tool_input`, `gate_decision`). One `write` of one line to a file
//! opened for appending: concurrent hooks (parallel tool calls) do not interleave.
//!
//! A decision that cannot be recorded is not given: an allow becomes a block, since the audit would fail the
//! brief for the call anyway, and the call is better refused now than found later.

use std::io::Write;

use agency_exec::runtime::coverage::GATE_LOG_ENV;
use serde_json::json;

use super::answer::Answer;
use super::event::HookEvent;

/// Records `answer` to `event` when a log is asked for, and returns the answer to give.
pub fn record(event: &HookEvent, answer: Answer) -> Answer {
    if event.event_name != "PreToolUse" {
        return answer;
    }
    let Some(log) = std::env::var_os(GATE_LOG_ENV).filter(|v| !v.is_empty()) else {
        return answer;
    };
    let decision = match &answer {
        Answer::Deny(_) | Answer::Block(_) => "deny",
        _ => "allow",
    };
    let line = json!({
        "tool_name": event.tool_name,
        "tool_use_id": event.tool_use_id,
        "tool_input": event.tool_input,
        "gate_decision": decision,
    });
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut file| file.write_all(format!("{line}\n").as_bytes()));
    match written {
        Ok(()) => answer,
        Err(_) if decision == "deny" => answer,
        Err(e) => Answer::Block(format!(
            "agency hook: cannot record the gate's decision in {} ({GATE_LOG_ENV}): {e}; the call is blocked, \
             since the runner would find it undecided",
            std::path::Path::new(&log).display()
        )),
    }
}
