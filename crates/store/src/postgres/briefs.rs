//! Briefs: insertion, lookup, compare-and-set of status and teachback state, and claiming.
//!
//! Compare-and-set reads the row `FOR NO KEY UPDATE`, so a concurrent writer of the same brief waits and
//! then sees the new value. A claim picks the oldest claimable brief with `FOR NO KEY UPDATE SKIP LOCKED`:
//! claimers on other connections (or machines) skip the rows being claimed instead of queueing behind them,
//! so each gets a different brief. `NO KEY` locks do not block the key-share locks that foreign-key checks
//! take, so inserting a child brief or an event never waits for a claim.

use agency_core::placement::Offer;
use agency_core::teachback::TeachbackState;
use agency_core::{Brief, BriefId, BriefStatus, NewEvent, RunId, Tier};
use chrono::{DateTime, Utc};
use postgres::{GenericClient, Row};

use super::events;
use super::rows::Cols;
use super::typed_id::{exists, require_run};
use crate::canon::{self, BriefsOf, id_text, json_text, ts_text};
use crate::clock::Clock;
use crate::error::{Result, StoreError};
use crate::record::{BriefState, Claim, Claimed};

const COLUMNS: &str = "id, run, parent, tier, workstream, title, personality, goal_anchor, instructions, \
     inputs, variety, contract, retry_budget, attempt, depends_on, branch, worktree, status, teachback, \
     claimed_by, created_at";

/// Writes a brief as given and `brief_created`.
pub fn insert<C: GenericClient>(c: &mut C, clock: &dyn Clock, brief: &Brief) -> Result<()> {
    if exists(c, "briefs", &brief.id.0)? {
        return Err(StoreError::AlreadyExists {
            what: "brief",
            id: brief.id.to_string(),
        });
    }
    require_run(c, &brief.run)?;
    if let Some(parent) = brief.parent {
        require_brief_in_run(c, parent, brief.run, "parent brief")?;
    }
    for dependency in &brief.depends_on {
        require_brief_in_run(c, *dependency, brief.run, "dependency brief")?;
    }
    let depends_on: Vec<String> = brief.depends_on.iter().map(|d| id_text(&d.0)).collect();
    let now = clock.now();
    c.execute(
        &format!(
            "INSERT INTO briefs ({COLUMNS}, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
             $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)"
        ),
        &[
            &id_text(&brief.id.0),
            &id_text(&brief.run.0),
            &brief.parent.map(|p| id_text(&p.0)),
            &brief.tier.as_str(),
            &brief.workstream,
            &brief.title,
            &brief.personality,
            &brief.goal_anchor,
            &brief.instructions,
            &json_text(&brief.inputs)?,
            &brief.variety.as_ref().map(json_text).transpose()?,
            &brief.contract.as_ref().map(json_text).transpose()?,
            &i64::from(brief.retry_budget),
            &i64::from(brief.attempt),
            &json_text(&depends_on)?,
            &brief.branch,
            &brief.worktree,
            &brief.status.as_str(),
            &brief.teachback.as_str(),
            &brief.claimed_by,
            &ts_text(brief.created_at),
            &ts_text(now),
        ],
    )?;
    events::append(c, &canon::brief_created(brief, now))?;
    Ok(())
}

fn require_brief_in_run<C: GenericClient>(
    c: &mut C,
    id: BriefId,
    run: RunId,
    what: &'static str,
) -> Result<()> {
    let found = c.query_opt("SELECT run FROM briefs WHERE id = $1", &[&id_text(&id.0)])?;
    let found: Option<String> = found.map(|row| row.try_get(0)).transpose()?;
    match found {
        Some(found) if found == id_text(&run.0) => Ok(()),
        Some(_) => Err(StoreError::Invalid(format!(
            "{what} {} belongs to another run than {}",
            id.short(),
            run.short()
        ))),
        None => Err(StoreError::not_found(what, id)),
    }
}

