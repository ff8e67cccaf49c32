//! The escalation ladder's decisions in the cases the engine's escalation tests drive, with plain values.
//! Took over from `crates/engine/tests/engine/escalation.rs`:
//!
//! - `repeated_escalation_stops_at_a_human_gate_that_auto_approve_does_not_pass` (the owner re-invoked
//!   while the run's escalations are within `max_escalations_before_gate`, then a human's gate, which
//!   `--auto-approve` does not pass; the escalation gate's wiring — held under auto-approve, rejected to a
//!   failed run — is driven by the kept `a_never_accepted_workstream_waits_at_its_gate_and_is_never_merged`);
//! - `a_full_t5_fail_on_a_shallow_path_escalates_to_t1_which_re_plans` (a joint verdict whose every slice
//!   failed escalates, to T1 on a path without T2, and the planner is re-invoked told why; the re-plan's
//!   wiring is driven by the kept `amendments::an_approval_made_under_a_replaced_plan_counts_for_nothing`,
//!   and the joint-verdict-fail-to-escalation wiring by `a_never_accepted_workstream_waits_at_its_gate_...`).
//!
//! And the kept `a_blocked_implementer_escalates_to_its_squad_lead_which_is_re_invoked`'s decision.

use agency_core::Tier;
use agency_core::escalation::{Decision, EscalationTarget, Failure, decide};
use agency_core::gate::GateKind;
use agency_core::tiers::BriefRole;
use agency_core::verdict::{SliceVerdict, T5Result};
use agency_flow::SquadVerdict;
use agency_flow::gate_timing::{GateCare, care};
use agency_flow::ladder::{Escalated, EscalationStep, Owner, escalate, target_within};
use agency_flow::tiers::on_blocked;
use agency_flow::verdicts::squad_verdict;
use chrono::Duration;

/// `max_escalations_before_gate` as team.yaml ships it.
const MAX_ESCALATIONS: u32 = 2;

fn owner(role: BriefRole, attempt: u32) -> Option<Owner> {
    Some(Owner {
        role,
        attempt,
        retry_budget: 2,
    })
}

#[test]
fn a_blocked_implementer_goes_to_its_squad_lead_at_once_which_is_re_invoked_told_why() {
    for attempt in [0, 1, 5] {
        let (failure, decision) = on_blocked(Tier::T4, BriefRole::Implementer, attempt, 3);
        assert_eq!(failure, Failure::T4Blocked);
        assert_eq!(
            decision,
            Decision::Escalate {
                to: EscalationTarget::Tier(Tier::T3)
            },
            "attempt {attempt}: never retried"
        );
    }
    let from = Escalated {
        tier: Tier::T4,
        title: "fix-mul",
        attempt: 0,
        why: "The brief does not say where mul.sh lives.",
    };
    let EscalationStep::ReInvoke {
        next_attempt,
        context,
    } = escalate(
        from,
        EscalationTarget::Tier(Tier::T3),
        1,
        MAX_ESCALATIONS,
        owner(BriefRole::SquadLead, 0),
    )
    else {
        panic!("the squad lead is not re-invoked");
    };
    assert_eq!(next_attempt, 1);
    assert!(
        context.starts_with(
            "Escalated to you from t4 \"fix-mul\" (attempt 0): The brief does not say where mul.sh lives."
        ),
        "{context}"
    );
}

#[test]
fn escalations_past_the_runs_limit_end_at_a_human_gate_after_two_re_invocations() {
    let from = Escalated {
        tier: Tier::T4,
        title: "fix-mul",
        attempt: 0,
        why: "stuck again",
    };
    let to = EscalationTarget::Tier(Tier::T3);
    let steps: Vec<EscalationStep> = (1..=3)
        .map(|escalations| {
            escalate(
                from,
                to,
                escalations,
                MAX_ESCALATIONS,
                owner(BriefRole::SquadLead, escalations as u32 - 1),
            )
        })
        .collect();
    assert!(
        matches!(steps[0], EscalationStep::ReInvoke { next_attempt: 1, .. }),
        "{steps:?}"
    );
    assert!(
        matches!(steps[1], EscalationStep::ReInvoke { next_attempt: 2, .. }),
        "{steps:?}"
    );
    assert_eq!(
        steps[2],
        EscalationStep::Gate {
            why: "repeated escalation (3 in this run): stuck again".into()
        }
    );
    // However many more come, the ladder stays at the gate.
    for escalations in 4..40 {
        assert!(matches!(
            escalate(
                from,
                to,
                escalations,
                MAX_ESCALATIONS,
                owner(BriefRole::SquadLead, 0)
            ),
            EscalationStep::Gate { .. }
        ));
    }
    assert_eq!(decide(Failure::RepeatedEscalation, 0, 5), Decision::OpenGate);
}

#[test]
fn an_escalation_gate_is_a_humans_and_auto_approve_never_passes_it() {
    for auto_approve in [false, true] {
        for waited in [Duration::zero(), Duration::hours(30)] {
            assert_eq!(
                care(GateKind::Escalation, auto_approve, waited, Duration::minutes(1)),
                GateCare::Remind,
                "auto_approve {auto_approve}, waited {waited}"
            );
        }
    }
}

fn failed(scope: &str, issue: &str) -> T5Result {
    T5Result {
        verifier_id: format!("v-{scope}"),
        scope: scope.into(),
        verdict: SliceVerdict::Fail,
        issues: vec![issue.into()],
        notes: String::new(),
    }
}

#[test]
fn a_full_t5_fail_escalates_past_the_tiers_a_shallow_path_lacks_to_t1_told_why() {
    let verdict = squad_verdict(
        "ws-arith",
        false,
        None,
        vec![
            failed("fix-mul", "the split ignores the shared contract"),
            failed("fix-add", "add.sh subtracts"),
        ],
    )
    .unwrap();
    let SquadVerdict::Fail { why, .. } = verdict else {
        panic!("not a fail: {verdict:?}");
    };
    assert!(
        why.contains("fix-mul: the split ignores the shared contract"),
        "{why}"
    );
    // A T5 fail is never retried: it goes above the squad lead, to T2 — or T1 where the path has no T2.
    let Decision::Escalate { to } = decide(Failure::T5Fail, 0, 3) else {
        panic!("a T5 fail does not escalate");
    };
    assert_eq!(to, EscalationTarget::Tier(Tier::T2));
    assert_eq!(
        target_within(to, &[Tier::T3, Tier::T4, Tier::T5]),
        EscalationTarget::Tier(Tier::T1)
    );
    assert_eq!(
        target_within(to, &[Tier::T4, Tier::T5]),
        EscalationTarget::Tier(Tier::T1)
    );
    assert_eq!(
        target_within(to, &[Tier::T2, Tier::T3, Tier::T4, Tier::T5]),
        EscalationTarget::Tier(Tier::T2)
    );
    // The planner, with retries left, is re-invoked (a re-plan) told what every slice missed.
    let step = escalate(
        Escalated {
            tier: Tier::T5,
            title: "fix-mul",
            attempt: 0,
            why: &why,
        },
        EscalationTarget::Tier(Tier::T1),
        1,
        MAX_ESCALATIONS,
        owner(BriefRole::Plan, 0),
    );
    let EscalationStep::ReInvoke {
        next_attempt,
        context,
    } = step
    else {
        panic!("the planner is not re-invoked: {step:?}");
    };
    assert_eq!(next_attempt, 1);
    assert!(
        context.contains("the split ignores the shared contract"),
        "{context}"
    );
}
