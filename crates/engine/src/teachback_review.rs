//! A teachback's life on the blackboard outside the runner: an agent's submission, a human's review (which
//! also decides the `teachback` gate a runner is waiting at, with the same verdict), and the wait for that
//! review. `agency teachback submit|approve|correct` call these; so can any other front end.
//!
//! Each change is one compare-and-set on the brief's teachback state with its event: a review another
//! reviewer (or the runner) made first is refused, never written twice.

use std::time::{Duration, Instant};

use agency_core::event::{EventPayload, payload};
use agency_core::teachback::{TeachbackAction, TeachbackError, TeachbackReview, TeachbackState, transition};
use agency_core::{Brief, GateId, NewEvent, Teachback};
use agency_store::{Blackboard, StoreError};

use crate::brief_link::{review_event, review_payload};
use crate::teachback_gate;

/// Why a teachback could not be submitted or reviewed.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The brief's teachback state does not allow the action (or a correction has no items).
    #[error("brief {brief}: {source}")]
    Transition {
        /// The brief's short id.
        brief: String,
        /// What the state machine refused.
        source: TeachbackError,
    },
    /// The blackboard failed, or another writer moved the brief first.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How often the blackboard is read while waiting for a review.
pub const WAIT_POLL: Duration = Duration::from_millis(200);

/// Applies `action` and writes its event (the payload `payload` makes from the `from` and `to` states) in
/// one compare-and-set; returns the brief as it now is.
fn apply(
    store: &dyn Blackboard,
    brief: &Brief,
    action: &TeachbackAction,
    payload: impl FnOnce(TeachbackState, TeachbackState) -> EventPayload,
) -> Result<Brief, ReviewError> {
    let next = transition(brief.teachback, brief.teachback_mode(), action).map_err(|source| {
        ReviewError::Transition {
            brief: brief.id.short(),
            source,
        }
    })?;
    let event = NewEvent::typed(brief.run, payload(brief.teachback, next)).brief(brief.id);
    Ok(store.set_teachback_state(brief.id, brief.teachback, next, event)?)
}

/// Records `teachback` as submitted for `brief`, `via` naming where it came from (`cli`); returns the
/// brief as it now is (`under_review`, or `active` where no review is required).
pub fn submit(
    store: &dyn Blackboard,
    brief: &Brief,
    teachback: &Teachback,
    via: &str,
) -> Result<Brief, ReviewError> {
    let submitted = payload::TeachbackSubmitted {
        // A plain struct of strings and lists: serialising it cannot fail.
        teachback: serde_json::to_value(teachback).unwrap_or_default(),
        text: Some(teachback.to_string()),
        via: Some(via.to_string()),
        ..payload::TeachbackSubmitted::default()
    };
    apply(store, brief, &TeachbackAction::Submit, |from, to| {
        EventPayload::TeachbackSubmitted(payload::TeachbackSubmitted {
            from: Some(from),
            to: Some(to),
            ..submitted
        })
    })
}

/// Records a human review of `brief`'s teachback. Where a runner is waiting for it at a `teachback` gate,
/// that gate is decided with the same verdict: one decision, on the teachback (whose record names the
/// gate) and on its gate, so the run goes on at once instead of waiting for the gate to time out. Returns
/// the gate when there was one.
pub fn review(
    store: &dyn Blackboard,
    brief: &Brief,
    review: &TeachbackReview,
) -> Result<Option<GateId>, ReviewError> {
    let gate = teachback_gate::pending_gate(store, brief)?.map(|g| g.id);
    // The same record the runner writes when it reviews, with the message the agent will read.
    let payload = payload::TeachbackReviewed {
        gate,
        ..review_payload(brief, review)
    };
    apply(store, brief, &review.action(), |from, to| {
        review_event(review, payload, from, to)
    })?;
    if let Some(gate) = gate {
        // Already decided means the waiting runner saw the review first and closed it with this verdict.
        teachback_gate::close(store, gate, review)?;
    }
    Ok(gate)
}

