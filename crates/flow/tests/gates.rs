//! A tier's gate decided from outside the runner, as plain values. Took over from
//! `crates/engine/tests/engine/gates.rs`:
//!
//! - `a_rejected_gate_re_invokes_its_tier_with_the_reason` (a rejected gate re-invokes its tier as the next
//!   attempt told the reason and the gate; its wiring — plan cancelled, new plan written with that feedback,
//!   its own gate opened — is driven by the kept
//!   `bounded_gates::rejections_spend_the_retry_budget_and_end_at_a_human_gate`, which now checks the
//!   feedback and the gates' events too).
//!
//! And the decisions behind the kept pause test: a pause holds the run, whatever the wait.

use agency_core::escalation::Failure;
use agency_core::gate::{GateKind, GateStatus};
use agency_core::tiers::BriefRole;
use agency_flow::AtGate;
use agency_flow::gate_timing::{GateCare, care};
use agency_flow::gates::at_gate;
use agency_flow::ladder::{AfterRejection, after_rejection};
use chrono::Duration;

const REASON: &str = "split add.sh and its check into separate workstreams";

#[test]
fn a_brief_at_its_gate_opens_it_once_waits_and_goes_on_or_is_re_invoked() {
    assert_eq!(at_gate(false, None), AtGate::Go, "no gate configured");
    assert_eq!(at_gate(false, Some(GateStatus::Rejected)), AtGate::Go);
    assert_eq!(at_gate(true, None), AtGate::Open);
    assert_eq!(at_gate(true, Some(GateStatus::Pending)), AtGate::Wait);
    assert_eq!(at_gate(true, Some(GateStatus::Approved)), AtGate::Go);
    assert_eq!(at_gate(true, Some(GateStatus::Rejected)), AtGate::Rejected);
}

#[test]
fn a_rejected_plan_is_re_invoked_as_the_next_attempt_told_the_reason_and_the_gate() {
    let after = after_rejection(BriefRole::Plan, 0, 2, GateKind::T1Plan, "tester", REASON);
    assert_eq!(
        after,
        AfterRejection::Retry {
            next_attempt: 1,
            feedback: format!(
                "A human (tester) rejected your output at the t1_plan gate: {REASON}\nRevise it accordingly."
            ),
        }
    );
}

#[test]
fn a_rejection_by_the_gates_timeout_says_nobody_decided() {
    let AfterRejection::Retry { feedback, .. } = after_rejection(
        BriefRole::Synthesis,
        0,
        1,
        GateKind::T2Synthesis,
        "timeout",
        "no decision within 1 s",
    ) else {
        panic!("not retried");
    };
    assert!(
        feedback.starts_with("Nobody decided at the t2_synthesis gate: no decision within 1 s"),
        "{feedback}"
    );
}

#[test]
fn the_rejection_that_spends_the_budget_escalates_to_a_human_saying_so() {
    for budget in [0, 1, 3] {
        let after = after_rejection(
            BriefRole::Plan,
            budget,
            budget,
            GateKind::T1Plan,
            "tester",
            "not like this",
        );
        let AfterRejection::Escalate { failure, why } = after else {
            panic!("budget {budget}: {after:?}");
        };
        assert_eq!(failure, Failure::T1Failure);
        assert_eq!(
            why,
            format!(
                "A human (tester) rejected your output at the t1_plan gate: not like this — attempt {} of {}, the \
                 retry budget is spent",
                budget + 1,
                budget + 1
            )
        );
    }
}

#[test]
fn a_pause_holds_the_run_however_long_it_waits_unless_auto_approve_probes() {
    for waited in [Duration::zero(), Duration::days(3)] {
        assert_eq!(
            care(GateKind::Pause, false, waited, Duration::seconds(1)),
            GateCare::Hold
        );
        assert_eq!(
            care(GateKind::Pause, true, waited, Duration::seconds(1)),
            GateCare::ProbeOutage
        );
    }
}
