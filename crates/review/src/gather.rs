//! Reading what a review shows from the blackboard: T1's plan, a brief's newest artifacts, the verify runs
//! and sign-offs of a slice, a teachback's history, how a run ended and a timeline of its briefs. `agency
//! show` and the dashboard both call these, so the terminal and the browser show the same records.

use agency_core::brief::Brief;
use agency_core::event::{Event, EventKind, EventPayload};
use agency_core::plan::Plan;
use agency_core::tiers::BriefRole;
use agency_core::{BriefId, RunId, Tier};
use agency_store::{Artifact, ArtifactId, Blackboard, Run, StoreError};
use serde::Serialize;
use serde_json::{Value, json};

/// Every event of `run`, oldest first.
pub fn all_events(store: &dyn Blackboard, run: RunId) -> Result<Vec<Event>, StoreError> {
    store.events_after(Some(run), 0, usize::MAX)
}

/// The newest artifact of `brief` whose name is `kind/<id>` (or the short form an earlier build wrote).
pub fn brief_artifact(
    store: &dyn Blackboard,
    run: RunId,
    brief: BriefId,
    kind: &str,
) -> Result<Option<Artifact>, StoreError> {
    let prefix = format!("{kind}/");
    let newest = store
        .list_artifacts(run, Some(brief))?
        .into_iter()
        .filter(|a| a.name.starts_with(&prefix))
        .max_by_key(|a| a.created_at);
    match newest {
        Some(meta) => Ok(Some(store.get_artifact(meta.id)?)),
        None => Ok(None),
    }
}

/// The artifact an event's payload names by id, when it names one that exists.
pub fn artifact_by_id(store: &dyn Blackboard, id: Option<&str>) -> Option<Artifact> {
    let id: ArtifactId = serde_json::from_value(json!(id?)).ok()?;
    store.get_artifact(id).ok()
}

/// What became of looking for a run's plan.
#[derive(Debug)]
pub enum PlanLookup {
    /// The newest plan brief whose output validates, and the plan.
    Found(Box<Brief>, Box<Plan>),
    /// Plans were written but none validates: the first problem found (newest first).
    Invalid(String),
    /// T1 has not written a plan yet (or failed before it did).
    NotYet,
}

/// The plan T1 wrote: its newest plan brief with an output that validates.
pub fn plan_of(store: &dyn Blackboard, run: &Run) -> Result<PlanLookup, StoreError> {
    let mut planners: Vec<Brief> = store
        .list_briefs(run.id)?
        .into_iter()
        .filter(|b| b.tier == Tier::T1 && BriefRole::of(b) == BriefRole::Plan)
        .collect();
    planners.sort_by_key(|b| b.created_at);
    let mut problem = None;
    for planner in planners.into_iter().rev() {
        let Some(output) = brief_artifact(store, run.id, planner.id, "output")? else {
            continue;
        };
        let value: Value = match serde_json::from_slice(&output.bytes) {
            Ok(value) => value,
            Err(e) => {
                problem.get_or_insert(format!("{}: not JSON: {e}", output.meta.name));
                continue;
            }
        };
        match agency_core::validate_plan(&value) {
            Ok(plan) => return Ok(PlanLookup::Found(Box::new(planner), Box::new(plan))),
            Err(e) => {
                problem.get_or_insert(format!("{}: {e}", output.meta.name));
            }
        }
    }
    Ok(match problem {
        Some(problem) => PlanLookup::Invalid(problem),
        None => PlanLookup::NotYet,
    })
}

/// The events of `kinds` among `all` recorded on `brief`, or else on `related` briefs (a verifier's parent,
/// an implementer's verifiers): a sign-off is recorded on whichever brief ran it.
pub fn signoff_events(all: &[Event], brief: BriefId, related: &[BriefId], kinds: &[EventKind]) -> Vec<Event> {
    let on = |ids: &[BriefId]| -> Vec<Event> {
        all.iter()
            .filter(|e| kinds.contains(&e.kind) && e.brief.is_some_and(|b| ids.contains(&b)))
            .cloned()
            .collect()
    };
    let own = on(&[brief]);
    if own.is_empty() { on(related) } else { own }
}