/// One brief; with `lock`, its row stays locked until the transaction ends (for compare-and-set).
pub fn get<C: GenericClient>(c: &mut C, id: BriefId, lock: bool) -> Result<Brief> {
    let lock = if lock { " FOR NO KEY UPDATE" } else { "" };
    let row = c.query_opt(
        &format!("SELECT {COLUMNS} FROM briefs WHERE id = $1{lock}"),
        &[&id_text(&id.0)],
    )?;
    row.as_ref()
        .map(decode)
        .transpose()?
        .ok_or_else(|| StoreError::not_found("brief", id))
}

/// One brief's status.
pub fn status<C: GenericClient>(c: &mut C, id: BriefId) -> Result<BriefStatus> {
    let row = c.query_opt("SELECT id, status FROM briefs WHERE id = $1", &[&id_text(&id.0)])?;
    row.as_ref()
        .map(|row| Cols::new(row, "brief", 0).wire(1))
        .transpose()?
        .ok_or_else(|| StoreError::not_found("brief", id))
}

/// A run's briefs, oldest first.
pub fn list<C: GenericClient>(c: &mut C, run: RunId) -> Result<Vec<Brief>> {
    let rows = c.query(
        &format!("SELECT {COLUMNS} FROM briefs WHERE run = $1 ORDER BY created_at, ord"),
        &[&id_text(&run.0)],
    )?;
    rows.iter().map(decode).collect()
}

/// A run's briefs in one status, oldest first.
pub fn list_by_status<C: GenericClient>(c: &mut C, run: RunId, status: BriefStatus) -> Result<Vec<Brief>> {
    let rows = c.query(
        &format!("SELECT {COLUMNS} FROM briefs WHERE run = $1 AND status = $2 ORDER BY created_at, ord"),
        &[&id_text(&run.0), &status.as_str()],
    )?;
    rows.iter().map(decode).collect()
}

/// A run's briefs in one workstream, oldest first.
pub fn list_in_workstream<C: GenericClient>(c: &mut C, run: RunId, workstream: &str) -> Result<Vec<Brief>> {
    let rows = c.query(
        &format!("SELECT {COLUMNS} FROM briefs WHERE run = $1 AND workstream = $2 ORDER BY created_at, ord"),
        &[&id_text(&run.0), &workstream],
    )?;
    rows.iter().map(decode).collect()
}

/// A brief's children, oldest first, without their contents.
pub fn children_states<C: GenericClient>(c: &mut C, parent: BriefId) -> Result<Vec<BriefState>> {
    let rows = c.query(
        "SELECT id, parent, tier, workstream, title, attempt, status, created_at FROM briefs \
         WHERE parent = $1 ORDER BY created_at, ord",
        &[&id_text(&parent.0)],
    )?;
    rows.iter()
        .map(|row| {
            let c = Cols::new(row, "brief", 0);
            Ok(BriefState {
                id: BriefId(c.uuid(0)?),
                parent: c.opt_uuid(1)?.map(BriefId),
                tier: c.wire(2)?,
                workstream: c.get(3)?,
                title: c.get(4)?,
                attempt: c.u32(5)?,
                status: c.wire(6)?,
                created_at: c.ts(7)?,
            })
        })
        .collect()
}

/// A brief's children, oldest first.
pub fn children<C: GenericClient>(c: &mut C, parent: BriefId) -> Result<Vec<Brief>> {
    let rows = c.query(
        &format!("SELECT {COLUMNS} FROM briefs WHERE parent = $1 ORDER BY created_at, ord"),
        &[&id_text(&parent.0)],
    )?;
    rows.iter().map(decode).collect()
}

