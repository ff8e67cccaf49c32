//! Briefs: insertion, lookup, compare-and-set of status and teachback state, and claiming.

use agency_core::placement::Offer;
use agency_core::teachback::TeachbackState;
use agency_core::{Brief, BriefId, BriefStatus, NewEvent, RunId, Tier};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, Row, params};

use super::events;
use super::rows::{
    Cols, Refused, execute, id_text, insert as insert_row, json_text, numbered_marks, query_opt, ts_text,
};
use super::typed_id::require_run;
use crate::canon::{self, BriefsOf};
use crate::clock::Clock;
use crate::error::{Result, StoreError};
use crate::record::{BriefState, Claim, Claimed};

const COLUMNS: &str = "id, run, parent, tier, workstream, title, personality, goal_anchor, instructions, \
     inputs, variety, contract, retry_budget, attempt, depends_on, branch, worktree, status, teachback, \
     claimed_by, created_at";

/// Writes a brief as given and `brief_created`. The schema refuses a taken id, a run that does not exist
/// and a parent that does not exist; the parent's and the dependencies' run are checked after the row is
/// written (a failure rolls the caller's transaction back), in the order they were checked before it was.
pub fn insert(conn: &Connection, clock: &dyn Clock, brief: &Brief) -> Result<()> {
    // A brief cannot be its own parent or dependency: the row written would satisfy the checks below.
    if brief.parent == Some(brief.id) {
        return Err(StoreError::not_found("parent brief", brief.id));
    }
    if brief.depends_on.contains(&brief.id) {
        return Err(StoreError::not_found("dependency brief", brief.id));
    }
    let depends_on: Vec<String> = brief.depends_on.iter().map(|d| id_text(&d.0)).collect();
    let now = clock.now();
    insert_row(
        conn,
        &format!(
            "INSERT INTO briefs ({COLUMNS}, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, \
             ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)"
        ),
        params![
            id_text(&brief.id.0),
            id_text(&brief.run.0),
            brief.parent.map(|p| id_text(&p.0)),
            brief.tier.as_str(),
            brief.workstream,
            brief.title,
            brief.personality,
            brief.goal_anchor,
            brief.instructions,
            json_text(&brief.inputs)?,
            brief.variety.as_ref().map(json_text).transpose()?,
            brief.contract.as_ref().map(json_text).transpose()?,
            i64::from(brief.retry_budget),
            i64::from(brief.attempt),
            json_text(&depends_on)?,
            brief.branch,
            brief.worktree,
            brief.status.as_str(),
            brief.teachback.as_str(),
            brief.claimed_by,
            ts_text(brief.created_at),
            ts_text(now),
        ],
        |refused| match refused {
            Refused::Duplicate => Err(StoreError::AlreadyExists {
                what: "brief",
                id: brief.id.to_string(),
            }),
            Refused::Missing => {
                require_run(conn, &brief.run)?;
                match brief.parent {
                    Some(parent) => require_brief_in_run(conn, parent, brief.run, "parent brief"),
                    None => Ok(()),
                }
            }
        },
    )?;
    if let Some(parent) = brief.parent {
        require_brief_in_run(conn, parent, brief.run, "parent brief")?;
    }
    for dependency in &brief.depends_on {
        require_brief_in_run(conn, *dependency, brief.run, "dependency brief")?;
    }
    events::append_to_known_run(conn, &canon::brief_created(brief, now))?;
    Ok(())
}