/// The sign-off outcomes a judge records.
pub const OUTCOMES: [EventKind; 3] = [
    EventKind::SignoffAccepted,
    EventKind::SignoffRejected,
    EventKind::SignoffInconclusive,
];

/// A slice's sign-off records as a review shows them: the outcomes and the auditor's reviews.
pub const JUDGEMENTS: [EventKind; 4] = [
    EventKind::SignoffAccepted,
    EventKind::SignoffRejected,
    EventKind::SignoffInconclusive,
    EventKind::SignoffAudit,
];

/// The events of a teachback's history.
pub const TEACHBACK_KINDS: [EventKind; 4] = [
    EventKind::TeachbackSubmitted,
    EventKind::TeachbackApproved,
    EventKind::TeachbackCorrected,
    EventKind::TeachbackDenied,
];

/// One verify run of a slice: its event and the whole output tail its record kept.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyRun {
    /// The `signoff_verify` event.
    pub event: Event,
    /// The output tail from the record the event names (the event holds only its last KiB).
    pub output: Option<String>,
}

/// The output tail a verify record (`signoff/<subject>/verify`) keeps.
#[derive(serde::Deserialize)]
struct VerifyRecord {
    tail: String,
}

/// The verify runs of `brief`'s slice (a verifier's slice was verified when its implementer committed).
pub fn verify_runs(store: &dyn Blackboard, all: &[Event], brief: &Brief) -> Vec<VerifyRun> {
    let parent: Vec<BriefId> = brief.parent.into_iter().collect();
    signoff_events(all, brief.id, &parent, &[EventKind::SignoffVerify])
        .into_iter()
        .map(|event| {
            let artifact = match event.typed() {
                Ok(EventPayload::SignoffVerify(verify)) => verify.artifact,
                // The renderer says the event is unreadable; there is no record to look for.
                _ => None,
            };
            let output = artifact_by_id(store, artifact.as_deref())
                .and_then(|a| serde_json::from_slice::<VerifyRecord>(&a.bytes).ok())
                .map(|record| record.tail);
            VerifyRun { event, output }
        })
        .collect()
}

/// One sign-off outcome: its event and the judge's transcript when it was kept.
#[derive(Debug, Clone, Serialize)]
pub struct Judgement {
    /// The `signoff_accepted`, `signoff_rejected`, `signoff_inconclusive` or `signoff_audit` event.
    pub event: Event,
    /// The judge's (or, for an audit, the auditor's) whole transcript.
    pub transcript: Option<String>,
}

/// The transcript an outcome or an audit names.
fn transcript_of(event: &Event) -> Option<String> {
    match event.typed() {
        Ok(
            EventPayload::SignoffAccepted(outcome)
            | EventPayload::SignoffRejected(outcome)
            | EventPayload::SignoffInconclusive(outcome),
        ) => outcome.judge_artifact,
        Ok(EventPayload::SignoffAudit(audit)) => audit.transcript,
        _ => None,
    }
}

/// The sign-offs of `brief`'s slice, with the auditor's reviews where one ran: its own, or those of its
/// verifiers (its T5 children).
pub fn judgements(
    store: &dyn Blackboard,
    all: &[Event],
    brief: &Brief,
) -> Result<Vec<Judgement>, StoreError> {
    let verifiers: Vec<BriefId> = store
        .list_children(brief.id)?
        .into_iter()
        .filter(|c| c.tier == Tier::T5)
        .map(|c| c.id)
        .collect();
    Ok(signoff_events(all, brief.id, &verifiers, &JUDGEMENTS)
        .into_iter()
        .map(|event| {
            let transcript = artifact_by_id(store, transcript_of(&event).as_deref())
                .map(|a| String::from_utf8_lossy(&a.bytes).into_owned());
            Judgement { event, transcript }
        })
        .collect())
}

