//! The escalation ladder, beyond the first rung ([`crate::tiers::on_failure`] decides the first): what a
//! rejection at a tier's gate tells the retried tier, where an escalated failure goes (the owning
//! ancestor re-invoked with the failure as context, or a human), and what a human's answer to a HALT
//! gives the brief that raised it. The engine reads the facts (the run's escalations, the owner found up
//! the brief's parents), asks here, and carries the answer out.

use agency_core::Tier;
use agency_core::escalation::{Decision, EscalationTarget, Failure, decide};
use agency_core::gate::{GateKind, GateStatus};
use agency_core::tiers::BriefRole;

use crate::tiers::{failure_of, on_gate_rejection};

/// The tier path assumed for a workstream the approved plan does not name (or before a plan is approved):
/// the whole ladder below T1.
pub const FULL_PATH: [Tier; 4] = [Tier::T2, Tier::T3, Tier::T4, Tier::T5];

/// What a rejection at a tier's gate does to the brief it held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterRejection {
    /// Attempts remain: the brief is cancelled and `next_attempt` is written with `feedback`.
    Retry {
        /// The attempt number of the new brief.
        next_attempt: u32,
        /// What the new attempt is told, as its starting feedback.
        feedback: String,
    },
    /// The budget is spent: the brief is escalated to a human on an escalation gate saying `why`.
    Escalate {
        /// The failure the brief counts as.
        failure: Failure,
        /// Why, as the gate and the `escalated` event say it.
        why: String,
    },
}

/// Who rejected at a gate: a human by name, or nobody (`by` is `timeout`: the gate's timeout).
fn rejected_by(by: &str) -> String {
    if by == "timeout" {
        "Nobody decided".to_string()
    } else {
        format!("A human ({by}) rejected your output")
    }
}

/// What a rejection of a brief of `role` at `attempt` with `retry_budget`, at its `kind` gate, by `by`
/// (a human's name, or `timeout`) for `reason` leads to. A rejection always counts against the retry
/// budget like any failure, and once it is spent the ladder ends at a human, never in a loop of re-plans.
pub fn after_rejection(
    role: BriefRole,
    attempt: u32,
    retry_budget: u32,
    kind: GateKind,
    by: &str,
    reason: &str,
) -> AfterRejection {
    let who = rejected_by(by);
    match on_gate_rejection(attempt, retry_budget) {
        Decision::Retry { next_attempt } => AfterRejection::Retry {
            next_attempt,
            feedback: format!("{who} at the {kind} gate: {reason}\nRevise it accordingly."),
        },
        _ => AfterRejection::Escalate {
            failure: failure_of(role),
            why: format!(
                "{who} at the {kind} gate: {reason} — attempt {} of {}, the retry budget is spent",
                attempt.saturating_add(1),
                retry_budget.saturating_add(1)
            ),
        },
    }
}

/// Where an escalation to `to` lands within a workstream whose tiers are `path`: a tier the path skips
/// passes the failure on to the next one up (a shallow path has no T2, say).
pub fn target_within(to: EscalationTarget, path: &[Tier]) -> EscalationTarget {
    match (Decision::Escalate { to }).within_path(path) {
        Decision::Escalate { to } => to,
        _ => to,
    }
}

/// The brief an escalation is handed to, as the engine found it up the failed brief's parents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// Its role.
    pub role: BriefRole,
    /// Its attempt.
    pub attempt: u32,
    /// Its retry budget.
    pub retry_budget: u32,
}

/// The failed brief an escalation comes from.
#[derive(Debug, Clone, Copy)]
pub struct Escalated<'a> {
    /// Its tier.
    pub tier: Tier,
    /// Its title.
    pub title: &'a str,
    /// Its attempt.
    pub attempt: u32,
    /// Why it failed.
    pub why: &'a str,
}

/// What an escalation does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EscalationStep {
    /// A human decides, on an escalation gate saying `why`.
    Gate {
        /// What the gate says.
        why: String,
    },
    /// The owner is out of retries itself: its own failure goes up the ladder with `decision`.
    OwnerFails {
        /// The failure the owner counts as.
        failure: Failure,
        /// What the ladder does with it.
        decision: Decision,
        /// What the owner is told (kept with its failure).
        context: String,
    },
    /// The owner's unfinished descendants are cancelled and it is re-invoked as `next_attempt`, told
    /// `context`.
    ReInvoke {
        /// The attempt number of the owner's new brief.
        next_attempt: u32,
        /// What the owner is told.
        context: String,
    },
}

