//! What a sign-off decided and everything it found on the way, in the shape the runner, the CLI and the
//! events share.

use agency_store::ArtifactId;
use serde::Serialize;

use crate::protected::Protection;
use crate::verdict::Verdict;
use crate::verify::VerifyResult;

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Verify passed, the mechanical checks held and the judge accepted.
    Accepted,
    /// Something is missing; the work stays open.
    Rejected {
        /// The earliest stage that rejected.
        by: RejectedBy,
        /// What is missing, one item each, for the agent to act on.
        missing: Vec<String>,
    },
    /// The judge failed or gave no verdict: not verified, not refuted.
    Inconclusive {
        /// Why there is no verdict.
        reason: String,
    },
}

impl Outcome {
    /// `accepted`, `rejected`, `inconclusive`.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Rejected { .. } => "rejected",
            Outcome::Inconclusive { .. } => "inconclusive",
        }
    }
}

/// Which stage rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectedBy {
    /// Stage 1: the verify command failed or timed out.
    Verify,
    /// The mechanical checks: evidence, protected paths.
    Checks,
    /// Stage 2: the judge.
    Judge,
}

/// A protected path changed since the goal's base without `may_edit` authorising it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProtectedEdit {
    /// The path, repository-relative.
    pub path: String,
    /// `added`, `modified`, `deleted`, `renamed`.
    pub change: &'static str,
    /// Why the path is protected.
    pub protection: Protection,
    /// Where a symbolic link out of the repository points.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl ProtectedEdit {
    /// The line the rejection lists.
    pub fn describe(&self) -> String {
        if let Some(target) = &self.target {
            return format!(
                "{} is a symbolic link to {target}, outside the repository; a link out of the checkout is never \
                 accepted, whatever may_edit says",
                self.path
            );
        }
        format!(
            "{} {} since the goal's base, and it is {}; only a contract whose may_edit names it may change it",
            self.path,
            self.change,
            self.protection.describe()
        )
    }
}

/// The full account of one sign-off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignoffReport {
    /// The goal id or brief title signed off.
    pub subject: String,
    /// The commit under review (full id).
    pub commit: String,
    /// The goal's base commit (full id).
    pub base: String,
    /// The decision.
    pub outcome: Outcome,
    /// Stage 1, when the contract has a verify command.
    pub verify: Option<VerifyResult>,
    /// How the plan's contract was changed since the goal was agreed.
    pub contract_changes: Vec<String>,
    /// Evidence that does not hold.
    pub evidence_problems: Vec<String>,
    /// Unauthorised edits to protected paths.
    pub protected_edits: Vec<ProtectedEdit>,
    /// The judge's verdict (or why it gave none); `None` when it was not asked.
    pub judge: Option<Result<Verdict, String>>,
    /// What the judge said before its verdict block (its account of the work), when it gave a verdict.
    pub judge_answer: Option<String>,
    /// The signal the judge raised instead of a verdict (the sign-off is inconclusive; a run halts on HALT).
    pub judge_signal: Option<agency_exec::runtime::AlgedonicSignal>,
    /// The stored verify record, when recorded.
    pub verify_artifact: Option<ArtifactId>,
    /// The stored judge transcript, when recorded.
    pub transcript_artifact: Option<ArtifactId>,
}

impl SignoffReport {
    /// Whether this outcome keeps the work from counting as done: a rejection always, an inconclusive
    /// judge when the policy says so (`signoff.inconclusive_blocks`, true by default).
    pub fn blocks(&self, inconclusive_blocks: bool) -> bool {
        match self.outcome {
            Outcome::Accepted => false,
            Outcome::Rejected { .. } => true,
            Outcome::Inconclusive { .. } => inconclusive_blocks,
        }
    }

    /// The missing items of a rejection (empty otherwise).
    pub fn missing(&self) -> &[String] {
        match &self.outcome {
            Outcome::Rejected { missing, .. } => missing,
            _ => &[],
        }
    }
}