/// Waits until `brief` leaves `under_review` and returns the message of the review that moved it (read
/// from the events after `cursor`), or `None` when `limit` passes first.
pub fn wait_for_review(
    store: &dyn Blackboard,
    brief: &Brief,
    cursor: i64,
    limit: Duration,
) -> Result<Option<String>, StoreError> {
    let deadline = Instant::now() + limit;
    loop {
        let current = store.get_brief(brief.id)?;
        if current.teachback != TeachbackState::UnderReview {
            return Ok(Some(review_message_after(store, &current, cursor)?));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(WAIT_POLL);
    }
}

/// The message of the latest review of `brief` recorded after `cursor`.
fn review_message_after(store: &dyn Blackboard, brief: &Brief, cursor: i64) -> Result<String, StoreError> {
    let mut after = cursor;
    let mut message = None;
    loop {
        let page = store.events_after(Some(brief.run), after, 500)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for event in page.iter().filter(|e| e.brief == Some(brief.id)) {
            if let Ok(EventPayload::TeachbackApproved(review) | EventPayload::TeachbackCorrected(review)) =
                event.typed()
            {
                message = review.message;
            }
        }
    }
    Ok(message.unwrap_or_else(|| {
        format!(
            "The teachback is now {}; `agency teachback show` shows the review.",
            brief.teachback
        )
    }))
}

#[cfg(test)]
mod tests {
    use agency_core::teachback::ReviewVerdict;
    use agency_store::conformance::sample_brief;
    use agency_store::{NewRun, SqliteBlackboard};

    use super::*;

    fn teachback() -> Teachback {
        Teachback {
            building: "the parser".into(),
            key_constraints: vec!["no new dependency".into()],
            interfaces: Vec::new(),
            files: Vec::new(),
            approach: "a table".into(),
            most_likely_wrong: "the grammar".into(),
            least_confident: "escapes".into(),
            first_action: None,
        }
    }

    fn by_hand(verdict: ReviewVerdict) -> TeachbackReview {
        TeachbackReview {
            verdict,
            reviewer: "ana".into(),
            note: Some("go".into()),
        }
    }

    fn pending_brief(store: &SqliteBlackboard) -> Brief {
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        // The highest variety: its teachback blocks until a human reviews it.
        let brief = Brief {
            variety: Some(agency_core::variety::Variety {
                novelty: 4,
                scope: 4,
                uncertainty: 4,
                risk: 4,
            }),
            ..sample_brief(run, "parser")
        };
        assert_eq!(
            brief.teachback_mode(),
            agency_core::variety::TeachbackMode::Blocking
        );
        store.insert_brief(&brief).unwrap();
        brief
    }

    #[test]
    fn a_submitted_teachback_waits_for_its_review_and_the_wait_returns_the_reviews_message() {
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let brief = pending_brief(&store);
        let cursor = store.last_seq(Some(brief.run)).unwrap();
        let submitted = submit(&store, &brief, &teachback(), "cli").unwrap();
        assert_eq!(submitted.teachback, TeachbackState::UnderReview);
        assert_eq!(
            wait_for_review(&store, &submitted, cursor, Duration::ZERO).unwrap(),
            None
        );

        let gate = review(&store, &submitted, &by_hand(ReviewVerdict::Approved)).unwrap();
        assert_eq!(gate, None, "no runner waits at a teachback gate");
        assert_eq!(
            store.get_brief(brief.id).unwrap().teachback,
            TeachbackState::Active
        );
        let message = wait_for_review(&store, &submitted, cursor, Duration::ZERO)
            .unwrap()
            .unwrap();
        assert!(message.contains("approved"), "{message}");
    }

    #[test]
    fn a_review_the_state_does_not_allow_is_refused_naming_the_brief_and_nothing_is_written() {
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let brief = pending_brief(&store);
        let before = store.last_seq(Some(brief.run)).unwrap();
        let err = review(&store, &brief, &by_hand(ReviewVerdict::Approved)).unwrap_err();
        assert!(
            matches!(
                &err,
                ReviewError::Transition {
                    source: TeachbackError::Illegal { .. },
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with(&format!("brief {}:", brief.id.short())),
            "{err}"
        );

        let submitted = submit(&store, &brief, &teachback(), "cli").unwrap();
        let err = review(
            &store,
            &submitted,
            &by_hand(ReviewVerdict::Corrections(Vec::new())),
        )
        .unwrap_err();
        assert!(
            matches!(
                &err,
                ReviewError::Transition {
                    source: TeachbackError::EmptyCorrections,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            store.last_seq(Some(brief.run)).unwrap(),
            before + 1,
            "only the submission was written"
        );
    }

    #[test]
    fn a_stale_brief_is_refused_by_the_compare_and_set() {
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let brief = pending_brief(&store);
        let submitted = submit(&store, &brief, &teachback(), "cli").unwrap();
        review(&store, &submitted, &by_hand(ReviewVerdict::Approved)).unwrap();
        // A second reviewer who read the brief while it was under review.
        let err = review(&store, &submitted, &by_hand(ReviewVerdict::Approved)).unwrap_err();
        assert!(matches!(err, ReviewError::Store(_)), "{err:?}");
    }
}
