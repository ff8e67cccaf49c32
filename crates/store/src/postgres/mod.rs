//! The PostgreSQL blackboard: the same records and behaviour as [`SqliteBlackboard`](crate::SqliteBlackboard),
//! in one schema of a PostgreSQL database, so `agency worker` processes on several machines can share runs.
//!
//! A handle owns one connection behind a mutex, so it can be shared between threads; open one handle per
//! worker for parallelism. Every write is one transaction at READ COMMITTED. What makes the operations safe
//! across connections:
//!
//! - compare-and-set operations (brief status, teachback, run status, gate decisions) read the row
//!   `FOR NO KEY UPDATE`, so a second writer waits for the first and then sees its result;
//! - a claim picks its brief `FOR NO KEY UPDATE SKIP LOCKED`, so concurrent claimers take different briefs
//!   without queueing behind each other;
//! - every event append holds a per-schema advisory lock until commit, so `seq` order is commit order and
//!   readers paging by `seq` never miss an event (see `events`).
//!
//! The schema (`agency` unless another is named) is created and migrated on open. Connections carry no TLS:
//! use a server on loopback or a trusted network.

mod artifacts;
mod batch;
mod briefs;
mod connect;
mod driver_lock;
mod events;
mod gates;
mod migrations;
mod placement;
mod rows;
mod runs;
mod sessions;
mod typed_id;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agency_core::placement::{LabelNeed, Offer, RunnerOffer};
use agency_core::teachback::TeachbackState;
use agency_core::{
    Brief, BriefId, BriefStatus, Event, EventKind, Gate, GateDecision, GateId, GateKind, NewEvent, RunId,
    Tier,
};
use chrono::{DateTime, Utc};
use postgres::{Client, Transaction};

use crate::Blackboard;
use crate::batch::{Fence, WriteBatch};
use crate::canon::BriefsOf;
use crate::clock::{Clock, SystemClock};
use crate::error::{Result, StoreError};
use crate::record::{
    Artifact, ArtifactId, ArtifactMeta, BriefState, Claim, Claimed, NewArtifact, NewGate, NewRun, Run,
    RunStatus,
};
pub use connect::{DEFAULT_RECONNECT, RECONNECT_VAR};
use connect::{Settings, cause_of, is_connection_loss};
pub use migrations::SCHEMA_VERSION;

/// The schema [`PostgresBlackboard::open`] keeps the blackboard in.
pub const DEFAULT_SCHEMA: &str = "agency";

/// A blackboard in one schema of a PostgreSQL database.
pub struct PostgresBlackboard {
    client: Mutex<Client>,
    settings: Settings,
    clock: Arc<dyn Clock>,
}

impl PostgresBlackboard {
    /// Connects (`postgres://USER:PASSWORD@HOST:PORT/DBNAME` or `host=... user=... dbname=...`) and creates
    /// or migrates the blackboard in the schema [`DEFAULT_SCHEMA`].
    pub fn open(url: &str) -> Result<Self> {
        Self::open_in_schema(url, DEFAULT_SCHEMA)
    }

    /// As [`open`](Self::open), in the schema `schema` (a plain lower-case identifier; created if missing).
    /// Several blackboards can share one database this way; the tests use one scratch schema each.
    pub fn open_in_schema(url: &str, schema: &str) -> Result<Self> {
        let settings = Settings::parse(url, schema)?;
        let mut client = settings.connect()?;
        migrations::migrate(&mut client, settings.schema())?;
        Ok(PostgresBlackboard {
            client: Mutex::new(client),
            settings,
            clock: Arc::new(SystemClock),
        })
    }

    /// Replaces the clock that stamps the records and canonical events this handle writes.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The schema holding this blackboard.
    pub fn schema(&self) -> &str {
        self.settings.schema()
    }

    /// The server, user and database connected to (`user@host:port/dbname`), for messages.
    pub fn target(&self) -> &str {
        self.settings.target()
    }

    /// How long this handle tries to connect again after losing its connection before an operation fails
    /// with [`StoreError::Unavailable`]; 0 turns reconnecting off. Defaults to
    /// `AGENCY_DB_RECONNECT_SECONDS`, else 60 s.
    pub fn with_reconnect_limit(mut self, limit: std::time::Duration) -> Self {
        self.settings.set_reconnect_limit(limit);
        self
    }

