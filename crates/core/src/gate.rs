//! Gates: pauses that need a decision. A gate is opened by the runner (or a human's `agency pause`), and
//! decided by `approve`/`reject` from any front end, or, for a tier gate, rejected after
//! `gate_timeout_minutes` (budget, escalation and halt gates wait for a human).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{BriefId, GateId, RunId};
use crate::tier::Tier;

/// Which boundary a gate guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    /// T1's plan, before any T2 spawns. Always on.
    T1Plan,
    /// The T2 lead's boundaries and shared assumptions, before specialists spawn.
    T2Lead,
    /// The T2 canonical architecture, before implementation.
    T2Synthesis,
    /// A T3 committed task split, before T4 dispatch.
    T3Plan,
    /// A T3 joint verdict, before the workstream is marked done.
    T5Verdict,
    /// A teachback reviewed by a human.
    Teachback,
    /// A manual pause (`agency pause`); approving it resumes the run.
    Pause,
    /// A budget would be exceeded; a human raises it or stops the run.
    Budget,
    /// Repeated escalation or a mesh timeout: blocked until a human unblocks.
    Escalation,
    /// An algedonic HALT (security, data, ethics): all work of the run stops until a human acknowledges it
    /// (`agency ack`): approve resumes the run, reject cancels it.
    Halt,
}

impl GateKind {
    /// Every kind.
    pub const ALL: [GateKind; 10] = [
        GateKind::T1Plan,
        GateKind::T2Lead,
        GateKind::T2Synthesis,
        GateKind::T3Plan,
        GateKind::T5Verdict,
        GateKind::Teachback,
        GateKind::Pause,
        GateKind::Budget,
        GateKind::Escalation,
        GateKind::Halt,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            GateKind::T1Plan => "t1_plan",
            GateKind::T2Lead => "t2_lead",
            GateKind::T2Synthesis => "t2_synthesis",
            GateKind::T3Plan => "t3_plan",
            GateKind::T5Verdict => "t5_verdict",
            GateKind::Teachback => "teachback",
            GateKind::Pause => "pause",
            GateKind::Budget => "budget",
            GateKind::Escalation => "escalation",
            GateKind::Halt => "halt",
        }
    }

    /// What the runner does when a human rejects a gate of this kind, in words for `agency reject` and the
    /// docs. The engine's gate handling is the authority: change both together.
    pub fn on_reject(self) -> &'static str {
        match self {
            GateKind::T1Plan
            | GateKind::T2Lead
            | GateKind::T2Synthesis
            | GateKind::T3Plan
            | GateKind::T5Verdict => {
                "the tier's brief is retried with your reason; once its retry budget is spent, an escalation \
                 gate opens"
            }
            GateKind::Teachback => "the agent gets your reason as corrections and restates its task",
            GateKind::Pause => "the pause is released and the run continues, as `agency resume` does",
            GateKind::Budget => "the run stops (cancelled)",
            GateKind::Escalation => "the escalated brief is cancelled and the run stops (failed)",
            GateKind::Halt => "the run stops (cancelled), as `agency ack --cancel` does",
        }
    }

    /// Whether only a human may decide a gate of this kind: it is never approved by `--auto-approve` and
    /// never times out. Money (budget), the end of the escalation ladder (approving it grants a fresh retry
    /// budget, so an automatic approval would loop for ever) and a HALT (security, data, ethics).
    pub fn needs_a_human(self) -> bool {
        matches!(self, GateKind::Budget | GateKind::Escalation | GateKind::Halt)
    }
}

impl fmt::Display for GateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A gate kind this build does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown gate \"{0}\"")]
pub struct UnknownGateKind(pub String);

impl FromStr for GateKind {
    type Err = UnknownGateKind;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GateKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownGateKind(s.to_string()))
    }
}

/// Where a gate stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    /// Waiting for a decision.
    Pending,
    /// Approved; the run continues.
    Approved,
    /// Rejected; the tier is re-invoked with the reason.
    Rejected,
}

impl GateStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            GateStatus::Pending => "pending",
            GateStatus::Approved => "approved",
            GateStatus::Rejected => "rejected",
        }
    }
}

impl FromStr for GateStatus {
    type Err = UnknownGateKind;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pending" => Ok(GateStatus::Pending),
            "approved" => Ok(GateStatus::Approved),
            "rejected" => Ok(GateStatus::Rejected),
            _ => Err(UnknownGateKind(s.to_string())),
        }
    }
}

/// A gate as recorded on the blackboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Gate {
    /// Its id.
    pub id: GateId,
    /// The run it pauses.
    pub run: RunId,
    /// Which boundary.
    pub kind: GateKind,
    /// The tier whose output is under review, if any.
    pub tier: Option<Tier>,
    /// The brief it concerns, if any (teachback, budget).
    pub brief: Option<BriefId>,
    /// Pending, approved or rejected.
    pub status: GateStatus,
    /// The tier summary shown to the human: what was produced, what happens next, anomalies.
    pub summary: serde_json::Value,
    /// When it opened.
    pub opened_at: DateTime<Utc>,
    /// When it was decided.
    pub decided_at: Option<DateTime<Utc>>,
    /// Who decided (`cli:<user>`, `dashboard`, `timeout`, ...).
    pub decided_by: Option<String>,
    /// The approval note or rejection reason.
    pub note: Option<String>,
}

/// A decision on a pending gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum GateDecision {
    /// Continue, with an optional note written to the blackboard.
    Approve { by: String, note: Option<String> },
    /// Re-invoke the tier with this reason.
    Reject { by: String, reason: String },
}

impl GateDecision {
    /// The status a gate takes after this decision.
    pub fn status(&self) -> GateStatus {
        match self {
            GateDecision::Approve { .. } => GateStatus::Approved,
            GateDecision::Reject { .. } => GateStatus::Rejected,
        }
    }
}
