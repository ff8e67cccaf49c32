//! What every backend writes the same way: the stored text forms of ids, times and JSON, the canonical
//! events the blackboard builds itself (see the crate docs), and the check of a caller's event. Kept in
//! one place so SQLite and PostgreSQL cannot drift apart in what they record.

use agency_core::event::payload::{self, EventPayload};
use agency_core::ids::{WHOLE_ID_LEN, normalize_id_input};
use agency_core::{Brief, BriefId, Gate, GateDecision, GateKind, NewEvent, RunId, Tier};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::error::{Result, StoreError};
use crate::record::{NewArtifact, NewGate, Run, RunStatus};

/// An id as stored: the UUID's simple form (32 lower-case hex digits), so a typed part of an id is a part
/// of the text.
pub fn id_text(id: &Uuid) -> String {
    id.simple().to_string()
}

/// What a human typed as (part of) an id, checked: its hex digits, lower case, dashes dropped. Anything but
/// hex digits and dashes is `InvalidId`; more digits than an id has, `NotFound`. A part of
/// [`WHOLE_ID_LEN`] digits is a whole id.
pub fn typed_id_part(what: &'static str, input: &str) -> Result<String> {
    let part = normalize_id_input(input.trim()).ok_or_else(|| StoreError::InvalidId {
        what,
        input: input.to_string(),
    })?;
    if part.len() > WHOLE_ID_LEN {
        return Err(StoreError::not_found(what, input));
    }
    Ok(part)
}

/// The error for a typed id that `total` records match, naming `candidates` (stored ids, oldest first) in
/// the form humans read.
pub fn ambiguous_id(what: &'static str, input: &str, candidates: Vec<String>, total: i64) -> StoreError {
    StoreError::AmbiguousId {
        what,
        typed: input.to_string(),
        candidates: candidates
            .into_iter()
            .map(|id| Uuid::parse_str(&id).map(|u| u.to_string()).unwrap_or(id))
            .collect(),
        total: usize::try_from(total).unwrap_or(usize::MAX),
    }
}

/// Which briefs a count runs over: a run's, or one parent's (every attempt).
#[derive(Debug, Clone, Copy)]
pub enum BriefsOf {
    /// Every brief of a run.
    Run(RunId),
    /// The children of a brief.
    Parent(BriefId),
}

impl BriefsOf {
    /// The indexed `briefs` column that selects them.
    pub fn column(self) -> &'static str {
        match self {
            BriefsOf::Run(_) => "run",
            BriefsOf::Parent(_) => "parent",
        }
    }

    /// The value of that column, as stored.
    pub fn id_text(self) -> String {
        match self {
            BriefsOf::Run(run) => id_text(&run.0),
            BriefsOf::Parent(parent) => id_text(&parent.0),
        }
    }
}

/// A time as stored: RFC 3339 UTC with nanoseconds, so text order is time order and values round-trip
/// exactly (PostgreSQL's own timestamps keep only microseconds).
pub fn ts_text(ts: DateTime<Utc>) -> String {
    ts.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

/// A value as JSON text.
pub fn json_text<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Invalid(format!("cannot encode as JSON: {e}")))
}

/// Parses an id read back from a row.
pub fn parse_id(what: &'static str, text: &str) -> Result<Uuid> {
    Uuid::parse_str(text).map_err(|e| StoreError::corrupt(what, text, e.to_string()))
}

/// `run_created`.
pub fn run_created(run: &Run) -> NewEvent {
    let payload = EventPayload::RunCreated(payload::RunCreated {
        goal: run.goal.clone(),
        repo: run.repo.clone(),
        base_rev: run.base_rev.clone(),
    });
    NewEvent::typed(run.id, payload).at(run.created_at)
}

/// `run_status`.
pub fn run_status(id: RunId, from: RunStatus, to: RunStatus, at: DateTime<Utc>) -> NewEvent {
    let payload = EventPayload::RunStatus(payload::RunStatusChange {
        from: from.as_str().to_string(),
        to: to.as_str().to_string(),
    });
    NewEvent::typed(id, payload).at(at)
}

