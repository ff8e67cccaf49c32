//! The event log: one table, one `seq` across all runs, append-only.

use std::collections::HashSet;

use agency_core::{BriefId, Event, EventKind, NewEvent, RunId};
use rusqlite::{Connection, Row, params};

use super::rows::{Cols, Refused, id_text, insert, numbered_marks, query_value, ts_text};
use super::typed_id::require_run;
use crate::canon;
use crate::error::Result;

const COLUMNS: &str = "seq, run, ts, brief, tier, kind, payload";

/// Appends one event and returns it as recorded. The run's foreign key refuses a run that does not exist;
/// only then is it looked up, to say so.
pub fn append(conn: &Connection, event: NewEvent) -> Result<Event> {
    let seq = append_to_run(conn, &event)?;
    Ok(Event {
        seq,
        run: event.run,
        ts: event.ts,
        brief: event.brief,
        tier: event.tier,
        kind: event.kind,
        payload: event.payload.into_value(),
    })
}

/// [`append`] for a caller that does not need the event back: its `seq`.
pub(super) fn append_to_run(conn: &Connection, event: &NewEvent) -> Result<i64> {
    insert_event(conn, event, |refused| match refused {
        Refused::Missing => require_run(conn, &event.run),
        Refused::Duplicate => Ok(()),
    })
}

/// Appends one event of a run the caller has just found in this transaction (the run of a brief it read,
/// or one it looked up itself), and returns its `seq`. Most writes carry an event, about eleven per brief:
/// nothing is read for it, and nothing of it copied back.
pub(super) fn append_to_known_run(conn: &Connection, event: &NewEvent) -> Result<i64> {
    insert_event(conn, event, |_| Ok(()))
}

fn insert_event(
    conn: &Connection,
    event: &NewEvent,
    explain: impl FnOnce(Refused) -> Result<()>,
) -> Result<i64> {
    insert(
        conn,
        "INSERT INTO events (run, ts, brief, tier, kind, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            id_text(&event.run.0),
            ts_text(event.ts),
            event.brief.map(|b| id_text(&b.0)),
            event.tier.map(|t| t.as_str()),
            event.kind.as_str(),
            event.payload.json_text(),
        ],
        explain,
    )?;
    Ok(conn.last_insert_rowid())
}

/// Events after `after_seq`, oldest first, at most `limit`.
pub fn after(conn: &Connection, run: Option<RunId>, after_seq: i64, limit: usize) -> Result<Vec<Event>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // Two statements rather than `run = ?2 OR ?2 IS NULL`, so each uses its index (`events_run`, or the
    // `seq` key) when `watch` polls.
    match run {
        Some(run) => {
            let mut stmt = conn.prepare_cached(&after_in_run_sql())?;
            let rows = stmt.query_and_then(params![id_text(&run.0), after_seq, limit], decode)?;
            rows.collect()
        }
        None => {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2"
            ))?;
            let rows = stmt.query_and_then(params![after_seq, limit], decode)?;
            rows.collect()
        }
    }
}

/// A run's events of `kinds` after `after_seq` (see [`crate::Blackboard::events_of_kinds_after`]).
pub fn of_kinds_after(
    conn: &Connection,
    run: RunId,
    kinds: &[EventKind],
    after_seq: i64,
    limit: usize,
) -> Result<Vec<Event>> {
    if kinds.is_empty() {
        return Ok(Vec::new());
    }
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(&of_kinds_after_sql(kinds.len()))?;
    let mut values: Vec<rusqlite::types::Value> =
        vec![id_text(&run.0).into(), after_seq.into(), limit.into()];
    values.extend(kinds.iter().map(|k| k.as_str().to_string().into()));
    let rows = stmt.query_and_then(rusqlite::params_from_iter(values), decode)?;
    rows.collect()
}

/// The statement of [`of_kinds_after`] for `n` kinds.
pub(super) fn of_kinds_after_sql(n: usize) -> String {
    format!(
        "SELECT {COLUMNS} FROM events WHERE run = ?1 AND seq > ?2 AND kind IN ({}) ORDER BY seq LIMIT ?3",
        numbered_marks(4, n)
    )
}

pub(super) fn after_in_run_sql() -> String {
    format!("SELECT {COLUMNS} FROM events WHERE run = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3")
}

/// The briefs a run's events after `after_seq` name, each once.
pub fn briefs_after(conn: &Connection, run: RunId, after_seq: i64) -> Result<Vec<BriefId>> {
    distinct_texts(conn, BRIEFS_AFTER, run, after_seq)?
        .iter()
        .map(|id| Ok(BriefId(canon::parse_id("brief", id)?)))
        .collect()
}

pub(super) const BRIEFS_AFTER: &str =
    "SELECT brief FROM events WHERE run = ?1 AND seq > ?2 AND brief IS NOT NULL";

/// The workstreams of the briefs a run's events after `after_seq` name, each once.
pub fn workstreams_after(conn: &Connection, run: RunId, after_seq: i64) -> Result<Vec<String>> {
    distinct_texts(conn, WORKSTREAMS_AFTER, run, after_seq)
}

pub(super) const WORKSTREAMS_AFTER: &str = "SELECT b.workstream FROM events e JOIN briefs b ON b.id = e.brief \
     WHERE e.run = ?1 AND e.seq > ?2";

/// The text of the first column of `sql`'s rows for `(run, after_seq)`, each value once, in the order
/// first met. Made distinct here rather than by `DISTINCT` (or an `IN` subquery): SQLite answers those
/// with a temporary b-tree, built and dropped with its own page cache on every call — most of such a
/// read's cost when, as for the runner's passes, it is made many times over a few new rows.
fn distinct_texts(conn: &Connection, sql: &str, run: RunId, after_seq: i64) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params![id_text(&run.0), after_seq])?;
    let mut seen: HashSet<String> = HashSet::new();
    let mut found = Vec::new();
    while let Some(row) = rows.next()? {
        let text = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        if !seen.contains(text) {
            seen.insert(text.to_owned());
            found.push(text.to_owned());
        }
    }
    Ok(found)
}

/// The highest `seq` of one run's events, or 0.
pub(super) const LAST_SEQ_OF_RUN: &str = "SELECT coalesce(max(seq), 0) FROM events WHERE run = ?1";

/// The highest `seq`, or 0.
pub fn last_seq(conn: &Connection, run: Option<RunId>) -> Result<i64> {
    let seq = match run {
        Some(run) => query_value(conn, LAST_SEQ_OF_RUN, params![id_text(&run.0)])?,
        None => query_value(conn, "SELECT coalesce(max(seq), 0) FROM events", [])?,
    };
    Ok(seq)
}

fn decode(row: &Row<'_>) -> Result<Event> {
    let c = Cols::new(row, "event", 0)?;
    Ok(Event {
        seq: c.get(0)?,
        run: RunId(c.uuid(1)?),
        ts: c.ts(2)?,
        brief: c.opt_uuid(3)?.map(agency_core::BriefId),
        tier: c.opt_wire(4)?,
        kind: c.parse(5)?,
        payload: c.json(6)?,
    })
}
