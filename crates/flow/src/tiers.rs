//! What comes next for a brief whose agent reported (it is `verifying`: the runner still has work to do),
//! tier by tier, and what a failure leads to.
//!
//! - T1 plan → the `t1_plan` gate → the first stage starts ([`crate::stages`]);
//! - T2 lead → `t2_lead` gate → specialists; specialists, once all are done → the synthesis (its conflict
//!   cycles, [`crate::conflicts`]) → T1 validates it → the `t2_synthesis` gate → each specialist's squads;
//! - T3 squad lead, once every squad lead of its mesh has committed → `t3_plan` gate → T4 tasks;
//! - T4 → committed and verified on its branch → a T5 verifier for its slice;
//! - T5 → the joint verdict of its squad once every slice is signed off ([`crate::verdicts`]);
//! - T1 accept → the run succeeds, or a human decides.

use agency_core::escalation::{Decision, Failure, decide};
use agency_core::gate::GateKind;
use agency_core::tiers::BriefRole;
use agency_core::{BriefStatus, Tier};
use chrono::{DateTime, Duration, Utc};

use crate::attempts::Attempt;

/// What the runner does with a brief of a role whose agent reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// T1's plan: announce it, hold it at the `t1_plan` gate, then the run is running and the stages start.
    Plan,
    /// A role whose children are written at once, after its gate: a lead's specialists, a synthesis's
    /// squads.
    Expand(GateKind),
    /// A specialist: done; its lead's synthesis is written once every specialist is.
    FinishSpecialist,
    /// A squad lead: its tasks go out once its whole mesh has committed ([`mesh`]), after the `t3_plan`
    /// gate.
    Mesh,
    /// An implementer: commit, verify, hand its slice to a verifier.
    HandOver,
    /// A verifier: nothing on its own; its squad's joint verdict decides once every slice is judged.
    AwaitJointVerdict,
    /// T1's acceptance: the run succeeds, or a human decides.
    Accept,
    /// T1's ruling on T2 conflicts: published for the next synthesis, which waits on it.
    Rule,
    /// T1's check of a canonical architecture: its synthesis goes on to its gate, or is asked again.
    Validate,
}

/// What comes next for a `verifying` brief of `role`.
pub fn next_for(role: BriefRole) -> Next {
    match role {
        BriefRole::Plan => Next::Plan,
        BriefRole::Lead => Next::Expand(GateKind::T2Lead),
        BriefRole::Specialist => Next::FinishSpecialist,
        BriefRole::Synthesis => Next::Expand(GateKind::T2Synthesis),
        BriefRole::SquadLead => Next::Mesh,
        BriefRole::Implementer => Next::HandOver,
        BriefRole::Verifier => Next::AwaitJointVerdict,
        BriefRole::Accept => Next::Accept,
        BriefRole::Arbiter => Next::Rule,
        BriefRole::Validator => Next::Validate,
    }
}

/// Where a T3 mesh (the squad leads of one workstream, newest attempts) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mesh {
    /// A peer is still pending or at work: no tasks go out yet ([`mesh_clock`] says how long that may last).
    Negotiating,
    /// Every peer has reported: this squad lead's tasks go out after its gate.
    Committed,
}

/// Where the mesh of `peers` stands.
pub fn mesh<B: Attempt>(peers: &[&B]) -> Mesh {
    if peers
        .iter()
        .any(|p| matches!(p.status(), BriefStatus::Pending | BriefStatus::Running))
    {
        Mesh::Negotiating
    } else {
        Mesh::Committed
    }
}

/// What the clock of a mesh still negotiating says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeshClock {
    /// Within `t3_mesh_timeout_minutes`: a pass must come at this time even if nothing changes.
    WakeAt(DateTime<Utc>),
    /// Past it: escalate to T2 (never force-commit).
    TimedOut,
}

/// The clock of a mesh that started at `started` (its first peer's creation), at `now`, with `limit`.
pub fn mesh_clock(started: DateTime<Utc>, now: DateTime<Utc>, limit: Duration) -> MeshClock {
    if now - started <= limit {
        MeshClock::WakeAt(started + limit)
    } else {
        MeshClock::TimedOut
    }
}

/// Whether a lead's synthesis brief is due: the lead is done, it has specialists (current attempts,
/// `specialists`) and every one is done, and no synthesis was written yet.
pub fn synthesis_due<B: Attempt>(lead_done: bool, specialists: &[&B], has_synthesis: bool) -> bool {
    lead_done
        && !specialists.is_empty()
        && specialists.iter().all(|s| s.status() == BriefStatus::Done)
        && !has_synthesis
}

/// What is left once every workstream merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterMerged {
    /// T1's acceptance is written (once).
    WriteAccept,
    /// T1 accepted, but the runner stopped before it marked the run succeeded: that is all that is left.
    FinishAccepted,
    /// The acceptance is under way, or the run already ended.
    Nothing,
}

/// What is left once every workstream merged, given whether any accept brief exists, whether the newest
/// attempt of it is done, and whether the run has ended.
pub fn after_all_merged(any_accept: bool, newest_accept_done: bool, run_ended: bool) -> AfterMerged {
    if newest_accept_done && !run_ended {
        AfterMerged::FinishAccepted
    } else if !any_accept {
        AfterMerged::WriteAccept
    } else {
        AfterMerged::Nothing
    }
}

