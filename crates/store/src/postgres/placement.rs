//! Placement on PostgreSQL: the labels a run's workstreams need, and what its runners offer.

use agency_core::RunId;
use agency_core::placement::{LabelNeed, Offer, RunnerOffer};
use postgres::GenericClient;

use super::rows::Cols;
use super::typed_id::require_run;
use crate::canon::{check_labels, id_text, json_text, ts_text};
use crate::clock::Clock;
use crate::error::Result;

/// Replaces the run's label needs with `needs`.
pub fn set_needs<C: GenericClient>(c: &mut C, run: RunId, needs: &[LabelNeed]) -> Result<()> {
    check_labels(needs.iter().map(|n| (n.workstream.as_str(), n.label.as_str())))?;
    require_run(c, &run)?;
    let run = id_text(&run.0);
    c.execute("DELETE FROM placement_needs WHERE run = $1", &[&run])?;
    for need in needs {
        c.execute(
            "INSERT INTO placement_needs (run, workstream, label) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            &[&run, &need.workstream, &need.label],
        )?;
    }
    Ok(())
}

/// The run's label needs, by workstream and label.
pub fn needs<C: GenericClient>(c: &mut C, run: RunId) -> Result<Vec<LabelNeed>> {
    let rows = c.query(
        "SELECT workstream, label FROM placement_needs WHERE run = $1 ORDER BY workstream, label",
        &[&id_text(&run.0)],
    )?;
    rows.iter()
        .map(|row| {
            let cols = Cols::new(row, "placement need", 0);
            Ok(LabelNeed {
                workstream: cols.get(0)?,
                label: cols.get(1)?,
            })
        })
        .collect()
}

/// Records (or refreshes) `runner`'s offer on the run, seen now.
pub fn record_offer<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    run: RunId,
    runner: &str,
    offer: &Offer,
) -> Result<()> {
    check_labels(offer.labels.iter().map(|l| (runner, l.as_str())))?;
    require_run(c, &run)?;
    c.execute(
        "INSERT INTO runner_offers (run, runner, offer, seen_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (run, runner) DO UPDATE SET offer = excluded.offer, seen_at = excluded.seen_at",
        &[
            &id_text(&run.0),
            &runner,
            &json_text(offer)?,
            &ts_text(clock.now()),
        ],
    )?;
    Ok(())
}

/// Forgets `runner`'s offer on the run (it stopped).
pub fn forget_offer<C: GenericClient>(c: &mut C, run: RunId, runner: &str) -> Result<()> {
    c.execute(
        "DELETE FROM runner_offers WHERE run = $1 AND runner = $2",
        &[&id_text(&run.0), &runner],
    )?;
    Ok(())
}

/// Every offer recorded on the run, by runner.
pub fn offers<C: GenericClient>(c: &mut C, run: RunId) -> Result<Vec<RunnerOffer>> {
    let rows = c.query(
        "SELECT runner, offer, seen_at FROM runner_offers WHERE run = $1 ORDER BY runner",
        &[&id_text(&run.0)],
    )?;
    rows.iter()
        .map(|row| {
            let cols = Cols::new(row, "runner offer", 0);
            Ok(RunnerOffer {
                runner: cols.get(0)?,
                offer: cols.json(1)?,
                seen_at: cols.ts(2)?,
            })
        })
        .collect()
}
