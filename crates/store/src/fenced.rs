//! Fenced writes: the blackboard as one claim holder sees it. A runner hands each agent (and the sign-off,
//! and the recording of its outcome) a [`FencedBlackboard`] bound to the agent's [`Claim`]; every write
//! that handle makes for the claimed brief checks, in the same transaction, that the claim still holds
//! ([`Change::HoldsClaim`]). A runner suspended past its lease (SIGSTOP, a frozen VM) whose brief was
//! taken back and claimed again — by another runner, or by itself anew — wakes to find each such write
//! refused with [`StoreError::ClaimLost`](crate::StoreError::ClaimLost) and nothing of it written: no
//! second `signoff_accepted`, no stale judge artifact, no status move over the new holder's.
//!
//! What is fenced, for the claimed brief: events (`append_event`, `append_event_soon`), batches with any
//! change of it (its moves, teachback, workspace, artifacts, events), `update_brief_status`,
//! `set_teachback_state`, `set_brief_workspace`, `put_artifact` and `renew_claim`. Writes for other
//! briefs and the run pass through unchanged, as do reads — and `usage` events, whoever writes them: the
//! money was spent, and budgets are rebuilt from these records.
//!
//! `open_gate` for the brief checks the claim in the same transaction as it opens the gate
//! ([`Blackboard::open_gate_holding`]).
//!
//! Once the holder itself moves the brief back to `pending` (an outage, a budget refusal), its claim is
//! over by its own hand: its later writes for the brief (its last words on it, a log line) are made only
//! while nobody has claimed the brief since ([`Change::GaveUpClaim`], checked in the same transaction), so
//! none of them lands on the next holder's work.
//!
//! The fenced operations that return a record (`update_brief_status`, `set_teachback_state`,
//! `set_brief_workspace`, `put_artifact`) write through [`Blackboard::apply`] and read the record back
//! after their commit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agency_core::teachback::TeachbackState;
use agency_core::{
    Brief, BriefId, BriefStatus, Event, EventKind, Gate, GateDecision, GateId, GateKind, NewEvent, RunId,
    Tier,
};
use chrono::{DateTime, Utc};

use crate::Blackboard;
use crate::batch::{Change, Fence, WriteBatch};
use crate::driver::DriverLease;
use crate::error::Result;
use crate::record::{
    Artifact, ArtifactId, ArtifactMeta, BriefState, Claim, Claimed, NewArtifact, NewGate, NewRun, Run,
    RunStatus,
};

/// A blackboard whose writes for one claimed brief are fenced by the claim (see the module docs).
#[derive(Debug)]
pub struct FencedBlackboard {
    inner: Arc<dyn Blackboard>,
    claim: Claim,
    /// The holder moved its brief back to `pending` itself: the claim is over, and its writes are fenced by
    /// nobody having claimed the brief since.
    given_up: AtomicBool,
}

impl FencedBlackboard {
    /// `inner`, with the writes for `claim`'s brief fenced by `claim`.
    pub fn new(inner: Arc<dyn Blackboard>, claim: Claim) -> Self {
        FencedBlackboard {
            inner,
            claim,
            given_up: AtomicBool::new(false),
        }
    }

    /// The claim this handle's writes are fenced by.
    pub fn claim(&self) -> &Claim {
        &self.claim
    }

    /// Whether a write for `brief` is to be fenced.
    fn fences(&self, brief: Option<BriefId>) -> bool {
        brief == Some(self.claim.brief)
    }

    /// What this handle's writes for its brief are fenced by now.
    fn fence(&self) -> Fence {
        if self.given_up.load(Ordering::SeqCst) {
            Fence::GaveUp(self.claim.clone())
        } else {
            Fence::Holds(self.claim.clone())
        }
    }

    /// Whether `event` is to be fenced now: one for the claimed brief, other than spending.
    fn fences_event(&self, event: &NewEvent) -> bool {
        self.fences(event.brief) && !is_spending(event)
    }

    /// Whether `batch` changes the claimed brief (or writes for it).
    fn touches(&self, batch: &WriteBatch) -> bool {
        let mine = Some(self.claim.brief);
        batch.changes().iter().any(|change| match change {
            Change::InsertBrief(_) | Change::HoldsClaim(_) | Change::GaveUpClaim(_) => false,
            Change::MoveBrief { id, event, .. } | Change::MoveTeachback { id, event, .. } => {
                Some(*id) == mine || event.brief == mine
            }
            Change::SetWorkspace { id, .. } => Some(*id) == mine,
            Change::PutArtifact(artifact) => artifact.brief == mine,
            Change::AppendEvent(event) => event.brief == mine && !is_spending(event),
        })
    }

