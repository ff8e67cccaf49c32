//! The failure-handling ladder (seed 001, "Failure Handling") as data plus one pure decision function.
//! Ownership is distributed: each tier handles failures of the tier below it, and the runner owns only a T1
//! failure and terminal human escalation. Retries are bounded by the brief's retry budget; past it, a failure
//! goes upward, never sideways.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tier::Tier;

/// A kind of failure, one per row of the seed's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// An implementer produced wrong output.
    T4BadOutput,
    /// An implementer cannot proceed (missing access, contradictory brief).
    T4Blocked,
    /// An implementer finished part of its task.
    T4Partial,
    /// Some verifiers failed their slices.
    T5Partial,
    /// Every verifier failed its slice.
    T5Fail,
    /// A squad lead cannot deliver its workstream (including a T3 mesh timeout).
    T3Stuck,
    /// The architecture turned out wrong.
    T2DesignWrong,
    /// The planner failed or crashed.
    T1Failure,
    /// The same work keeps escalating.
    RepeatedEscalation,
}

/// Who handles a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Owner {
    /// The tier above the failing one, in its own context.
    Tier(Tier),
    /// The runner itself.
    Runner,
}

/// What the owner does about a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Retry the T4 with a corrected brief, up to the retry budget.
    RetryWithCorrectedBrief,
    /// Hand the problem to the owner at once, with no retries.
    EscalateImmediately,
    /// Keep the good parts, re-task the remainder.
    SalvageAndRetask,
    /// Retry only the failed T4 slices, then re-verify them.
    RetryFailedSlices,
    /// Escalate to the owner's parent tier.
    EscalateToParent,
    /// Re-scope or split the workstream.
    Rescope,
    /// Re-plan; the planner may discard a workstream and restart it.
    Replan,
    /// Surface the failure to the human and halt the run.
    SurfaceAndHalt,
    /// Block on a gate until a human unblocks.
    HumanGate,
}

/// One row of the failure table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureRow {
    /// The failure.
    pub failure: Failure,
    /// Who handles it.
    pub owner: Owner,
    /// Where the handling logic lives, as the seed names it.
    pub handler: &'static str,
    /// What the handler does.
    pub action: Action,
}

/// The seed's failure-handling table, row for row.
pub const FAILURE_TABLE: [FailureRow; 9] = [
    row(
        Failure::T4BadOutput,
        Owner::Tier(Tier::T3),
        "escalation logic in T3's context",
        Action::RetryWithCorrectedBrief,
    ),
    row(
        Failure::T4Blocked,
        Owner::Tier(Tier::T3),
        "escalation logic in T3's context",
        Action::EscalateImmediately,
    ),
    row(
        Failure::T4Partial,
        Owner::Tier(Tier::T3),
        "escalation logic in T3's context",
        Action::SalvageAndRetask,
    ),
    row(
        Failure::T5Partial,
        Owner::Tier(Tier::T3),
        "T3 joint verdict logic",
        Action::RetryFailedSlices,
    ),
    row(
        Failure::T5Fail,
        Owner::Tier(Tier::T3),
        "T3 joint verdict logic",
        Action::EscalateToParent,
    ),
    row(
        Failure::T3Stuck,
        Owner::Tier(Tier::T2),
        "T2 specialist prompt + blackboard",
        Action::Rescope,
    ),
    row(
        Failure::T2DesignWrong,
        Owner::Tier(Tier::T1),
        "T1 accept phase + blackboard",
        Action::Replan,
    ),
    row(
        Failure::T1Failure,
        Owner::Runner,
        "runner",
        Action::SurfaceAndHalt,
    ),
    row(
        Failure::RepeatedEscalation,
        Owner::Runner,
        "runner",
        Action::HumanGate,
    ),
];

const fn row(failure: Failure, owner: Owner, handler: &'static str, action: Action) -> FailureRow {
    FailureRow {
        failure,
        owner,
        handler,
        action,
    }
}

impl Failure {
    /// Every failure, in table order.
    pub const ALL: [Failure; 9] = [
        Failure::T4BadOutput,
        Failure::T4Blocked,
        Failure::T4Partial,
        Failure::T5Partial,
        Failure::T5Fail,
        Failure::T3Stuck,
        Failure::T2DesignWrong,
        Failure::T1Failure,
        Failure::RepeatedEscalation,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::T4BadOutput => "t4_bad_output",
            Failure::T4Blocked => "t4_blocked",
            Failure::T4Partial => "t4_partial",
            Failure::T5Partial => "t5_partial",
            Failure::T5Fail => "t5_fail",
            Failure::T3Stuck => "t3_stuck",
            Failure::T2DesignWrong => "t2_design_wrong",
            Failure::T1Failure => "t1_failure",
            Failure::RepeatedEscalation => "repeated_escalation",
        }
    }

    /// This failure's row of [`FAILURE_TABLE`].
    pub fn row(self) -> &'static FailureRow {
        // The table lists the failures in `ALL` order; the test `table_is_in_all_order` pins that.
        &FAILURE_TABLE[self as usize]
    }

    /// Who handles it.
    pub fn owner(self) -> Owner {
        self.row().owner
    }

    /// What the owner does.
    pub fn action(self) -> Action {
        self.row().action
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure name this build does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown failure \"{0}\"")]
pub struct UnknownFailure(pub String);

