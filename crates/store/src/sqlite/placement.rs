//! Placement on SQLite: the labels a run's workstreams need, and what its runners offer.

use agency_core::RunId;
use agency_core::placement::{LabelNeed, Offer, RunnerOffer};
use rusqlite::{Connection, params};

use super::rows::{Cols, execute, id_text, json_text, ts_text};
use super::typed_id::require_run;
use crate::canon::check_labels;
use crate::clock::Clock;
use crate::error::Result;

/// Replaces the run's label needs with `needs`.
pub fn set_needs(conn: &Connection, run: RunId, needs: &[LabelNeed]) -> Result<()> {
    check_labels(needs.iter().map(|n| (n.workstream.as_str(), n.label.as_str())))?;
    require_run(conn, &run)?;
    let run = id_text(&run.0);
    execute(conn, "DELETE FROM placement_needs WHERE run = ?1", params![run])?;
    for need in needs {
        execute(
            conn,
            "INSERT INTO placement_needs (run, workstream, label) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
            params![run, need.workstream, need.label],
        )?;
    }
    Ok(())
}

/// The run's label needs, by workstream and label.
pub fn needs(conn: &Connection, run: RunId) -> Result<Vec<LabelNeed>> {
    let mut stmt = conn.prepare_cached(
        "SELECT workstream, label FROM placement_needs WHERE run = ?1 ORDER BY workstream, label",
    )?;
    let rows = stmt.query_map(params![id_text(&run.0)], |row| {
        Ok(LabelNeed {
            workstream: row.get(0)?,
            label: row.get(1)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Records (or refreshes) `runner`'s offer on the run, seen now.
pub fn record_offer(
    conn: &Connection,
    clock: &dyn Clock,
    run: RunId,
    runner: &str,
    offer: &Offer,
) -> Result<()> {
    check_labels(offer.labels.iter().map(|l| (runner, l.as_str())))?;
    require_run(conn, &run)?;
    execute(
        conn,
        "INSERT INTO runner_offers (run, runner, offer, seen_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (run, runner) DO UPDATE SET offer = excluded.offer, seen_at = excluded.seen_at",
        params![id_text(&run.0), runner, json_text(offer)?, ts_text(clock.now())],
    )?;
    Ok(())
}

/// Forgets `runner`'s offer on the run (it stopped).
pub fn forget_offer(conn: &Connection, run: RunId, runner: &str) -> Result<()> {
    execute(
        conn,
        "DELETE FROM runner_offers WHERE run = ?1 AND runner = ?2",
        params![id_text(&run.0), runner],
    )?;
    Ok(())
}

/// Every offer recorded on the run, by runner.
pub fn offers(conn: &Connection, run: RunId) -> Result<Vec<RunnerOffer>> {
    let mut stmt = conn
        .prepare_cached("SELECT runner, offer, seen_at FROM runner_offers WHERE run = ?1 ORDER BY runner")?;
    let mut rows = stmt.query(params![id_text(&run.0)])?;
    let mut found = Vec::new();
    while let Some(row) = rows.next()? {
        let cols = Cols::new(row, "runner offer", 0)?;
        found.push(RunnerOffer {
            runner: cols.get(0)?,
            offer: cols.json(1)?,
            seen_at: cols.ts(2)?,
        });
    }
    Ok(found)
}
