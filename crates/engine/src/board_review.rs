//! The review of teachbacks that agents send through the blackboard. Claude Code and Codex agents are
//! gated by `agency hook`, so their teachback arrives as a `teachback_submitted` event written by the
//! hook (a SendMessage carrying it) or by `agency teachback submit`, and moves their brief to
//! `under_review`; nothing in the runner's process is waiting on it. [`BoardReviews::tend`], called on
//! every pass of the drive loop, finds those submissions, has each reviewed by the same reviewer the
//! built-in agent gets (the parent tier's model, or a human through the `teachback` gate) in a task of its
//! own, and writes the review as the same structured record `agency teachback approve|correct` writes,
//! with the message the agent reads (`agency teachback submit` waits for it and prints it; the hook quotes
//! corrections in its next denial).
//!
//! A reviewer that keeps failing is not retried for ever: after [`MAX_ATTEMPTS`] the brief gets the
//! algedonic ALERT `META-BLOCK: orchestrator unreachable` a stalled review raises, and stays under review
//! for a human (`agency teachback approve|correct`). A reviewer whose *provider* is in an outage (still
//! overloaded, rate limited or unreachable after the call's own retries) is not the reviewer's failure
//! and spends no attempt: the run pauses at the outage gate naming the reviewer, the agent waits under
//! review, and the review is tried again once the gate is decided.
//!
//! It costs nothing in runs where every tier's runtime reviews teachbacks in process: it reads the
//! blackboard only when some tier's runtime sends teachbacks through it, and then only the events
//! written since its last pass.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use agency_core::event::payload::{self, LogLine};
use agency_core::event::{EventKind, EventPayload, NewEvent};
use agency_core::teachback::{Teachback, TeachbackState, transition};
use agency_core::{AlgedonicSignal, BriefId, BriefStatus, RunId, SignalCategory};
use agency_llm::CancelToken;
use agency_store::Blackboard;
use chrono::{DateTime, Utc};
use tokio::task::JoinSet;

use crate::brief_link::{NoReview, Reviewed, VIA_RUNNER, review_event, review_or_outage, review_payload};
use crate::engine::Engine;
use crate::error::Result;
use crate::reviewer_outage::ReviewerOutage;

/// Reviews tried for one submission before the ALERT is raised instead.
pub const MAX_ATTEMPTS: u32 = 3;
/// The wait before a failed review is tried again, in polls of the drive loop (5 s at the default 200 ms).
const RETRY_AFTER_POLLS: u32 = 25;
/// Events read per page.
const PAGE: usize = 500;

/// A teachback waiting for its review.
#[derive(Debug, Clone)]
struct Submission {
    teachback: Teachback,
    /// Its event (a review recorded by hand comes after it).
    seq: i64,
    /// When it was sent (the start of the stall an ALERT reports).
    sent: DateTime<Utc>,
    /// Reviews that failed so far, and when the next may start.
    failures: u32,
    not_before: Option<Instant>,
}

/// Why a review task ended without a review.
#[derive(Debug)]
enum Failure {
    /// The reviewing model's provider is in an outage.
    Outage(ReviewerOutage),
    /// Anything else: counted against [`MAX_ATTEMPTS`].
    Problem(String),
}

/// The drive loop's reviewer of blackboard teachbacks, for one run.
#[derive(Debug, Default)]
pub struct BoardReviews {
    /// The last event read.
    after: i64,
    /// Submissions not reviewed yet, by brief.
    waiting: BTreeMap<BriefId, Submission>,
    /// Briefs whose review is running now.
    running: BTreeSet<BriefId>,
    tasks: JoinSet<(BriefId, std::result::Result<(), Failure>)>,
}

impl BoardReviews {
    /// Finishes what the reviews that ended left to do, reads the submissions written since the last
    /// pass, and starts a review for each one that is due. Never waits on a review.
    pub fn tend(&mut self, engine: &Engine, run: RunId, cancel: &CancelToken) -> Result<()> {
        if !engine.runtimes.values().any(|r| r.teachback_on_blackboard()) {
            return Ok(());
        }
        while let Some(joined) = self.tasks.try_join_next() {
            let Ok((brief, outcome)) = joined else { continue };
            self.running.remove(&brief);
            match outcome {
                Ok(()) => {
                    self.waiting.remove(&brief);
                }
                Err(Failure::Problem(problem)) => self.failed(engine, run, brief, &problem)?,
                Err(Failure::Outage(outage)) => {
                    let brief = engine.store.get_brief(brief)?;
                    crate::outage::pause_for_board_reviewer(engine, &brief, &outage)?;
                }
            }
        }
        self.read_submissions(engine.store.as_ref(), run)?;
        let due: Vec<BriefId> = self
            .waiting
            .iter()
            .filter(|(id, s)| !self.running.contains(id) && s.not_before.is_none_or(|t| Instant::now() >= t))
            .map(|(id, _)| *id)
            .collect();
        // No review starts while an outage's gate waits (this runner's, or one before a restart): the
        // reviewer's provider may be the one that is down. Read only when a review is due.
        if !due.is_empty() && crate::outage::outage_gate_pending(engine.store.as_ref(), run)? {
            return Ok(());
        }
        for id in due {
            self.start(engine, id, cancel)?;
        }
        Ok(())
    }

