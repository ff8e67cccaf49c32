//! The event log: one table, one `seq` across all runs, append-only.
//!
//! Readers page through it by `seq` (`events_after(last seen)`), so `seq` order must be commit order: an
//! event that committed after a reader's page must never carry a smaller `seq` than one on that page.
//! PostgreSQL hands out identity values at insert time, not commit time, so two concurrent writers could
//! commit out of order. Every append therefore first takes a transaction-scoped advisory lock (one per
//! schema), held until commit: writers may choose and lock rows (claims) concurrently, and serialise only
//! from their first event to their commit.

use agency_core::{BriefId, Event, EventKind, NewEvent, RunId};
use postgres::{GenericClient, Row};

use super::rows::Cols;
use super::typed_id::require_run;
use crate::canon::{id_text, ts_text};
use crate::error::Result;

/// The advisory lock's first key ("agev"); the second is the schema's hash, so stores in different schemas
/// of one database do not wait for each other.
const EVENT_LOCK: i32 = 0x6167_6576;

const COLUMNS: &str = "seq, run, ts, brief, tier, kind, payload";

/// Appends one event (the run must exist) and returns it as recorded. Runs inside a write transaction.
pub fn append<C: GenericClient>(c: &mut C, event: &NewEvent) -> Result<Event> {
    require_run(c, &event.run)?;
    c.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))",
        &[&EVENT_LOCK],
    )?;
    let row = c.query_one(
        "INSERT INTO events (run, ts, brief, tier, kind, payload) VALUES ($1, $2, $3, $4, $5, $6) \
         RETURNING seq",
        &[
            &id_text(&event.run.0),
            &ts_text(event.ts),
            &event.brief.map(|b| id_text(&b.0)),
            &event.tier.map(|t| t.as_str()),
            &event.kind.as_str(),
            &event.payload.json_text(),
        ],
    )?;
    Ok(Event {
        seq: row.try_get(0)?,
        run: event.run,
        ts: event.ts,
        brief: event.brief,
        tier: event.tier,
        kind: event.kind,
        payload: event.payload.to_value(),
    })
}

/// Events after `after_seq`, oldest first, at most `limit`.
pub fn after<C: GenericClient>(
    c: &mut C,
    run: Option<RunId>,
    after_seq: i64,
    limit: usize,
) -> Result<Vec<Event>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = match run {
        Some(run) => c.query(
            &format!("SELECT {COLUMNS} FROM events WHERE run = $1 AND seq > $2 ORDER BY seq LIMIT $3"),
            &[&id_text(&run.0), &after_seq, &limit],
        )?,
        None => c.query(
            &format!("SELECT {COLUMNS} FROM events WHERE seq > $1 ORDER BY seq LIMIT $2"),
            &[&after_seq, &limit],
        )?,
    };
    rows.iter().map(decode).collect()
}

/// A run's events of `kinds` after `after_seq` (see [`crate::Blackboard::events_of_kinds_after`]).
pub fn of_kinds_after<C: GenericClient>(
    c: &mut C,
    run: RunId,
    kinds: &[EventKind],
    after_seq: i64,
    limit: usize,
) -> Result<Vec<Event>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
    let rows = c.query(
        &format!(
            "SELECT {COLUMNS} FROM events WHERE run = $1 AND seq > $2 AND kind = ANY($3) ORDER BY seq LIMIT $4"
        ),
        &[&id_text(&run.0), &after_seq, &kinds, &limit],
    )?;
    rows.iter().map(decode).collect()
}

/// The briefs a run's events after `after_seq` name, each once.
pub fn briefs_after<C: GenericClient>(c: &mut C, run: RunId, after_seq: i64) -> Result<Vec<BriefId>> {
    let rows = c.query(
        "SELECT DISTINCT brief FROM events WHERE run = $1 AND seq > $2 AND brief IS NOT NULL",
        &[&id_text(&run.0), &after_seq],
    )?;
    rows.iter()
        .map(|row| Ok(BriefId(Cols::new(row, "event", 0).uuid(0)?)))
        .collect()
}

/// The workstreams of the briefs a run's events after `after_seq` name, each once.
pub fn workstreams_after<C: GenericClient>(c: &mut C, run: RunId, after_seq: i64) -> Result<Vec<String>> {
    let rows = c.query(
        "SELECT DISTINCT workstream FROM briefs WHERE id IN \
         (SELECT brief FROM events WHERE run = $1 AND seq > $2 AND brief IS NOT NULL)",
        &[&id_text(&run.0), &after_seq],
    )?;
    rows.iter()
        .map(|row| Cols::new(row, "brief", 0).get::<String>(0))
        .collect()
}

/// The highest `seq`, or 0.
pub fn last_seq<C: GenericClient>(c: &mut C, run: Option<RunId>) -> Result<i64> {
    let row = match run {
        Some(run) => c.query_one(
            "SELECT coalesce(max(seq), 0) FROM events WHERE run = $1",
            &[&id_text(&run.0)],
        )?,
        None => c.query_one("SELECT coalesce(max(seq), 0) FROM events", &[])?,
    };
    Ok(row.try_get(0)?)
}

fn decode(row: &Row) -> Result<Event> {
    let c = Cols::new(row, "event", 0);
    Ok(Event {
        seq: c.get(0)?,
        run: RunId(c.uuid(1)?),
        ts: c.ts(2)?,
        brief: c.opt_uuid(3)?.map(BriefId),
        tier: c.opt_wire(4)?,
        kind: c.parse(5)?,
        payload: c.json(6)?,
    })
}