    /// The connection, reconnected first (waiting out a restart, see [`Settings::reconnect`]) if it is
    /// known to be closed. A poisoned lock is taken over: the panicking holder's transaction was rolled
    /// back when it unwound.
    fn client(&self) -> Result<MutexGuard<'_, Client>> {
        let mut client = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        if client.is_closed() {
            *client = self.settings.reconnect("the connection was found closed")?;
        }
        Ok(client)
    }

    /// Runs `f` on the connection, outside any transaction. A long-lived worker outlives its connection
    /// (a server restart, a terminated session, an idle timeout); a read that finds it gone is safe to
    /// repeat, so it is, on a new connection, once the server is back.
    fn read<T: Send>(&self, f: impl Fn(&mut Client) -> Result<T> + Send) -> Result<T> {
        off_async_runtime(move || {
            let mut client = self.client()?;
            let mut attempt = 1;
            loop {
                match f(&mut client) {
                    Err(error) if attempt < MAX_ATTEMPTS && lost(&error, &client) => {
                        *client = self.settings.reconnect(&cause_of(&error))?;
                        attempt += 1;
                    }
                    result => return result,
                }
            }
        })
    }

    /// Runs `f` in a transaction, committed when `f` succeeds and rolled back otherwise. A connection lost
    /// before `COMMIT` was sent wrote nothing (the server rolls back a transaction whose session ends), so
    /// `f` runs again in a new transaction on a new connection, once the server is back. One lost while
    /// committing may or may not have committed: the transaction's id, read before `COMMIT`, is looked up
    /// on the new connection (`txid_status`), and `f` runs again only if it did not; when that cannot be
    /// told, the write fails with [`StoreError::LostAtCommit`] rather than risk writing twice.
    fn write<T: Send>(
        &self,
        f: impl Fn(&mut Transaction<'_>, &dyn Clock) -> Result<T> + Send + Sync,
    ) -> Result<T> {
        off_async_runtime(|| {
            let mut client = self.client()?;
            let clock = self.clock.as_ref();
            let mut attempt = 1;
            loop {
                let failed = match attempt_write(&mut client, &f, clock) {
                    Attempt::Done(value) => return Ok(value),
                    Attempt::Failed(error) => error,
                    Attempt::LostAtCommit { value, id, error } => {
                        *client = self.settings.reconnect(&cause_of(&error))?;
                        match committed(&mut client, id) {
                            Some(true) => return Ok(value),
                            Some(false) if attempt < MAX_ATTEMPTS => {
                                attempt += 1;
                                continue;
                            }
                            _ => {
                                return Err(StoreError::LostAtCommit {
                                    target: self.settings.target().to_string(),
                                    cause: cause_of(&error),
                                });
                            }
                        }
                    }
                };
                if attempt >= MAX_ATTEMPTS || !lost(&failed, &client) {
                    return Err(failed);
                }
                *client = self.settings.reconnect(&cause_of(&failed))?;
                attempt += 1;
            }
        })
    }
}

/// How one try at a write went.
enum Attempt<T> {
    Done(T),
    /// Nothing was committed.
    Failed(StoreError),
    /// The connection was lost while committing transaction `id`, which would have returned `value`.
    LostAtCommit {
        value: T,
        id: i64,
        error: StoreError,
    },
}

