//! The SQLite blackboard: one database file (`.agency/agency.db`) in WAL mode, shared by the runner, the CLI,
//! the hook and the dashboard, each process with its own handles.
//!
//! A handle owns one connection behind a mutex, so it can be shared between threads; every write runs in a
//! `BEGIN IMMEDIATE` transaction, which takes SQLite's single write lock up front. That is what makes a claim
//! or a gate decision atomic across processes: the read that chooses and the write that records happen under
//! the same lock, and a second writer waits (up to the busy timeout) instead of failing half-way.

mod artifacts;
mod batch;
mod briefs;
mod driver_lock;
mod events;
mod gates;
mod migrations;
mod placement;
#[cfg(test)]
mod plans;
mod rows;
mod runs;
mod sessions;
mod typed_id;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agency_core::placement::{LabelNeed, Offer, RunnerOffer};
use agency_core::teachback::TeachbackState;
use agency_core::{
    Brief, BriefId, BriefStatus, Event, EventKind, Gate, GateDecision, GateId, GateKind, NewEvent, RunId,
    Tier,
};
use chrono::{DateTime, Utc};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::Blackboard;
use crate::batch::{Fence, WriteBatch};
use crate::canon::BriefsOf;

use crate::clock::{Clock, SystemClock};
use crate::error::{Result, StoreError};
use crate::record::{
    Artifact, ArtifactId, ArtifactMeta, BriefState, Claim, Claimed, NewArtifact, NewGate, NewRun, Run,
    RunStatus,
};
pub use migrations::SCHEMA_VERSION;

/// The WAL size below which [`SqliteBlackboard::open_for_append`] leaves its commits in the WAL at close.
/// A process that opens the database while no other holds it re-reads the whole WAL (about 1.5 µs per
/// 4 KiB page), so this bounds what a skipped checkpoint costs every later reader.
pub const APPEND_WAL_LIMIT: u64 = 256 * 1024;

/// How long a write waits for another process's write lock before failing with `Busy`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A blackboard in one SQLite database.
#[derive(Debug)]
pub struct SqliteBlackboard {
    conn: Mutex<Connection>,
    clock: Arc<dyn Clock>,
    read_only: bool,
    path: Option<PathBuf>,
    /// Writes made through this handle (SQLite's `data_version` counts only other connections' commits).
    writes: AtomicU64,
    /// The last `list_briefs` answer: the runner reads the whole run several times per pass, mostly with
    /// nothing written in between, and decoding every row again is most of its cost on a large run.
    briefs_cache: Mutex<Option<BriefsCache>>,
    /// Writes held back by [`Blackboard::append_event_soon`] and [`Blackboard::apply_soon`], made at the
    /// start of the next write.
    held: Mutex<Vec<WriteBatch>>,
}

/// How many held-back writes make [`Blackboard::apply_soon`] write them at once.
const HELD_MAX: usize = 256;

impl Drop for SqliteBlackboard {
    fn drop(&mut self) {
        // What was held back is written on the way out; a write that fails now has nobody to tell.
        let _ = self.flush_events();
    }
}

/// A run's briefs as of one version of the database.
#[derive(Debug)]
struct BriefsCache {
    run: RunId,
    /// `(PRAGMA data_version, writes)` when they were read: equal again means nothing was committed since.
    version: (i64, u64),
    briefs: Vec<Brief>,
}

