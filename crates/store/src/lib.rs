//! `agency-store` is the blackboard: the one place where runs, briefs, events, gates and artifacts live.
//! The runner, the CLI, the hook and the dashboard all read and write it through the [`Blackboard`] trait, so
//! a crashed run resumes from rows and events alone and every front end sees the same state.
//!
//! [`SqliteBlackboard`] is the embedded backend (`.agency/agency.db`, WAL, several processes may share one
//! file). [`PostgresBlackboard`] keeps the same records in a PostgreSQL schema, so workers on several
//! machines can share runs. Both pass the same [`conformance`] suite; [`open_url`] picks one from a string.
//!
//! # Events and state changes
//!
//! Every state change is written in the same transaction as the event that describes it: either both are
//! on the blackboard or neither is. Which event, follows one rule:
//!
//! - an operation whose meaning is fixed builds its **canonical event itself**, stamped by the handle's
//!   [`Clock`]: `create_run` → `run_created`, `set_run_status` → `run_status`, `insert_brief` →
//!   `brief_created`, `claim_next_brief` → `brief_status`, `open_gate` → `gate_pending` (`gate_paused` for a
//!   pause), `decide_gate` → `gate_approved` / `gate_rejected` (`gate_resumed` when a pause is approved),
//!   `put_artifact` → `artifact`;
//! - an operation whose meaning only the caller knows **takes the event from the caller**:
//!   `update_brief_status` (is `running → failed` a `failed`, an `escalated`, a `signoff_rejected`?) and
//!   `set_teachback_state` (`teachback_submitted`, `teachback_approved`, `teachback_corrected`). The event
//!   must belong to the brief's run; its `brief` and `tier` are filled in when left empty.
//!
//! Several of these writes can be applied together, all or none, with [`Blackboard::apply`] (a
//! [`WriteBatch`]): each change writes the event its operation would, in the batch's order.
//!
//! # Secrets
//!
//! A front end that writes opens its backend wrapped in a [`RedactingBlackboard`]: every event payload,
//! artifact and brief text written through it has the runner's secrets and well-known token shapes
//! replaced first (`agency_core::redact`), so nothing read back from the blackboard holds one.
//!
//! `set_brief_workspace` and `renew_claim` record bookkeeping (branch and worktree paths, a claim's lease),
//! not a lifecycle change, and write no event. `reclaim_expired` writes `brief_status` for each brief it
//! takes back.

mod attached;
mod batch;
mod canon;
mod clock;
mod driver;
mod error;
mod fenced;
mod open;
pub mod postgres;
mod record;
mod redacting;
mod sessions;
pub mod sqlite;
pub mod walk;

#[cfg(feature = "conformance")]
pub mod conformance;

use agency_core::placement::{LabelNeed, Offer, RunnerOffer};
use agency_core::teachback::TeachbackState;
use agency_core::{
    Brief, BriefId, BriefStatus, Event, EventKind, Gate, GateDecision, GateId, GateKind, NewEvent, RunId,
    Tier,
};
use chrono::{DateTime, Utc};

pub use attached::{RunKind, runner_attached, unattached};
pub use batch::{Change, Fence, WriteBatch};
pub use clock::{Clock, SteppingClock, SystemClock};
pub use driver::DriverLease;
pub use error::{BoxError, Result, StoreError};
pub use fenced::FencedBlackboard;
pub use open::{is_postgres, open_url};
pub use postgres::PostgresBlackboard;
pub use record::{
    Artifact, ArtifactId, ArtifactMeta, BriefState, Claim, Claimed, NewArtifact, NewGate, NewRun, Run,
    RunStatus, UnknownRunStatus,
};
pub use redacting::RedactingBlackboard;
pub use sqlite::SqliteBlackboard;

/// How long a claim lasts unless renewed, when the claimer has no setting of its own (team.yaml's
/// `runner.claim_lease_seconds`): a worker that claimed a brief renews it ([`Blackboard::renew_claim`]) well
/// within its lease while it works; a claim not renewed in time is taken back by
/// [`Blackboard::reclaim_expired`], so a brief whose worker died (a lost machine) is not stuck `running`.
pub const DEFAULT_CLAIM_LEASE: chrono::Duration = chrono::Duration::minutes(10);

/// The blackboard's operations. Synchronous; a handle is shared between threads (`Send + Sync`) and several
/// handles (or processes) may work on one store at once. See the crate docs for which event each operation
/// writes.
pub trait Blackboard: Send + Sync + std::fmt::Debug {
    // --- runs -------------------------------------------------------------------------------------------

