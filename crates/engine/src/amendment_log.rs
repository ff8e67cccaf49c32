//! The path amendments recorded on a run's log, read back: each proposal with its decision ([`recorded`],
//! for the CLI and the gate service), and the runner's own copy kept up to date ([`AmendmentLog`]). A leaf
//! of the engine: the engine holds the log, and [`crate::amendments`] acts on what it reads.

use agency_core::RunId;
use agency_core::event::payload::{PathAmendmentDecided, PathAmendmentProposed};
use agency_core::event::{EventKind, EventPayload};
use agency_flow::amendments::path_text;
use agency_store::Blackboard;
use agency_store::walk::each_event_of_kinds;

use crate::error::{EngineError, Result};

/// One proposal as recorded, with its decision when a human made one.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The `path_amendment` event's seq: the amendment's number (`#12`).
    pub seq: i64,
    /// The proposal.
    pub proposal: PathAmendmentProposed,
    /// The decision, once made.
    pub decision: Option<PathAmendmentDecided>,
    /// The seq of the decision's event: the order decisions were made in.
    pub decided_seq: Option<i64>,
    /// When the decision was recorded: an approval made before the current plan's brief was written
    /// belongs to a plan T1 has since replaced.
    pub decided_ts: Option<chrono::DateTime<chrono::Utc>>,
}

impl Recorded {
    /// The workstream it concerns.
    pub fn workstream(&self) -> Option<&str> {
        self.proposal
            .amendment
            .as_ref()
            .map(|a| a.workstream.as_str())
            .or(self.proposal.workstream.as_deref())
    }

    /// One line: `#12 ws-arith: add t3 before t5 — why (by t4/fix-add)`.
    pub fn line(&self) -> String {
        let change = self
            .proposal
            .amendment
            .as_ref()
            .map(|a| format!("{}: {} — ", a.workstream, a.describe()))
            .unwrap_or_default();
        format!(
            "#{} {change}{} (by {})",
            self.seq, self.proposal.reason, self.proposal.proposed_by
        )
    }

    /// Where it stands, who decided it and why: `proposed, undecided`, `approved by cli:alice: path
    /// t3→t4→t3→t5`, `rejected by dashboard: one pass is enough`.
    pub fn status_line(&self) -> String {
        match &self.decision {
            None => "proposed, undecided".into(),
            Some(d) if d.approved => format!(
                "approved by {}{}{}",
                d.by,
                if d.path_after.is_empty() {
                    String::new()
                } else {
                    format!(": path {}", path_text(&d.path_after))
                },
                d.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
            ),
            Some(d) => format!(
                "rejected by {}: {}",
                d.by,
                d.note.as_deref().unwrap_or("no reason given")
            ),
        }
    }
}

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
        match event.typed() {
            Ok(EventPayload::PathAmendment(proposal)) => found.push(Recorded {
                seq: event.seq,
                proposal,
                decision: None,
                decided_seq: None,
                decided_ts: None,
            }),
            Ok(EventPayload::PathAmendmentDecided(decision)) => {
                if let Some(r) = found.iter_mut().find(|r| r.seq == decision.amendment)
                    && r.decision.is_none()
                {
                    r.decision = Some(decision);
                    r.decided_seq = Some(event.seq);
                    r.decided_ts = Some(event.ts);
                }
            }
            Ok(_) => {}
            Err(err) => return Err(EngineError::State(format!("event {}: {err}", event.seq))),
        }
        Ok(())
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
