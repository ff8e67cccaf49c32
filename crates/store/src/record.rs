//! The records the blackboard keeps that `agency-core` does not define: runs and their status, artifacts,
//! and the requests that create runs, gates and artifacts. Briefs, events and gates themselves are the core
//! types.

use std::fmt;
use std::str::FromStr;

use agency_core::{Brief, BriefId, GateId, GateKind, RunId, Tier};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// T1 is planning.
    Planning,
    /// Waiting for a human decision on a gate.
    AwaitingGate,
    /// The spawn loop is working.
    Running,
    /// Paused by a human (`agency pause`).
    Paused,
    /// Finished: the goal was signed off.
    Succeeded,
    /// Finished: the goal could not be reached.
    Failed,
    /// Stopped by an algedonic HALT.
    Halted,
    /// Stopped by a human.
    Cancelled,
}

impl RunStatus {
    /// Every status.
    pub const ALL: [RunStatus; 8] = [
        RunStatus::Planning,
        RunStatus::AwaitingGate,
        RunStatus::Running,
        RunStatus::Paused,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Halted,
        RunStatus::Cancelled,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Planning => "planning",
            RunStatus::AwaitingGate => "awaiting_gate",
            RunStatus::Running => "running",
            RunStatus::Paused => "paused",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Halted => "halted",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the run has ended.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Succeeded | RunStatus::Failed | RunStatus::Halted | RunStatus::Cancelled
        )
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run status this build does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown run status \"{0}\" (expected one of planning, awaiting_gate, running, paused, succeeded, failed, halted, cancelled)"
)]
pub struct UnknownRunStatus(pub String);

impl FromStr for RunStatus {
    type Err = UnknownRunStatus;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RunStatus::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownRunStatus(s.to_string()))
    }
}

/// One execution toward one goal anchor, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Its id.
    pub id: RunId,
    /// The goal anchor: the user's goal text, immutable.
    pub goal: String,
    /// The repository the run works on (a path or URL).
    pub repo: String,
    /// The revision the run started from, if known.
    pub base_rev: Option<String>,
    /// Where it stands.
    pub status: RunStatus,
    /// The resolved configuration the run started with.
    pub config: serde_json::Value,
    /// Its budgets (tokens, cost, wall time, retries).
    pub budgets: serde_json::Value,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When its row last changed.
    pub updated_at: DateTime<Utc>,
}

/// A run about to be created. It starts in [`RunStatus::Planning`].
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// Its id (a fresh one from [`NewRun::new`]; set it for deterministic tests).
    pub id: RunId,
    /// The goal anchor.
    pub goal: String,
    /// The repository.
    pub repo: String,
    /// The base revision.
    pub base_rev: Option<String>,
    /// The resolved configuration snapshot.
    pub config: serde_json::Value,
    /// The budgets.
    pub budgets: serde_json::Value,
}

impl NewRun {
    /// A run for a goal on a repository, with a fresh id, empty config and budgets.
    pub fn new(goal: impl Into<String>, repo: impl Into<String>) -> Self {
        NewRun {
            id: RunId::new(),
            goal: goal.into(),
            repo: repo.into(),
            base_rev: None,
            config: serde_json::json!({}),
            budgets: serde_json::json!({}),
        }
    }
}

/// A gate about to be opened. It starts pending.
#[derive(Debug, Clone, PartialEq)]
pub struct NewGate {
    /// Its id (fresh from [`NewGate::new`]).
    pub id: GateId,
    /// The run it pauses.
    pub run: RunId,
    /// Which boundary.
    pub kind: GateKind,
    /// The tier whose output is under review.
    pub tier: Option<Tier>,
    /// The brief it concerns.
    pub brief: Option<BriefId>,
    /// The summary shown to the human.
    pub summary: serde_json::Value,
}

impl NewGate {
    /// A gate of `kind` on `run` with a fresh id and no tier or brief.
    pub fn new(run: RunId, kind: GateKind, summary: serde_json::Value) -> Self {
        NewGate {
            id: GateId::new(),
            run,
            kind,
            tier: None,
            brief: None,
            summary,
        }
    }

    /// Sets the tier under review.
    pub fn tier(mut self, tier: Tier) -> Self {
        self.tier = Some(tier);
        self
    }

    /// Sets the brief it concerns.
    pub fn brief(mut self, brief: BriefId) -> Self {
        self.brief = Some(brief);
        self
    }
}

