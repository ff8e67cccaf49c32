//! Runs: creation, lookup and status changes.

use agency_core::RunId;
use postgres::{GenericClient, Row};

use super::events;
use super::rows::Cols;
use super::typed_id::exists;
use crate::canon::{self, id_text, json_text, ts_text};
use crate::clock::Clock;
use crate::error::{Result, StoreError};
use crate::record::{NewRun, Run, RunStatus};

const COLUMNS: &str = "id, goal, repo, base_rev, status, config, budgets, created_at, updated_at";

/// Creates a run in `planning` and writes `run_created`.
pub fn create<C: GenericClient>(c: &mut C, clock: &dyn Clock, new: NewRun) -> Result<Run> {
    if exists(c, "runs", &new.id.0)? {
        return Err(StoreError::AlreadyExists {
            what: "run",
            id: new.id.to_string(),
        });
    }
    let now = clock.now();
    let run = Run {
        id: new.id,
        goal: new.goal,
        repo: new.repo,
        base_rev: new.base_rev,
        status: RunStatus::Planning,
        config: new.config,
        budgets: new.budgets,
        created_at: now,
        updated_at: now,
    };
    c.execute(
        &format!("INSERT INTO runs ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"),
        &[
            &id_text(&run.id.0),
            &run.goal,
            &run.repo,
            &run.base_rev,
            &run.status.as_str(),
            &json_text(&run.config)?,
            &json_text(&run.budgets)?,
            &ts_text(run.created_at),
            &ts_text(run.updated_at),
        ],
    )?;
    events::append(c, &canon::run_created(&run))?;
    Ok(run)
}

/// One run; with `lock`, its row stays locked until the transaction ends (for compare-and-set).
pub fn get<C: GenericClient>(c: &mut C, id: RunId, lock: bool) -> Result<Run> {
    let lock = if lock { " FOR NO KEY UPDATE" } else { "" };
    let row = c.query_opt(
        &format!("SELECT {COLUMNS} FROM runs WHERE id = $1{lock}"),
        &[&id_text(&id.0)],
    )?;
    row.as_ref()
        .map(decode)
        .transpose()?
        .ok_or_else(|| StoreError::not_found("run", id))
}

/// One run's status.
pub fn status<C: GenericClient>(c: &mut C, id: RunId) -> Result<RunStatus> {
    let row = c.query_opt("SELECT id, status FROM runs WHERE id = $1", &[&id_text(&id.0)])?;
    row.as_ref()
        .map(|row| Cols::new(row, "run", 0).parse(1))
        .transpose()?
        .ok_or_else(|| StoreError::not_found("run", id))
}

/// Every run, newest first.
pub fn list<C: GenericClient>(c: &mut C) -> Result<Vec<Run>> {
    let rows = c.query(
        &format!("SELECT {COLUMNS} FROM runs ORDER BY created_at DESC, ord DESC"),
        &[],
    )?;
    rows.iter().map(decode).collect()
}

/// Moves a run to `to` (compare-and-set against `expected` when given) and writes `run_status`.
pub fn set_status<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    id: RunId,
    expected: Option<RunStatus>,
    to: RunStatus,
) -> Result<Run> {
    let mut run = get(c, id, true)?;
    if let Some(expected) = expected
        && expected != run.status
    {
        return Err(StoreError::Conflict {
            what: "run",
            id: id.short(),
            expected: expected.to_string(),
            found: run.status.to_string(),
        });
    }
    let now = clock.now();
    c.execute(
        "UPDATE runs SET status = $1, updated_at = $2 WHERE id = $3",
        &[&to.as_str(), &ts_text(now), &id_text(&id.0)],
    )?;
    events::append(c, &canon::run_status(id, run.status, to, now))?;
    run.status = to;
    run.updated_at = now;
    Ok(run)
}

fn decode(row: &Row) -> Result<Run> {
    let c = Cols::new(row, "run", 0);
    Ok(Run {
        id: RunId(c.uuid(0)?),
        goal: c.get(1)?,
        repo: c.get(2)?,
        base_rev: c.get(3)?,
        status: c.parse(4)?,
        config: c.json(5)?,
        budgets: c.json(6)?,
        created_at: c.ts(7)?,
        updated_at: c.ts(8)?,
    })
}