/// What an escalation of `from` to `to` does, in a run that has `escalations` escalated briefs (this one
/// included) against `max_escalations` (`retry.max_escalations_before_gate`), with `owner` the nearest
/// ancestor of the target tier when there is one. Too many escalations, a human target, or no such
/// ancestor each end at a gate; an owner with retries left is re-invoked, one without fails in turn.
pub fn escalate(
    from: Escalated<'_>,
    to: EscalationTarget,
    escalations: usize,
    max_escalations: u32,
    owner: Option<Owner>,
) -> EscalationStep {
    let why = from.why;
    if escalations > max_escalations as usize {
        return EscalationStep::Gate {
            why: format!("repeated escalation ({escalations} in this run): {why}"),
        };
    }
    let (EscalationTarget::Tier(_), Some(owner)) = (to, owner) else {
        return EscalationStep::Gate { why: why.to_string() };
    };
    let context = format!(
        "Escalated to you from {} \"{}\" (attempt {}): {why}\nRe-scope or correct your output so this cannot \
         happen again.",
        from.tier, from.title, from.attempt
    );
    if owner.attempt >= owner.retry_budget {
        let failure = failure_of(owner.role);
        return EscalationStep::OwnerFails {
            failure,
            decision: decide(failure, owner.attempt, owner.retry_budget),
            context,
        };
    }
    EscalationStep::ReInvoke {
        next_attempt: owner.attempt.saturating_add(1),
        context,
    }
}

/// What a decided `halt` gate does to the brief that raised the HALT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterHalt {
    /// Not decided yet.
    Wait,
    /// Acknowledged and resumed: the brief is written again as `next_attempt` with `retry_budget` (one
    /// more than it had: a HALT is not a failure, so the fresh attempt is not charged), told `feedback`.
    Resume {
        /// The attempt number of the fresh brief.
        next_attempt: u32,
        /// Its retry budget.
        retry_budget: u32,
        /// What it is told.
        feedback: String,
    },
    /// Cancelled: the brief and the run are cancelled.
    Cancel,
}

