//! Gates: opening, listing and deciding. A decision is a compare-and-set from `pending`, so of two people
//! approving at once exactly one succeeds and the other is told who was first.

use agency_core::{Gate, GateDecision, GateId, GateKind, GateStatus, RunId};
use rusqlite::{Connection, Row, params};

use super::events;
use super::rows::{Cols, execute, id_text, json_text, query_opt, ts_text};
use super::typed_id::{exists, require_run};
use crate::canon;
use crate::clock::Clock;
use crate::error::{Result, StoreError};
use crate::record::NewGate;

const COLUMNS: &str = "id, run, kind, tier, brief, status, summary, opened_at, decided_at, decided_by, note";

/// Opens a pending gate and writes `gate_pending` (`gate_paused` for a pause).
pub fn open(conn: &Connection, clock: &dyn Clock, new: NewGate) -> Result<Gate> {
    if exists(conn, "gates", &new.id.0)? {
        return Err(StoreError::AlreadyExists {
            what: "gate",
            id: new.id.to_string(),
        });
    }
    require_run(conn, &new.run)?;
    if let Some(brief) = new.brief
        && !exists(conn, "briefs", &brief.0)?
    {
        return Err(StoreError::not_found("brief", brief));
    }
    let now = clock.now();
    execute(
        conn,
        &format!("INSERT INTO gates ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, NULL, NULL)"),
        params![
            id_text(&new.id.0),
            id_text(&new.run.0),
            new.kind.as_str(),
            new.tier.map(|t| t.as_str()),
            new.brief.map(|b| id_text(&b.0)),
            GateStatus::Pending.as_str(),
            json_text(&new.summary)?,
            ts_text(now),
        ],
    )?;
    events::append_to_run(conn, &canon::gate_opened(&new, now))?;
    Ok(Gate {
        id: new.id,
        run: new.run,
        kind: new.kind,
        tier: new.tier,
        brief: new.brief,
        status: GateStatus::Pending,
        summary: new.summary,
        opened_at: now,
        decided_at: None,
        decided_by: None,
        note: None,
    })
}

/// One gate.
pub fn get(conn: &Connection, id: GateId) -> Result<Gate> {
    query_opt(
        conn,
        &format!("SELECT {COLUMNS} FROM gates WHERE id = ?1"),
        params![id_text(&id.0)],
        decode,
    )?
    .ok_or_else(|| StoreError::not_found("gate", id))
}

/// Pending gates, oldest first.
pub fn pending(conn: &Connection, run: Option<RunId>) -> Result<Vec<Gate>> {
    // Two statements rather than `?1 IS NULL OR run = ?1`, which SQLite answers by reading every gate of
    // every run: one run's pending gates are a search of `gates_run (run, status, opened_at)`, in order.
    match run {
        Some(run) => {
            let mut stmt = conn.prepare_cached(&pending_in_run_sql())?;
            let rows = stmt.query_and_then(params![id_text(&run.0)], decode)?;
            rows.collect()
        }
        None => {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM gates WHERE status = 'pending' ORDER BY opened_at, rowid"
            ))?;
            let rows = stmt.query_and_then([], decode)?;
            rows.collect()
        }
    }
}

pub(super) fn of_kind_sql() -> String {
    format!("SELECT {COLUMNS} FROM gates WHERE run = ?1 AND kind = ?2 ORDER BY opened_at, rowid")
}

pub(super) fn pending_in_run_sql() -> String {
    format!("SELECT {COLUMNS} FROM gates WHERE run = ?1 AND status = 'pending' ORDER BY opened_at, rowid")
}

/// Every gate of a run, oldest first.
pub fn list(conn: &Connection, run: RunId) -> Result<Vec<Gate>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM gates WHERE run = ?1 ORDER BY opened_at, rowid"
    ))?;
    let rows = stmt.query_and_then(params![id_text(&run.0)], decode)?;
    rows.collect()
}

/// A run's gates of one kind, oldest first.
pub fn list_of_kind(conn: &Connection, run: RunId, kind: GateKind) -> Result<Vec<Gate>> {
    let mut stmt = conn.prepare_cached(&of_kind_sql())?;
    let rows = stmt.query_and_then(params![id_text(&run.0), kind.as_str()], decode)?;
    rows.collect()
}

/// Decides a pending gate and writes the matching event.
pub fn decide(conn: &Connection, clock: &dyn Clock, id: GateId, decision: &GateDecision) -> Result<Gate> {
    let gate = get(conn, id)?;
    if gate.status != GateStatus::Pending {
        return Err(StoreError::GateAlreadyDecided {
            gate: id,
            status: gate.status,
            decided_by: gate.decided_by,
        });
    }
    let now = clock.now();
    let (by, note) = canon::decided_by(decision);
    let status = decision.status();
    execute(
        conn,
        "UPDATE gates SET status = ?1, decided_at = ?2, decided_by = ?3, note = ?4 \
         WHERE id = ?5 AND status = 'pending'",
        params![status.as_str(), ts_text(now), by, note, id_text(&id.0)],
    )?;
    events::append_to_run(conn, &canon::gate_decided(&gate, decision, now))?;
    Ok(Gate {
        status,
        decided_at: Some(now),
        decided_by: Some(by.to_string()),
        note: note.map(str::to_string),
        ..gate
    })
}

/// Decides the oldest pending gate of a run.
pub fn decide_oldest_pending(
    conn: &Connection,
    clock: &dyn Clock,
    run: RunId,
    decision: &GateDecision,
) -> Result<Gate> {
    require_run(conn, &run)?;
    let oldest: Option<String> = query_opt(
        conn,
        "SELECT id FROM gates WHERE run = ?1 AND status = 'pending' ORDER BY opened_at, rowid LIMIT 1",
        params![id_text(&run.0)],
        |row| Ok(row.get(0)?),
    )?;
    let Some(oldest) = oldest else {
        return Err(StoreError::NoPendingGate { run });
    };
    let id = GateId(canon::parse_id("gate", &oldest)?);
    decide(conn, clock, id, decision)
}

fn decode(row: &Row<'_>) -> Result<Gate> {
    let c = Cols::new(row, "gate", 0)?;
    Ok(Gate {
        id: GateId(c.uuid(0)?),
        run: RunId(c.uuid(1)?),
        kind: c.parse(2)?,
        tier: c.opt_wire(3)?,
        brief: c.opt_uuid(4)?.map(agency_core::BriefId),
        status: c.parse(5)?,
        summary: c.json(6)?,
        opened_at: c.ts(7)?,
        decided_at: c.opt_ts(8)?,
        decided_by: c.get(9)?,
        note: c.get(10)?,
    })
}
