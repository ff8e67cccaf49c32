//! Several writes applied together ([`Blackboard::apply`](crate::Blackboard::apply)): what one step of the
//! runner produces (an agent's output and report with its status move, a worktree with its `spawned` event,
//! a squad's verifiers consumed at once) is written in one transaction instead of one each. Either every
//! change of a batch is on the blackboard or none is, so a crash between two steps loses nothing a step
//! committed and never leaves half of one; and on SQLite each transaction rewrites the pages it touched
//! (the tables and their indexes) once, not once per change.

use agency_core::teachback::TeachbackState;
use agency_core::{Brief, BriefId, BriefStatus, NewEvent};

use crate::record::{Claim, NewArtifact};

/// One write of a [`WriteBatch`]; each means exactly what the [`Blackboard`](crate::Blackboard) operation
/// it is named after means, events included.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// As [`insert_brief`](crate::Blackboard::insert_brief): the brief and `brief_created`.
    InsertBrief(Box<Brief>),
    /// As [`update_brief_status`](crate::Blackboard::update_brief_status): a compare-and-set from `from` to
    /// `to` with the caller's event. A brief no longer in `from` fails the whole batch with `Conflict`.
    MoveBrief {
        /// The brief.
        id: BriefId,
        /// The status it must have.
        from: BriefStatus,
        /// The status it moves to.
        to: BriefStatus,
        /// What the move means (its run must be the brief's; `brief` and `tier` are filled in).
        event: NewEvent,
    },
    /// As [`set_teachback_state`](crate::Blackboard::set_teachback_state): a compare-and-set of the
    /// teachback state from `from` to `to` with the caller's event. A brief whose teachback is no longer in
    /// `from` fails the whole batch with `Conflict`.
    MoveTeachback {
        /// The brief.
        id: BriefId,
        /// The teachback state it must be in.
        from: TeachbackState,
        /// The state it moves to.
        to: TeachbackState,
        /// What the move means (its run must be the brief's; `brief` and `tier` are filled in).
        event: NewEvent,
    },
    /// As [`set_brief_workspace`](crate::Blackboard::set_brief_workspace): bookkeeping, no event.
    SetWorkspace {
        /// The brief.
        id: BriefId,
        /// Its git branch (`None` clears).
        branch: Option<String>,
        /// Its worktree path (`None` clears).
        worktree: Option<String>,
    },
    /// As [`put_artifact`](crate::Blackboard::put_artifact): the artifact and `artifact`.
    PutArtifact(NewArtifact),
    /// As [`append_event`](crate::Blackboard::append_event).
    AppendEvent(NewEvent),
    /// Writes nothing: fails the whole batch with
    /// [`StoreError::ClaimLost`](crate::StoreError::ClaimLost) unless the brief is still claimed by the
    /// claim's holder in the claim's generation. First in a claim holder's batch, it fences the rest: a
    /// holder whose claim was taken back writes none of it. The brief's status is not checked (the holder's
    /// own batch may move it on); a move back to `pending` or a reclaim clears the holder, and a new claim
    /// takes a new generation.
    HoldsClaim(Claim),
    /// Writes nothing: fails the whole batch with
    /// [`StoreError::ClaimLost`](crate::StoreError::ClaimLost) once the brief has been claimed again since
    /// the claim's holder gave it back itself (moved it to `pending`): a later claim takes a new generation.
    /// It fences the last words of a holder on a brief it gave up, so none lands on the next holder's work.
    GaveUpClaim(Claim),
}

/// What a claim holder's write for its brief is fenced by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fence {
    /// The claim still holds ([`Change::HoldsClaim`]).
    Holds(Claim),
    /// The holder gave the brief back itself, and nobody has claimed it since ([`Change::GaveUpClaim`]).
    GaveUp(Claim),
}

impl Fence {
    /// The claim the fence is about.
    pub fn claim(&self) -> &Claim {
        match self {
            Fence::Holds(claim) | Fence::GaveUp(claim) => claim,
        }
    }

    /// The check as a change of a batch.
    pub fn change(&self) -> Change {
        match self {
            Fence::Holds(claim) => Change::HoldsClaim(claim.clone()),
            Fence::GaveUp(claim) => Change::GaveUpClaim(claim.clone()),
        }
    }
}

/// Writes to apply together, in the order they were added (which is also the order of their events).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteBatch {
    changes: Vec<Change>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds any change.
    pub fn push(&mut self, change: Change) -> &mut Self {
        self.changes.push(change);
        self
    }

    /// Adds a brief to insert (see [`Change::InsertBrief`]).
    pub fn insert_brief(&mut self, brief: Brief) -> &mut Self {
        self.push(Change::InsertBrief(Box::new(brief)))
    }

    /// Adds a compare-and-set of a brief's status (see [`Change::MoveBrief`]).
    pub fn move_brief(
        &mut self,
        id: BriefId,
        from: BriefStatus,
        to: BriefStatus,
        event: NewEvent,
    ) -> &mut Self {
        self.push(Change::MoveBrief { id, from, to, event })
    }

    /// Adds a compare-and-set of a brief's teachback state (see [`Change::MoveTeachback`]).
    pub fn move_teachback(
        &mut self,
        id: BriefId,
        from: TeachbackState,
        to: TeachbackState,
        event: NewEvent,
    ) -> &mut Self {
        self.push(Change::MoveTeachback { id, from, to, event })
    }

    /// Adds a brief's branch and worktree (see [`Change::SetWorkspace`]).
    pub fn set_workspace(
        &mut self,
        id: BriefId,
        branch: Option<String>,
        worktree: Option<String>,
    ) -> &mut Self {
        self.push(Change::SetWorkspace { id, branch, worktree })
    }

    /// Adds an artifact to store (see [`Change::PutArtifact`]).
    pub fn put_artifact(&mut self, artifact: NewArtifact) -> &mut Self {
        self.push(Change::PutArtifact(artifact))
    }

    /// Adds a check that `claim` still holds (see [`Change::HoldsClaim`]); put it first.
    pub fn holds_claim(&mut self, claim: Claim) -> &mut Self {
        self.push(Change::HoldsClaim(claim))
    }

    /// Adds an event to append (see [`Change::AppendEvent`]).
    pub fn append_event(&mut self, event: NewEvent) -> &mut Self {
        self.push(Change::AppendEvent(event))
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// How many changes were added.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// The changes, in order.
    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    /// The changes, in order, for a backend to apply.
    pub fn into_changes(self) -> Vec<Change> {
        self.changes
    }
}