    /// Reads the events written since the last pass: a submission that went to `under_review` without
    /// being reviewed in process waits for review; a review recorded by anyone ends the wait.
    fn read_submissions(&mut self, store: &dyn Blackboard, run: RunId) -> Result<()> {
        loop {
            let page = store.events_after(Some(run), self.after, PAGE)?;
            for event in &page {
                self.after = event.seq;
                let Some(brief) = event.brief else { continue };
                match event.kind {
                    EventKind::TeachbackSubmitted => {
                        let Ok(EventPayload::TeachbackSubmitted(submitted)) = event.typed() else {
                            continue;
                        };
                        if submitted.via.as_deref() == Some(VIA_RUNNER)
                            || submitted.to != Some(TeachbackState::UnderReview)
                        {
                            continue;
                        }
                        let Ok(teachback) =
                            <Teachback as serde::Deserialize>::deserialize(&submitted.teachback)
                        else {
                            continue;
                        };
                        self.waiting.insert(
                            brief,
                            Submission {
                                teachback,
                                seq: event.seq,
                                sent: event.ts,
                                failures: 0,
                                not_before: None,
                            },
                        );
                    }
                    EventKind::TeachbackApproved | EventKind::TeachbackCorrected
                        if !self.running.contains(&brief) =>
                    {
                        self.waiting.remove(&brief);
                    }
                    _ => {}
                }
            }
            if page.len() < PAGE {
                return Ok(());
            }
        }
    }

    /// Starts the review of `id`'s teachback, unless the brief moved on (reviewed by hand, or its agent
    /// is gone).
    fn start(&mut self, engine: &Engine, id: BriefId, cancel: &CancelToken) -> Result<()> {
        let brief = engine.store.get_brief(id)?;
        let Some(submission) = self.waiting.get(&id) else {
            return Ok(());
        };
        if brief.teachback != TeachbackState::UnderReview || brief.status != BriefStatus::Running {
            self.waiting.remove(&id);
            return Ok(());
        }
        let store: Arc<dyn Blackboard> = engine.store.clone();
        let reviewer = engine.reviewer(&brief);
        let teachback = submission.teachback.clone();
        let since = submission.seq;
        let cancel = cancel.child();
        self.running.insert(id);
        self.tasks.spawn(async move {
            let outcome = async {
                let reviewed =
                    review_or_outage(store.as_ref(), &reviewer, &brief, &teachback, since, &cancel)
                        .await
                        .map_err(|no| match no {
                            NoReview::Outage(outage) => Failure::Outage(outage),
                            NoReview::Message(problem) => Failure::Problem(problem),
                        })?;
                let review = match reviewed {
                    Reviewed::New(review) => review,
                    // A human recorded the review on the teachback (and its gate is closed): done.
                    Reviewed::Recorded(..) => return Ok(()),
                };
                let mode = brief.teachback_mode();
                let from = TeachbackState::UnderReview;
                let to =
                    transition(from, mode, &review.action()).map_err(|e| Failure::Problem(e.to_string()))?;
                let payload = review_event(&review, review_payload(&brief, &review), from, to);
                let event = NewEvent::typed(brief.run, payload)
                    .brief(brief.id)
                    .tier(brief.tier);
                // A compare-and-set: a review someone else recorded meanwhile wins, and this one is dropped.
                store
                    .set_teachback_state(brief.id, from, to, event)
                    .map(|_| ())
                    .map_err(|e| Failure::Problem(e.to_string()))
            }
            .await;
            (id, outcome)
        });
        Ok(())
    }

    /// Records a failed review; tries again later, or raises the ALERT once the attempts are used up.
    fn failed(&mut self, engine: &Engine, run: RunId, id: BriefId, problem: &str) -> Result<()> {
        let Some(submission) = self.waiting.get_mut(&id) else {
            return Ok(());
        };
        submission.failures += 1;
        submission.not_before = Some(Instant::now() + engine.options.poll * RETRY_AFTER_POLLS);
        let failures = submission.failures;
        let sent = submission.sent;
        let brief = engine.store.get_brief(id)?;
        if brief.teachback != TeachbackState::UnderReview {
            self.waiting.remove(&id);
            return Ok(());
        }
        let line = NewEvent::typed(
            run,
            EventPayload::Log(LogLine::new(
                "verbose",
                Some("TEACHBACK"),
                format!(
                    "the review of {}'s teachback failed ({failures}/{MAX_ATTEMPTS}): {problem}",
                    brief.title
                ),
            )),
        )
        .brief(id)
        .tier(brief.tier);
        engine.store.append_event(line)?;
        if failures < MAX_ATTEMPTS {
            return Ok(());
        }
        self.waiting.remove(&id);
        // The same ALERT a review stalled past its timeout raises (`agency hook`, `agency teachback
        // check`), with the same fields, so it is not raised twice for this stall.
        let alert = NewEvent::typed(
            run,
            EventPayload::Alert(payload::Signal {
                message: Some(format!(
                    "META-BLOCK: orchestrator unreachable: the teachback of {} could not be reviewed ({problem}); \
                     review it with `agency teachback approve|correct {}`",
                    brief.title,
                    id.short()
                )),
                teachback_state: Some(TeachbackState::UnderReview),
                since: Some(sent),
                notify: Some(true),
                source: Some("teachback_review".to_string()),
                title: Some(brief.title.clone()),
                ..AlgedonicSignal::alert(
                    SignalCategory::MetaBlock,
                    format!("orchestrator unreachable: the teachback of {} could not be reviewed", brief.title),
                    format!("{failures} review attempts failed, the last with: {problem}"),
                    format!(
                        "{} waits in `under_review`: a blocking teachback keeps its agent from writing until it is reviewed",
                        brief.title
                    ),
                    format!(
                        "read it with `agency show {} teachback {id}` and review it with `agency teachback \
                         approve|correct {id}`",
                        run.short(),
                        id = id.short()
                    ),
                )
                .payload()
            }),
        )
        .brief(id)
        .tier(brief.tier);
        engine.store.append_event(alert)?;
        Ok(())
    }
}