fn require_brief_in_run(conn: &Connection, id: BriefId, run: RunId, what: &'static str) -> Result<()> {
    let found: Option<String> = query_opt(
        conn,
        "SELECT run FROM briefs WHERE id = ?1",
        params![id_text(&id.0)],
        |row| Ok(row.get(0)?),
    )?;
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

/// One brief.
pub fn get(conn: &Connection, id: BriefId) -> Result<Brief> {
    query_opt(
        conn,
        &format!("SELECT {COLUMNS} FROM briefs WHERE id = ?1"),
        params![id_text(&id.0)],
        decode,
    )?
    .ok_or_else(|| StoreError::not_found("brief", id))
}

/// One brief's status.
pub fn status(conn: &Connection, id: BriefId) -> Result<BriefStatus> {
    query_opt(conn, STATUS, params![id_text(&id.0)], |row| {
        Cols::new(row, "brief", 0)?.wire(1)
    })?
    .ok_or_else(|| StoreError::not_found("brief", id))
}

pub(super) const STATUS: &str = "SELECT id, status FROM briefs WHERE id = ?1";

/// A run's briefs, oldest first.
pub fn list(conn: &Connection, run: RunId) -> Result<Vec<Brief>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM briefs WHERE run = ?1 ORDER BY created_at, rowid"
    ))?;
    let rows = stmt.query_and_then(params![id_text(&run.0)], decode)?;
    rows.collect()
}

/// A run's briefs in one status, oldest first.
pub fn list_by_status(conn: &Connection, run: RunId, status: BriefStatus) -> Result<Vec<Brief>> {
    let mut stmt = conn.prepare_cached(&by_status_sql())?;
    let rows = stmt.query_and_then(params![id_text(&run.0), status.as_str()], decode)?;
    rows.collect()
}

/// A brief's children, oldest first.
pub fn children(conn: &Connection, parent: BriefId) -> Result<Vec<Brief>> {
    let mut stmt = conn.prepare_cached(&children_sql())?;
    let rows = stmt.query_and_then(params![id_text(&parent.0)], decode)?;
    rows.collect()
}

/// A run's briefs in one workstream, oldest first.
pub fn list_in_workstream(conn: &Connection, run: RunId, workstream: &str) -> Result<Vec<Brief>> {
    let mut stmt = conn.prepare_cached(&in_workstream_sql())?;
    let rows = stmt.query_and_then(params![id_text(&run.0), workstream], decode)?;
    rows.collect()
}

/// A brief's children, oldest first, without their contents.
pub fn children_states(conn: &Connection, parent: BriefId) -> Result<Vec<BriefState>> {
    let mut stmt = conn.prepare_cached(CHILDREN_STATES)?;
    let rows = stmt.query_and_then(params![id_text(&parent.0)], |row| {
        let c = Cols::new(row, "brief", 0)?;
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
    })?;
    rows.collect()
}

pub(super) const CHILDREN_STATES: &str = "SELECT id, parent, tier, workstream, title, attempt, status, created_at \
     FROM briefs WHERE parent = ?1 ORDER BY created_at, rowid";

pub(super) fn by_status_sql() -> String {
    format!("SELECT {COLUMNS} FROM briefs WHERE run = ?1 AND status = ?2 ORDER BY created_at, rowid")
}

/// Named index: before `briefs_workstream` was in creation order, SQLite walked the whole run in `briefs_run`
/// to skip a sort of a few rows; the name keeps any later index from tempting it again.
pub(super) fn in_workstream_sql() -> String {
    format!(
        "SELECT {COLUMNS} FROM briefs INDEXED BY briefs_workstream WHERE run = ?1 AND workstream = ?2 \
         ORDER BY created_at, rowid"
    )
}

pub(super) fn children_sql() -> String {
    format!("SELECT {COLUMNS} FROM briefs WHERE parent = ?1 ORDER BY created_at, rowid")
}

