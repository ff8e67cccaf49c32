//! Session bindings on PostgreSQL: which brief a plain client session, or one sub-agent in it, works on.

use agency_core::BriefId;
use postgres::GenericClient;

use super::rows::Cols;
use super::{briefs, events};
use crate::canon::{id_text, ts_text};
use crate::clock::Clock;
use crate::error::Result;
use crate::sessions::{binding_event, task_event};

/// Binds (or rebinds) `session` / `agent` to `brief` and writes the binding's `log` event.
pub fn bind<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    session: &str,
    agent: Option<&str>,
    brief: BriefId,
) -> Result<()> {
    let record = briefs::get(c, brief, false)?;
    let now = clock.now();
    c.execute(
        "INSERT INTO session_bindings (session, agent, brief, bound_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (session, agent) DO UPDATE SET brief = excluded.brief, bound_at = excluded.bound_at",
        &[&session, &agent.unwrap_or(""), &id_text(&brief.0), &ts_text(now)],
    )?;
    events::append(c, &binding_event(&record, session, agent, now)?)?;
    Ok(())
}

/// The brief bound to `agent` in `session`, else to `session` itself.
pub fn lookup<C: GenericClient>(c: &mut C, session: &str, agent: Option<&str>) -> Result<Option<BriefId>> {
    // The session's own binding has agent '', which sorts before any agent id.
    let row = c.query_opt(
        "SELECT brief FROM session_bindings WHERE session = $1 AND agent IN ($2, '') \
         ORDER BY agent COLLATE \"C\" DESC LIMIT 1",
        &[&session, &agent.unwrap_or("")],
    )?;
    row.as_ref()
        .map(|row| Cols::new(row, "session binding", 0).uuid(0).map(BriefId))
        .transpose()
}

/// Records that `task` of `session` is `brief` (replacing an earlier record) and writes the `log` event.
pub fn bind_task<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    session: &str,
    task: &str,
    brief: BriefId,
) -> Result<()> {
    let record = briefs::get(c, brief, false)?;
    let now = clock.now();
    c.execute(
        "INSERT INTO session_tasks (session, task, brief, bound_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (session, task) DO UPDATE SET brief = excluded.brief, bound_at = excluded.bound_at",
        &[&session, &task, &id_text(&brief.0), &ts_text(now)],
    )?;
    events::append(c, &task_event(&record, session, task, now)?)?;
    Ok(())
}

/// The brief of `task` in `session`.
pub fn task_brief<C: GenericClient>(c: &mut C, session: &str, task: &str) -> Result<Option<BriefId>> {
    let row = c.query_opt(
        "SELECT brief FROM session_tasks WHERE session = $1 AND task = $2",
        &[&session, &task],
    )?;
    row.as_ref()
        .map(|row| Cols::new(row, "session task", 0).uuid(0).map(BriefId))
        .transpose()
}

/// Every task of `session` with its brief, oldest binding first.
pub fn tasks<C: GenericClient>(c: &mut C, session: &str) -> Result<Vec<(String, BriefId)>> {
    let rows = c.query(
        "SELECT brief, task FROM session_tasks WHERE session = $1 \
         ORDER BY bound_at COLLATE \"C\", task COLLATE \"C\"",
        &[&session],
    )?;
    rows.iter()
        .map(|row| {
            let cols = Cols::new(row, "session task", 0);
            Ok((cols.get::<String>(1)?, BriefId(cols.uuid(0)?)))
        })
        .collect()
}
