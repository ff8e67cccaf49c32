//! Applying a [`WriteBatch`]'s changes, in order, inside the caller's transaction.

use postgres::GenericClient;

use super::{artifacts, briefs, events};
use crate::batch::{Change, WriteBatch};
use crate::clock::Clock;
use crate::error::Result;

/// Applies every change in order; the first that fails stops it (the caller's transaction then rolls back).
pub fn apply<C: GenericClient>(c: &mut C, clock: &dyn Clock, batch: WriteBatch) -> Result<()> {
    batch
        .into_changes()
        .into_iter()
        .try_for_each(|change| match change {
            Change::InsertBrief(brief) => briefs::insert(c, clock, &brief),
            Change::MoveBrief { id, from, to, event } => {
                briefs::update_status(c, clock, id, from, to, event).map(drop)
            }
            Change::MoveTeachback { id, from, to, event } => {
                briefs::set_teachback(c, clock, id, from, to, event).map(drop)
            }
            Change::SetWorkspace { id, branch, worktree } => {
                briefs::set_workspace(c, clock, id, branch.as_deref(), worktree.as_deref()).map(drop)
            }
            Change::PutArtifact(artifact) => artifacts::put(c, clock, artifact).map(drop),
            Change::AppendEvent(event) => events::append(c, &event).map(drop),
            Change::HoldsClaim(claim) => briefs::check_claim(c, &claim),
            Change::GaveUpClaim(claim) => briefs::check_gave_up(c, &claim),
        })
}