    /// Creates a run in status `planning` and writes `run_created` (payload: `goal`, `repo`, `base_rev`).
    /// Fails with `AlreadyExists` if the id is taken.
    fn create_run(&self, run: NewRun) -> Result<Run>;

    /// One run.
    fn get_run(&self, id: RunId) -> Result<Run>;

    /// One run's status, without reading the rest of it (a runner asks on every turn of its loop).
    fn run_status(&self, id: RunId) -> Result<RunStatus>;

    /// Every run, newest first.
    fn list_runs(&self) -> Result<Vec<Run>>;

    /// The run whose id is `typed`, or starts or ends with it (hex, any case, dashes ignored; the short form
    /// is the end). Unknown, ambiguous and non-hex input are distinct errors (`NotFound`, `AmbiguousId`
    /// naming candidates, `InvalidId`).
    fn resolve_run(&self, typed: &str) -> Result<RunId>;

    /// Moves a run to `to` and writes `run_status` (payload: `from`, `to`). With `expected`, this is a
    /// compare-and-set: it fails with `Conflict` (writing nothing) unless the run is in that status.
    fn set_run_status(&self, id: RunId, expected: Option<RunStatus>, to: RunStatus) -> Result<Run>;

    /// Makes this process `run`'s one driver for as long as the returned lease is held. Fails with
    /// [`StoreError::Driven`] (naming the holder when it can) while another lease on `run` is held, through
    /// any handle of any process. The lease ends when dropped or when its holder dies, however it dies (a
    /// file lock, a database session's advisory lock): a crashed driver never leaves its run locked.
    fn lock_driver(&self, run: RunId, holder: &str) -> Result<DriverLease>;

    // --- events -----------------------------------------------------------------------------------------

    /// Appends one event and returns it with its `seq`. The run must exist.
    fn append_event(&self, event: NewEvent) -> Result<Event>;

    /// [`Blackboard::append_event`] by a claim holder: in the same transaction, checks `fence` (that the
    /// claim still holds, as [`Change::HoldsClaim`] does, or that nobody claimed the brief since its holder
    /// gave it back, as [`Change::GaveUpClaim`] does) and fails with [`StoreError::ClaimLost`], writing
    /// nothing, when it does not hold.
    fn append_event_holding(&self, fence: &Fence, event: NewEvent) -> Result<Event>;

    /// Appends a log line nobody has to see at once (an agent's tool call or remark): a backend may hold it
    /// back and write it first thing in its next write, or at [`Blackboard::flush_events`], whichever
    /// comes first, so events keep the order they were made in and a line costs no commit of its own. One
    /// held back is not recorded yet: a process that dies first loses it (and one whose run is gone by then
    /// is dropped). Nothing a run's progress or its budget depends on may go this way. The default writes
    /// it at once.
    fn append_event_soon(&self, event: NewEvent) -> Result<()> {
        self.append_event(event).map(drop)
    }

    /// [`Blackboard::apply`] for a record nothing waits on and that is followed at once by a write of the
    /// same step (a sign-off's outcome, then its agent's end): held back like
    /// [`Blackboard::append_event_soon`]'s lines, all or nothing, so the two cost one commit. Until then it
    /// is not recorded: a process that dies first loses it, as if it had died a moment earlier. The default
    /// writes it at once.
    fn apply_soon(&self, batch: WriteBatch) -> Result<()> {
        self.apply(batch)
    }

    /// Writes what [`Blackboard::append_event_soon`] and [`Blackboard::apply_soon`] held back, if anything;
    /// a runner calls it on every turn of its loop, so a write is held back for at most that long.
    fn flush_events(&self) -> Result<()> {
        Ok(())
    }

    /// Events with `seq > after_seq`, oldest first, at most `limit`; of one run, or of all runs with `None`.
    /// Page by passing the last `seq` seen.
    fn events_after(&self, run: Option<RunId>, after_seq: i64, limit: usize) -> Result<Vec<Event>>;

