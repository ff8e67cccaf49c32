//! The path amendments recorded on a run's log, read back: each proposal with its decision ([`recorded`],
//! for the CLI and the gate service), and the runner's own copy kept up to date ([`AmendmentLog`]). The
//! fold of the records into rows is core's ([`agency_core::event::amendments`], shared with the dashboard);
//! the reading is here. A leaf of the engine: the engine holds the log, and [`crate::amendments`] acts on
//! what it reads.

use agency_core::RunId;
use agency_core::event::EventKind;
pub use agency_core::event::amendments::Recorded;
use agency_core::event::amendments::fold;
use agency_store::Blackboard;
use agency_store::walk::each_event_of_kinds;

use crate::error::{EngineError, Result};

/// Every path amendment of `run`, in the order proposed, each with its decision. Reads the run's whole log;
/// the runner keeps its own copy up to date instead ([`AmendmentLog`]).
pub fn recorded(store: &dyn Blackboard, run: RunId) -> Result<Vec<Recorded>> {
    let mut found: Vec<Recorded> = Vec::new();
    read_after(store, run, 0, &mut found)?;
    Ok(found)
}

/// Reads the amendment records of `run` after `after` into `found` (proposals appended, decisions put on
/// theirs): the `seq` of the last one read, or `after` when there was none.
fn read_after(store: &dyn Blackboard, run: RunId, after: i64, found: &mut Vec<Recorded>) -> Result<i64> {
    let kinds = [EventKind::PathAmendment, EventKind::PathAmendmentDecided];
    each_event_of_kinds(store, run, &kinds, after, |event| {
        fold(found, &event).map_err(|err| EngineError::State(format!("event {}: {err}", event.seq)))
    })
}

/// The runner's copy of each run's amendment records, brought up to date on each use by reading only what
/// was logged since. The runner asks for them on every pass that writes a workstream's next step;
/// [`recorded`] walks the run's whole log each time (the amendments are found by kind among all its
/// events), which grew with the run: 5 % of the runner's CPU at 3,000 briefs.
#[derive(Debug, Default)]
pub(crate) struct AmendmentLog {
    runs: std::sync::Mutex<std::collections::HashMap<RunId, (i64, Vec<Recorded>)>>,
}

impl AmendmentLog {
    /// Every path amendment of `run`, as [`recorded`] gives them.
    pub(crate) fn recorded(&self, store: &dyn Blackboard, run: RunId) -> Result<Vec<Recorded>> {
        let mut runs = self
            .runs
            .lock()
            .map_err(|_| EngineError::State("amendment log poisoned".into()))?;
        let (after, found) = runs.entry(run).or_default();
        // Every event up to here is read now (the stores give `seq` in commit order), so the next read
        // starts past it even when none of them was an amendment's.
        let through = store.last_seq(Some(run))?;
        *after = read_after(store, run, *after, found)?.max(through);
        Ok(found.clone())
    }
}