impl SqliteBlackboard {
    /// Opens (creating the parent directory and the file if needed) and migrates the blackboard at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| open_error(path, e))?;
        }
        let mut conn = Connection::open(path).map_err(|e| open_error(path, e))?;
        configure(&conn, false).map_err(|e| open_error(path, e))?;
        migrations::migrate(&mut conn)?;
        Ok(Self::from_connection(conn, false, Some(path)))
    }

    /// Opens an existing blackboard for reading only, without migrating: the hook's fast path. Fails with
    /// `Missing` when there is no file, and with a schema error when the file is from another version.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| open_error(path, e))?;
        configure(&conn, true).map_err(|e| open_error(path, e))?;
        migrations::check_readable(&conn)?;
        Ok(Self::from_connection(conn, true, Some(path)))
    }

    /// Opens an existing, current blackboard to append a few records from a short-lived process (the hook
    /// recording a denial or a teachback). It neither creates nor migrates: a schema from another build is
    /// refused, as for reading.
    ///
    /// Closing the last connection to a WAL database normally checkpoints the WAL into the database and
    /// deletes it, which costs three or four fsyncs — most of a denial's time. So while the WAL is small
    /// ([`APPEND_WAL_LIMIT`]) this handle skips that checkpoint and leaves its commits in the WAL (each
    /// synced to disk before it is acknowledged, `synchronous=FULL`, as every commit is). The WAL cannot grow without bound that way: the
    /// next process to open it must re-read all of it (nobody holds the shared index), so once it is past
    /// the limit this handle checkpoints on close as usual, and a long-lived writer (the runner) checkpoints
    /// it whenever it is alive.
    pub fn open_for_append(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let wal_small = std::fs::metadata(&wal).map_or(true, |m| m.len() < APPEND_WAL_LIMIT);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| open_error(path, e))?;
        let setup = |conn: &Connection| -> rusqlite::Result<()> {
            conn.busy_timeout(BUSY_TIMEOUT)?;
            keep_plans(conn)?;
            conn.pragma_update(None, "foreign_keys", true)?;
            // The journal mode (WAL) is stored in the file; `synchronous` is per connection: FULL, as for
            // every writer (see [`configure`]).
            conn.pragma_update(None, "synchronous", "FULL")?;
            conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, wal_small)?;
            Ok(())
        };
        setup(&conn).map_err(|e| open_error(path, e))?;
        migrations::check_readable(&conn)?;
        Ok(Self::from_connection(conn, false, Some(path)))
    }

    /// A private, empty, migrated blackboard in memory (tests).
    pub fn open_in_memory() -> Result<Self> {
        let mut conn = Connection::open_in_memory()?;
        configure(&conn, false)?;
        migrations::migrate(&mut conn)?;
        Ok(Self::from_connection(conn, false, None))
    }

    /// Replaces the clock that stamps the records and canonical events this handle writes.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The database file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// How many write transactions this handle has begun (for benchmarks: a count that does not move with
    /// the machine's load).
    pub fn write_count(&self) -> u64 {
        self.writes.load(Ordering::SeqCst)
    }

    /// Whether this handle was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The refusal of a write through a handle opened with [`open_read_only`](Self::open_read_only).
    fn opened_read_only(&self) -> StoreError {
        StoreError::ReadOnly {
            path: self.path.clone(),
            cause: "this handle was opened read-only (by a reader such as the hook's fast path), and the \
                    operation writes"
                .into(),
        }
    }

    /// `error` with this handle's file named, when it is a write SQLite refused or could not make (a full
    /// disk).
    fn naming_file(&self, error: StoreError) -> StoreError {
        match error {
            StoreError::ReadOnly { path: None, cause } => StoreError::ReadOnly {
                path: self.path.clone(),
                cause,
            },
            StoreError::DiskFull { path: None, cause } => StoreError::DiskFull {
                path: self.path.clone(),
                cause,
            },
            other => other,
        }
    }

    fn from_connection(conn: Connection, read_only: bool, path: Option<&Path>) -> Self {
        SqliteBlackboard {
            conn: Mutex::new(conn),
            clock: Arc::new(SystemClock),
            read_only,
            path: path.map(Path::to_path_buf),
            writes: AtomicU64::new(0),
            briefs_cache: Mutex::new(None),
            held: Mutex::new(Vec::new()),
        }
    }

    fn held(&self) -> MutexGuard<'_, Vec<WriteBatch>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds `held` back again, ahead of any held since: the write that took them did not commit.
    fn hold_again(&self, mut held: Vec<WriteBatch>) {
        if held.is_empty() {
            return;
        }
        let mut now = self.held();
        held.append(&mut now);
        // A database that keeps refusing writes must not grow this without bound: the oldest go.
        let excess = held.len().saturating_sub(HELD_MAX * 4);
        held.drain(..excess);
        *now = held;
    }

    /// Runs `f` on the connection. A poisoned lock is taken over: the panicking holder's transaction was
    /// rolled back when it unwound, so the connection itself is consistent.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        f(&conn).map_err(|error| self.naming_file(error))
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction, committed when `f` succeeds and rolled back otherwise.
    fn write<T>(&self, f: impl FnOnce(&Transaction<'_>, &dyn Clock) -> Result<T>) -> Result<T> {
        if self.read_only {
            return Err(self.opened_read_only());
        }
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        // Counted under the connection's lock, before the transaction, so a reader holding that lock never
        // pairs a new count with old rows (a failed write only costs a needless re-read).
        self.writes.fetch_add(1, Ordering::SeqCst);
        let held = std::mem::take(&mut *self.held());
        let written = (|| {
            let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if !write_held_together(&tx, self.clock.as_ref(), &held) {
                // One of them cannot be made: undo them all and make each on its own, all or nothing.
                tx.rollback()?;
                self.writes.fetch_add(1, Ordering::SeqCst);
                tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                write_held_apart(&mut tx, self.clock.as_ref(), &held);
            }
            let value = f(&tx, self.clock.as_ref())?;
            tx.commit()?;
            Ok(value)
        })();
        if written.is_err() {
            self.hold_again(held);
        }
        written.map_err(|error| self.naming_file(error))
    }
}

