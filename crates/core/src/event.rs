//! Events: the append-only history of a run. Every state change on the blackboard is written in the same
//! transaction as the event that describes it, so `watch`, `inspect`, the dashboard and `resume` can all be
//! built from events and rows alone, never from a runner's memory.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::brief::{Brief, BriefStatus};
use crate::ids::{BriefId, RunId};
use crate::tier::Tier;

pub mod amendments;
mod body;
pub mod payload;

pub use body::EventBody;
pub use payload::{EventPayload, PayloadError};

macro_rules! event_kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// What an event records. The seed's vocabulary plus ours (DESIGN §3).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        pub enum EventKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl EventKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant,)*];

            /// The wire name (`gate_pending`, `teachback_submitted`, ...).
            pub fn as_str(self) -> &'static str {
                match self { $(EventKind::$variant => $name,)* }
            }
        }

        impl FromStr for EventKind {
            type Err = UnknownEventKind;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok(EventKind::$variant),)*
                    _ => Err(UnknownEventKind(s.to_string())),
                }
            }
        }
    };
}

event_kinds! {
    /// A run was created.
    RunCreated = "run_created",
    /// A run's status changed (payload: `from`, `to`).
    RunStatus = "run_status",
    /// T1 started planning.
    PlanStart = "plan_start",
    /// T1's plan is recorded (payload: the plan summary).
    PlanDone = "plan_done",
    /// A brief was written to the blackboard, status pending.
    BriefCreated = "brief_created",
    /// A brief's status changed without a more specific event (payload: `from`, `to`).
    BriefStatus = "brief_status",
    /// An agent was spawned for a brief.
    Spawned = "spawned",
    /// A brief completed.
    Completed = "completed",
    /// A brief failed.
    Failed = "failed",
    /// A failure was escalated to the owning tier.
    Escalated = "escalated",
    /// A brief is retried with a corrected brief.
    Retried = "retried",
    /// A gate opened; the run waits for a decision.
    GatePending = "gate_pending",
    /// A gate was approved.
    GateApproved = "gate_approved",
    /// A gate was rejected (by a human, or by timeout).
    GateRejected = "gate_rejected",
    /// A manual pause was requested.
    GatePaused = "gate_paused",
    /// A manual pause was released.
    GateResumed = "gate_resumed",
    /// A tier proposed a different tier path.
    PathAmendment = "path_amendment",
    /// A human approved or rejected a proposed path amendment.
    PathAmendmentDecided = "path_amendment_decided",
    /// A tier or the runner flagged something for the next gate's summary.
    Anomaly = "anomaly",
    /// A handoff's agreement was checked (seed 003: L0 topic, L1 procedure, L2 purpose).
    Agreement = "agreement",
    /// A human-readable log line (payload: `level`, `message`).
    Log = "log",
    /// An agent sent its teachback.
    TeachbackSubmitted = "teachback_submitted",
    /// A reviewer approved a teachback.
    TeachbackApproved = "teachback_approved",
    /// A reviewer asked for corrections.
    TeachbackCorrected = "teachback_corrected",
    /// The gate denied (or, in shadow/warn mode, would have denied) a tool call.
    TeachbackDenied = "teachback_denied",
    /// Sign-off of a brief or goal started.
    SignoffStarted = "signoff_started",
    /// Stage 1: the verify command's result.
    SignoffVerify = "signoff_verify",
    /// Sign-off accepted.
    SignoffAccepted = "signoff_accepted",
    /// Sign-off rejected (payload lists what is missing).
    SignoffRejected = "signoff_rejected",
    /// The judge failed or gave no verdict.
    SignoffInconclusive = "signoff_inconclusive",
    /// The auditor's independent review of a slice (variety score 7 and above) and whether it agrees with
    /// the judge.
    SignoffAudit = "signoff_audit",
    /// A T5 result or a T3 joint verdict.
    Verdict = "verdict",
    /// A budget would be exceeded; the call was not made.
    BudgetExhausted = "budget_exhausted",
    /// A human raised a budget.
    BudgetRaised = "budget_raised",
    /// An algedonic ALERT (quality, scope, meta-block): the phase blocks.
    Alert = "alert",
    /// An algedonic HALT (security, data, ethics): the run stops.
    Halt = "halt",
    /// One model call's tokens, cost and latency.
    Usage = "usage",
    /// An artifact was stored (payload: `name`, `artifact`).
    Artifact = "artifact",
}