/// `brief_created`.
pub fn brief_created(brief: &Brief, at: DateTime<Utc>) -> NewEvent {
    let payload = EventPayload::BriefCreated(payload::BriefCreated {
        title: brief.title.clone(),
        tier: Some(brief.tier),
        workstream: brief.workstream.clone(),
        parent: brief.parent,
        status: brief.status.as_str().to_string(),
    });
    NewEvent::typed(brief.run, payload)
        .brief(brief.id)
        .tier(brief.tier)
        .at(at)
}

/// `brief_status` for a claim (`pending → running`).
pub fn brief_claimed(brief: &Brief, claimer: &str, at: DateTime<Utc>) -> NewEvent {
    let payload = EventPayload::BriefStatus(payload::BriefStatusChange {
        from: "pending".to_string(),
        to: "running".to_string(),
        claimed_by: Some(claimer.to_string()),
        ..Default::default()
    });
    NewEvent::typed(brief.run, payload)
        .brief(brief.id)
        .tier(brief.tier)
        .at(at)
}

/// `brief_status` for a claim taken back because its lease ended (`running → pending`).
pub fn brief_reclaimed(brief: &Brief, claimer: Option<&str>, at: DateTime<Utc>) -> NewEvent {
    let payload = EventPayload::BriefStatus(payload::BriefStatusChange {
        from: "running".to_string(),
        to: "pending".to_string(),
        claimed_by: claimer.map(str::to_string),
        reason: Some("lease_expired".to_string()),
        ..Default::default()
    });
    NewEvent::typed(brief.run, payload)
        .brief(brief.id)
        .tier(brief.tier)
        .at(at)
}

/// A failed renewal: the brief is no longer running under this claimer.
pub fn claim_conflict(brief: &Brief, claimer: &str) -> StoreError {
    StoreError::Conflict {
        what: "claim of brief",
        id: brief.id.short(),
        expected: format!("running, claimed by {claimer}"),
        found: match &brief.claimed_by {
            Some(other) => format!("{}, claimed by {other}", brief.status),
            None => brief.status.to_string(),
        },
    }
}

/// Why a claim holder's write was refused: the brief is claimed otherwise now (`found` is what the
/// blackboard holds: status, holder, generation).
pub fn claim_lost(claim: &crate::Claim, found: String) -> StoreError {
    StoreError::ClaimLost {
        brief: claim.brief.short(),
        holder: claim.holder.clone(),
        generation: claim.generation,
        found,
    }
}

/// Whether `claim` still holds its brief, which the blackboard has claimed by `holder` in `generation`
/// (the check of [`crate::Change::HoldsClaim`]).
pub fn holds_claim(claim: &crate::Claim, holder: Option<&str>, generation: i64) -> bool {
    holder == Some(claim.holder.as_str()) && generation == claim.generation
}

/// Whether nobody has claimed `claim`'s brief since its holder gave it back: no new claim has taken a
/// new generation (the check of [`crate::Change::GaveUpClaim`]).
pub fn not_claimed_since(claim: &crate::Claim, _holder: Option<&str>, generation: i64) -> bool {
    generation == claim.generation
}

/// What [`claim_lost`] reports a brief holds: `running, claimed by X in generation 3`.
pub fn claim_found(status: &str, holder: Option<&str>, generation: i64) -> String {
    match holder {
        Some(holder) => format!("{status}, claimed by {holder} in generation {generation}"),
        None => format!("{status}, unclaimed (last claim: generation {generation})"),
    }
}

/// `gate_pending`, or `gate_paused` for a pause.
pub fn gate_opened(gate: &NewGate, at: DateTime<Utc>) -> NewEvent {
    let opened = payload::GateOpened {
        gate: Some(gate.id),
        kind: Some(gate.kind),
        summary: gate.summary.clone(),
    };
    let payload = if gate.kind == GateKind::Pause {
        EventPayload::GatePaused(opened)
    } else {
        EventPayload::GatePending(opened)
    };
    with_context(NewEvent::typed(gate.run, payload), gate.tier, gate.brief, at)
}