/// Runs `f` in a transaction on `client` and commits, noting the transaction's id first so a commit whose
/// answer is lost can be looked up.
fn attempt_write<T>(
    client: &mut Client,
    f: &impl Fn(&mut Transaction<'_>, &dyn Clock) -> Result<T>,
    clock: &dyn Clock,
) -> Attempt<T> {
    let mut tx = match client.transaction() {
        Ok(tx) => tx,
        Err(error) => return Attempt::Failed(error.into()),
    };
    let done = f(&mut tx, clock).and_then(|value| {
        let id: i64 = tx.query_one("SELECT txid_current()", &[])?.try_get(0)?;
        Ok((value, id))
    });
    let (value, id) = match done {
        Ok(done) => done,
        Err(error) => return Attempt::Failed(error),
    };
    match tx.commit() {
        Ok(()) => Attempt::Done(value),
        Err(error) if is_connection_loss(&error) => Attempt::LostAtCommit {
            value,
            id,
            error: error.into(),
        },
        Err(error) => Attempt::Failed(error.into()),
    }
}

/// Whether the transaction `id` committed, asked on a connection made after the one running it was lost:
/// `Some(false)` once the server says it was aborted (a session that ends aborts its transaction), `None`
/// when that cannot be told.
fn committed(client: &mut Client, id: i64) -> Option<bool> {
    for _ in 0..20 {
        let status: Option<String> = client
            .query_one("SELECT txid_status($1)", &[&id])
            .ok()?
            .try_get(0)
            .ok()?;
        match status.as_deref() {
            Some("committed") => return Some(true),
            Some("aborted") => return Some(false),
            // Still winding down on the server: asked again in a moment.
            Some("in progress") => std::thread::sleep(std::time::Duration::from_millis(50)),
            _ => return None,
        }
    }
    None
}

/// How many times one operation is tried on a fresh connection after losing one (each reconnection waits
/// out the server for up to the reconnect limit).
const MAX_ATTEMPTS: u32 = 4;

/// Whether `error` (from an operation on `client`) means the connection was lost rather than that the
/// operation was refused: only then is repeating it on a new connection right.
fn lost(error: &StoreError, client: &Client) -> bool {
    if client.is_closed() {
        return true;
    }
    match error {
        StoreError::Database(source) => source
            .downcast_ref::<postgres::Error>()
            .is_some_and(is_connection_loss),
        _ => false,
    }
}

/// Runs `f`, which blocks on the `postgres` client, on a thread where that may block. The client drives
/// its connection on a tokio runtime of its own, which tokio refuses to enter from a thread already inside
/// one (a panic: "Cannot start a runtime from within a runtime") — and the runner calls the blackboard from
/// its async tasks. There, `f` runs on a scoped thread of its own; everywhere else, on this one.
fn off_async_runtime<T: Send>(f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|scope| match scope.spawn(f).join() {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

impl std::fmt::Debug for PostgresBlackboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBlackboard")
            .field("target", &self.settings.target())
            .field("schema", &self.settings.schema())
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl From<postgres::Error> for StoreError {
    fn from(error: postgres::Error) -> Self {
        if error.code() == Some(&postgres::error::SqlState::DISK_FULL) {
            let cause = match error.as_db_error() {
                Some(db) => format!("the PostgreSQL server's disk: {}", db.message()),
                None => error.to_string(),
            };
            return StoreError::DiskFull { path: None, cause };
        }
        StoreError::Database(Box::new(error))
    }
}

impl Blackboard for PostgresBlackboard {
    fn create_run(&self, run: NewRun) -> Result<Run> {
        self.write(|tx, clock| runs::create(tx, clock, run.clone()))
    }

    fn get_run(&self, id: RunId) -> Result<Run> {
        self.read(|c| runs::get(c, id, false))
    }

    fn run_status(&self, id: RunId) -> Result<RunStatus> {
        self.read(|c| runs::status(c, id))
    }

    fn list_runs(&self) -> Result<Vec<Run>> {
        self.read(runs::list)
    }

    fn resolve_run(&self, typed: &str) -> Result<RunId> {
        self.read(|c| typed_id::resolve(c, "runs", "run", typed))
            .map(RunId)
    }

    fn set_run_status(&self, id: RunId, expected: Option<RunStatus>, to: RunStatus) -> Result<Run> {
        self.write(|tx, clock| runs::set_status(tx, clock, id, expected, to))
    }

    fn lock_driver(&self, run: RunId, holder: &str) -> Result<crate::DriverLease> {
        driver_lock::lock(&self.settings, run, holder)
    }

    fn append_event(&self, event: NewEvent) -> Result<Event> {
        self.write(|tx, _| events::append(tx, &event))
    }

    fn append_event_holding(&self, fence: &Fence, event: NewEvent) -> Result<Event> {
        self.write(|tx, _| {
            briefs::check_fence(tx, fence)?;
            events::append(tx, &event)
        })
    }

    fn events_after(&self, run: Option<RunId>, after_seq: i64, limit: usize) -> Result<Vec<Event>> {
        self.read(|c| events::after(c, run, after_seq, limit))
    }

    fn events_of_kinds_after(
        &self,
        run: RunId,
        kinds: &[EventKind],
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<Event>> {
        self.read(|c| events::of_kinds_after(c, run, kinds, after_seq, limit))
    }

    fn last_seq(&self, run: Option<RunId>) -> Result<i64> {
        self.read(|c| events::last_seq(c, run))
    }

    fn briefs_in_events_after(&self, run: RunId, after_seq: i64) -> Result<Vec<BriefId>> {
        self.read(|c| events::briefs_after(c, run, after_seq))
    }

    fn workstreams_in_events_after(&self, run: RunId, after_seq: i64) -> Result<Vec<String>> {
        self.read(|c| events::workstreams_after(c, run, after_seq))
    }

    fn insert_brief(&self, brief: &Brief) -> Result<()> {
        self.write(|tx, clock| briefs::insert(tx, clock, brief))
    }

    fn insert_briefs(&self, batch: &[Brief]) -> Result<()> {
        self.write(|tx, clock| {
            batch
                .iter()
                .try_for_each(|brief| briefs::insert(tx, clock, brief))
        })
    }

    fn get_brief(&self, id: BriefId) -> Result<Brief> {
        self.read(|c| briefs::get(c, id, false))
    }

    fn brief_status(&self, id: BriefId) -> Result<BriefStatus> {
        self.read(|c| briefs::status(c, id))
    }

    fn resolve_brief(&self, typed: &str) -> Result<BriefId> {
        self.read(|c| typed_id::resolve(c, "briefs", "brief", typed))
            .map(BriefId)
    }

    fn list_briefs(&self, run: RunId) -> Result<Vec<Brief>> {
        self.read(|c| briefs::list(c, run))
    }

    fn list_briefs_by_status(&self, run: RunId, status: BriefStatus) -> Result<Vec<Brief>> {
        self.read(|c| briefs::list_by_status(c, run, status))
    }

    fn list_children(&self, parent: BriefId) -> Result<Vec<Brief>> {
        self.read(|c| briefs::children(c, parent))
    }

    fn list_children_states(&self, parent: BriefId) -> Result<Vec<BriefState>> {
        self.read(|c| briefs::children_states(c, parent))
    }

    fn list_workstream_briefs(&self, run: RunId, workstream: &str) -> Result<Vec<Brief>> {
        self.read(|c| briefs::list_in_workstream(c, run, workstream))
    }

    fn count_briefs(
        &self,
        run: RunId,
        workstream: &str,
        tier: Option<Tier>,
        statuses: &[BriefStatus],
    ) -> Result<u64> {
        self.read(|c| briefs::count(c, BriefsOf::Run(run), workstream, tier, statuses))
    }

    fn count_children(
        &self,
        parent: BriefId,
        workstream: &str,
        tier: Option<Tier>,
        statuses: &[BriefStatus],
    ) -> Result<u64> {
        self.read(|c| briefs::count(c, BriefsOf::Parent(parent), workstream, tier, statuses))
    }

    fn update_brief_status(
        &self,
        id: BriefId,
        from: BriefStatus,
        to: BriefStatus,
        event: NewEvent,
    ) -> Result<Brief> {
        self.write(|tx, clock| briefs::update_status(tx, clock, id, from, to, event.clone()))
    }

    fn set_teachback_state(
        &self,
        id: BriefId,
        expected: TeachbackState,
        new: TeachbackState,
        event: NewEvent,
    ) -> Result<Brief> {
        self.write(|tx, clock| briefs::set_teachback(tx, clock, id, expected, new, event.clone()))
    }

    fn set_brief_workspace(
        &self,
        id: BriefId,
        branch: Option<&str>,
        worktree: Option<&str>,
    ) -> Result<Brief> {
        self.write(|tx, clock| briefs::set_workspace(tx, clock, id, branch, worktree))
    }

    fn claim_next_brief(
        &self,
        run: Option<RunId>,
        claimer: &str,
        lease: chrono::Duration,
    ) -> Result<Option<Brief>> {
        self.write(|tx, clock| briefs::claim_next(tx, clock, run, claimer, lease))
    }

    fn claim_offered(
        &self,
        run: Option<RunId>,
        claimer: &str,
        lease: chrono::Duration,
        limit: usize,
        offer: &Offer,
    ) -> Result<Vec<Claimed>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.write(|tx, clock| briefs::claim(tx, clock, run, claimer, lease, limit, offer))
    }

    fn set_label_needs(&self, run: RunId, needs: &[LabelNeed]) -> Result<()> {
        self.write(|tx, _| placement::set_needs(tx, run, needs))
    }

    fn label_needs(&self, run: RunId) -> Result<Vec<LabelNeed>> {
        self.read(|c| placement::needs(c, run))
    }

    fn record_offer(&self, run: RunId, runner: &str, offer: &Offer) -> Result<()> {
        self.write(|tx, clock| placement::record_offer(tx, clock, run, runner, offer))
    }

    fn forget_offer(&self, run: RunId, runner: &str) -> Result<()> {
        self.write(|tx, _| placement::forget_offer(tx, run, runner))
    }

    fn runner_offers(&self, run: RunId) -> Result<Vec<RunnerOffer>> {
        self.read(|c| placement::offers(c, run))
    }

    fn claim_of(&self, id: BriefId) -> Result<Option<Claim>> {
        self.read(|c| briefs::claim_of(c, id))
    }

    fn renew_claim(&self, id: BriefId, claimer: &str, lease: chrono::Duration) -> Result<Brief> {
        self.write(|tx, clock| briefs::renew_claim(tx, clock, id, claimer, lease))
    }

    fn reclaim_expired(&self, run: Option<RunId>, now: DateTime<Utc>) -> Result<Vec<Brief>> {
        self.write(|tx, _| briefs::reclaim_expired(tx, run, now))
    }

    fn apply(&self, batch: WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.write(|tx, clock| batch::apply(tx, clock, batch.clone()))
    }

    fn bind_session(&self, session: &str, agent: Option<&str>, brief: BriefId) -> Result<()> {
        self.write(|tx, clock| sessions::bind(tx, clock, session, agent, brief))
    }

    fn session_brief(&self, session: &str, agent: Option<&str>) -> Result<Option<BriefId>> {
        self.read(|c| sessions::lookup(c, session, agent))
    }

    fn bind_task(&self, session: &str, task: &str, brief: BriefId) -> Result<()> {
        self.write(|tx, clock| sessions::bind_task(tx, clock, session, task, brief))
    }

    fn task_brief(&self, session: &str, task: &str) -> Result<Option<BriefId>> {
        self.read(|c| sessions::task_brief(c, session, task))
    }

    fn session_tasks(&self, session: &str) -> Result<Vec<(String, BriefId)>> {
        self.read(|c| sessions::tasks(c, session))
    }

    fn open_gate(&self, gate: NewGate) -> Result<Gate> {
        self.write(|tx, clock| gates::open(tx, clock, gate.clone()))
    }

    fn open_gate_holding(&self, fence: &Fence, gate: NewGate) -> Result<Gate> {
        self.write(|tx, clock| {
            briefs::check_fence(tx, fence)?;
            gates::open(tx, clock, gate.clone())
        })
    }

    fn get_gate(&self, id: GateId) -> Result<Gate> {
        self.read(|c| gates::get(c, id, false))
    }

    fn resolve_gate(&self, typed: &str) -> Result<GateId> {
        self.read(|c| typed_id::resolve(c, "gates", "gate", typed))
            .map(GateId)
    }

    fn pending_gates(&self, run: Option<RunId>) -> Result<Vec<Gate>> {
        self.read(|c| gates::pending(c, run))
    }

    fn list_gates(&self, run: RunId) -> Result<Vec<Gate>> {
        self.read(|c| gates::list(c, run))
    }

    fn list_gates_of_kind(&self, run: RunId, kind: GateKind) -> Result<Vec<Gate>> {
        self.read(|c| gates::list_of_kind(c, run, kind))
    }

    fn decide_gate(&self, id: GateId, decision: GateDecision) -> Result<Gate> {
        self.write(|tx, clock| gates::decide(tx, clock, id, &decision))
    }

    fn decide_pending_gate(&self, run: RunId, decision: GateDecision) -> Result<Gate> {
        self.write(|tx, clock| gates::decide_oldest_pending(tx, clock, run, &decision))
    }

    fn put_artifact(&self, artifact: NewArtifact) -> Result<ArtifactMeta> {
        self.write(|tx, clock| artifacts::put(tx, clock, artifact.clone()))
    }

    fn get_artifact(&self, id: ArtifactId) -> Result<Artifact> {
        self.read(|c| artifacts::get(c, id))
    }

    fn latest_artifact(&self, run: RunId, name: &str) -> Result<Option<Artifact>> {
        self.read(|c| artifacts::latest(c, run, name))
    }

    fn list_artifacts(&self, run: RunId, brief: Option<BriefId>) -> Result<Vec<ArtifactMeta>> {
        self.read(|c| artifacts::list(c, run, brief))
    }
}