/// Makes the writes held back by [`Blackboard::apply_soon`] ahead of a write, first thing in its transaction,
/// all in one go: whether every one of them could be made. Nearly always they can, and nothing has to be
/// kept to undo one alone — a savepoint per held write copied every page it touched to a statement journal
/// first, 3% of a runner's CPU while its verifiers finish. When one cannot (its run is gone, its move no
/// longer applies), the caller rolls the transaction back and makes them apart ([`write_held_apart`]).
fn write_held_together(tx: &Transaction<'_>, clock: &dyn Clock, held: &[WriteBatch]) -> bool {
    held.iter().all(|batch| batch::apply(tx, clock, batch).is_ok())
}

/// Makes the held writes one by one, each all or nothing. One that cannot be made is dropped alone, and the
/// write it rides with goes on: SQLite undoes only the statement that broke a key, which is all of a
/// one-change write (a log line); a longer one gets a savepoint.
fn write_held_apart(tx: &mut Transaction<'_>, clock: &dyn Clock, held: &[WriteBatch]) {
    for batch in held {
        if batch.len() <= 1 {
            let _ = batch::apply(tx, clock, batch);
            continue;
        }
        let Ok(savepoint) = tx.savepoint() else {
            continue;
        };
        if batch::apply(&savepoint, clock, batch).is_ok() {
            let _ = savepoint.commit();
        }
    }
}

/// Prepared statements kept per connection.
const STATEMENT_CACHE_CAPACITY: usize = 128;

/// Per-connection settings. WAL lets readers proceed while one process writes. `synchronous=FULL`: every
/// commit is synced to disk before it is acknowledged, so what the blackboard has acknowledged survives a
/// power loss or a filesystem error (under NORMAL a short run that never checkpointed could vanish whole
/// while its branches stayed). It costs one fsync of the WAL per commit, which the runner's batching keeps
/// near one per brief.
fn configure(conn: &Connection, read_only: bool) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Room for every statement the store prepares (about 50): with rusqlite's default of 16 a runner's
    // pass evicted and re-parsed them in turn.
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
    keep_plans(conn)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    if !read_only {
        use_wal(conn)?;
        conn.pragma_update(None, "synchronous", "FULL")?;
    }
    Ok(())
}

/// Puts the database in WAL mode (in-memory databases answer "memory"; that is fine). The switch needs the
/// file to itself, and while another process creates the same new file (and migrates it) SQLite refuses it
/// with `SQLITE_BUSY` at once, without waiting in the busy handler: it is tried again for up to
/// [`BUSY_TIMEOUT`], as a busy write would wait.
fn use_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            result => return result.map(drop),
        }
    }
}