/// An event kind this build does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event kind \"{0}\"")]
pub struct UnknownEventKind(pub String);

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An event as recorded: `seq` is assigned by the blackboard and strictly increases across the whole store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// Position in the store's single event sequence.
    pub seq: i64,
    /// The run it belongs to.
    pub run: RunId,
    /// When it was recorded.
    pub ts: DateTime<Utc>,
    /// The brief it concerns, if any.
    pub brief: Option<BriefId>,
    /// The tier it concerns, if any.
    pub tier: Option<Tier>,
    /// What happened.
    pub kind: EventKind,
    /// Kind-specific details, as stored: read them with [`Event::typed`].
    pub payload: serde_json::Value,
}

impl Event {
    /// The payload, typed by the event's kind. An error names the kind and the field that did not read.
    pub fn typed(&self) -> Result<EventPayload, PayloadError> {
        EventPayload::decode(self.kind, &self.payload)
    }
}

/// An event about to be appended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewEvent {
    /// The run it belongs to.
    pub run: RunId,
    /// When it happened (injectable for deterministic tests).
    pub ts: DateTime<Utc>,
    /// The brief it concerns, if any.
    pub brief: Option<BriefId>,
    /// The tier it concerns, if any.
    pub tier: Option<Tier>,
    /// What happened.
    pub kind: EventKind,
    /// Kind-specific details.
    pub payload: EventBody,
}

impl NewEvent {
    /// An event for a run with a typed payload (its kind is the payload's), stamped now, with no brief or
    /// tier.
    pub fn typed(run: RunId, payload: EventPayload) -> Self {
        NewEvent {
            run,
            ts: Utc::now(),
            brief: None,
            tier: None,
            kind: payload.kind(),
            payload: EventBody::typed(payload),
        }
    }

    /// An event for a run with a payload given as JSON, stamped now, with no brief or tier.
    ///
    /// Transitional: writers use [`NewEvent::typed`]; this stays for tests that write a payload by hand
    /// (including malformed ones, to check readers fail closed).
    pub fn new(run: RunId, kind: EventKind, payload: serde_json::Value) -> Self {
        NewEvent {
            run,
            ts: Utc::now(),
            brief: None,
            tier: None,
            kind,
            payload: EventBody::json(payload),
        }
    }

    /// `brief_status`: `brief` moving from the status it has to `to`, with `detail` (a reason, a note), on
    /// the brief and its tier. The one constructor of the event, for every writer of a brief's move.
    pub fn brief_moved(brief: &Brief, to: BriefStatus, detail: payload::BriefStatusChange) -> Self {
        let payload = payload::BriefStatusChange {
            from: brief.status.as_str().to_string(),
            to: to.as_str().to_string(),
            ..detail
        };
        NewEvent::typed(brief.run, EventPayload::BriefStatus(payload))
            .brief(brief.id)
            .tier(brief.tier)
    }

    /// Sets the brief the event concerns.
    pub fn brief(mut self, brief: BriefId) -> Self {
        self.brief = Some(brief);
        self
    }

    /// Sets the tier the event concerns.
    pub fn tier(mut self, tier: Tier) -> Self {
        self.tier = Some(tier);
        self
    }

    /// Sets the timestamp (tests and replays).
    pub fn at(mut self, ts: DateTime<Utc>) -> Self {
        self.ts = ts;
        self
    }

    /// A `log` event with a level and message.
    pub fn log(run: RunId, level: &str, message: impl Into<String>) -> Self {
        NewEvent::typed(
            run,
            EventPayload::Log(payload::LogLine::new(level, None, message)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_wire_name() {
        for kind in EventKind::ALL {
            assert_eq!(kind.as_str().parse::<EventKind>(), Ok(*kind));
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.as_str())
            );
        }
    }

    #[test]
    fn the_seed_vocabulary_is_present() {
        for name in [
            "spawned",
            "completed",
            "failed",
            "escalated",
            "retried",
            "gate_pending",
            "gate_approved",
            "gate_rejected",
            "gate_paused",
            "gate_resumed",
            "path_amendment",
            "log",
        ] {
            assert!(name.parse::<EventKind>().is_ok(), "{name}");
        }
    }
}
