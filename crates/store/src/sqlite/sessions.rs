//! Session bindings on SQLite: which brief a plain client session, or one sub-agent in it, works on.

use agency_core::BriefId;
use rusqlite::{Connection, params};

use super::rows::{Cols, execute, id_text, query_opt, ts_text};
use super::{briefs, events};
use crate::clock::Clock;
use crate::error::Result;
use crate::sessions::{binding_event, task_event};

/// Binds (or rebinds) `session` / `agent` to `brief` and writes the binding's `log` event.
pub fn bind(
    conn: &Connection,
    clock: &dyn Clock,
    session: &str,
    agent: Option<&str>,
    brief: BriefId,
) -> Result<()> {
    let record = briefs::get(conn, brief)?;
    let now = clock.now();
    execute(
        conn,
        "INSERT INTO session_bindings (session, agent, brief, bound_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (session, agent) DO UPDATE SET brief = excluded.brief, bound_at = excluded.bound_at",
        params![session, agent.unwrap_or(""), id_text(&brief.0), ts_text(now)],
    )?;
    events::append_to_run(conn, &binding_event(&record, session, agent, now)?)?;
    Ok(())
}

/// The brief bound to `agent` in `session`, else to `session` itself.
pub fn lookup(conn: &Connection, session: &str, agent: Option<&str>) -> Result<Option<BriefId>> {
    // The session's own binding has agent '', which sorts before any agent id.
    query_opt(
        conn,
        "SELECT brief FROM session_bindings WHERE session = ?1 AND agent IN (?2, '') ORDER BY agent DESC LIMIT 1",
        params![session, agent.unwrap_or("")],
        |row| Cols::new(row, "session binding", 0)?.uuid(0).map(BriefId),
    )
}

/// Records that `task` of `session` is `brief` (replacing an earlier record) and writes the `log` event.
pub fn bind_task(
    conn: &Connection,
    clock: &dyn Clock,
    session: &str,
    task: &str,
    brief: BriefId,
) -> Result<()> {
    let record = briefs::get(conn, brief)?;
    let now = clock.now();
    execute(
        conn,
        "INSERT INTO session_tasks (session, task, brief, bound_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (session, task) DO UPDATE SET brief = excluded.brief, bound_at = excluded.bound_at",
        params![session, task, id_text(&brief.0), ts_text(now)],
    )?;
    events::append_to_run(conn, &task_event(&record, session, task, now)?)?;
    Ok(())
}

/// The brief of `task` in `session`.
pub fn task_brief(conn: &Connection, session: &str, task: &str) -> Result<Option<BriefId>> {
    query_opt(
        conn,
        "SELECT brief FROM session_tasks WHERE session = ?1 AND task = ?2",
        params![session, task],
        |row| Cols::new(row, "session task", 0)?.uuid(0).map(BriefId),
    )
}

/// Every task of `session` with its brief, oldest binding first.
pub fn tasks(conn: &Connection, session: &str) -> Result<Vec<(String, BriefId)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT brief, task FROM session_tasks WHERE session = ?1 ORDER BY bound_at, rowid",
    )?;
    let rows = stmt.query_and_then(params![session], |row| {
        let cols = Cols::new(row, "session task", 0)?;
        Ok((cols.get::<String>(1)?, BriefId(cols.uuid(0)?)))
    })?;
    rows.collect()
}
