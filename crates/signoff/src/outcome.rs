//! What a sign-off decided and everything it found on the way, in the shape the runner, the CLI and the
//! events share.

use agency_store::ArtifactId;
use serde::Serialize;

use crate::protected::Protection;
use crate::verdict::JudgeVerdict;
use crate::verify_command::VerifyResult;

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
    /// Stage 2's second review: the auditor (a slice whose variety score requires one), when the judge did
    /// not reject.
    Auditor,
}

impl RejectedBy {
    /// `verify`, `checks`, `judge`, `auditor`: the word the outcome event records.
    pub fn word(self) -> &'static str {
        match self {
            RejectedBy::Verify => "verify",
            RejectedBy::Checks => "checks",
            RejectedBy::Judge => "judge",
            RejectedBy::Auditor => "auditor",
        }
    }
}

/// The auditor's review of a sign-off: a second, independent judge run without the implementer's claims
/// (see [`crate::judge::AUDITOR_SYSTEM`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Audit {
    /// Its verdict, or why there is none.
    pub verdict: Result<JudgeVerdict, String>,
    /// What it said before its verdict block.
    pub answer: Option<String>,
    /// The stored auditor transcript, when recorded.
    pub transcript_artifact: Option<ArtifactId>,
    /// The model it ran on, when its caller said.
    pub model: Option<String>,
}

/// `accept`, `reject` or `inconclusive`: a verdict (or its absence) as one word.
pub fn verdict_word(verdict: &Result<JudgeVerdict, String>) -> &'static str {
    match verdict {
        Ok(JudgeVerdict::Accept) => "accept",
        Ok(JudgeVerdict::Reject { .. }) => "reject",
        Err(_) => "inconclusive",
    }
}

/// The outcome of a sign-off whose judge decided `judged` and whose auditor gave `audit`. A rejection by
/// either rejects (neither reviewer overrides the other's): the judge's missing items first, then the
/// auditor's; an auditor without a verdict makes an accepted sign-off inconclusive (which blocks by
/// policy, as a judge without one does).
pub fn with_audit(judged: Outcome, audit: &Result<JudgeVerdict, String>) -> Outcome {
    match (judged, audit) {
        (Outcome::Rejected { by, mut missing }, Ok(JudgeVerdict::Reject { missing: more })) => {
            missing.extend(more.iter().map(|m| format!("(auditor) {m}")));
            Outcome::Rejected { by, missing }
        }
        (Outcome::Accepted | Outcome::Inconclusive { .. }, Ok(JudgeVerdict::Reject { missing })) => {
            Outcome::Rejected {
                by: RejectedBy::Auditor,
                missing: missing.clone(),
            }
        }
        (Outcome::Accepted, Err(reason)) => Outcome::Inconclusive {
            reason: format!("the judge accepted, but the auditor gave no verdict: {reason}"),
        },
        (judged, _) => judged,
    }
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
    pub judge: Option<Result<JudgeVerdict, String>>,
    /// What the judge said before its verdict block (its account of the work), when it gave a verdict.
    pub judge_answer: Option<String>,
    /// The auditor's review, when the slice's variety score required one and the judge was asked.
    pub audit: Option<Audit>,
    /// The signal the judge (or the auditor) raised instead of a verdict (the sign-off is inconclusive; a
    /// run halts on HALT).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(by: RejectedBy, missing: &[&str]) -> Outcome {
        Outcome::Rejected {
            by,
            missing: missing.iter().map(|m| m.to_string()).collect(),
        }
    }

    fn reject(missing: &[&str]) -> Result<JudgeVerdict, String> {
        Ok(JudgeVerdict::Reject {
            missing: missing.iter().map(|m| m.to_string()).collect(),
        })
    }

    #[test]
    fn a_rejection_by_either_reviewer_rejects_the_sign_off() {
        // The auditor rejects what the judge accepted.
        assert_eq!(
            with_audit(Outcome::Accepted, &reject(&["the test asserts nothing"])),
            rejected(RejectedBy::Auditor, &["the test asserts nothing"])
        );
        // The judge rejects what the auditor accepted: the judge's rejection stands.
        assert_eq!(
            with_audit(
                rejected(RejectedBy::Judge, &["a marker is left"]),
                &Ok(JudgeVerdict::Accept)
            ),
            rejected(RejectedBy::Judge, &["a marker is left"])
        );
        // Both reject: both lists, the auditor's marked.
        assert_eq!(
            with_audit(rejected(RejectedBy::Judge, &["a"]), &reject(&["b"])),
            rejected(RejectedBy::Judge, &["a", "(auditor) b"])
        );
        // An inconclusive judge does not hide the auditor's rejection.
        let inconclusive = Outcome::Inconclusive {
            reason: "no verdict".into(),
        };
        assert_eq!(
            with_audit(inconclusive.clone(), &reject(&["b"])),
            rejected(RejectedBy::Auditor, &["b"])
        );
        assert_eq!(
            with_audit(inconclusive.clone(), &Ok(JudgeVerdict::Accept)),
            inconclusive
        );
    }

    #[test]
    fn only_two_accepts_accept_and_an_auditor_without_a_verdict_is_inconclusive() {
        assert_eq!(
            with_audit(Outcome::Accepted, &Ok(JudgeVerdict::Accept)),
            Outcome::Accepted
        );
        assert_eq!(
            with_audit(Outcome::Accepted, &Err("timed out".into())),
            Outcome::Inconclusive {
                reason: "the judge accepted, but the auditor gave no verdict: timed out".into()
            }
        );
    }
}