    /// Whether `batch` moves the claimed brief back to `pending`: the holder giving its claim up.
    fn gives_up(&self, batch: &WriteBatch) -> bool {
        batch.changes().iter().any(|change| {
            matches!(change, Change::MoveBrief { id, to: BriefStatus::Pending, .. } if *id == self.claim.brief)
        })
    }

    /// `batch` with the fence's check first, when it touches the claimed brief.
    fn fenced(&self, batch: WriteBatch) -> WriteBatch {
        if !self.touches(&batch) {
            return batch;
        }
        let mut fenced = WriteBatch::new();
        fenced.push(self.fence().change());
        for change in batch.into_changes() {
            fenced.push(change);
        }
        fenced
    }

    /// Writes `batch` at once, fenced; notes a give-up once it is written.
    fn write(&self, batch: WriteBatch) -> Result<()> {
        let gives_up = self.gives_up(&batch);
        self.inner.apply(self.fenced(batch))?;
        if gives_up {
            self.given_up.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Fails with `ClaimLost` unless the fence holds now (a check of its own, not in the caller's write).
    fn check_now(&self) -> Result<()> {
        let mut check = WriteBatch::new();
        check.push(self.fence().change());
        self.inner.apply(check)
    }
}

impl Blackboard for FencedBlackboard {
    fn create_run(&self, run: NewRun) -> Result<Run> {
        self.inner.create_run(run)
    }

    fn get_run(&self, id: RunId) -> Result<Run> {
        self.inner.get_run(id)
    }

    fn run_status(&self, id: RunId) -> Result<RunStatus> {
        self.inner.run_status(id)
    }

    fn list_runs(&self) -> Result<Vec<Run>> {
        self.inner.list_runs()
    }

    fn resolve_run(&self, typed: &str) -> Result<RunId> {
        self.inner.resolve_run(typed)
    }

    fn set_run_status(&self, id: RunId, expected: Option<RunStatus>, to: RunStatus) -> Result<Run> {
        self.inner.set_run_status(id, expected, to)
    }

    fn lock_driver(&self, run: RunId, holder: &str) -> Result<DriverLease> {
        self.inner.lock_driver(run, holder)
    }

    fn append_event(&self, event: NewEvent) -> Result<Event> {
        if self.fences_event(&event) {
            self.inner.append_event_holding(&self.fence(), event)
        } else {
            self.inner.append_event(event)
        }
    }

    fn append_event_holding(&self, fence: &Fence, event: NewEvent) -> Result<Event> {
        self.inner.append_event_holding(fence, event)
    }

    fn append_event_soon(&self, event: NewEvent) -> Result<()> {
        if self.fences_event(&event) {
            let mut batch = WriteBatch::new();
            batch.append_event(event);
            self.apply_soon(batch)
        } else {
            self.inner.append_event_soon(event)
        }
    }

    fn apply_soon(&self, batch: WriteBatch) -> Result<()> {
        // A held batch whose check fails when it is written is dropped whole (see `apply_soon`).
        self.inner.apply_soon(self.fenced(batch))
    }

    fn flush_events(&self) -> Result<()> {
        self.inner.flush_events()
    }

    fn events_after(&self, run: Option<RunId>, after_seq: i64, limit: usize) -> Result<Vec<Event>> {
        self.inner.events_after(run, after_seq, limit)
    }

    fn events_of_kinds_after(
        &self,
        run: RunId,
        kinds: &[EventKind],
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<Event>> {
        self.inner.events_of_kinds_after(run, kinds, after_seq, limit)
    }

    fn last_seq(&self, run: Option<RunId>) -> Result<i64> {
        self.inner.last_seq(run)
    }

    fn briefs_in_events_after(&self, run: RunId, after_seq: i64) -> Result<Vec<BriefId>> {
        self.inner.briefs_in_events_after(run, after_seq)
    }

    fn workstreams_in_events_after(&self, run: RunId, after_seq: i64) -> Result<Vec<String>> {
        self.inner.workstreams_in_events_after(run, after_seq)
    }

    fn insert_brief(&self, brief: &Brief) -> Result<()> {
        self.inner.insert_brief(brief)
    }

    fn insert_briefs(&self, briefs: &[Brief]) -> Result<()> {
        self.inner.insert_briefs(briefs)
    }

    fn get_brief(&self, id: BriefId) -> Result<Brief> {
        self.inner.get_brief(id)
    }

    fn brief_status(&self, id: BriefId) -> Result<BriefStatus> {
        self.inner.brief_status(id)
    }

    fn resolve_brief(&self, typed: &str) -> Result<BriefId> {
        self.inner.resolve_brief(typed)
    }

    fn list_briefs(&self, run: RunId) -> Result<Vec<Brief>> {
        self.inner.list_briefs(run)
    }

    fn list_briefs_by_status(&self, run: RunId, status: BriefStatus) -> Result<Vec<Brief>> {
        self.inner.list_briefs_by_status(run, status)
    }

    fn list_children(&self, parent: BriefId) -> Result<Vec<Brief>> {
        self.inner.list_children(parent)
    }

    fn list_children_states(&self, parent: BriefId) -> Result<Vec<BriefState>> {
        self.inner.list_children_states(parent)
    }

    fn list_workstream_briefs(&self, run: RunId, workstream: &str) -> Result<Vec<Brief>> {
        self.inner.list_workstream_briefs(run, workstream)
    }

    fn count_briefs(
        &self,
        run: RunId,
        workstream: &str,
        tier: Option<Tier>,
        statuses: &[BriefStatus],
    ) -> Result<u64> {
        self.inner.count_briefs(run, workstream, tier, statuses)
    }

    fn count_children(
        &self,
        parent: BriefId,
        workstream: &str,
        tier: Option<Tier>,
        statuses: &[BriefStatus],
    ) -> Result<u64> {
        self.inner.count_children(parent, workstream, tier, statuses)
    }

    fn update_brief_status(
        &self,
        id: BriefId,
        from: BriefStatus,
        to: BriefStatus,
        event: NewEvent,
    ) -> Result<Brief> {
        if !self.fences(Some(id)) {
            return self.inner.update_brief_status(id, from, to, event);
        }
        let mut batch = WriteBatch::new();
        batch.move_brief(id, from, to, event);
        self.write(batch)?;
        self.inner.get_brief(id)
    }

    fn set_teachback_state(
        &self,
        id: BriefId,
        expected: TeachbackState,
        new: TeachbackState,
        event: NewEvent,
    ) -> Result<Brief> {
        if !self.fences(Some(id)) {
            return self.inner.set_teachback_state(id, expected, new, event);
        }
        let mut batch = WriteBatch::new();
        batch.move_teachback(id, expected, new, event);
        self.write(batch)?;
        self.inner.get_brief(id)
    }

    fn set_brief_workspace(
        &self,
        id: BriefId,
        branch: Option<&str>,
        worktree: Option<&str>,
    ) -> Result<Brief> {
        if !self.fences(Some(id)) {
            return self.inner.set_brief_workspace(id, branch, worktree);
        }
        let mut batch = WriteBatch::new();
        batch.set_workspace(id, branch.map(str::to_string), worktree.map(str::to_string));
        self.write(batch)?;
        self.inner.get_brief(id)
    }

    fn claim_next_brief(
        &self,
        run: Option<RunId>,
        claimer: &str,
        lease: chrono::Duration,
    ) -> Result<Option<Brief>> {
        self.inner.claim_next_brief(run, claimer, lease)
    }

    fn claim_offered(
        &self,
        run: Option<RunId>,
        claimer: &str,
        lease: chrono::Duration,
        limit: usize,
        offer: &agency_core::placement::Offer,
    ) -> Result<Vec<Claimed>> {
        self.inner.claim_offered(run, claimer, lease, limit, offer)
    }

    fn set_label_needs(&self, run: RunId, needs: &[agency_core::placement::LabelNeed]) -> Result<()> {
        self.inner.set_label_needs(run, needs)
    }

    fn label_needs(&self, run: RunId) -> Result<Vec<agency_core::placement::LabelNeed>> {
        self.inner.label_needs(run)
    }

    fn record_offer(&self, run: RunId, runner: &str, offer: &agency_core::placement::Offer) -> Result<()> {
        self.inner.record_offer(run, runner, offer)
    }

    fn forget_offer(&self, run: RunId, runner: &str) -> Result<()> {
        self.inner.forget_offer(run, runner)
    }

    fn runner_offers(&self, run: RunId) -> Result<Vec<agency_core::placement::RunnerOffer>> {
        self.inner.runner_offers(run)
    }

    fn claim_of(&self, id: BriefId) -> Result<Option<Claim>> {
        self.inner.claim_of(id)
    }

    /// Renews only the claim this handle holds: a claim taken back and given to the same holder anew is
    /// not this handle's to keep alive (`ClaimLost`). The check and the renewal are two transactions; one
    /// racing between them extends the newer claim of the same holder, which that holder renews anyway.
    fn renew_claim(&self, id: BriefId, claimer: &str, lease: chrono::Duration) -> Result<Brief> {
        if self.fences(Some(id)) {
            self.check_now()?;
        }
        self.inner.renew_claim(id, claimer, lease)
    }

    fn reclaim_expired(&self, run: Option<RunId>, now: DateTime<Utc>) -> Result<Vec<Brief>> {
        self.inner.reclaim_expired(run, now)
    }

    fn apply(&self, batch: WriteBatch) -> Result<()> {
        self.write(batch)
    }

    fn bind_session(&self, session: &str, agent: Option<&str>, brief: BriefId) -> Result<()> {
        self.inner.bind_session(session, agent, brief)
    }

    fn session_brief(&self, session: &str, agent: Option<&str>) -> Result<Option<BriefId>> {
        self.inner.session_brief(session, agent)
    }

    fn bind_task(&self, session: &str, task: &str, brief: BriefId) -> Result<()> {
        self.inner.bind_task(session, task, brief)
    }

    fn task_brief(&self, session: &str, task: &str) -> Result<Option<BriefId>> {
        self.inner.task_brief(session, task)
    }

    fn session_tasks(&self, session: &str) -> Result<Vec<(String, BriefId)>> {
        self.inner.session_tasks(session)
    }

    fn open_gate(&self, gate: NewGate) -> Result<Gate> {
        if self.fences(gate.brief) {
            return self.inner.open_gate_holding(&self.fence(), gate);
        }
        self.inner.open_gate(gate)
    }

    fn open_gate_holding(&self, fence: &Fence, gate: NewGate) -> Result<Gate> {
        self.inner.open_gate_holding(fence, gate)
    }

    fn get_gate(&self, id: GateId) -> Result<Gate> {
        self.inner.get_gate(id)
    }

    fn resolve_gate(&self, typed: &str) -> Result<GateId> {
        self.inner.resolve_gate(typed)
    }

    fn pending_gates(&self, run: Option<RunId>) -> Result<Vec<Gate>> {
        self.inner.pending_gates(run)
    }

    fn list_gates(&self, run: RunId) -> Result<Vec<Gate>> {
        self.inner.list_gates(run)
    }

    fn list_gates_of_kind(&self, run: RunId, kind: GateKind) -> Result<Vec<Gate>> {
        self.inner.list_gates_of_kind(run, kind)
    }

    fn decide_gate(&self, id: GateId, decision: GateDecision) -> Result<Gate> {
        self.inner.decide_gate(id, decision)
    }

    fn decide_pending_gate(&self, run: RunId, decision: GateDecision) -> Result<Gate> {
        self.inner.decide_pending_gate(run, decision)
    }

    fn put_artifact(&self, artifact: NewArtifact) -> Result<ArtifactMeta> {
        if !self.fences(artifact.brief) {
            return self.inner.put_artifact(artifact);
        }
        let id = artifact.id;
        let mut batch = WriteBatch::new();
        batch.put_artifact(artifact);
        self.write(batch)?;
        Ok(self.inner.get_artifact(id)?.meta)
    }

    fn get_artifact(&self, id: ArtifactId) -> Result<Artifact> {
        self.inner.get_artifact(id)
    }

    fn latest_artifact(&self, run: RunId, name: &str) -> Result<Option<Artifact>> {
        self.inner.latest_artifact(run, name)
    }

    fn list_artifacts(&self, run: RunId, brief: Option<BriefId>) -> Result<Vec<ArtifactMeta>> {
        self.inner.list_artifacts(run, brief)
    }
}

/// Whether `event` records money or tokens spent (`usage`): a call a holder made is paid for whether or
/// not its claim still holds, and the run's budget is rebuilt from these records, so they are never fenced.
fn is_spending(event: &NewEvent) -> bool {
    event.kind == EventKind::Usage
}