/// Plans a statement once, for any values bound to it. Without the query planner stability guarantee
/// SQLite re-prepares a cached statement on every new binding of a parameter it might plan around — every
/// `WHERE run = ?1 ORDER BY …` served by an index, which is most of the store's reads — and that re-parse
/// was a tenth of the runner's CPU. The store's queries have one good plan whatever the values (and there
/// are no `ANALYZE` statistics for a value to change it).
fn keep_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

fn open_error(path: &Path, source: impl Into<crate::error::BoxError>) -> StoreError {
    StoreError::Open {
        path: PathBuf::from(path),
        source: source.into(),
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked) => {
                StoreError::Busy {
                    seconds: BUSY_TIMEOUT.as_secs(),
                }
            }
            Some(rusqlite::ErrorCode::ReadOnly) => StoreError::ReadOnly {
                path: None,
                cause: format!(
                    "SQLite refused to write ({error}): is the file, its directory or its filesystem \
                     read-only? The `-wal` and `-shm` files beside it must be writable too (check `ls -l` \
                     and `mount`)"
                ),
            },
            Some(rusqlite::ErrorCode::DiskFull) => StoreError::DiskFull {
                path: None,
                cause: error.to_string(),
            },
            _ => StoreError::Database(Box::new(error)),
        }
    }
}

impl Blackboard for SqliteBlackboard {
    fn create_run(&self, run: NewRun) -> Result<Run> {
        self.write(|tx, clock| runs::create(tx, clock, run))
    }

    fn get_run(&self, id: RunId) -> Result<Run> {
        self.read(|conn| runs::get(conn, id))
    }

    fn run_status(&self, id: RunId) -> Result<RunStatus> {
        self.read(|conn| runs::status(conn, id))
    }

    fn list_runs(&self) -> Result<Vec<Run>> {
        self.read(runs::list)
    }

    fn resolve_run(&self, typed: &str) -> Result<RunId> {
        self.read(|conn| typed_id::resolve(conn, "runs", "run", typed))
            .map(RunId)
    }

    fn set_run_status(&self, id: RunId, expected: Option<RunStatus>, to: RunStatus) -> Result<Run> {
        self.write(|tx, clock| runs::set_status(tx, clock, id, expected, to))
    }

    fn lock_driver(&self, run: RunId, holder: &str) -> Result<crate::DriverLease> {
        if self.read_only {
            return Err(self.opened_read_only());
        }
        match &self.path {
            Some(path) => driver_lock::lock(path, run, holder),
            // Nobody else can open a private in-memory store.
            None => Ok(crate::DriverLease::new(())),
        }
    }

    fn append_event(&self, event: NewEvent) -> Result<Event> {
        self.write(|tx, _| events::append(tx, event))
    }

    fn append_event_holding(&self, fence: &Fence, event: NewEvent) -> Result<Event> {
        self.write(|tx, _| {
            briefs::check_fence(tx, fence)?;
            events::append(tx, event)
        })
    }