/// `gate_approved` / `gate_rejected`, or `gate_resumed` when a pause is approved.
pub fn gate_decided(gate: &Gate, decision: &GateDecision, at: DateTime<Utc>) -> NewEvent {
    let decided = |by: &str| payload::GateDecided {
        gate: Some(gate.id),
        kind: Some(gate.kind),
        by: by.to_string(),
        ..Default::default()
    };
    let payload = match decision {
        GateDecision::Approve { by, note } => {
            let approved = payload::GateDecided {
                note: note.clone(),
                ..decided(by)
            };
            if gate.kind == GateKind::Pause {
                EventPayload::GateResumed(approved)
            } else {
                EventPayload::GateApproved(approved)
            }
        }
        GateDecision::Reject { by, reason } => EventPayload::GateRejected(payload::GateDecided {
            reason: Some(reason.clone()),
            ..decided(by)
        }),
    };
    with_context(NewEvent::typed(gate.run, payload), gate.tier, gate.brief, at)
}

/// Who decided, and the note (an approval's note or a rejection's reason), as a gate row records them.
pub fn decided_by(decision: &GateDecision) -> (&str, Option<&str>) {
    match decision {
        GateDecision::Approve { by, note } => (by, note.as_deref()),
        GateDecision::Reject { by, reason } => (by, Some(reason.as_str())),
    }
}

/// `artifact`.
pub fn artifact_stored(artifact: &NewArtifact, at: DateTime<Utc>) -> NewEvent {
    let payload = EventPayload::Artifact(payload::ArtifactStored {
        artifact: artifact.id.to_string(),
        name: artifact.name.clone(),
        content_type: artifact.content_type.clone(),
        size: artifact.bytes.len() as u64,
    });
    let mut event = NewEvent::typed(artifact.run, payload).at(at);
    event.brief = artifact.brief;
    event
}

fn with_context(
    mut event: NewEvent,
    tier: Option<Tier>,
    brief: Option<BriefId>,
    at: DateTime<Utc>,
) -> NewEvent {
    event.tier = tier;
    event.brief = brief;
    event.at(at)
}

/// Checks a caller's event belongs to the brief's run, and names the brief and its tier where the caller
/// left them out.
pub fn event_for(brief: &Brief, event: NewEvent) -> Result<NewEvent> {
    event_for_parts(brief.id, brief.run, brief.tier, event)
}

/// [`event_for`] of the brief `id` of `run` and `tier`, for a caller that read only those.
pub fn event_for_parts(id: BriefId, run: RunId, tier: Tier, mut event: NewEvent) -> Result<NewEvent> {
    if event.run != run {
        return Err(StoreError::Invalid(format!(
            "the {} event is for run {}, but brief {} belongs to run {}",
            event.kind,
            event.run.short(),
            id.short(),
            run.short()
        )));
    }
    match event.brief {
        None => event.brief = Some(id),
        Some(other) if other != id => {
            return Err(StoreError::Invalid(format!(
                "the {} event names brief {}, but it changes brief {}",
                event.kind,
                other.short(),
                id.short()
            )));
        }
        Some(_) => {}
    }
    event.tier = event.tier.or(Some(tier));
    Ok(event)
}

/// A compare-and-set failure on a brief's status.
pub fn brief_conflict(id: BriefId, expected: impl ToString, found: impl ToString) -> StoreError {
    StoreError::Conflict {
        what: "brief",
        id: id.short(),
        expected: expected.to_string(),
        found: found.to_string(),
    }
}

/// A claim's offer as the claim queries take it: the offered tiers as a JSON array of their names (`None`:
/// every tier) and the offered labels as a JSON array.
pub fn offer_params(offer: &agency_core::placement::Offer) -> Result<(Option<String>, String)> {
    let tiers = offer.tier_names().map(|names| json_text(&names)).transpose()?;
    Ok((tiers, json_text(&offer.labels)?))
}

/// Refuses a label need or an offer's label that is not a valid label (see
/// [`agency_core::placement::valid_label`]), or a need's empty workstream.
pub fn check_labels<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<()> {
    for (workstream, label) in labels {
        if workstream.is_empty() || !agency_core::placement::valid_label(label) {
            return Err(StoreError::Invalid(format!(
                "placement label {label:?} of workstream {workstream:?}: expected 1 to 64 letters, digits, `-`, \
                 `_` or `.`, and a workstream id or `*`"
            )));
        }
    }
    Ok(())
}