/// The failure a role's bad outcome counts as.
pub fn failure_of(role: BriefRole) -> Failure {
    match role {
        BriefRole::Plan | BriefRole::Accept | BriefRole::Arbiter | BriefRole::Validator => Failure::T1Failure,
        BriefRole::Lead | BriefRole::Specialist | BriefRole::Synthesis => Failure::T2DesignWrong,
        BriefRole::SquadLead => Failure::T3Stuck,
        BriefRole::Implementer => Failure::T4BadOutput,
        BriefRole::Verifier => Failure::T5Partial,
    }
}

/// What a failed brief (bad output, no report, partial work) of `role` at `attempt` with `retry_budget`
/// leads to: the escalation table's decision, except that T1 too gets its retries before the run is
/// surfaced to a human (a plan that does not validate is fed back to the planner).
pub fn on_failure(role: BriefRole, attempt: u32, retry_budget: u32) -> (Failure, Decision) {
    let failure = failure_of(role);
    let decision = match failure {
        Failure::T1Failure if attempt < retry_budget => Decision::Retry {
            next_attempt: attempt + 1,
        },
        _ => decide(failure, attempt, retry_budget),
    };
    (failure, decision)
}

/// What a blocked agent of `tier` and `role` leads to: an implementer's blocker goes to its owner at once.
pub fn on_blocked(tier: Tier, role: BriefRole, attempt: u32, retry_budget: u32) -> (Failure, Decision) {
    let failure = if tier == Tier::T4 {
        Failure::T4Blocked
    } else {
        failure_of(role)
    };
    (failure, decide(failure, attempt, retry_budget))
}

/// What a rejection at a tier's gate (by a human or the gate's timeout) leads to: a retry while attempts
/// remain, else an escalation gate for a human — never a loop of re-plans.
pub fn on_gate_rejection(attempt: u32, retry_budget: u32) -> Decision {
    if attempt < retry_budget {
        Decision::Retry {
            next_attempt: attempt + 1,
        }
    } else {
        Decision::OpenGate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attempts::tests::brief;
    use agency_core::escalation::EscalationTarget;

    #[test]
    fn every_role_has_a_next_step() {
        assert_eq!(next_for(BriefRole::Lead), Next::Expand(GateKind::T2Lead));
        assert_eq!(
            next_for(BriefRole::Synthesis),
            Next::Expand(GateKind::T2Synthesis)
        );
        assert_eq!(next_for(BriefRole::SquadLead), Next::Mesh);
        assert_eq!(next_for(BriefRole::Verifier), Next::AwaitJointVerdict);
    }

    #[test]
    fn a_mesh_commits_when_no_peer_is_at_work_and_times_out_after_its_limit() {
        let done = brief(Tier::T3, "a", 0, BriefStatus::Verifying);
        let busy = brief(Tier::T3, "b", 0, BriefStatus::Running);
        assert_eq!(mesh(&[&done, &busy]), Mesh::Negotiating);
        assert_eq!(mesh(&[&done]), Mesh::Committed);
        let start = Utc::now();
        let limit = Duration::minutes(30);
        assert_eq!(
            mesh_clock(start, start + Duration::minutes(30), limit),
            MeshClock::WakeAt(start + limit)
        );
        assert_eq!(
            mesh_clock(start, start + Duration::minutes(31), limit),
            MeshClock::TimedOut
        );
    }

    #[test]
    fn a_synthesis_is_due_once_every_specialist_is_done_and_only_once() {
        let a = brief(Tier::T2, "a", 0, BriefStatus::Done);
        let b = brief(Tier::T2, "b", 0, BriefStatus::Running);
        assert!(synthesis_due(true, &[&a], false));
        assert!(!synthesis_due(true, &[&a, &b], false));
        assert!(!synthesis_due(true, &[&a], true), "written already");
        assert!(!synthesis_due(false, &[&a], false), "lead not done");
        assert!(
            !synthesis_due::<agency_core::Brief>(true, &[], false),
            "no specialists"
        );
    }

    #[test]
    fn after_the_last_merge_t1_accepts_once() {
        assert_eq!(after_all_merged(false, false, false), AfterMerged::WriteAccept);
        assert_eq!(after_all_merged(true, false, false), AfterMerged::Nothing);
        assert_eq!(after_all_merged(true, true, false), AfterMerged::FinishAccepted);
        assert_eq!(after_all_merged(true, true, true), AfterMerged::Nothing);
    }

    #[test]
    fn failures_retry_while_the_budget_lasts_then_escalate() {
        assert_eq!(
            on_failure(BriefRole::Plan, 0, 2).1,
            Decision::Retry { next_attempt: 1 },
            "T1 gets its retries"
        );
        assert_eq!(on_failure(BriefRole::Plan, 2, 2).1, Decision::Halt);
        assert_eq!(
            on_failure(BriefRole::Implementer, 2, 2),
            (
                Failure::T4BadOutput,
                Decision::Escalate {
                    to: EscalationTarget::Tier(Tier::T2)
                }
            ),
            "the owner (T3) is out of retries too: its parent takes it"
        );
        assert_eq!(
            on_blocked(Tier::T4, BriefRole::Implementer, 0, 2),
            (
                Failure::T4Blocked,
                Decision::Escalate {
                    to: EscalationTarget::Tier(Tier::T3)
                }
            )
        );
        assert_eq!(on_gate_rejection(0, 1), Decision::Retry { next_attempt: 1 });
        assert_eq!(on_gate_rejection(1, 1), Decision::OpenGate);
    }
}