/// Counts the briefs of `of` in a workstream, of a tier (any, when `None`) in any of `statuses` (any, when
/// empty).
pub fn count(
    conn: &Connection,
    of: BriefsOf,
    workstream: &str,
    tier: Option<Tier>,
    statuses: &[BriefStatus],
) -> Result<u64> {
    let id = of.id_text();
    let tier = tier.map(|t| t.as_str());
    let wanted: Vec<&str> = statuses.iter().map(|s| s.as_str()).collect();
    let mut values: Vec<&dyn rusqlite::ToSql> = vec![&id, &workstream, &tier];
    values.extend(wanted.iter().map(|s| s as &dyn rusqlite::ToSql));
    let mut stmt = conn.prepare_cached(&count_sql(of.column(), wanted.len()))?;
    let n: i64 = stmt.query_row(values.as_slice(), |row| row.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The count of [`count`] for `statuses` statuses (any status, when 0). The statuses are bound one by one,
/// `IN (?4, ?5, …)`, one statement per length: an `IN (SELECT value FROM json_each(…))` made SQLite build
/// a temporary index and a Bloom filter on every call, most of a count's cost.
pub(super) fn count_sql(column: &str, statuses: usize) -> String {
    let mut sql = format!(
        "SELECT COUNT(*) FROM briefs WHERE {column} = ?1 AND workstream = ?2 AND (?3 IS NULL OR tier = ?3)"
    );
    if statuses > 0 {
        sql.push_str(&format!(" AND status IN ({})", numbered_marks(4, statuses)));
    }
    sql
}

/// Compare-and-set of the status, with the caller's event; the brief as it is now.
pub fn update_status(
    conn: &Connection,
    clock: &dyn Clock,
    id: BriefId,
    from: BriefStatus,
    to: BriefStatus,
    event: NewEvent,
) -> Result<Brief> {
    move_status(conn, clock, id, from, to, event)?;
    get(conn, id)
}

/// [`update_status`] for a caller that does not need the brief back (a batch's move).
pub fn move_status(
    conn: &Connection,
    clock: &dyn Clock,
    id: BriefId,
    from: BriefStatus,
    to: BriefStatus,
    event: NewEvent,
) -> Result<()> {
    let head = head(conn, id)?;
    let event = canon::event_for_parts(id, head.run, head.tier, event)?;
    if head.status != from {
        return Err(canon::brief_conflict(id, from, head.status));
    }
    execute(
        conn,
        "UPDATE briefs SET status = ?1, updated_at = ?2, \
         claimed_by = CASE WHEN ?1 = 'pending' THEN NULL ELSE claimed_by END, \
         lease_until = CASE WHEN ?1 = 'running' THEN lease_until ELSE NULL END WHERE id = ?3",
        params![to.as_str(), ts_text(clock.now()), id_text(&id.0)],
    )?;
    events::append_to_known_run(conn, &event)?;
    Ok(())
}

/// Compare-and-set of the teachback state, with the caller's event; the brief as it is now.
pub fn set_teachback(
    conn: &Connection,
    clock: &dyn Clock,
    id: BriefId,
    expected: TeachbackState,
    new: TeachbackState,
    event: NewEvent,
) -> Result<Brief> {
    move_teachback(conn, clock, id, expected, new, event)?;
    get(conn, id)
}

/// [`set_teachback`] for a caller that does not need the brief back (a batch's move).
pub fn move_teachback(
    conn: &Connection,
    clock: &dyn Clock,
    id: BriefId,
    expected: TeachbackState,
    new: TeachbackState,
    event: NewEvent,
) -> Result<()> {
    let head = head(conn, id)?;
    let event = canon::event_for_parts(id, head.run, head.tier, event)?;
    if head.teachback != expected {
        return Err(StoreError::Conflict {
            what: "teachback of brief",
            id: id.short(),
            expected: expected.as_str().to_string(),
            found: head.teachback.as_str().to_string(),
        });
    }
    execute(
        conn,
        "UPDATE briefs SET teachback = ?1, updated_at = ?2 WHERE id = ?3",
        params![new.as_str(), ts_text(clock.now()), id_text(&id.0)],
    )?;
    events::append_to_known_run(conn, &event)?;
    Ok(())
}

/// What a compare-and-set reads of a brief before it writes: the value it compares and what its event
/// needs. Decoding the whole row (its JSON columns above all) for that was most of a move's own cost.
struct Head {
    run: RunId,
    tier: Tier,
    status: BriefStatus,
    teachback: TeachbackState,
}

fn head(conn: &Connection, id: BriefId) -> Result<Head> {
    query_opt(
        conn,
        "SELECT id, run, tier, status, teachback FROM briefs WHERE id = ?1",
        params![id_text(&id.0)],
        |row| {
            let c = Cols::new(row, "brief", 0)?;
            Ok(Head {
                run: RunId(c.uuid(1)?),
                tier: c.wire(2)?,
                status: c.wire(3)?,
                teachback: c.wire(4)?,
            })
        },
    )?
    .ok_or_else(|| StoreError::not_found("brief", id))
}

/// Records the branch and worktree; the brief as it is now.
pub fn set_workspace(
    conn: &Connection,
    clock: &dyn Clock,
    id: BriefId,
    branch: Option<&str>,
    worktree: Option<&str>,
) -> Result<Brief> {
    write_workspace(conn, clock, id, branch, worktree)?;
    get(conn, id)
}

/// [`set_workspace`] for a caller that does not need the brief back (a batch's agents being started).
pub fn write_workspace(
    conn: &Connection,
    clock: &dyn Clock,
    id: BriefId,
    branch: Option<&str>,
    worktree: Option<&str>,
) -> Result<()> {
    let changed = execute(
        conn,
        "UPDATE briefs SET branch = ?1, worktree = ?2, updated_at = ?3 WHERE id = ?4",
        params![branch, worktree, ts_text(clock.now()), id_text(&id.0)],
    )?;
    if changed == 0 {
        return Err(StoreError::not_found("brief", id));
    }
    Ok(())
}

/// A pending brief none of whose dependencies is anything but `done` (a dependency that does not exist
/// blocks it too).
macro_rules! unblocked {
    () => {
        "NOT EXISTS (SELECT 1 FROM json_each(b.depends_on) d LEFT JOIN briefs dep ON dep.id = d.value \
         WHERE dep.status IS NOT 'done')"
    };
}

/// A pending brief the claimer's offer may take (the rule of `agency_flow::placement`): its tier is among
/// the offered ones (`?T`: a JSON array of tier names, or NULL for every tier) and the claimer offers every
/// label its workstream needs (`?L`: a JSON array of labels).
macro_rules! offered {
    ($tiers:literal, $labels:literal) => {
        concat!(
            " AND (",
            $tiers,
            " IS NULL OR b.tier IN (SELECT value FROM json_each(",
            $tiers,
            "))) AND NOT EXISTS (SELECT 1 FROM placement_needs n WHERE n.run = b.run \
             AND n.workstream IN (b.workstream, '*') AND n.label NOT IN (SELECT value FROM json_each(",
            $labels,
            ")))"
        )
    };
}

/// A run's claimable briefs, oldest first (`briefs_run_status`, in its order). The claim and the reclaim
/// below are asked for one run or for every run as two statements, so that each is planned with its index
/// (`plans.rs` pins the plans); there is no index of the status alone to serve "every run".
pub(super) const CLAIMABLE_IN_RUN: &str = concat!(
    "SELECT b.id FROM briefs b WHERE b.run = ?1 AND b.status = 'pending' AND ",
    unblocked!(),
    offered!("?3", "?4"),
    " ORDER BY b.created_at, b.rowid LIMIT ?2"
);

/// Every run's claimable briefs, oldest first: each run's through `briefs_run_status`, then sorted. The
/// `CROSS JOIN` keeps `runs` the outer loop (left to choose, SQLite scans a whole index of `briefs`).
pub(super) const CLAIMABLE: &str = concat!(
    "SELECT b.id FROM runs r CROSS JOIN briefs b WHERE b.run = r.id AND b.status = 'pending' AND ",
    unblocked!(),
    offered!("?2", "?3"),
    " ORDER BY b.created_at, b.rowid LIMIT ?1"
);

/// A run's running briefs whose lease ended before `?2`, oldest first.
pub(super) const EXPIRED_IN_RUN: &str = "SELECT id FROM briefs WHERE run = ?1 AND status = 'running' \
     AND lease_until < ?2 ORDER BY created_at, rowid";

/// Every run's running briefs whose lease ended before `?1`, oldest first.
pub(super) const EXPIRED: &str = "SELECT b.id FROM runs r CROSS JOIN briefs b WHERE b.run = r.id \
     AND b.status = 'running' AND b.lease_until < ?1 ORDER BY b.created_at, b.rowid";

/// The ids a statement selects (its first column).
fn ids<P: rusqlite::Params>(conn: &Connection, sql: &str, params: P) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params, |row| row.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Claims the oldest pending brief whose dependencies are all done. Must run under the write lock (it does:
/// every write is `BEGIN IMMEDIATE`), so the choice and the update cannot interleave with another claimer.
pub fn claim_next(
    conn: &Connection,
    clock: &dyn Clock,
    run: Option<RunId>,
    claimer: &str,
    lease: chrono::Duration,
) -> Result<Option<Brief>> {
    Ok(claim(conn, clock, run, claimer, lease, 1, &Offer::default())?
        .pop()
        .map(|c| c.brief))
}

/// Claims up to `limit` of the oldest pending briefs whose dependencies are all done and that `offer` may
/// take, oldest first, each with its event; under the write lock, as [`claim_next`]. Claiming one never makes another claimable (a
/// dependency must be `done`), so choosing them together picks what one claim after another would.
pub fn claim(
    conn: &Connection,
    clock: &dyn Clock,
    run: Option<RunId>,
    claimer: &str,
    lease: chrono::Duration,
    limit: usize,
    offer: &Offer,
) -> Result<Vec<Claimed>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let (tiers, labels) = crate::canon::offer_params(offer)?;
    let candidates: Vec<String> = match run {
        Some(run) => ids(
            conn,
            CLAIMABLE_IN_RUN,
            params![id_text(&run.0), limit, tiers, labels],
        )?,
        None => ids(conn, CLAIMABLE, params![limit, tiers, labels])?,
    };
    let now = clock.now();
    candidates
        .iter()
        .map(|candidate| {
            let id = BriefId(canon::parse_id("brief", candidate)?);
            // A plain UPDATE, then the claim read back ([`claim_of`]): `UPDATE … RETURNING` buffered its row
            // in a scratch table and cost twice as much, a claim per brief.
            let claimed = execute(
                conn,
                "UPDATE briefs SET status = 'running', claimed_by = ?1, updated_at = ?2, claimed_at = ?2, \
                 lease_until = ?3, claim_generation = claim_generation + 1 \
                 WHERE id = ?4 AND status = 'pending'",
                params![claimer, ts_text(now), ts_text(now + lease), candidate],
            )?;
            // Chosen as pending in this very transaction, under the write lock: it cannot have moved since.
            if claimed != 1 {
                return Err(StoreError::Conflict {
                    what: "brief status",
                    id: candidate.clone(),
                    expected: BriefStatus::Pending.as_str().into(),
                    found: status(conn, id)?.as_str().into(),
                });
            }
            let claim = claim_of(conn, id)?.ok_or_else(|| StoreError::not_found("claim of brief", id))?;
            let brief = get(conn, id)?;
            events::append_to_known_run(conn, &canon::brief_claimed(&brief, claimer, now))?;
            Ok(Claimed { brief, claim })
        })
        .collect()
}

/// The brief's claim (holder and generation), `None` when it has no holder.
pub fn claim_of(conn: &Connection, id: BriefId) -> Result<Option<Claim>> {
    let found: Option<(Option<String>, i64)> = query_opt(
        conn,
        "SELECT claimed_by, claim_generation FROM briefs WHERE id = ?1",
        params![id_text(&id.0)],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    let Some((holder, generation)) = found else {
        return Err(StoreError::not_found("brief", id));
    };
    Ok(holder.map(|holder| Claim {
        brief: id,
        holder,
        generation,
    }))
}

/// Fails with `ClaimLost` unless `claim`'s holder still holds its brief in its generation (the check of
/// [`crate::Change::HoldsClaim`]); `NotFound` for an unknown brief.
pub fn check_claim(conn: &Connection, claim: &Claim) -> Result<()> {
    check_claim_row(conn, claim, canon::holds_claim)
}

/// Fails with `ClaimLost` once `claim`'s brief has been claimed again since its holder gave it back (the
/// check of [`crate::Change::GaveUpClaim`]); `NotFound` for an unknown brief.
pub fn check_gave_up(conn: &Connection, claim: &Claim) -> Result<()> {
    check_claim_row(conn, claim, canon::not_claimed_since)
}

/// Reads `claim`'s brief's claim and fails with `ClaimLost` unless `passes` says it passes.
fn check_claim_row(
    conn: &Connection,
    claim: &Claim,
    passes: fn(&Claim, Option<&str>, i64) -> bool,
) -> Result<()> {
    let found: Option<(String, Option<String>, i64)> = query_opt(
        conn,
        "SELECT status, claimed_by, claim_generation FROM briefs WHERE id = ?1",
        params![id_text(&claim.brief.0)],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )?;
    let Some((status, holder, generation)) = found else {
        return Err(StoreError::not_found("brief", claim.brief));
    };
    if passes(claim, holder.as_deref(), generation) {
        return Ok(());
    }
    Err(canon::claim_lost(
        claim,
        canon::claim_found(&status, holder.as_deref(), generation),
    ))
}

/// Checks `fence` (see [`crate::Fence`]).
pub fn check_fence(conn: &Connection, fence: &crate::Fence) -> Result<()> {
    match fence {
        crate::Fence::Holds(claim) => check_claim(conn, claim),
        crate::Fence::GaveUp(claim) => check_gave_up(conn, claim),
    }
}

/// Extends a claim's lease, if `claimer` still holds the brief.
pub fn renew_claim(
    conn: &Connection,
    clock: &dyn Clock,
    id: BriefId,
    claimer: &str,
    lease: chrono::Duration,
) -> Result<Brief> {
    let brief = get(conn, id)?;
    if brief.status != BriefStatus::Running || brief.claimed_by.as_deref() != Some(claimer) {
        return Err(canon::claim_conflict(&brief, claimer));
    }
    let now = clock.now();
    execute(
        conn,
        "UPDATE briefs SET lease_until = ?1, updated_at = ?2 WHERE id = ?3",
        params![ts_text(now + lease), ts_text(now), id_text(&id.0)],
    )?;
    get(conn, id)
}

/// Returns running briefs whose lease ended before `now` to pending, each with its event.
pub fn reclaim_expired(conn: &Connection, run: Option<RunId>, now: DateTime<Utc>) -> Result<Vec<Brief>> {
    let now_text = ts_text(now);
    let expired: Vec<String> = match run {
        Some(run) => ids(conn, EXPIRED_IN_RUN, params![id_text(&run.0), now_text])?,
        None => ids(conn, EXPIRED, params![now_text])?,
    };
    expired
        .iter()
        .map(|id| {
            let id = BriefId(canon::parse_id("brief", id)?);
            let before = get(conn, id)?;
            execute(
                conn,
                "UPDATE briefs SET status = 'pending', claimed_by = NULL, lease_until = NULL, updated_at = ?1 \
                 WHERE id = ?2",
                params![ts_text(now), id_text(&id.0)],
            )?;
            events::append_to_known_run(conn, &canon::brief_reclaimed(&before, before.claimed_by.as_deref(), now))?;
            get(conn, id)
        })
        .collect()
}

fn decode(row: &Row<'_>) -> Result<Brief> {
    let c = Cols::new(row, "brief", 0)?;
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
