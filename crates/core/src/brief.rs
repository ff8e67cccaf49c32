//! Briefs: one unit of work for one agent. A brief carries the immutable goal anchor, its instructions and
//! inputs, its variety (from which its gates are *derived* on every read, never stored as an opinion), its
//! goal contract, its retry budget and its place in the tree.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::contract::GoalContract;
use crate::ids::{BriefId, RunId};
use crate::teachback::TeachbackState;
use crate::tier::Tier;
use crate::variety::{Gates, Variety};

/// Where a brief stands in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BriefStatus {
    /// Written, waiting for the spawn loop.
    Pending,
    /// Claimed by a runner or worker; an agent is being (or has been) spawned.
    Running,
    /// The agent stopped; sign-off is checking its work.
    Verifying,
    /// Signed off.
    Done,
    /// Failed; the owning tier decides whether to retry or escalate.
    Failed,
    /// Failed and handed upward.
    Escalated,
    /// No longer needed (superseded by a retry or a re-plan, or the run stopped).
    Cancelled,
}

impl BriefStatus {
    /// Every status.
    pub const ALL: [BriefStatus; 7] = [
        BriefStatus::Pending,
        BriefStatus::Running,
        BriefStatus::Verifying,
        BriefStatus::Done,
        BriefStatus::Failed,
        BriefStatus::Escalated,
        BriefStatus::Cancelled,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            BriefStatus::Pending => "pending",
            BriefStatus::Running => "running",
            BriefStatus::Verifying => "verifying",
            BriefStatus::Done => "done",
            BriefStatus::Failed => "failed",
            BriefStatus::Escalated => "escalated",
            BriefStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the brief has ended and will not change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            BriefStatus::Done | BriefStatus::Failed | BriefStatus::Escalated | BriefStatus::Cancelled
        )
    }
}

impl fmt::Display for BriefStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A brief status this build does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown brief status \"{0}\"")]
pub struct UnknownBriefStatus(pub String);

impl FromStr for BriefStatus {
    type Err = UnknownBriefStatus;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BriefStatus::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownBriefStatus(s.to_string()))
    }
}

/// One unit of work for one agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Brief {
    /// Its id.
    pub id: BriefId,
    /// The run it belongs to.
    pub run: RunId,
    /// The brief whose output created this one, if any.
    pub parent: Option<BriefId>,
    /// The tier that does this work.
    pub tier: Tier,
    /// The workstream id from the plan (`ws-backend-api`).
    pub workstream: String,
    /// A short title (`queue-client`), used in logs and as the T5 scope.
    pub title: String,
    /// The personality slug injected as the system prompt.
    pub personality: Option<String>,
    /// The user's goal, immutable, embedded in every brief.
    pub goal_anchor: String,
    /// What this agent is asked to do.
    pub instructions: String,
    /// Artifact names this brief reads (boundaries, architecture, a predecessor's output).
    pub inputs: Vec<String>,
    /// The four assessed dimensions. Required for T4 briefs; see `validate_brief`.
    pub variety: Option<Variety>,
    /// What done means, if this brief is signed off against a contract.
    pub contract: Option<GoalContract>,
    /// How many retries the owning tier may spend on this brief.
    pub retry_budget: u32,
    /// Which attempt this is, starting at 0.
    pub attempt: u32,
    /// Briefs that must be done before this one may start (a T4 pipeline).
    pub depends_on: Vec<BriefId>,
    /// The git branch the agent works on, once assigned.
    pub branch: Option<String>,
    /// Where the brief's worktree lives, once created.
    pub worktree: Option<String>,
    /// Lifecycle status.
    pub status: BriefStatus,
    /// Teachback state.
    pub teachback: TeachbackState,
    /// Who holds the claim (a runner or worker id) while running.
    pub claimed_by: Option<String>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
}

impl Brief {
    /// The gates this brief's variety implies; `None` when it has no variety (T1–T3 coordination briefs
    /// may omit it, and then teachback is advisory).
    pub fn gates(&self) -> Option<Gates> {
        self.variety.map(|v| v.gates())
    }

    /// The brief's variety score, if it has one.
    pub fn variety_score(&self) -> Option<u8> {
        self.variety.map(|v| v.score())
    }
}
