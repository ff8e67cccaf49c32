//! A run's path amendments as its log records them, folded into one row each: the proposal (a
//! `path_amendment` event) with the decision a human made on it (its `path_amendment_decided`). The one
//! fold every reader of the records uses — the runner, the CLI and the gate service through the engine,
//! the dashboard's API — so all of them number, match and word the amendments alike. The reading (walking a
//! run's events by kind) is the store's; this is the pure part.

use chrono::{DateTime, Utc};

use super::payload::{PathAmendmentDecided, PathAmendmentProposed};
use super::{Event, EventKind, EventPayload, PayloadError};
use crate::tier::path_text;

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
    pub decided_ts: Option<DateTime<Utc>>,
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

/// Folds one event of the run's log, read in `seq` order, into `found`: a proposal is appended, a decision
/// is put on the proposal it names unless that one was already decided (the first decision stands), and
/// an event of any other kind changes nothing (it is not read). A record that does not read as its kind is an error, never
/// skipped: a reader that dropped it would show an amendment as undecided, or not at all.
pub fn fold(found: &mut Vec<Recorded>, event: &Event) -> Result<(), PayloadError> {
    if !matches!(
        event.kind,
        EventKind::PathAmendment | EventKind::PathAmendmentDecided
    ) {
        return Ok(());
    }
    match event.typed()? {
        EventPayload::PathAmendment(proposal) => found.push(Recorded {
            seq: event.seq,
            proposal,
            decision: None,
            decided_seq: None,
            decided_ts: None,
        }),
        EventPayload::PathAmendmentDecided(decision) => {
            if let Some(r) = found.iter_mut().find(|r| r.seq == decision.amendment)
                && r.decision.is_none()
            {
                r.decision = Some(decision);
                r.decided_seq = Some(event.seq);
                r.decided_ts = Some(event.ts);
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ids::RunId;

    fn event(seq: i64, kind: EventKind, payload: serde_json::Value) -> Event {
        Event {
            seq,
            run: RunId::new(),
            ts: Utc::now(),
            brief: None,
            tier: None,
            kind,
            payload,
        }
    }

    fn proposed(seq: i64, workstream: &str) -> Event {
        event(
            seq,
            EventKind::PathAmendment,
            json!({
                "reason": "the parser needs a design pass",
                "proposed_by": "t4/parse",
                "amendment": {"workstream": workstream, "add_tiers": ["t3"], "insert_before": "t5"},
            }),
        )
    }

    fn decided(seq: i64, amendment: i64, approved: bool, by: &str) -> Event {
        event(
            seq,
            EventKind::PathAmendmentDecided,
            json!({
                "amendment": amendment,
                "workstream": "ws-parse",
                "approved": approved,
                "by": by,
                "path_after": ["t3", "t4", "t3", "t5"],
            }),
        )
    }

    #[test]
    fn proposals_are_numbered_by_seq_and_the_first_decision_stands() {
        let mut found = Vec::new();
        for event in [
            proposed(3, "ws-parse"),
            // Another kind is not read at all: this one would not decode as a log line.
            event(4, EventKind::Log, json!({"message": ["not", "text"]})),
            proposed(7, "ws-eval"),
            decided(9, 3, true, "cli:alice"),
            // A second decision on #3 (two humans at once) does not overwrite the first.
            decided(10, 3, false, "dashboard"),
            // A decision naming no proposal changes nothing.
            decided(11, 99, true, "cli:bob"),
        ] {
            fold(&mut found, &event).unwrap();
        }
        assert_eq!(found.iter().map(|r| r.seq).collect::<Vec<_>>(), [3, 7]);
        assert_eq!(found[0].workstream(), Some("ws-parse"));
        assert_eq!(found[0].decided_seq, Some(9));
        assert_eq!(found[0].status_line(), "approved by cli:alice: path t3→t4→t3→t5");
        assert_eq!(
            found[0].line(),
            "#3 ws-parse: add t3 before t5 — the parser needs a design pass (by t4/parse)"
        );
        assert_eq!(found[1].status_line(), "proposed, undecided");
    }

    #[test]
    fn a_record_that_does_not_read_as_its_kind_is_an_error() {
        let mut found = Vec::new();
        let broken = event(5, EventKind::PathAmendmentDecided, json!({"amendment": "three"}));
        assert!(fold(&mut found, &broken).is_err());
        assert!(found.is_empty());
    }
}
