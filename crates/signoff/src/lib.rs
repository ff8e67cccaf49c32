//! `agency-signoff` decides whether work claimed done is done: the two-stage sign-off of DESIGN §3, as a
//! library the runner (T5, T1 accept) and `agency goal complete` both call.
//!
//! [`sign_off`] takes a goal contract, the commit under review, the goal's base commit and the agent's
//! evidence, and:
//! 1. checks out the commit in a temporary detached worktree ([`checkout`]), so uncommitted work does not
//!    count;
//! 2. runs the **mechanical checks**, which reject on their own whatever a judge would say: the contract is
//!    the one agreed when the goal was set (a softened one is refused, and the agreed one is used); the evidence
//!    names files that exist in the commit and quotes lines that are in them ([`evidence`]); no protected
//!    path (tests, the verify command's files, test-runner configuration) changed since the base unless
//!    the contract's `may_edit` authorises it ([`protected`]);
//! 3. runs **stage 1**, the contract's verify command, shell-free with a timeout ([`verify_command`]); a failure
//!    rejects with its output tail and no model is called;
//! 4. runs **stage 2**, a read-only judge through any agent runtime ([`judge`]), whose answer must end in a
//!    strict verdict block ([`verdict`]); a judge that fails or gives no verdict makes the sign-off
//!    *inconclusive*, which blocks or not by policy ([`SignoffReport::blocks`]); where the work's variety
//!    score requires it (7 and above), an **auditor** reviews the same checkout beside the judge without
//!    the implementer's claims or evidence, and a rejection by either rejects ([`judge_and_audit_stage`]).
//!
//! With a [`Recording`], every step is written to the blackboard: `signoff_started`, the verify record and
//! judge transcript as artifacts, `signoff_verify`, and the outcome event ([`record`]).

pub mod checkout;
pub mod evidence;
pub mod glob;
pub mod judge;
pub mod links;
pub mod outcome;
mod pipeline;
pub mod protected;
pub mod record;
pub mod runners;
pub mod verdict;
pub mod verify_command;

pub use checkout::{CheckoutPlace, CleanCheckout};
pub use judge::{AUDITOR_SYSTEM, Judge, JudgeInput, JudgeRun, RunAs};
pub use outcome::{Audit, Outcome, ProtectedEdit, RejectedBy, SignoffReport, verdict_word, with_audit};
pub use pipeline::{
    Checked, Diffed, SignoffRequest, Verified, check, contract_changes, judge_and_audit_stage, judge_stage,
    protected_edits, sign_off, sign_off_blocking,
};
pub use record::Recording;
pub use verdict::{JudgeVerdict, parse_verdict};
pub use verify_command::VerifyResult;

/// Why a sign-off could not be carried out at all (as opposed to rejecting the work).
#[derive(Debug, thiserror::Error)]
pub enum SignoffError {
    /// The request itself is unusable: an empty contract, a verify command that needs a shell.
    #[error("{0}")]
    Input(String),
    /// git failed.
    #[error("{what}: {source}")]
    Git {
        /// What was being done.
        what: String,
        /// git's error.
        source: agency_exec::GitError,
    },
    /// A file-system operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// The blackboard refused a write.
    #[error("recording the sign-off: {0}")]
    Store(agency_store::StoreError),
    /// The judge's or the auditor's provider stayed unavailable past its retries (overloaded, rate
    /// limited, unreachable, a 5xx, a stall). Nothing was judged: no outcome is recorded, and the sign-off
    /// may be asked again once the provider answers.
    #[error("the {who}'s provider is unavailable: {error}")]
    ProviderUnavailable {
        /// `judge` or `auditor`.
        who: &'static str,
        /// The provider's last error.
        error: agency_llm::LlmError,
    },
    /// Something that should not happen.
    #[error("{0}")]
    Internal(String),
}
