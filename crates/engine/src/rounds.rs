//! A squad's round of verification: its current tasks once every one is done, read as cheaply as the pass
//! that asks (an indexed count first, the squad's states rather than its whole briefs).

use agency_core::{Brief, BriefId, BriefStatus, Tier};
use agency_flow::{Attempt, OPEN, current_done_tasks};
use agency_store::BriefState;

use crate::error::Result;
use agency_store::Blackboard;

/// Whether any task of the squad under `parent` in `workstream` is still open: an indexed count says so
/// without reading the squad's whole briefs.
pub(crate) fn squad_open(store: &dyn Blackboard, parent: BriefId, workstream: &str) -> Result<bool> {
    Ok(store.count_children(parent, workstream, Some(Tier::T4), &OPEN)? > 0)
}

/// The current tasks (newest attempts) of the squad under `parent` in `workstream`, when there are some and
/// every one is done; `None` otherwise.
pub(crate) fn done_squad_tasks(
    store: &dyn Blackboard,
    parent: BriefId,
    workstream: &str,
) -> Result<Option<Vec<Brief>>> {
    if squad_open(store, parent, workstream)? {
        return Ok(None);
    }
    let siblings = store.list_children(parent)?;
    let Some(current) = current_done_tasks(&siblings, workstream) else {
        return Ok(None);
    };
    // Picked by reference, then moved out of the list read in that order (no copies of whole briefs).
    let order: std::collections::HashMap<BriefId, usize> = current
        .iter()
        .enumerate()
        .map(|(place, b)| (b.id, place))
        .collect();
    let mut slots: Vec<Option<Brief>> = (0..order.len()).map(|_| None).collect();
    for brief in siblings {
        if let Some(&place) = order.get(&brief.id) {
            slots[place] = Some(brief);
        }
    }
    Ok(Some(slots.into_iter().flatten().collect()))
}

/// A brief's state read without its contents, as the decision core reads an attempt.
pub(crate) struct Stated(BriefState);

impl Attempt for Stated {
    fn id(&self) -> BriefId {
        self.0.id
    }
    fn tier(&self) -> Tier {
        self.0.tier
    }
    fn workstream(&self) -> &str {
        &self.0.workstream
    }
    fn title(&self) -> &str {
        &self.0.title
    }
    fn attempt(&self) -> u32 {
        self.0.attempt
    }
    fn status(&self) -> BriefStatus {
        self.0.status
    }
    fn created_at(&self) -> chrono::DateTime<chrono::Utc> {
        self.0.created_at
    }
}

/// `read` as attempts for the decision core.
pub(crate) fn states(read: Vec<BriefState>) -> Vec<Stated> {
    read.into_iter().map(Stated).collect()
}