/// What a teachback column says of `brief`: its state, or `not needed` for a role that only reads (the gate
/// holds back only writing agents, so a reader's state would say `pending` for ever).
pub fn teachback_label(brief: &Brief) -> &'static str {
    if BriefRole::of(brief).writes() {
        brief.teachback.as_str()
    } else {
        "not needed (reads only)"
    }
}

/// How a run ended, for the human who merges it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    /// The branch holding the run's merged work.
    pub branch: Option<String>,
    /// The pull request opened for it, when a forge is configured.
    pub pull_request: Option<String>,
    /// T1's summary from its acceptance of the whole goal.
    pub summary: Option<String>,
}

/// The branch, pull request and T1's acceptance summary recorded among a run's events.
pub fn outcome(all: &[Event]) -> Outcome {
    let mut outcome = Outcome::default();
    for event in all {
        // An event this build cannot read adds nothing to how the run ended (the log says UNREADABLE).
        let Ok(payload) = event.typed() else {
            continue;
        };
        match payload {
            // The acceptance sign-off carries T1's summary; the accepted brief's move to done names the
            // integration branch it accepted.
            EventPayload::SignoffAccepted(accepted) if event.tier == Some(Tier::T1) => {
                outcome.summary = accepted.summary.or(outcome.summary.take());
            }
            EventPayload::BriefStatus(moved)
                if event.tier == Some(Tier::T1) && moved.note.as_deref() == Some("accepted") =>
            {
                outcome.summary = moved.summary.or(outcome.summary.take());
                outcome.branch = moved.branch.or(outcome.branch.take());
            }
            EventPayload::Log(line) => {
                if let Some(url) = line.forge.and_then(|forge| forge.url) {
                    outcome.pull_request = Some(url);
                }
            }
            _ => {}
        }
    }
    outcome
}

/// A brief on the timeline: when it first ran and when it last changed, with its retries and gates marked.
#[derive(Debug, Clone, Serialize)]
pub struct Span {
    /// The brief's short id.
    pub brief: String,
    /// `t1` … `t5`.
    pub tier: &'static str,
    /// Its workstream.
    pub workstream: String,
    /// Its title.
    pub title: String,
    /// Where it stands.
    pub status: &'static str,
    /// Which attempt it is (0: the first).
    pub attempt: u32,
    /// When its first event was recorded (RFC 3339).
    pub start: String,
    /// When its last event was recorded (RFC 3339).
    pub end: String,
    /// Retries, failures and gates on it: `{kind, at}`.
    pub marks: Vec<Value>,
}

/// The run's briefs on a timeline, in the order they started.
pub fn timeline(briefs: &[Brief], all: &[Event]) -> Vec<Span> {
    let mut spans: Vec<(i64, Span)> = briefs
        .iter()
        .filter_map(|brief| {
            let mine: Vec<&Event> = all.iter().filter(|e| e.brief == Some(brief.id)).collect();
            let (first, last) = (mine.first()?, mine.last()?);
            let marks = mine
                .iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        EventKind::Failed
                            | EventKind::Retried
                            | EventKind::Escalated
                            | EventKind::GatePending
                            | EventKind::GateApproved
                            | EventKind::GateRejected
                    )
                })
                .map(|e| json!({ "kind": e.kind.as_str(), "at": e.ts.to_rfc3339() }))
                .collect();
            let span = Span {
                brief: brief.id.short(),
                tier: brief.tier.as_str(),
                workstream: brief.workstream.clone(),
                title: brief.title.clone(),
                status: brief.status.as_str(),
                attempt: brief.attempt,
                start: first.ts.to_rfc3339(),
                end: last.ts.to_rfc3339(),
                marks,
            };
            Some((first.seq, span))
        })
        .collect();
    // Sequence numbers order events as they were written, which is the order the briefs started in.
    spans.sort_by_key(|(seq, _)| *seq);
    spans.into_iter().map(|(_, span)| span).collect()
}