/// Counts the briefs of `of` in a workstream, of a tier (any, when `None`) in any of `statuses` (any, when
/// empty).
pub fn count<C: GenericClient>(
    c: &mut C,
    of: BriefsOf,
    workstream: &str,
    tier: Option<Tier>,
    statuses: &[BriefStatus],
) -> Result<u64> {
    let wanted: Vec<&str> = statuses.iter().map(|s| s.as_str()).collect();
    let row = c.query_one(
        &format!(
            "SELECT COUNT(*) FROM briefs WHERE {} = $1 AND workstream = $2 \
             AND ($3::text IS NULL OR tier = $3) AND (cardinality($4::text[]) = 0 OR status = ANY($4))",
            of.column()
        ),
        &[&of.id_text(), &workstream, &tier.map(|t| t.as_str()), &wanted],
    )?;
    let n: i64 = row.try_get(0)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Compare-and-set of the status, with the caller's event.
pub fn update_status<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    id: BriefId,
    from: BriefStatus,
    to: BriefStatus,
    event: NewEvent,
) -> Result<Brief> {
    let brief = get(c, id, true)?;
    let event = canon::event_for(&brief, event)?;
    if brief.status != from {
        return Err(canon::brief_conflict(id, from, brief.status));
    }
    c.execute(
        "UPDATE briefs SET status = $1, updated_at = $2, \
         claimed_by = CASE WHEN $1 = 'pending' THEN NULL ELSE claimed_by END, \
         lease_until = CASE WHEN $1 = 'running' THEN lease_until ELSE NULL END WHERE id = $3",
        &[&to.as_str(), &ts_text(clock.now()), &id_text(&id.0)],
    )?;
    events::append(c, &event)?;
    get(c, id, false)
}

/// Compare-and-set of the teachback state, with the caller's event.
pub fn set_teachback<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    id: BriefId,
    expected: TeachbackState,
    new: TeachbackState,
    event: NewEvent,
) -> Result<Brief> {
    let brief = get(c, id, true)?;
    let event = canon::event_for(&brief, event)?;
    if brief.teachback != expected {
        return Err(StoreError::Conflict {
            what: "teachback of brief",
            id: id.short(),
            expected: expected.as_str().to_string(),
            found: brief.teachback.as_str().to_string(),
        });
    }
    c.execute(
        "UPDATE briefs SET teachback = $1, updated_at = $2 WHERE id = $3",
        &[&new.as_str(), &ts_text(clock.now()), &id_text(&id.0)],
    )?;
    events::append(c, &event)?;
    get(c, id, false)
}

/// Records the branch and worktree.
pub fn set_workspace<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    id: BriefId,
    branch: Option<&str>,
    worktree: Option<&str>,
) -> Result<Brief> {
    let changed = c.execute(
        "UPDATE briefs SET branch = $1, worktree = $2, updated_at = $3 WHERE id = $4",
        &[&branch, &worktree, &ts_text(clock.now()), &id_text(&id.0)],
    )?;
    if changed == 0 {
        return Err(StoreError::not_found("brief", id));
    }
    get(c, id, false)
}

/// Claims the oldest pending brief whose dependencies are all done, skipping rows other claimers hold.
pub fn claim_next<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    run: Option<RunId>,
    claimer: &str,
    lease: chrono::Duration,
) -> Result<Option<Brief>> {
    Ok(claim(c, clock, run, claimer, lease, 1, &Offer::default())?
        .pop()
        .map(|c| c.brief))
}

