//! The one error type every [`Blackboard`](crate::Blackboard) operation returns. Each variant says what went
//! wrong in words a user can act on; the CLI maps them to hints and exit codes.

use std::path::PathBuf;

use agency_core::{GateId, GateStatus, RunId};

/// A boxed source error from a backend (SQLite or PostgreSQL).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The result of a blackboard operation.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Why a blackboard operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No record with this id (or part of one).
    #[error("no {what} with id `{id}`")]
    NotFound {
        /// What was looked for: `run`, `brief`, `gate`, `artifact`, ...
        what: &'static str,
        /// The id, or part of one, as given.
        id: String,
    },
    /// Part of an id, as typed, matches more than one record.
    #[error(
        "{what} id `{typed}` is ambiguous: it matches {}{}; type more characters",
        candidates.join(", "),
        if *total > candidates.len() { format!(" and {} more", total - candidates.len()) } else { String::new() }
    )]
    AmbiguousId {
        /// What was looked for.
        what: &'static str,
        /// What was typed.
        typed: String,
        /// Some of the matching ids (full form), oldest first.
        candidates: Vec<String>,
        /// How many ids match in all.
        total: usize,
    },
    /// What was given as an id is not hex digits and dashes.
    #[error("`{input}` is not a {what} id: expected hex digits (dashes are ignored), like `0193a1b2`")]
    InvalidId {
        /// What was looked for.
        what: &'static str,
        /// The input as given.
        input: String,
    },
    /// A gate was decided already; deciding it again is refused.
    #[error(
        "gate {} was already {} by {}; there is nothing left to decide",
        gate.short(), status.as_str(), decided_by.as_deref().unwrap_or("someone")
    )]
    GateAlreadyDecided {
        /// The gate.
        gate: GateId,
        /// Its current status.
        status: GateStatus,
        /// Who decided it.
        decided_by: Option<String>,
    },
    /// A run has no pending gate to decide.
    #[error("run {} has no pending gate; nothing is waiting for a decision", run.short())]
    NoPendingGate {
        /// The run.
        run: RunId,
    },
    /// A compare-and-set failed: the record moved on since the caller read it.
    #[error(
        "{what} {id} is `{found}`, expected `{expected}`: it changed since it was read (another process?); \
         re-read it and decide again"
    )]
    Conflict {
        /// What kind of record: `brief status`, `teachback`, `run status`.
        what: &'static str,
        /// Its id.
        id: String,
        /// The value the caller expected.
        expected: String,
        /// The value found.
        found: String,
    },
    /// A claim holder's write for its brief was refused because the claim it holds is gone: its lease ran
    /// out and another runner (or this one, anew) took the brief. Nothing of the write was made.
    #[error(
        "brief {brief} is no longer claimed by {holder} in claim generation {generation} (found: {found}); \
         the claim was taken back, so nothing was written for it"
    )]
    ClaimLost {
        /// The brief.
        brief: String,
        /// Who believed it held the claim.
        holder: String,
        /// The generation of the claim it held.
        generation: i64,
        /// What the blackboard holds instead: the brief's status, holder and generation.
        found: String,
    },
    /// A record with this id already exists.
    #[error("{what} {id} already exists")]
    AlreadyExists {
        /// What kind of record.
        what: &'static str,
        /// Its id.
        id: String,
    },
    /// Another runner drives the run (see [`Blackboard::lock_driver`](crate::Blackboard::lock_driver)).
    #[error(
        "run {run} is already being driven{}: a run has one driver, and a second would take its claims \
         and start its agents again. Stop that runner first (then `agency run --resume`), or add agents \
         beside it with `agency worker`",
        holder.as_ref().map(|h| format!(" by {h}")).unwrap_or_default()
    )]
    Driven {
        /// The run.
        run: String,
        /// Who holds it, as it described itself, when known.
        holder: Option<String>,
    },
    /// The request itself is inconsistent (for example an event for another run than the record it changes).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// `open_read_only` found no database file.
    #[error("no blackboard at {}: is this an agency workspace? (check the path, or initialise it)", path.display())]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The database file could not be opened or created.
    #[error("cannot open the blackboard at {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: BoxError,
    },
    /// A PostgreSQL server could not be reached or refused the login.
    #[error("cannot connect to PostgreSQL at {target}: {source}; {hint}")]
    Connect {
        /// The server, user and database (`user@host:port/dbname`; never the password).
        target: String,
        /// What to try.
        hint: &'static str,
        /// Why.
        #[source]
        source: BoxError,
    },
    /// A PostgreSQL connection was lost (a server restart, a terminated session, a network outage) and
    /// could not be made again within the reconnect limit.
    #[error(
        "PostgreSQL at {target} stayed unreachable for {seconds:.1} s after the connection was lost ({lost}): \
         {source}; check that the server is running (`pg_isready`) and reachable from this host, then retry \
         (AGENCY_DB_RECONNECT_SECONDS sets how long to wait)"
    )]
    Unavailable {
        /// The server, user and database (`user@host:port/dbname`; never the password).
        target: String,
        /// How long reconnecting was tried, in seconds.
        seconds: f64,
        /// How the connection was lost.
        lost: String,
        /// The last attempt's failure.
        #[source]
        source: BoxError,
    },
    /// The connection to PostgreSQL was lost while a transaction was committing, and the server could not
    /// say afterwards whether it committed: it is not repeated blindly.
    #[error(
        "the connection to PostgreSQL at {target} was lost while committing ({cause}), and whether the write \
         was applied could not be told; re-read the record before deciding again"
    )]
    LostAtCommit {
        /// The server, user and database.
        target: String,
        /// How the connection was lost, in the server's words when it sent any.
        cause: String,
    },
    /// The database was written by a newer agency.
    #[error(
        "the blackboard has schema version {found}, newer than this agency understands ({supported}); \
         upgrade agency"
    )]
    SchemaTooNew {
        /// The version found in the database.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A read-only open found a database whose schema is older than this build's (or not there at all).
    #[error(
        "the blackboard has schema version {found}, but this agency reads version {supported}; run any \
         agency command that writes (it migrates the file), then retry"
    )]
    SchemaOutdated {
        /// The version found (0: not an agency blackboard yet).
        found: i64,
        /// The version this build reads.
        supported: i64,
    },
    /// A stored row cannot be read back.
    #[error("corrupt {what} {id} on the blackboard: {detail}")]
    Corrupt {
        /// What kind of record.
        what: &'static str,
        /// Its id (or `seq`).
        id: String,
        /// What was wrong.
        detail: String,
    },
    /// Another process held the write lock longer than the busy timeout.
    #[error(
        "the blackboard is busy: another process held its write lock for more than {seconds} s; retry, \
         or look for a stuck agency process"
    )]
    Busy {
        /// The busy timeout that elapsed.
        seconds: u64,
    },
    /// A write was refused: the handle was opened read-only, or SQLite could not write the file.
    #[error(
        "cannot write the blackboard{}: {cause}",
        path.as_ref().map(|p| format!(" at {}", p.display())).unwrap_or_default()
    )]
    ReadOnly {
        /// The database file, when known.
        path: Option<PathBuf>,
        /// Why it cannot be written, and what to check.
        cause: String,
    },
    /// The blackboard's filesystem (or the database server's disk) is full: the write was not made, and
    /// nothing it had acknowledged before is lost.
    #[error(
        "the blackboard{} cannot be written: its filesystem is full ({cause}). Nothing recorded before is \
         lost; free space there{}, then resume",
        path.as_ref().map(|p| format!(" at {}", p.display())).unwrap_or_default(),
        path.as_ref()
            .and_then(|p| p.parent())
            .map(|dir| format!(" (`df -h {}` shows it)", if dir.as_os_str().is_empty() { std::path::Path::new(".") } else { dir }.display()))
            .unwrap_or_default()
    )]
    DiskFull {
        /// The database file, when known (SQLite).
        path: Option<PathBuf>,
        /// The backend's own words.
        cause: String,
    },
    /// Any other backend failure.
    #[error("blackboard database error: {0}")]
    Database(#[source] BoxError),
}

impl StoreError {
    /// A `Corrupt` error for a record.
    pub(crate) fn corrupt(what: &'static str, id: impl Into<String>, detail: impl Into<String>) -> Self {
        StoreError::Corrupt {
            what,
            id: id.into(),
            detail: detail.into(),
        }
    }

    /// A `NotFound` error.
    pub(crate) fn not_found(what: &'static str, id: impl ToString) -> Self {
        StoreError::NotFound {
            what,
            id: id.to_string(),
        }
    }
}
