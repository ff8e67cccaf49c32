//! Where a brief stands at its gate. A tier's output may wait for a human at a gate (team.yaml's
//! `visibility.gates`); the runner opens it once, waits while it is pending, goes on when it is approved,
//! and re-invokes the tier with the reason when it is rejected.

use agency_core::gate::GateStatus;

/// Where a brief stands at its gate, and so what the runner does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtGate {
    /// No gate is configured, or it was approved: go on.
    Go,
    /// The gate is configured and was never opened for this brief: open it, then wait.
    Open,
    /// Waiting for a decision.
    Wait,
    /// Rejected: the tier is re-invoked with the reason (or escalated, its budget spent).
    Rejected,
}

/// Where a brief stands at a gate of a kind that is `enabled`, given the newest such gate opened for it.
pub fn at_gate(enabled: bool, newest: Option<GateStatus>) -> AtGate {
    if !enabled {
        return AtGate::Go;
    }
    match newest {
        None => AtGate::Open,
        Some(GateStatus::Pending) => AtGate::Wait,
        Some(GateStatus::Approved) => AtGate::Go,
        Some(GateStatus::Rejected) => AtGate::Rejected,
    }
}

/// What a decided escalation gate does to the escalated brief it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EscalationGateStep {
    /// Not decided yet.
    Wait,
    /// Approved: the brief is cancelled and written again as a fresh attempt with a fresh retry budget.
    RetryFresh,
    /// Rejected: the brief is cancelled and the run fails.
    StopRun,
}

/// What an escalation gate in `status` does.
pub fn escalation_gate(status: GateStatus) -> EscalationGateStep {
    match status {
        GateStatus::Pending => EscalationGateStep::Wait,
        GateStatus::Approved => EscalationGateStep::RetryFresh,
        GateStatus::Rejected => EscalationGateStep::StopRun,
    }
}

/// The retry budget of the fresh attempt a human's approval at an escalation gate gives a brief that
/// failed at `attempt`: one more attempt than it has had, plus the plan's budget again.
pub fn fresh_budget(attempt: u32, plan_budget: u32) -> u32 {
    attempt.saturating_add(1).saturating_add(plan_budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_is_opened_once_waited_on_and_followed() {
        assert_eq!(at_gate(false, None), AtGate::Go, "not configured");
        assert_eq!(at_gate(false, Some(GateStatus::Pending)), AtGate::Go);
        assert_eq!(at_gate(true, None), AtGate::Open);
        assert_eq!(at_gate(true, Some(GateStatus::Pending)), AtGate::Wait);
        assert_eq!(at_gate(true, Some(GateStatus::Approved)), AtGate::Go);
        assert_eq!(at_gate(true, Some(GateStatus::Rejected)), AtGate::Rejected);
    }

    #[test]
    fn an_escalation_gate_retries_afresh_or_stops_the_run() {
        assert_eq!(escalation_gate(GateStatus::Pending), EscalationGateStep::Wait);
        assert_eq!(
            escalation_gate(GateStatus::Approved),
            EscalationGateStep::RetryFresh
        );
        assert_eq!(escalation_gate(GateStatus::Rejected), EscalationGateStep::StopRun);
        assert_eq!(fresh_budget(2, 3), 6);
        assert_eq!(fresh_budget(u32::MAX, 3), u32::MAX, "never wraps");
    }
}