impl FromStr for Failure {
    type Err = UnknownFailure;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Failure::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownFailure(s.to_string()))
    }
}

/// Where an escalation goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EscalationTarget {
    /// A tier, which now decides with the failure's context.
    Tier(Tier),
    /// The human, through an escalation gate: the ladder has no rung left.
    Human,
}

/// What to do about one failure now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "decision")]
pub enum Decision {
    /// The owner retries (corrected brief, salvage, failed slices, re-scope or re-plan, per its action).
    Retry {
        /// The attempt number the new brief carries.
        next_attempt: u32,
    },
    /// Hand the failure upward.
    Escalate {
        /// The tier (or the human) that now owns it.
        to: EscalationTarget,
    },
    /// Surface to the human and halt the run.
    Halt,
    /// Block on an escalation gate until a human unblocks.
    OpenGate,
}

/// What to do about `failure` of a brief whose attempt `attempt` (0 for the first try) just failed, given
/// its `retry_budget` (how many retries it may have). Retrying actions retry while `attempt < retry_budget`
/// and then escalate to the owner's parent; a T4 blocker goes straight to its owner (T3); a full T5 fail
/// goes straight to T2; a planner that cannot re-plan any more goes to the human. Escalation is always
/// upward, never to a sibling. Use [`Decision::within_path`] to skip tiers a shallow path does not have.
pub fn decide(failure: Failure, attempt: u32, retry_budget: u32) -> Decision {
    let up = |tier: Tier| Decision::Escalate {
        to: match tier.parent() {
            Some(parent) => EscalationTarget::Tier(parent),
            None => EscalationTarget::Human,
        },
    };
    let retry_or = |exhausted: Decision| {
        if attempt < retry_budget {
            Decision::Retry {
                next_attempt: attempt.saturating_add(1),
            }
        } else {
            exhausted
        }
    };
    match failure {
        Failure::T4BadOutput | Failure::T4Partial | Failure::T5Partial => retry_or(up(Tier::T3)),
        Failure::T4Blocked => Decision::Escalate {
            to: EscalationTarget::Tier(Tier::T3),
        },
        Failure::T5Fail => up(Tier::T3),
        Failure::T3Stuck => retry_or(up(Tier::T2)),
        Failure::T2DesignWrong => retry_or(up(Tier::T1)),
        Failure::T1Failure => Decision::Halt,
        Failure::RepeatedEscalation => Decision::OpenGate,
    }
}

impl Decision {
    /// Rewrites an escalation to a tier the workstream's path does not have (a shallow path) to the nearest
    /// tier above it that the path does have, or T1, which always exists because it planned the run. Seed:
    /// "fail → T3 escalates to T2 (or T1 if shallow path)".
    pub fn within_path(self, tier_path: &[Tier]) -> Decision {
        match self {
            Decision::Escalate {
                to: EscalationTarget::Tier(mut tier),
            } => {
                while tier != Tier::T1 && !tier_path.contains(&tier) {
                    tier = tier.parent().unwrap_or(Tier::T1);
                }
                Decision::Escalate {
                    to: EscalationTarget::Tier(tier),
                }
            }
            other => other,
        }
    }
}

