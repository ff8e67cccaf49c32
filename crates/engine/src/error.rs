//! The runner's errors. A failing *agent* is not an error here — it is a failed brief that the escalation
//! ladder handles; these are the things that stop the runner itself.

use agency_exec::GitError;
use agency_store::StoreError;

/// Why the runner could not go on.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The blackboard refused or failed.
    #[error("blackboard: {0}")]
    Store(#[from] StoreError),
    /// A git operation failed.
    #[error("git: {0}")]
    Git(#[from] GitError),
    /// The configuration cannot run (a tier with no runtime, a level with no model).
    #[error("configuration: {0}")]
    Config(String),
    /// A stored record is not what the runner wrote (corrupt or from another version).
    #[error("inconsistent run state: {0}")]
    State(String),
    /// The runner stopped on `error`, and giving its claims back failed too (the blackboard is the likely
    /// cause of both): they return to the run when their lease ends.
    #[error("{error}; {}", unreleased(release, error))]
    Unreleased {
        /// Why the runner stopped.
        error: Box<EngineError>,
        /// Why its claims could not be given back.
        release: Box<EngineError>,
    },
    /// The run was cancelled.
    #[error("cancelled")]
    Cancelled,
}

/// What an [`EngineError::Unreleased`] says of its claims: the cause once, when giving them back failed
/// for the same reason as the runner (a full disk, a lost database).
fn unreleased(release: &EngineError, error: &EngineError) -> String {
    let cause = release.to_string();
    let because = if cause == error.to_string() {
        "for the same reason".to_string()
    } else {
        format!("({cause})")
    };
    format!("its claims could not be given back {because}: they return to the run when their lease ends")
}

/// The runner's result type.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;
