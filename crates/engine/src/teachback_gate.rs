//! The human teachback gate: where the `teachback` gate is on, a human reviews blocking teachbacks. The
//! runner opens a `teachback` gate for the review and waits; the human answers either on the gate
//! (`agency approve|reject <run>`, the dashboard — the runner then records the review on the teachback) or
//! on the teachback itself (`agency teachback approve|correct <brief>`, which records the review and closes
//! the gate with the same verdict). Either way it is one decision: the gate is never left open behind a
//! teachback already decided (it would hold the run until it timed out), and a review recorded by hand is
//! the one the agent is given, never a second one made from the gate.

use std::time::Duration;

use agency_core::Brief;
use agency_core::GateId;
use agency_core::event::{Event, EventKind, EventPayload};
use agency_core::gate::{Gate, GateDecision, GateKind, GateStatus};
use agency_core::teachback::{ReviewVerdict, Teachback, TeachbackReview, TeachbackState};
use agency_llm::CancelToken;
use agency_store::{Blackboard, NewGate, StoreError};
use serde_json::json;

/// A review of a teachback, and whether it is on the blackboard yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reviewed {
    /// Made by the reviewer; the caller records it on the teachback.
    New(TeachbackReview),
    /// Recorded on the teachback by a human meanwhile (`agency teachback approve|correct`), which is now
    /// in this state: the caller records nothing and gives the agent this review.
    Recorded(TeachbackReview, TeachbackState),
}

/// Events read per page when looking for a recorded review.
const PAGE: usize = 500;

/// The pending `teachback` gate of `brief`, if a human review of its teachback is being waited for.
pub fn pending_gate(store: &dyn Blackboard, brief: &Brief) -> Result<Option<Gate>, StoreError> {
    Ok(store
        .pending_gates(Some(brief.run))?
        .into_iter()
        .find(|g| g.kind == GateKind::Teachback && g.brief == Some(brief.id)))
}

/// Decides the teachback gate `gate` with the verdict of `review`, the review recorded on its teachback:
/// approved with the review's note, or rejected with its corrections, by the review's reviewer. `false`
/// when the gate was already decided (by the runner that saw the review first, or at the same moment by
/// someone else); nothing is written then.
pub fn close(store: &dyn Blackboard, gate: GateId, review: &TeachbackReview) -> Result<bool, StoreError> {
    let by = review.reviewer.clone();
    let decision = match &review.verdict {
        ReviewVerdict::Approved => GateDecision::Approve {
            by,
            note: Some(match &review.note {
                Some(note) => format!("the teachback review: {note}"),
                None => "the teachback review".into(),
            }),
        },
        ReviewVerdict::Corrections(items) => GateDecision::Reject {
            by,
            reason: format!("the teachback review: {}", items.join("; ")),
        },
    };
    match store.decide_gate(gate, decision) {
        Ok(_) => Ok(true),
        Err(StoreError::GateAlreadyDecided { .. }) => Ok(false),
        Err(other) => Err(other),
    }
}

/// The review recorded on `brief`'s teachback after event `since` (its submission), once the teachback has
/// left `under_review` (approved: `active`; corrections: `correcting`), with the state it is in; `None`
/// while it is still under review.
pub fn recorded_review(
    store: &dyn Blackboard,
    brief: &Brief,
    since: i64,
) -> Result<Option<(TeachbackReview, TeachbackState)>, StoreError> {
    let state = store.get_brief(brief.id)?.teachback;
    if !matches!(state, TeachbackState::Active | TeachbackState::Correcting) {
        return Ok(None);
    }
    let mut after = since;
    let mut found = None;
    loop {
        let page = store.events_after(Some(brief.run), after, PAGE)?;
        for event in page.iter().filter(|e| e.brief == Some(brief.id)) {
            if let Some(review) = review_of(event) {
                found = Some(review);
            }
        }
        match page.last() {
            Some(last) if page.len() == PAGE => after = last.seq,
            _ => break,
        }
    }
    // A review is always written with its state change; should the record not read back, the state says
    // the verdict and `agency teachback show` the rest.
    let review = found.unwrap_or_else(|| TeachbackReview {
        verdict: match state {
            TeachbackState::Active => ReviewVerdict::Approved,
            _ => ReviewVerdict::Corrections(vec!["see `agency teachback show` for the corrections".into()]),
        },
        reviewer: "unknown".into(),
        note: None,
    });
    Ok(Some((review, state)))
}

/// The review a `teachback_approved` / `teachback_corrected` event records.
fn review_of(event: &Event) -> Option<TeachbackReview> {
    if !matches!(
        event.kind,
        EventKind::TeachbackApproved | EventKind::TeachbackCorrected
    ) {
        return None;
    }
    let (EventPayload::TeachbackApproved(reviewed) | EventPayload::TeachbackCorrected(reviewed)) =
        event.typed().ok()?
    else {
        return None;
    };
    Some(TeachbackReview {
        verdict: reviewed.verdict?,
        reviewer: reviewed.reviewer,
        note: reviewed.note,
    })
}

/// Has a human review `teachback` (submitted at event `since`) through a `teachback` gate: opens the gate
/// and checks every `poll` for the decision, made on the gate or on the teachback itself.
pub(crate) async fn review_by_human(
    store: &dyn Blackboard,
    brief: &Brief,
    teachback: &Teachback,
    since: i64,
    poll: Duration,
    cancel: &CancelToken,
) -> Result<Reviewed, String> {
    let summary = json!({
        "message": format!("Teachback of {} waiting for review", brief.title),
        "teachback": teachback.to_string(),
    });
    let mut gate = NewGate::new(brief.run, GateKind::Teachback, summary);
    gate.brief = Some(brief.id);
    gate.tier = Some(brief.tier);
    let gate = store.open_gate(gate).map_err(|e| e.to_string())?;
    loop {
        if cancel.is_cancelled() {
            return Err("the run was cancelled".into());
        }
        let current = store.get_gate(gate.id).map_err(|e| e.to_string())?;
        // Reviewed on the teachback (`agency teachback approve|correct`): that review is the decision.
        // The command closes the gate itself; this closes it should the review have come before the gate
        // opened, or the command have stopped between its two writes.
        if let Some((review, state)) = recorded_review(store, brief, since).map_err(|e| e.to_string())? {
            if current.status == GateStatus::Pending {
                close(store, gate.id, &review).map_err(|e| e.to_string())?;
            }
            return Ok(Reviewed::Recorded(review, state));
        }
        let reviewer = current.decided_by.clone().unwrap_or_else(|| "human".into());
        match current.status {
            GateStatus::Pending => tokio::time::sleep(poll).await,
            GateStatus::Approved => {
                return Ok(Reviewed::New(TeachbackReview {
                    verdict: ReviewVerdict::Approved,
                    reviewer,
                    note: current.note,
                }));
            }
            GateStatus::Rejected => {
                let item = current
                    .note
                    .clone()
                    .unwrap_or_else(|| "rejected without a reason".into());
                return Ok(Reviewed::New(TeachbackReview {
                    verdict: ReviewVerdict::Corrections(vec![item]),
                    reviewer,
                    note: None,
                }));
            }
        }
    }
}