    /// A run's events of the given kinds with `seq > after_seq`, oldest first, at most `limit`: what a reader
    /// after a few kinds pages through without decoding every other event of the run.
    fn events_of_kinds_after(
        &self,
        run: RunId,
        kinds: &[EventKind],
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<Event>>;

    /// The highest `seq` (of one run, or overall); 0 when there are none.
    fn last_seq(&self, run: Option<RunId>) -> Result<i64>;

    /// The briefs a run's events with `seq > after_seq` name, each once, in no particular order: which
    /// briefs changed since a `seq` without reading (and decoding) every event since.
    fn briefs_in_events_after(&self, run: RunId, after_seq: i64) -> Result<Vec<BriefId>>;

    /// The workstreams of the briefs a run's events with `seq > after_seq` name, each once, in no
    /// particular order: where a run changed since a `seq`, in one read rather than a brief read per brief.
    fn workstreams_in_events_after(&self, run: RunId, after_seq: i64) -> Result<Vec<String>>;

    // --- briefs -----------------------------------------------------------------------------------------

    /// Writes a brief exactly as given and `brief_created` (payload: `title`, `tier`, `workstream`,
    /// `parent`, `status`). Its run, parent and every `depends_on` brief must already exist in the same run
    /// (so dependency cycles cannot be written).
    fn insert_brief(&self, brief: &Brief) -> Result<()>;

    /// Writes several briefs (and their `brief_created` events) in one transaction: all or none. A brief may
    /// depend on one earlier in the batch. For a tier's whole output, so a crash never leaves half a split.
    fn insert_briefs(&self, briefs: &[Brief]) -> Result<()>;

    /// One brief.
    fn get_brief(&self, id: BriefId) -> Result<Brief>;

    /// One brief's status, without reading the rest of it (for a status asked again and again).
    fn brief_status(&self, id: BriefId) -> Result<BriefStatus>;

    /// The brief whose id is `typed`, or starts or ends with it; errors as [`Blackboard::resolve_run`].
    fn resolve_brief(&self, typed: &str) -> Result<BriefId>;

    /// A run's briefs, oldest first.
    fn list_briefs(&self, run: RunId) -> Result<Vec<Brief>>;

    /// A run's briefs in `status`, oldest first. Indexed: the runner's passes read what is `verifying`, not
    /// the whole run.
    fn list_briefs_by_status(&self, run: RunId, status: BriefStatus) -> Result<Vec<Brief>>;

    /// The briefs whose parent is `parent`, oldest first (every attempt). Indexed.
    fn list_children(&self, parent: BriefId) -> Result<Vec<Brief>>;

    /// [`Blackboard::list_children`] without the briefs' contents: where each child stands. Indexed, and
    /// cheap to read again and again (a squad of 50 on every pass in which one of its verifiers finished).
    fn list_children_states(&self, parent: BriefId) -> Result<Vec<BriefState>>;

    /// The briefs of `run` in `workstream`, oldest first (every attempt, every tier). Indexed: a workstream's
    /// tree is read in one go, however many workstreams the run has.
    fn list_workstream_briefs(&self, run: RunId, workstream: &str) -> Result<Vec<Brief>>;

    /// How many briefs of `run` in `workstream` (of `tier`, when given) have one of `statuses` (any status,
    /// when empty). Indexed: answers "is anything of this workstream still open" without reading it.
    fn count_briefs(
        &self,
        run: RunId,
        workstream: &str,
        tier: Option<Tier>,
        statuses: &[BriefStatus],
    ) -> Result<u64>;

    /// How many of `parent`'s briefs in `workstream` (every attempt; of `tier`, when given) have one of
    /// `statuses` (any status, when empty). Indexed: answers "is any task of this squad still open" without
    /// reading the squad.
    fn count_children(
        &self,
        parent: BriefId,
        workstream: &str,
        tier: Option<Tier>,
        statuses: &[BriefStatus],
    ) -> Result<u64>;

    /// Compare-and-set of a brief's status: moves it from `from` to `to` and appends the caller's `event`, or
    /// fails with `Conflict` and writes nothing if the status is no longer `from`. Moving back to `pending`
    /// clears `claimed_by` so the brief can be claimed again.
    fn update_brief_status(
        &self,
        id: BriefId,
        from: BriefStatus,
        to: BriefStatus,
        event: NewEvent,
    ) -> Result<Brief>;

    /// Compare-and-set of a brief's teachback state, with the caller's `event`; `Conflict` as above.
    fn set_teachback_state(
        &self,
        id: BriefId,
        expected: TeachbackState,
        new: TeachbackState,
        event: NewEvent,
    ) -> Result<Brief>;

    /// Records the brief's git branch and worktree path (`None` clears). No event: this is bookkeeping.
    fn set_brief_workspace(&self, id: BriefId, branch: Option<&str>, worktree: Option<&str>)
    -> Result<Brief>;

    /// Atomically claims the oldest `pending` brief (of one run, or of any run) whose `depends_on` are all
    /// `done`: moves it to `running` with `claimed_by = claimer`, a lease of `lease` from now (the handle's
    /// clock), and writes `brief_status` (payload: `from`, `to`, `claimed_by`). Two claimers never get the
    /// same brief. `None` when nothing is claimable. Gates, run status and budgets are the caller's to check.
    fn claim_next_brief(
        &self,
        run: Option<RunId>,
        claimer: &str,
        lease: chrono::Duration,
    ) -> Result<Option<Brief>>;

    /// Claims up to `limit` briefs in one transaction, as that many calls of
    /// [`claim_next_brief`](Blackboard::claim_next_brief) would one after another (oldest claimable first,
    /// each with its `brief_status`), and returns them in that order; empty when nothing is claimable or
    /// `limit` is 0. For a runner filling several free places at once. Each comes with its [`Claim`] (the
    /// brief's next claim generation), which the holder's writes for the brief name ([`FencedBlackboard`]).
    fn claim_briefs(
        &self,
        run: Option<RunId>,
        claimer: &str,
        lease: chrono::Duration,
        limit: usize,
    ) -> Result<Vec<Claimed>> {
        self.claim_offered(run, claimer, lease, limit, &Offer::default())
    }

    /// The brief's current claim — its holder and generation — or `None` when nobody holds it. `NotFound`
    /// for an unknown brief. A holder compares it with its own [`Claim`] to learn it lost the claim before
    /// it writes (the writes themselves are fenced regardless).
    fn claim_of(&self, id: BriefId) -> Result<Option<Claim>>;

    /// Extends the claim on a `running` brief held by `claimer` to `lease` from now (the handle's clock); a
    /// worker calls it periodically while it works. `Conflict` (nothing written) when the brief is no
    /// longer `running` or is claimed by someone else, for example after it was reclaimed. No event: this
    /// is bookkeeping.
    fn renew_claim(&self, id: BriefId, claimer: &str, lease: chrono::Duration) -> Result<Brief>;

    /// Moves every `running` brief (of one run, or of any run) whose claim lease ended before `now` back to
    /// `pending` (clearing `claimed_by`, so it can be claimed again) and writes `brief_status` for each
    /// (payload: `from`, `to`, `claimed_by` (the claimer that lost it), `reason: "lease_expired"`). Returns
    /// them, oldest first. Two reclaimers never both take the same brief. A brief moved to `running` other
    /// than by a claim has no lease and is never reclaimed.
    fn reclaim_expired(&self, run: Option<RunId>, now: DateTime<Utc>) -> Result<Vec<Brief>>;

    // --- placement --------------------------------------------------------------------------------------

    /// As [`claim_briefs`](Blackboard::claim_briefs), taking only briefs `offer` may take: of an offered
    /// tier, and whose workstream needs no label the offer lacks ([`set_label_needs`](Blackboard::set_label_needs);
    /// the rule is `agency_flow::placement`). `claim_briefs` is this with the default offer (every tier, no
    /// labels): a claimer that offers nothing never takes a brief that needs a label.
    fn claim_offered(
        &self,
        run: Option<RunId>,
        claimer: &str,
        lease: chrono::Duration,
        limit: usize,
        offer: &Offer,
    ) -> Result<Vec<Claimed>>;

    /// Replaces the labels `run`'s workstreams need of the runner that takes their briefs (the workstream
    /// `*` stands for every workstream). `Invalid` for a label that is not 1 to 64 of letters, digits, `-`,
    /// `_`, `.`; `NotFound` for an unknown run.
    fn set_label_needs(&self, run: RunId, needs: &[LabelNeed]) -> Result<()>;

    /// The labels `run`'s workstreams need, by workstream and label.
    fn label_needs(&self, run: RunId) -> Result<Vec<LabelNeed>>;

    /// Records (or refreshes, with the handle's clock as `seen_at`) what `runner` offers on `run`.
    fn record_offer(&self, run: RunId, runner: &str, offer: &Offer) -> Result<()>;

    /// Forgets what `runner` offers on `run` (it stopped); nothing when it had not recorded an offer.
    fn forget_offer(&self, run: RunId, runner: &str) -> Result<()>;

    /// Every offer recorded on `run`, live or not (`seen_at` says when each runner last said so), by runner.
    fn runner_offers(&self, run: RunId) -> Result<Vec<RunnerOffer>>;

    // --- batches ----------------------------------------------------------------------------------------

    /// Applies every change of `batch` in one transaction, in order: all of them, or — when one fails (a
    /// status compare-and-set that does not match, a missing brief or run, an artifact id taken) — none,
    /// with that change's error. An empty batch writes nothing.
    fn apply(&self, batch: WriteBatch) -> Result<()>;

    // --- session bindings -------------------------------------------------------------------------------

    /// Binds a plain client session (Claude Code with no runner) — or, with `agent`, one sub-agent in it —
    /// to a brief, replacing an earlier binding of the same session and agent, and writes `log` on the
    /// brief's run (payload: `level`, `message`, `session`, `agent`). `NotFound` for an unknown brief.
    fn bind_session(&self, session: &str, agent: Option<&str>, brief: BriefId) -> Result<()>;

    /// The brief bound to `agent` in `session`, else to the session itself; `None` when neither is bound.
    fn session_brief(&self, session: &str, agent: Option<&str>) -> Result<Option<BriefId>>;

    /// Records that the client's task `task` in `session` (Claude Code's TaskCreate id) is the brief `brief`,
    /// replacing an earlier record of the same task, and writes `log` on the brief's run (payload: `level`,
    /// `message`, `session`, `task`). `NotFound` for an unknown brief.
    fn bind_task(&self, session: &str, task: &str, brief: BriefId) -> Result<()>;

    /// The brief of `task` in `session`, if the task was recorded.
    fn task_brief(&self, session: &str, task: &str) -> Result<Option<BriefId>>;

    /// Every recorded task of `session` with its brief, oldest first.
    fn session_tasks(&self, session: &str) -> Result<Vec<(String, BriefId)>>;

    // --- gates ------------------------------------------------------------------------------------------

    /// Opens a pending gate and writes `gate_pending`, or `gate_paused` for [`GateKind::Pause`]
    /// (payload: `gate`, `kind`, `summary`). Changing the run's status is the caller's decision.
    ///
    /// [`GateKind::Pause`]: agency_core::GateKind::Pause
    fn open_gate(&self, gate: NewGate) -> Result<Gate>;

    /// [`Blackboard::open_gate`] by a claim holder for its brief: `fence` is checked in the same
    /// transaction (see [`Blackboard::append_event_holding`]), and nothing is opened when it does not hold.
    fn open_gate_holding(&self, fence: &Fence, gate: NewGate) -> Result<Gate>;

    /// One gate.
    fn get_gate(&self, id: GateId) -> Result<Gate>;

    /// The gate whose id is `typed`, or starts or ends with it; errors as [`Blackboard::resolve_run`].
    fn resolve_gate(&self, typed: &str) -> Result<GateId>;

    /// Pending gates (of one run, or of all runs), oldest first.
    fn pending_gates(&self, run: Option<RunId>) -> Result<Vec<Gate>>;

    /// Every gate of a run, oldest first.
    fn list_gates(&self, run: RunId) -> Result<Vec<Gate>>;

    /// A run's gates of one kind, oldest first: what a runner asks on every pass (are budget or escalation
    /// gates decided?), without reading the others — the plan's gate carries the whole plan.
    fn list_gates_of_kind(&self, run: RunId, kind: GateKind) -> Result<Vec<Gate>>;

    /// Decides a pending gate and writes `gate_approved` / `gate_rejected`, or `gate_resumed` when a pause is
    /// approved (payload: `gate`, `kind`, `by`, `note` or `reason`). A gate that is no longer pending is
    /// refused with `GateAlreadyDecided` and nothing is written.
    fn decide_gate(&self, id: GateId, decision: GateDecision) -> Result<Gate>;

    /// Decides the run's pending gate, for `agency approve <run>`. When several are pending the **oldest** is
    /// decided (gates are answered in the order they were asked); `NoPendingGate` when there is none.
    fn decide_pending_gate(&self, run: RunId, decision: GateDecision) -> Result<Gate>;

    // --- artifacts --------------------------------------------------------------------------------------

    /// Stores an artifact and writes `artifact` (payload: `artifact`, `name`, `content_type`, `size`).
    /// Names need not be unique: a later artifact of the same name supersedes the earlier for readers.
    fn put_artifact(&self, artifact: NewArtifact) -> Result<ArtifactMeta>;

    /// One artifact with its content.
    fn get_artifact(&self, id: ArtifactId) -> Result<Artifact>;

    /// The newest artifact of a run with this name (how briefs' `inputs` are read), if any.
    fn latest_artifact(&self, run: RunId, name: &str) -> Result<Option<Artifact>>;

    /// A run's artifacts (only those of `brief` when given), oldest first, without content.
    fn list_artifacts(&self, run: RunId, brief: Option<BriefId>) -> Result<Vec<ArtifactMeta>>;
}
