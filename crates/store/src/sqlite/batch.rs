//! Applying a [`WriteBatch`]'s changes, in order, inside the caller's transaction.

use rusqlite::Connection;

use super::{artifacts, briefs, events};
use crate::batch::{Change, WriteBatch};
use crate::clock::Clock;
use crate::error::Result;

/// Applies every change in order; the first that fails stops it (the caller's transaction then rolls back).
/// The batch is only read: one held back is kept until its write commits (see `write_held_together`), and
/// copying it whole — artifacts' content and all — for each try would cost more than its events alone.
pub fn apply(conn: &Connection, clock: &dyn Clock, batch: &WriteBatch) -> Result<()> {
    batch.changes().iter().try_for_each(|change| match change {
        Change::InsertBrief(brief) => briefs::insert(conn, clock, brief),
        Change::MoveBrief { id, from, to, event } => {
            briefs::move_status(conn, clock, *id, *from, *to, event.clone())
        }
        Change::MoveTeachback { id, from, to, event } => {
            briefs::move_teachback(conn, clock, *id, *from, *to, event.clone())
        }
        Change::SetWorkspace { id, branch, worktree } => {
            briefs::write_workspace(conn, clock, *id, branch.as_deref(), worktree.as_deref())
        }
        Change::PutArtifact(artifact) => artifacts::store(conn, clock, artifact).map(drop),
        Change::AppendEvent(event) => events::append_to_run(conn, event).map(drop),
        Change::HoldsClaim(claim) => briefs::check_claim(conn, claim),
        Change::GaveUpClaim(claim) => briefs::check_gave_up(conn, claim),
    })
}