/// Claims up to `limit` of the oldest pending briefs whose dependencies are all done and that `offer` may
/// take, oldest first, each with its event, skipping rows other claimers hold. Claiming one never makes another claimable (a
/// dependency must be `done`), so choosing them together picks what one claim after another would.
pub fn claim<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    run: Option<RunId>,
    claimer: &str,
    lease: chrono::Duration,
    limit: usize,
    offer: &Offer,
) -> Result<Vec<Claimed>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let tiers: Option<Vec<&str>> = offer.tier_names();
    let labels: Vec<&str> = offer.labels.iter().map(String::as_str).collect();
    // The offer's rule is `agency_flow::placement`: an offered tier (NULL: every tier), and no label the
    // brief's workstream needs (or every workstream, `*`) that the offer lacks.
    let rows = c.query(
        "SELECT b.id FROM briefs b \
         WHERE b.status = 'pending' AND ($1::text IS NULL OR b.run = $1) \
           AND NOT EXISTS ( \
             SELECT 1 FROM jsonb_array_elements_text(b.depends_on::jsonb) AS d(id) \
             LEFT JOIN briefs dep ON dep.id = d.id \
             WHERE dep.status IS DISTINCT FROM 'done') \
           AND ($3::text[] IS NULL OR b.tier = ANY($3::text[])) \
           AND NOT EXISTS ( \
             SELECT 1 FROM placement_needs n WHERE n.run = b.run \
               AND n.workstream IN (b.workstream, '*') AND NOT (n.label = ANY($4::text[]))) \
         ORDER BY b.created_at, b.ord LIMIT $2 \
         FOR NO KEY UPDATE OF b SKIP LOCKED",
        &[&run.map(|r| id_text(&r.0)), &limit, &tiers, &labels],
    )?;
    let now = clock.now();
    let mut claimed = Vec::with_capacity(rows.len());
    for row in rows {
        let candidate: String = row.try_get(0)?;
        let generation: i64 = c
            .query_one(
                "UPDATE briefs SET status = 'running', claimed_by = $1, updated_at = $2, claimed_at = $2, \
                 lease_until = $3, claim_generation = claim_generation + 1 WHERE id = $4 \
                 RETURNING claim_generation",
                &[&claimer, &ts_text(now), &ts_text(now + lease), &candidate],
            )?
            .try_get(0)?;
        let id = BriefId(canon::parse_id("brief", &candidate)?);
        let brief = get(c, id, false)?;
        events::append(c, &canon::brief_claimed(&brief, claimer, now))?;
        let claim = Claim {
            brief: id,
            holder: claimer.to_string(),
            generation,
        };
        claimed.push(Claimed { brief, claim });
    }
    Ok(claimed)
}

/// The brief's claim (holder and generation), `None` when it has no holder.
pub fn claim_of<C: GenericClient>(c: &mut C, id: BriefId) -> Result<Option<Claim>> {
    let row = c.query_opt(
        "SELECT claimed_by, claim_generation FROM briefs WHERE id = $1",
        &[&id_text(&id.0)],
    )?;
    let Some(row) = row else {
        return Err(StoreError::not_found("brief", id));
    };
    let holder: Option<String> = row.try_get(0)?;
    let generation: i64 = row.try_get(1)?;
    Ok(holder.map(|holder| Claim {
        brief: id,
        holder,
        generation,
    }))
}

/// Fails with `ClaimLost` unless `claim`'s holder still holds its brief in its generation (the check of
/// [`crate::Change::HoldsClaim`]); `NotFound` for an unknown brief. The row stays locked (`FOR NO KEY
/// UPDATE`) until the transaction ends, so no reclaim or claim can commit between this check and the
/// writes it fences.
pub fn check_claim<C: GenericClient>(c: &mut C, claim: &Claim) -> Result<()> {
    check_claim_row(c, claim, canon::holds_claim)
}

/// Fails with `ClaimLost` once `claim`'s brief has been claimed again since its holder gave it back (the
/// check of [`crate::Change::GaveUpClaim`]); `NotFound` for an unknown brief. The row stays locked until
/// the transaction ends, as in [`check_claim`].
pub fn check_gave_up<C: GenericClient>(c: &mut C, claim: &Claim) -> Result<()> {
    check_claim_row(c, claim, canon::not_claimed_since)
}

