//! Whether anybody drives a run. A run that is not ended but whose driver lock nobody holds has no runner
//! attached (it was killed, or its machine went away): `runs`, `inspect` and the dashboard say so, with
//! the command that resumes it — the one recorded when the run started (`--script FILE` included).

use agency_core::RunId;
use agency_core::event::{EventKind, NewEvent};
use agency_store::{Blackboard, Run, StoreError};
use serde_json::json;

/// The tag of the log line that records how the run is resumed.
const RESUMABLE: &str = "RESUMABLE";

/// Whether a runner drives `run` now. Asked by taking the run's driver lock for an instant, which the
/// runner holds for as long as it lives; `None` when the blackboard cannot say.
pub fn runner_attached(store: &dyn Blackboard, run: RunId) -> Option<bool> {
    match store.lock_driver(run, "agency (looking whether a runner is attached)") {
        Ok(_lease) => Some(false),
        Err(StoreError::Driven { .. }) => Some(true),
        Err(_) => None,
    }
}

/// Records, at a run's start, the command that resumes it.
pub fn record_resume_command(store: &dyn Blackboard, run: RunId, script: Option<&std::path::Path>) {
    let mut command = format!("agency run --resume {}", run.short());
    if let Some(script) = script {
        let path = std::fs::canonicalize(script).unwrap_or_else(|_| script.to_path_buf());
        command.push_str(&format!(" --script {}", path.display()));
    }
    let event = NewEvent::new(
        run,
        EventKind::Log,
        json!({ "level": "verbose", "tag": RESUMABLE, "message": format!("resume with `{command}`"), "command": command }),
    );
    // Best effort: without it the hint names the command without its script.
    let _ = store.append_event(event);
}

/// The command that resumes `run`: the one recorded at its start, else the plain form.
pub fn resume_command(store: &dyn Blackboard, run: RunId) -> String {
    // Recorded among the run's first events: the first page holds it.
    let recorded = store.events_after(Some(run), 0, 50).ok().and_then(|page| {
        page.into_iter().find_map(|event| {
            (event.kind == EventKind::Log
                && event.payload.get("tag").and_then(|t| t.as_str()) == Some(RESUMABLE))
            .then(|| event.payload.get("command")?.as_str().map(str::to_string))
            .flatten()
        })
    });
    recorded.unwrap_or_else(|| format!("agency run --resume {}", run.short()))
}

/// What a run record is: `team` (a run of `agency run`, driven by a runner), `goals` (the record of a
/// plan.md's goal sign-offs) or `session` (the record of a Claude Code, Codex or pi session's gate, or
/// of `agency teachback start`). Only team runs have a runner; the others never end by themselves.
pub fn run_kind(run: &Run) -> &'static str {
    if run.config.get("goals_plan").is_some() {
        "goals"
    } else if run.config.as_object().is_none_or(|o| o.is_empty()) {
        "session"
    } else {
        "team"
    }
}

/// `running` or, for a run that is not ended and has no runner, `running (no runner attached)`.
pub fn status_text(store: &dyn Blackboard, run: &Run) -> String {
    if run_kind(run) == "team" && !run.status.is_terminal() && runner_attached(store, run.id) == Some(false) {
        format!("{} (no runner attached)", run.status.as_str())
    } else {
        run.status.as_str().to_string()
    }
}