    fn append_event_soon(&self, event: NewEvent) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.append_event(event);
        self.apply_soon(batch)
    }

    fn apply_soon(&self, batch: WriteBatch) -> Result<()> {
        if self.read_only {
            return Err(self.opened_read_only());
        }
        let full = {
            let mut held = self.held();
            held.push(batch);
            held.len() >= HELD_MAX
        };
        if full { self.flush_events() } else { Ok(()) }
    }

    fn flush_events(&self) -> Result<()> {
        if self.held().is_empty() {
            return Ok(());
        }
        // Another write may take them first; this one then commits nothing.
        self.write(|_, _| Ok(()))
    }

    fn events_after(&self, run: Option<RunId>, after_seq: i64, limit: usize) -> Result<Vec<Event>> {
        self.read(|conn| events::after(conn, run, after_seq, limit))
    }

    fn events_of_kinds_after(
        &self,
        run: RunId,
        kinds: &[EventKind],
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<Event>> {
        self.read(|conn| events::of_kinds_after(conn, run, kinds, after_seq, limit))
    }

    fn last_seq(&self, run: Option<RunId>) -> Result<i64> {
        self.read(|conn| events::last_seq(conn, run))
    }

    fn briefs_in_events_after(&self, run: RunId, after_seq: i64) -> Result<Vec<BriefId>> {
        self.read(|conn| events::briefs_after(conn, run, after_seq))
    }

    fn workstreams_in_events_after(&self, run: RunId, after_seq: i64) -> Result<Vec<String>> {
        self.read(|conn| events::workstreams_after(conn, run, after_seq))
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
        self.read(|conn| briefs::get(conn, id))
    }

    fn brief_status(&self, id: BriefId) -> Result<BriefStatus> {
        self.read(|conn| briefs::status(conn, id))
    }

    fn resolve_brief(&self, typed: &str) -> Result<BriefId> {
        self.read(|conn| typed_id::resolve(conn, "briefs", "brief", typed))
            .map(BriefId)
    }

    fn list_briefs(&self, run: RunId) -> Result<Vec<Brief>> {
        self.read(|conn| {
            let data_version: i64 = rows::query_value(conn, "PRAGMA data_version", [])?;
            let version = (data_version, self.writes.load(Ordering::SeqCst));
            let mut cache = self.briefs_cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(cached) = cache.as_ref().filter(|c| c.run == run && c.version == version) {
                return Ok(cached.briefs.clone());
            }
            let briefs = briefs::list(conn, run)?;
            *cache = Some(BriefsCache {
                run,
                version,
                briefs: briefs.clone(),
            });
            Ok(briefs)
        })
    }

    fn list_briefs_by_status(&self, run: RunId, status: BriefStatus) -> Result<Vec<Brief>> {
        self.read(|conn| briefs::list_by_status(conn, run, status))
    }

    fn list_children(&self, parent: BriefId) -> Result<Vec<Brief>> {
        self.read(|conn| briefs::children(conn, parent))
    }

    fn list_children_states(&self, parent: BriefId) -> Result<Vec<BriefState>> {
        self.read(|conn| briefs::children_states(conn, parent))
    }

    fn list_workstream_briefs(&self, run: RunId, workstream: &str) -> Result<Vec<Brief>> {
        self.read(|conn| briefs::list_in_workstream(conn, run, workstream))
    }

    fn count_briefs(
        &self,
        run: RunId,
        workstream: &str,
        tier: Option<Tier>,
        statuses: &[BriefStatus],
    ) -> Result<u64> {
        self.read(|conn| briefs::count(conn, BriefsOf::Run(run), workstream, tier, statuses))
    }

    fn count_children(
        &self,
        parent: BriefId,
        workstream: &str,
        tier: Option<Tier>,
        statuses: &[BriefStatus],
    ) -> Result<u64> {
        self.read(|conn| briefs::count(conn, BriefsOf::Parent(parent), workstream, tier, statuses))
    }

    fn update_brief_status(
        &self,
        id: BriefId,
        from: BriefStatus,
        to: BriefStatus,
        event: NewEvent,
    ) -> Result<Brief> {
        self.write(|tx, clock| briefs::update_status(tx, clock, id, from, to, event))
    }

    fn set_teachback_state(
        &self,
        id: BriefId,
        expected: TeachbackState,
        new: TeachbackState,
        event: NewEvent,
    ) -> Result<Brief> {
        self.write(|tx, clock| briefs::set_teachback(tx, clock, id, expected, new, event))
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
        self.read(|conn| placement::needs(conn, run))
    }

    fn record_offer(&self, run: RunId, runner: &str, offer: &Offer) -> Result<()> {
        self.write(|tx, clock| placement::record_offer(tx, clock, run, runner, offer))
    }

    fn forget_offer(&self, run: RunId, runner: &str) -> Result<()> {
        self.write(|tx, _| placement::forget_offer(tx, run, runner))
    }

    fn runner_offers(&self, run: RunId) -> Result<Vec<RunnerOffer>> {
        self.read(|conn| placement::offers(conn, run))
    }

    fn claim_of(&self, id: BriefId) -> Result<Option<Claim>> {
        self.read(|conn| briefs::claim_of(conn, id))
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
        self.write(|tx, clock| batch::apply(tx, clock, &batch))
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
        self.write(|tx, clock| gates::open(tx, clock, gate))
    }

    fn open_gate_holding(&self, fence: &Fence, gate: NewGate) -> Result<Gate> {
        self.write(|tx, clock| {
            briefs::check_fence(tx, fence)?;
            gates::open(tx, clock, gate)
        })
    }

    fn get_gate(&self, id: GateId) -> Result<Gate> {
        self.read(|conn| gates::get(conn, id))
    }

    fn resolve_gate(&self, typed: &str) -> Result<GateId> {
        self.read(|conn| typed_id::resolve(conn, "gates", "gate", typed))
            .map(GateId)
    }

    fn pending_gates(&self, run: Option<RunId>) -> Result<Vec<Gate>> {
        self.read(|conn| gates::pending(conn, run))
    }

    fn list_gates(&self, run: RunId) -> Result<Vec<Gate>> {
        self.read(|conn| gates::list(conn, run))
    }

    fn list_gates_of_kind(&self, run: RunId, kind: GateKind) -> Result<Vec<Gate>> {
        self.read(|conn| gates::list_of_kind(conn, run, kind))
    }

    fn decide_gate(&self, id: GateId, decision: GateDecision) -> Result<Gate> {
        self.write(|tx, clock| gates::decide(tx, clock, id, &decision))
    }

    fn decide_pending_gate(&self, run: RunId, decision: GateDecision) -> Result<Gate> {
        self.write(|tx, clock| gates::decide_oldest_pending(tx, clock, run, &decision))
    }

    fn put_artifact(&self, artifact: NewArtifact) -> Result<ArtifactMeta> {
        self.write(|tx, clock| artifacts::put(tx, clock, artifact))
    }

    fn get_artifact(&self, id: ArtifactId) -> Result<Artifact> {
        self.read(|conn| artifacts::get(conn, id))
    }

    fn latest_artifact(&self, run: RunId, name: &str) -> Result<Option<Artifact>> {
        self.read(|conn| artifacts::latest(conn, run, name))
    }

    fn list_artifacts(&self, run: RunId, brief: Option<BriefId>) -> Result<Vec<ArtifactMeta>> {
        self.read(|conn| artifacts::list(conn, run, brief))
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;

    use super::*;
    use crate::conformance::{new_run, sample_brief};

    /// How often the cached statement for `sql` was re-prepared on `store`'s connection.
    fn reprepared(store: &SqliteBlackboard, sql: &str) -> i32 {
        let conn = store.conn.lock().unwrap();
        let stmt = conn.prepare_cached(sql).unwrap();
        stmt.get_status(StatementStatus::RePrepare)
    }

    #[test]
    fn cached_reads_are_not_re_prepared_for_new_values() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteBlackboard::open(dir.path().join("blackboard.db")).unwrap();
        let run = new_run(&store);
        let parents: Vec<Brief> = (0..3)
            .map(|i| sample_brief(run, &format!("parent {i}")))
            .collect();
        store.insert_briefs(&parents).unwrap();
        for (i, parent) in parents.iter().cycle().take(12).enumerate() {
            let mut child = sample_brief(run, &format!("child {i}"));
            child.parent = Some(parent.id);
            store.insert_brief(&child).unwrap();
            assert!(!store.list_children(parent.id).unwrap().is_empty());
            assert!(store.last_seq(Some(run)).unwrap() > 0);
        }
        assert_eq!(reprepared(&store, &briefs::children_sql()), 0);
        assert_eq!(reprepared(&store, events::LAST_SEQ_OF_RUN), 0);
    }
}
