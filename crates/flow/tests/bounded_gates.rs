//! The decisions behind `crates/engine/tests/engine/bounded_gates.rs`, whose two engine tests stay (they
//! drive the retry loop over the store and the runner's gate clock): a tier gate waited past its timeout
//! is rejected by `timeout` and counts against the brief's budget like a human's rejection, while a
//! human's gate never times out and is announced again, once per period.

use agency_core::gate::GateKind;
use agency_core::tiers::BriefRole;
use agency_flow::gate_timing::{GateCare, care, reminder_due};
use agency_flow::ladder::{AfterRejection, after_rejection};
use chrono::Duration;

#[test]
fn a_tier_gate_waited_past_its_timeout_is_rejected_saying_how_long() {
    let timeout = Duration::seconds(1);
    assert_eq!(
        care(GateKind::T1Plan, false, Duration::zero(), timeout),
        GateCare::Hold
    );
    assert_eq!(
        care(GateKind::T1Plan, false, timeout, timeout),
        GateCare::Hold,
        "at the timeout, not yet"
    );
    assert_eq!(
        care(GateKind::T1Plan, false, Duration::milliseconds(1_001), timeout),
        GateCare::TimeOut {
            reason: "no decision within 1 s".into()
        }
    );
    assert_eq!(
        care(GateKind::T1Plan, true, Duration::hours(2), timeout),
        GateCare::AutoApprove,
        "auto-approve passes a tier's gate before any timeout"
    );
}

#[test]
fn timeouts_spend_the_budget_like_rejections_and_end_at_a_human() {
    let budget = 2;
    for attempt in 0..budget {
        assert!(matches!(
            after_rejection(BriefRole::Plan, attempt, budget, GateKind::T1Plan, "timeout", "no decision within 1 s"),
            AfterRejection::Retry { next_attempt, .. } if next_attempt == attempt + 1
        ));
    }
    let AfterRejection::Escalate { why, .. } = after_rejection(
        BriefRole::Plan,
        budget,
        budget,
        GateKind::T1Plan,
        "timeout",
        "no decision within 1 s",
    ) else {
        panic!("the budget's last timeout did not escalate");
    };
    assert!(why.starts_with("Nobody decided at the t1_plan gate"), "{why}");
    assert!(
        why.ends_with("attempt 3 of 3, the retry budget is spent"),
        "{why}"
    );
}

#[test]
fn a_humans_gate_never_times_out_and_is_reminded_once_per_period() {
    for kind in [GateKind::Escalation, GateKind::Budget, GateKind::Halt] {
        assert_eq!(
            care(kind, false, Duration::days(2), Duration::seconds(1)),
            GateCare::Remind,
            "{kind:?}"
        );
    }
    let every = Duration::seconds(1);
    assert_eq!(reminder_due(Duration::milliseconds(999), every, 0), None);
    assert_eq!(reminder_due(Duration::seconds(1), every, 0), Some(1));
    assert_eq!(
        reminder_due(Duration::milliseconds(1_500), every, 1),
        None,
        "sent already"
    );
    assert_eq!(
        reminder_due(Duration::seconds(3), every, 1),
        Some(3),
        "one reminder for the periods missed"
    );
    assert_eq!(reminder_due(Duration::hours(1), Duration::zero(), 0), None);
}