/// What a `halt` gate in `status`, decided `by` with `note`, does to a brief at `attempt` with
/// `retry_budget`.
pub fn after_halt(status: GateStatus, by: &str, note: &str, attempt: u32, retry_budget: u32) -> AfterHalt {
    match status {
        GateStatus::Pending => AfterHalt::Wait,
        GateStatus::Approved => AfterHalt::Resume {
            next_attempt: attempt.saturating_add(1),
            retry_budget: retry_budget.saturating_add(1),
            feedback: format!(
                "You raised a HALT; a human ({by}) acknowledged it and resumed the run. Their note: {note}"
            ),
        },
        GateStatus::Rejected => AfterHalt::Cancel,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const ROLES: [BriefRole; 10] = [
        BriefRole::Plan,
        BriefRole::Lead,
        BriefRole::Specialist,
        BriefRole::Synthesis,
        BriefRole::SquadLead,
        BriefRole::Implementer,
        BriefRole::Verifier,
        BriefRole::Accept,
        BriefRole::Arbiter,
        BriefRole::Validator,
    ];

    fn from(why: &str) -> Escalated<'_> {
        Escalated {
            tier: Tier::T4,
            title: "add mul",
            attempt: 2,
            why,
        }
    }

    fn owner(attempt: u32, retry_budget: u32) -> Option<Owner> {
        Some(Owner {
            role: BriefRole::SquadLead,
            attempt,
            retry_budget,
        })
    }

    #[test]
    fn a_rejection_retries_with_the_reason_then_escalates_to_a_human() {
        let retry = after_rejection(BriefRole::Lead, 0, 1, GateKind::T2Lead, "ana", "too broad");
        assert_eq!(
            retry,
            AfterRejection::Retry {
                next_attempt: 1,
                feedback: "A human (ana) rejected your output at the t2_lead gate: too broad\nRevise it \
                           accordingly."
                    .into()
            }
        );
        let spent = after_rejection(
            BriefRole::Lead,
            1,
            1,
            GateKind::T2Lead,
            "timeout",
            "no decision within 5 s",
        );
        assert_eq!(
            spent,
            AfterRejection::Escalate {
                failure: Failure::T2DesignWrong,
                why:
                    "Nobody decided at the t2_lead gate: no decision within 5 s — attempt 2 of 2, the retry \
                      budget is spent"
                        .into()
            }
        );
        // A budget of none: the first rejection goes to a human.
        assert!(matches!(
            after_rejection(BriefRole::Plan, 0, 0, GateKind::T1Plan, "ana", "no"),
            AfterRejection::Escalate { .. }
        ));
        // Never wraps at the edge.
        assert!(matches!(
            after_rejection(BriefRole::Plan, u32::MAX, u32::MAX, GateKind::T1Plan, "ana", "no"),
            AfterRejection::Escalate { .. }
        ));
    }

    #[test]
    fn an_escalation_reinvokes_its_owner_or_ends_at_a_gate() {
        let to = EscalationTarget::Tier(Tier::T3);
        match escalate(from("tests fail"), to, 1, 3, owner(0, 2)) {
            EscalationStep::ReInvoke {
                next_attempt,
                context,
            } => {
                assert_eq!(next_attempt, 1);
                assert!(
                    context.starts_with("Escalated to you from t4 \"add mul\" (attempt 2): tests fail"),
                    "{context}"
                );
            }
            other => panic!("{other:?}"),
        }
        // The owner is out of retries: it fails in turn, up the ladder.
        match escalate(from("tests fail"), to, 1, 3, owner(2, 2)) {
            EscalationStep::OwnerFails {
                failure, decision, ..
            } => {
                assert_eq!(failure, Failure::T3Stuck);
                assert_eq!(
                    decision,
                    Decision::Escalate {
                        to: EscalationTarget::Tier(Tier::T1)
                    },
                    "a squad lead out of retries goes past its lead to T1"
                );
            }
            other => panic!("{other:?}"),
        }
        // No such ancestor, a human target, or too many escalations: a human decides.
        assert_eq!(
            escalate(from("x"), to, 1, 3, None),
            EscalationStep::Gate { why: "x".into() }
        );
        assert_eq!(
            escalate(from("x"), EscalationTarget::Human, 1, 3, owner(0, 2)),
            EscalationStep::Gate { why: "x".into() }
        );
        assert_eq!(
            escalate(from("x"), to, 4, 3, owner(0, 2)),
            EscalationStep::Gate {
                why: "repeated escalation (4 in this run): x".into()
            }
        );
        // At the limit itself the owner is still re-invoked.
        assert!(matches!(
            escalate(from("x"), to, 3, 3, owner(0, 2)),
            EscalationStep::ReInvoke { .. }
        ));
        assert!(matches!(
            escalate(from("x"), to, 1, 0, owner(0, 2)),
            EscalationStep::Gate { .. }
        ));
    }

    #[test]
    fn a_shallow_path_passes_an_escalation_on_to_the_next_tier_it_has() {
        let t2 = EscalationTarget::Tier(Tier::T2);
        assert_eq!(target_within(t2, &FULL_PATH), t2);
        assert_eq!(
            target_within(t2, &[Tier::T3, Tier::T4, Tier::T5]),
            EscalationTarget::Tier(Tier::T1)
        );
        assert_eq!(
            target_within(EscalationTarget::Human, &[Tier::T4]),
            EscalationTarget::Human
        );
    }

    #[test]
    fn a_halt_resumed_gives_a_fresh_uncharged_attempt_or_cancels() {
        assert_eq!(after_halt(GateStatus::Pending, "", "", 0, 2), AfterHalt::Wait);
        assert_eq!(
            after_halt(GateStatus::Approved, "ana", "rotated the key", 1, 2),
            AfterHalt::Resume {
                next_attempt: 2,
                retry_budget: 3,
                feedback:
                    "You raised a HALT; a human (ana) acknowledged it and resumed the run. Their note: \
                           rotated the key"
                        .into()
            }
        );
        assert_eq!(
            after_halt(GateStatus::Rejected, "ana", "", 1, 2),
            AfterHalt::Cancel
        );
    }

    /// One brief per tier on a chain T1..T5, each with its attempt and budget: the state an escalation
    /// climbs through.
    fn chain() -> impl Strategy<Value = Vec<(u32, u32)>> {
        prop::collection::vec((0u32..4, 0u32..4), 5)
    }

    fn role_of(tier: Tier) -> BriefRole {
        match tier {
            Tier::T1 => BriefRole::Plan,
            Tier::T2 => BriefRole::Lead,
            Tier::T3 => BriefRole::SquadLead,
            Tier::T4 => BriefRole::Implementer,
            Tier::T5 => BriefRole::Verifier,
        }
    }

    proptest! {
        /// Whatever fails, however the budgets stand, failing again and again never loops: every step
        /// either spends an attempt or climbs a tier, and the ladder ends at a human (an escalation gate,
        /// or the run halted for one to look at).
        #[test]
        fn the_ladder_always_ends_at_a_human(
            budgets in chain(),
            start in 0usize..5,
            max_escalations in 0u32..6,
        ) {
            let tiers = [Tier::T1, Tier::T2, Tier::T3, Tier::T4, Tier::T5];
            let mut state: Vec<(u32, u32)> = budgets.iter().map(|(a, b)| ((*a).min(*b), *b)).collect();
            let mut at = start;
            let mut escalations = 0usize;
            let (_, first) = crate::tiers::on_failure(role_of(tiers[at]), state[at].0, state[at].1);
            let mut decision = first;
            for _ in 0..200 {
                match decision {
                    Decision::OpenGate | Decision::Halt => return Ok(()),
                    Decision::Retry { next_attempt } => {
                        prop_assert!(next_attempt > state[at].0, "a retry spends an attempt");
                        state[at].0 = next_attempt;
                        decision = crate::tiers::on_failure(role_of(tiers[at]), state[at].0, state[at].1).1;
                    }
                    Decision::Escalate { to } => {
                        escalations += 1;
                        let owner = match to {
                            EscalationTarget::Tier(t) => {
                                let i = tiers.iter().position(|x| *x == t).unwrap_or(0);
                                prop_assert!(i < at, "an escalation goes up, never sideways");
                                Some((i, Owner { role: role_of(t), attempt: state[i].0, retry_budget: state[i].1 }))
                            }
                            EscalationTarget::Human => None,
                        };
                        let from = Escalated { tier: tiers[at], title: "t", attempt: state[at].0, why: "w" };
                        match escalate(from, to, escalations, max_escalations, owner.map(|(_, o)| o)) {
                            EscalationStep::Gate { .. } => return Ok(()),
                            EscalationStep::OwnerFails { decision: next, .. } => {
                                at = owner.map_or(0, |(i, _)| i);
                                decision = next;
                            }
                            EscalationStep::ReInvoke { next_attempt, .. } => {
                                let i = owner.map_or(0, |(i, _)| i);
                                prop_assert!(next_attempt > state[i].0);
                                at = i;
                                state[i].0 = next_attempt;
                                decision = crate::tiers::on_failure(role_of(tiers[at]), state[at].0, state[at].1).1;
                            }
                        }
                    }
                }
            }
            prop_assert!(false, "the ladder did not end within 200 steps");
        }

        /// A rejection always counts against the budget: rejecting again and again reaches the human's
        /// gate after exactly the attempts that were left.
        #[test]
        fn a_rejection_always_counts_against_the_budget(
            role in prop::sample::select(ROLES.to_vec()),
            budget in 0u32..6,
            first in 0u32..6,
        ) {
            let mut attempt = first.min(budget);
            let mut rejections = 0;
            loop {
                rejections += 1;
                match after_rejection(role, attempt, budget, GateKind::T3Plan, "ana", "no") {
                    AfterRejection::Retry { next_attempt, .. } => {
                        prop_assert_eq!(next_attempt, attempt + 1);
                        attempt = next_attempt;
                    }
                    AfterRejection::Escalate { failure, .. } => {
                        prop_assert_eq!(failure, failure_of(role));
                        break;
                    }
                }
            }
            prop_assert_eq!(rejections, budget - first.min(budget) + 1);
        }
    }
}