/// Names one stored artifact: a UUIDv7, which starts with the time it was made, so an artifact's id sorts
/// after those made before it. Unlike runs, briefs and gates (`agency_core::ids`) an artifact is never
/// named to a human by a short prefix of its id — by its name, its brief, or its whole id in a sign-off's
/// event — so its id can serve the store instead: a fresh one goes at the end of the primary key's index
/// rather than on a random page of it (an index of megabytes in a long run, which a random key made SQLite
/// read and rewrite a page of for every artifact).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ArtifactId(pub Uuid);

impl ArtifactId {
    /// A fresh id, after every id this process made before it.
    pub fn new() -> Self {
        ArtifactId(Uuid::now_v7())
    }
}

impl Default for ArtifactId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for ArtifactId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for ArtifactId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArtifactId({})", self.0)
    }
}

/// An artifact about to be stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NewArtifact {
    /// Its id (fresh from [`NewArtifact::new`]).
    pub id: ArtifactId,
    /// The run it belongs to.
    pub run: RunId,
    /// The brief that produced it, if any.
    pub brief: Option<BriefId>,
    /// Its name, as briefs refer to it in `inputs` (`architecture`, `boundaries`, `t5/queue-client`).
    pub name: String,
    /// Its media type (`text/markdown`, `application/json`, ...).
    pub content_type: String,
    /// The content.
    pub bytes: Vec<u8>,
}

impl NewArtifact {
    /// An artifact of a run with a fresh id and no brief.
    pub fn new(
        run: RunId,
        name: impl Into<String>,
        content_type: impl Into<String>,
        bytes: impl Into<Vec<u8>>,
    ) -> Self {
        NewArtifact {
            id: ArtifactId::new(),
            run,
            brief: None,
            name: name.into(),
            content_type: content_type.into(),
            bytes: bytes.into(),
        }
    }

    /// Sets the brief that produced it.
    pub fn brief(mut self, brief: BriefId) -> Self {
        self.brief = Some(brief);
        self
    }
}

/// Where a brief stands among its siblings, without its contents (instructions, inputs, contract): what the
/// runner reads of a squad's tasks and their sign-offs on every pass in which one of them changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriefState {
    /// The brief.
    pub id: BriefId,
    /// Its parent, if any.
    pub parent: Option<BriefId>,
    /// Its tier.
    pub tier: Tier,
    /// Its workstream.
    pub workstream: String,
    /// Its title: a retry keeps the title and takes the next attempt.
    pub title: String,
    /// Which attempt at its title it is (1 first).
    pub attempt: u32,
    /// Its status.
    pub status: agency_core::BriefStatus,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

impl From<&agency_core::Brief> for BriefState {
    fn from(brief: &agency_core::Brief) -> Self {
        BriefState {
            id: brief.id,
            parent: brief.parent,
            tier: brief.tier,
            workstream: brief.workstream.clone(),
            title: brief.title.clone(),
            attempt: brief.attempt,
            status: brief.status,
            created_at: brief.created_at,
        }
    }
}

/// What is known about a stored artifact, without its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactMeta {
    /// Its id.
    pub id: ArtifactId,
    /// The run.
    pub run: RunId,
    /// The brief that produced it.
    pub brief: Option<BriefId>,
    /// Its name.
    pub name: String,
    /// Its media type.
    pub content_type: String,
    /// Its length in bytes.
    pub size: u64,
    /// When it was stored.
    pub created_at: DateTime<Utc>,
}

/// A stored artifact with its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// What is known about it.
    pub meta: ArtifactMeta,
    /// The content.
    pub bytes: Vec<u8>,
}

#[cfg(test)]
mod tests {
    use super::ArtifactId;

    /// What keeps a long run's artifact inserts at the end of the primary key's index.
    #[test]
    fn artifact_ids_sort_in_the_order_they_were_made() {
        let ids: Vec<ArtifactId> = (0..2_000).map(|_| ArtifactId::new()).collect();
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
    }
}

/// One claim on a brief: who holds it and in which generation. Every claim of a brief takes the next
/// generation, so a holder whose claim was taken back — and maybe given to it again — tells its own claim
/// from a later one. A holder's writes for its brief name the claim ([`Change::HoldsClaim`]) and are refused
/// with [`StoreError::ClaimLost`] once the brief is claimed otherwise.
///
/// [`Change::HoldsClaim`]: crate::Change::HoldsClaim
/// [`StoreError::ClaimLost`]: crate::StoreError::ClaimLost
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Claim {
    /// The claimed brief.
    pub brief: BriefId,
    /// Who holds it (`claimed_by`).
    pub holder: String,
    /// Which claim of the brief this is, from 1.
    pub generation: i64,
}

/// A brief just claimed, with its claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// The brief as it is now: `running`, claimed.
    pub brief: Brief,
    /// The claim, for the holder's fenced writes.
    pub claim: Claim,
}
