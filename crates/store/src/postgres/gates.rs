//! Gates: opening, listing and deciding. A decision is a compare-and-set from `pending` on the locked row,
//! so of two people approving at once exactly one succeeds and the other is told who was first.

use agency_core::{BriefId, Gate, GateDecision, GateId, GateKind, GateStatus, RunId};
use postgres::{GenericClient, Row};

use super::events;
use super::rows::Cols;
use super::typed_id::{exists, require_run};
use crate::canon::{self, id_text, json_text, ts_text};
use crate::clock::Clock;
use crate::error::{Result, StoreError};
use crate::record::NewGate;

const COLUMNS: &str = "id, run, kind, tier, brief, status, summary, opened_at, decided_at, decided_by, note";

/// Opens a pending gate and writes `gate_pending` (`gate_paused` for a pause).
pub fn open<C: GenericClient>(c: &mut C, clock: &dyn Clock, new: NewGate) -> Result<Gate> {
    if exists(c, "gates", &new.id.0)? {
        return Err(StoreError::AlreadyExists {
            what: "gate",
            id: new.id.to_string(),
        });
    }
    require_run(c, &new.run)?;
    if let Some(brief) = new.brief
        && !exists(c, "briefs", &brief.0)?
    {
        return Err(StoreError::not_found("brief", brief));
    }
    let now = clock.now();
    c.execute(
        &format!("INSERT INTO gates ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, NULL, NULL)"),
        &[
            &id_text(&new.id.0),
            &id_text(&new.run.0),
            &new.kind.as_str(),
            &new.tier.map(|t| t.as_str()),
            &new.brief.map(|b| id_text(&b.0)),
            &GateStatus::Pending.as_str(),
            &json_text(&new.summary)?,
            &ts_text(now),
        ],
    )?;
    events::append(c, &canon::gate_opened(&new, now))?;
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

/// One gate; with `lock`, its row stays locked until the transaction ends (for the decision).
pub fn get<C: GenericClient>(c: &mut C, id: GateId, lock: bool) -> Result<Gate> {
    let lock = if lock { " FOR NO KEY UPDATE" } else { "" };
    let row = c.query_opt(
        &format!("SELECT {COLUMNS} FROM gates WHERE id = $1{lock}"),
        &[&id_text(&id.0)],
    )?;
    row.as_ref()
        .map(decode)
        .transpose()?
        .ok_or_else(|| StoreError::not_found("gate", id))
}

/// Pending gates, oldest first.
pub fn pending<C: GenericClient>(c: &mut C, run: Option<RunId>) -> Result<Vec<Gate>> {
    let rows = c.query(
        &format!(
            "SELECT {COLUMNS} FROM gates WHERE status = 'pending' AND ($1::text IS NULL OR run = $1) \
             ORDER BY opened_at, ord"
        ),
        &[&run.map(|r| id_text(&r.0))],
    )?;
    rows.iter().map(decode).collect()
}

/// Every gate of a run, oldest first.
pub fn list<C: GenericClient>(c: &mut C, run: RunId) -> Result<Vec<Gate>> {
    let rows = c.query(
        &format!("SELECT {COLUMNS} FROM gates WHERE run = $1 ORDER BY opened_at, ord"),
        &[&id_text(&run.0)],
    )?;
    rows.iter().map(decode).collect()
}

/// A run's gates of one kind, oldest first.
pub fn list_of_kind<C: GenericClient>(c: &mut C, run: RunId, kind: GateKind) -> Result<Vec<Gate>> {
    let rows = c.query(
        &format!("SELECT {COLUMNS} FROM gates WHERE run = $1 AND kind = $2 ORDER BY opened_at, ord"),
        &[&id_text(&run.0), &kind.as_str()],
    )?;
    rows.iter().map(decode).collect()
}

/// Decides a pending gate and writes the matching event.
pub fn decide<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    id: GateId,
    decision: &GateDecision,
) -> Result<Gate> {
    let gate = get(c, id, true)?;
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
    c.execute(
        "UPDATE gates SET status = $1, decided_at = $2, decided_by = $3, note = $4 WHERE id = $5",
        &[&status.as_str(), &ts_text(now), &by, &note, &id_text(&id.0)],
    )?;
    events::append(c, &canon::gate_decided(&gate, decision, now))?;
    Ok(Gate {
        status,
        decided_at: Some(now),
        decided_by: Some(by.to_string()),
        note: note.map(str::to_string),
        ..gate
    })
}

/// Decides the oldest pending gate of a run. The row is locked as it is chosen; a gate decided meanwhile
/// by another transaction no longer matches `pending` once its lock is released, and PostgreSQL moves on
/// to the next oldest.
pub fn decide_oldest_pending<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    run: RunId,
    decision: &GateDecision,
) -> Result<Gate> {
    require_run(c, &run)?;
    let oldest = c.query_opt(
        "SELECT id FROM gates WHERE run = $1 AND status = 'pending' ORDER BY opened_at, ord LIMIT 1 \
         FOR NO KEY UPDATE",
        &[&id_text(&run.0)],
    )?;
    let Some(oldest) = oldest else {
        return Err(StoreError::NoPendingGate { run });
    };
    let oldest: String = oldest.try_get(0)?;
    decide(c, clock, GateId(canon::parse_id("gate", &oldest)?), decision)
}

fn decode(row: &Row) -> Result<Gate> {
    let c = Cols::new(row, "gate", 0);
    Ok(Gate {
        id: GateId(c.uuid(0)?),
        run: RunId(c.uuid(1)?),
        kind: c.parse(2)?,
        tier: c.opt_wire(3)?,
        brief: c.opt_uuid(4)?.map(BriefId),
        status: c.parse(5)?,
        summary: c.json(6)?,
        opened_at: c.ts(7)?,
        decided_at: c.opt_ts(8)?,
        decided_by: c.get(9)?,
        note: c.get(10)?,
    })
}
