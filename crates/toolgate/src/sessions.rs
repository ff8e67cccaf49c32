//! Plain sessions (no runner): which brief a Claude Code session, or a sub-agent inside it, works on.
//! `agency teachback start --session ... [--agent ...]` writes the binding on the blackboard; the hook reads
//! it by the event's `session_id` and `agent_id`. A sub-agent's own binding wins over its session's.

use agency_core::BriefId;
use agency_store::Blackboard;

/// The brief bound to this session or sub-agent, if any. An event with no `session_id` is bound to nothing.
pub fn bound_brief(
    store: &dyn Blackboard,
    session: Option<&str>,
    agent: Option<&str>,
) -> agency_store::Result<Option<BriefId>> {
    match session {
        Some(session) => store.session_brief(session, agent),
        None => Ok(None),
    }
}