/// Reads and locks `claim`'s brief's row and fails with `ClaimLost` unless `passes` says its claim passes.
fn check_claim_row<C: GenericClient>(
    c: &mut C,
    claim: &Claim,
    passes: fn(&Claim, Option<&str>, i64) -> bool,
) -> Result<()> {
    let row = c.query_opt(
        "SELECT status, claimed_by, claim_generation FROM briefs WHERE id = $1 FOR NO KEY UPDATE",
        &[&id_text(&claim.brief.0)],
    )?;
    let Some(row) = row else {
        return Err(StoreError::not_found("brief", claim.brief));
    };
    let status: String = row.try_get(0)?;
    let holder: Option<String> = row.try_get(1)?;
    let generation: i64 = row.try_get(2)?;
    if passes(claim, holder.as_deref(), generation) {
        return Ok(());
    }
    Err(canon::claim_lost(
        claim,
        canon::claim_found(&status, holder.as_deref(), generation),
    ))
}

/// Checks `fence` (see [`crate::Fence`]).
pub fn check_fence<C: GenericClient>(c: &mut C, fence: &crate::Fence) -> Result<()> {
    match fence {
        crate::Fence::Holds(claim) => check_claim(c, claim),
        crate::Fence::GaveUp(claim) => check_gave_up(c, claim),
    }
}

/// Extends a claim's lease, if `claimer` still holds the brief.
pub fn renew_claim<C: GenericClient>(
    c: &mut C,
    clock: &dyn Clock,
    id: BriefId,
    claimer: &str,
    lease: chrono::Duration,
) -> Result<Brief> {
    let brief = get(c, id, true)?;
    if brief.status != BriefStatus::Running || brief.claimed_by.as_deref() != Some(claimer) {
        return Err(canon::claim_conflict(&brief, claimer));
    }
    let now = clock.now();
    c.execute(
        "UPDATE briefs SET lease_until = $1, updated_at = $2 WHERE id = $3",
        &[&ts_text(now + lease), &ts_text(now), &id_text(&id.0)],
    )?;
    get(c, id, false)
}

/// Returns running briefs whose lease ended before `now` to pending, each with its event. Rows another
/// transaction holds (a renewal, a status change in flight) are skipped: they are not idle.
pub fn reclaim_expired<C: GenericClient>(
    c: &mut C,
    run: Option<RunId>,
    now: DateTime<Utc>,
) -> Result<Vec<Brief>> {
    let rows = c.query(
        &format!(
            "SELECT {COLUMNS} FROM briefs WHERE status = 'running' AND lease_until < $1 \
             AND ($2::text IS NULL OR run = $2) ORDER BY created_at, ord FOR NO KEY UPDATE SKIP LOCKED"
        ),
        &[&ts_text(now), &run.map(|r| id_text(&r.0))],
    )?;
    let expired = rows.iter().map(decode).collect::<Result<Vec<_>>>()?;
    expired
        .iter()
        .map(|before| {
            c.execute(
                "UPDATE briefs SET status = 'pending', claimed_by = NULL, lease_until = NULL, updated_at = $1 \
                 WHERE id = $2",
                &[&ts_text(now), &id_text(&before.id.0)],
            )?;
            events::append(c, &canon::brief_reclaimed(before, before.claimed_by.as_deref(), now))?;
            get(c, before.id, false)
        })
        .collect()
}

fn decode(row: &Row) -> Result<Brief> {
    let c = Cols::new(row, "brief", 0);
    Ok(Brief {
        id: BriefId(c.uuid(0)?),
        run: RunId(c.uuid(1)?),
        parent: c.opt_uuid(2)?.map(BriefId),
        tier: c.wire(3)?,
        workstream: c.get(4)?,
        title: c.get(5)?,
        personality: c.get(6)?,
        goal_anchor: c.get(7)?,
        instructions: c.get(8)?,
        inputs: c.json(9)?,
        variety: c.opt_json(10)?,
        contract: c.opt_json(11)?,
        retry_budget: c.u32(12)?,
        attempt: c.u32(13)?,
        depends_on: c.json(14)?,
        branch: c.get(15)?,
        worktree: c.get(16)?,
        status: c.wire(17)?,
        teachback: c.wire(18)?,
        claimed_by: c.get(19)?,
        created_at: c.ts(20)?,
    })
}
