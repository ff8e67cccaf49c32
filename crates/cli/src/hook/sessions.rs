//! Plain sessions (no runner): which brief a Claude Code session, or a sub-agent inside it, works on.
//! `agency teachback start` writes the binding; the hook reads it by `session_id` and `agent_id`. A
//! sub-agent's own binding wins over its session's.

use agency_core::BriefId;
use agency_store::SqliteBlackboard;

/// The brief bound to this session or sub-agent, if any.
pub fn bound_brief(
    store: &SqliteBlackboard,
    session: Option<&str>,
    agent: Option<&str>,
) -> agency_store::Result<Option<BriefId>> {
    let _ = (store, session, agent);
    Ok(None)
}

/// Binds a session (or one sub-agent in it) to a brief, replacing an earlier binding.
pub fn bind_session(
    store: &SqliteBlackboard,
    session: &str,
    agent: Option<&str>,
    brief: BriefId,
) -> agency_store::Result<()> {
    let _ = (store, session, agent, brief);
    Ok(())
}