/// The retry budget a brief gets: the tier's base budget times the plan's multiplier (1× simple, 2×
/// complex). A multiplier below 1 counts as 1, since plan validation refuses it and it must never silently
/// take away the retries the base grants. Saturates instead of overflowing.
pub fn retry_budget(base: u32, multiplier: u32) -> u32 {
    base.saturating_mul(multiplier.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_tier(tier: Tier) -> Decision {
        Decision::Escalate {
            to: EscalationTarget::Tier(tier),
        }
    }

    #[test]
    fn table_is_in_all_order_and_matches_the_seed() {
        for (i, failure) in Failure::ALL.into_iter().enumerate() {
            assert_eq!(FAILURE_TABLE[i].failure, failure);
            assert_eq!(failure.row().failure, failure);
        }
        let t3 = Owner::Tier(Tier::T3);
        let expected = [
            (t3, Action::RetryWithCorrectedBrief),
            (t3, Action::EscalateImmediately),
            (t3, Action::SalvageAndRetask),
            (t3, Action::RetryFailedSlices),
            (t3, Action::EscalateToParent),
            (Owner::Tier(Tier::T2), Action::Rescope),
            (Owner::Tier(Tier::T1), Action::Replan),
            (Owner::Runner, Action::SurfaceAndHalt),
            (Owner::Runner, Action::HumanGate),
        ];
        for (failure, (owner, action)) in Failure::ALL.into_iter().zip(expected) {
            assert_eq!((failure.owner(), failure.action()), (owner, action), "{failure}");
        }
    }

    #[test]
    fn t4_bad_output_retries_to_the_budget_then_escalates_to_t2() {
        assert_eq!(
            decide(Failure::T4BadOutput, 0, 2),
            Decision::Retry { next_attempt: 1 }
        );
        assert_eq!(
            decide(Failure::T4BadOutput, 1, 2),
            Decision::Retry { next_attempt: 2 }
        );
        assert_eq!(decide(Failure::T4BadOutput, 2, 2), to_tier(Tier::T2));
        assert_eq!(decide(Failure::T4BadOutput, 0, 0), to_tier(Tier::T2));
    }

    #[test]
    fn t4_blocked_goes_to_t3_without_retries() {
        for attempt in 0..3 {
            assert_eq!(decide(Failure::T4Blocked, attempt, 5), to_tier(Tier::T3));
        }
    }

    #[test]
    fn t4_partial_salvages_within_the_budget() {
        assert_eq!(
            decide(Failure::T4Partial, 0, 1),
            Decision::Retry { next_attempt: 1 }
        );
        assert_eq!(decide(Failure::T4Partial, 1, 1), to_tier(Tier::T2));
    }

    #[test]
    fn t5_partial_retries_failed_slices_within_the_budget() {
        assert_eq!(
            decide(Failure::T5Partial, 0, 1),
            Decision::Retry { next_attempt: 1 }
        );
        assert_eq!(decide(Failure::T5Partial, 1, 1), to_tier(Tier::T2));
    }

    #[test]
    fn t5_fail_escalates_to_t2_at_once() {
        assert_eq!(decide(Failure::T5Fail, 0, 9), to_tier(Tier::T2));
    }

    #[test]
    fn t3_stuck_rescopes_then_goes_to_t1() {
        assert_eq!(
            decide(Failure::T3Stuck, 0, 1),
            Decision::Retry { next_attempt: 1 }
        );
        assert_eq!(decide(Failure::T3Stuck, 1, 1), to_tier(Tier::T1));
    }

    #[test]
    fn t2_design_wrong_replans_then_goes_to_the_human() {
        assert_eq!(
            decide(Failure::T2DesignWrong, 0, 1),
            Decision::Retry { next_attempt: 1 }
        );
        assert_eq!(
            decide(Failure::T2DesignWrong, 1, 1),
            Decision::Escalate {
                to: EscalationTarget::Human
            }
        );
    }

    #[test]
    fn runner_rows_halt_or_gate_regardless_of_budget() {
        for attempt in [0, 1, 100] {
            assert_eq!(decide(Failure::T1Failure, attempt, 10), Decision::Halt);
            assert_eq!(
                decide(Failure::RepeatedEscalation, attempt, 10),
                Decision::OpenGate
            );
        }
    }

    #[test]
    fn escalation_is_always_upward() {
        for failure in Failure::ALL {
            for attempt in 0..4 {
                if let (
                    Decision::Escalate {
                        to: EscalationTarget::Tier(to),
                    },
                    Owner::Tier(owner),
                ) = (decide(failure, attempt, 2), failure.owner())
                {
                    assert!(to <= owner, "{failure} escalated down or sideways to {to}");
                }
            }
        }
    }

    #[test]
    fn shallow_paths_skip_missing_tiers() {
        let t5_fail = decide(Failure::T5Fail, 0, 1);
        assert_eq!(
            t5_fail.within_path(&[Tier::T2, Tier::T3, Tier::T4, Tier::T5]),
            to_tier(Tier::T2)
        );
        assert_eq!(
            t5_fail.within_path(&[Tier::T3, Tier::T4, Tier::T5]),
            to_tier(Tier::T1)
        );
        assert_eq!(
            to_tier(Tier::T3).within_path(&[Tier::T4, Tier::T5]),
            to_tier(Tier::T1)
        );
        assert_eq!(Decision::Halt.within_path(&[]), Decision::Halt);
        let retry = Decision::Retry { next_attempt: 1 };
        assert_eq!(retry.within_path(&[Tier::T4, Tier::T5]), retry);
    }

    #[test]
    fn retry_budget_multiplies_and_saturates() {
        assert_eq!(retry_budget(2, 1), 2);
        assert_eq!(retry_budget(2, 2), 4);
        assert_eq!(retry_budget(2, 0), 2);
        assert_eq!(retry_budget(0, 3), 0);
        assert_eq!(retry_budget(u32::MAX, 2), u32::MAX);
    }

    #[test]
    fn decisions_have_a_stable_wire_shape() {
        assert_eq!(
            serde_json::to_value(Decision::Retry { next_attempt: 2 }).unwrap(),
            serde_json::json!({"decision": "retry", "next_attempt": 2})
        );
        assert_eq!(
            serde_json::to_value(to_tier(Tier::T2)).unwrap(),
            serde_json::json!({"decision": "escalate", "to": {"tier": "t2"}})
        );
        assert_eq!(
            serde_json::to_value(Failure::T5Fail).unwrap(),
            serde_json::json!("t5_fail")
        );
    }
}
