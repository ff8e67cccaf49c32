//! Session bindings, backend-neutral part: the canonical events a binding writes. A plain client session
//! (Claude Code with no runner) — or one sub-agent in it — is bound to the brief it works on with
//! [`Blackboard::bind_session`](crate::Blackboard::bind_session), so the hook can find the teachback state
//! from the event's `session_id` and `agent_id`.

use agency_core::event::payload::{EventPayload, LogLine};
use agency_core::{Brief, NewEvent};
use chrono::{DateTime, Utc};

use crate::canon;
use crate::error::Result;

/// `log` on the brief's run (payload: `level`, `message`, `session`, `agent`), stamped `at`.
pub fn binding_event(
    brief: &Brief,
    session: &str,
    agent: Option<&str>,
    at: DateTime<Utc>,
) -> Result<NewEvent> {
    let who = match agent {
        Some(agent) => format!("agent {agent} of session {session}"),
        None => format!("session {session}"),
    };
    let payload = EventPayload::Log(LogLine {
        session: Some(session.to_string()),
        agent: agent.map(str::to_string),
        ..LogLine::new("info", None, format!("{who} bound to this brief"))
    });
    canon::event_for(brief, NewEvent::typed(brief.run, payload).brief(brief.id).at(at))
}

/// `log` on the brief's run (payload: `level`, `message`, `session`, `task`), stamped `at`: the client task
/// `task` of `session` is this brief.
pub fn task_event(brief: &Brief, session: &str, task: &str, at: DateTime<Utc>) -> Result<NewEvent> {
    let payload = EventPayload::Log(LogLine {
        session: Some(session.to_string()),
        task: Some(task.to_string()),
        ..LogLine::new(
            "info",
            None,
            format!("task {task} of session {session} is this brief"),
        )
    });
    canon::event_for(brief, NewEvent::typed(brief.run, payload).brief(brief.id).at(at))
}
