//! What a run record is, and whether anybody drives it: the facts `agency runs`, `inspect` and the
//! dashboard need to say "no runner attached" instead of showing a dead run as `running` for ever.

use agency_core::RunId;

use crate::{Blackboard, Run, StoreError};

/// What a run record is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// A run of `agency run`, driven by a runner.
    Team,
    /// The record of a plan.md's goal sign-offs (`agency goal complete`).
    Goals,
    /// The record of a Claude Code, Codex or pi session's gate, or of `agency teachback start`.
    Session,
}

impl RunKind {
    /// Of `run`: goal records carry `goals_plan` in their configuration, session records none, team runs
    /// the whole team.yaml they started with.
    pub fn of(run: &Run) -> RunKind {
        if run.config.get("goals_plan").is_some() {
            RunKind::Goals
        } else if run.config.as_object().is_none_or(|o| o.is_empty()) {
            RunKind::Session
        } else {
            RunKind::Team
        }
    }

    /// `team`, `goals`, `session`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Team => "team",
            RunKind::Goals => "goals",
            RunKind::Session => "session",
        }
    }
}

/// Whether a runner drives `run` now. Asked by taking the run's driver lock for an instant, which a runner
/// holds for as long as it lives; `None` when the blackboard cannot say (a read-only handle).
pub fn runner_attached(store: &dyn Blackboard, run: RunId) -> Option<bool> {
    match store.lock_driver(run, "agency (looking whether a runner is attached)") {
        Ok(_lease) => Some(false),
        Err(StoreError::Driven { .. }) => Some(true),
        Err(_) => None,
    }
}

/// Whether `run` is a team run that has not ended and that no runner drives.
pub fn unattached(store: &dyn Blackboard, run: &Run) -> bool {
    RunKind::of(run) == RunKind::Team
        && !run.status.is_terminal()
        && runner_attached(store, run.id) == Some(false)
}
