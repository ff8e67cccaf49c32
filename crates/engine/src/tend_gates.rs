//! Tending a run's pending gates on each pass: timing them out, approving them under `--auto-approve`,
//! releasing an outage's pause once the provider answers, and reminding a human of the ones that wait.

use agency_core::RunId;
use agency_core::event::payload::LogLine;
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::GateDecision;
use agency_flow::gate_timing::{self, GateCare, human_duration};

use agency_store::Blackboard;

use crate::engine::Engine;
use crate::error::{EngineError, Result};

/// The reminders this runner sent, per gate (the engine's `reminders`).
type Reminders = std::sync::Mutex<std::collections::HashMap<agency_core::GateId, i64>>;

impl Engine {
    /// Times out or auto-approves pending gates; returns whether any gate still holds the run. What each
    /// gate calls for is the decision core's ([`agency_flow::gate_timing::care`]).
    pub(crate) fn tend_gates(&self, run: RunId) -> Result<bool> {
        let timeout = gate_timing::timeout(
            self.options.gate_timeout,
            self.config.visibility.gate_timeout_minutes,
        );
        let mut holding = false;
        for gate in self.store.pending_gates(Some(run))? {
            let waited = crate::gate_clock::waited(&gate);
            match gate_timing::care(gate.kind, self.options.auto_approve, waited, timeout) {
                // An outage's pause in a run with no human to wait for ends once the provider answers.
                GateCare::ProbeOutage => holding |= !crate::outage::auto_resume(self, &gate)?,
                GateCare::Hold => holding = true,
                GateCare::AutoApprove => {
                    let note = Some("auto-approved (--auto-approve)".to_string());
                    self.store.decide_gate(
                        gate.id,
                        GateDecision::Approve {
                            by: "auto".into(),
                            note,
                        },
                    )?;
                }
                GateCare::Remind => {
                    // Past the timeout a human's gate is announced again, once per timeout, until someone
                    // decides.
                    remind(self.store.as_ref(), &self.reminders, &gate, waited, timeout)?;
                    holding = true;
                }
                GateCare::TimeOut { reason } => {
                    self.store.decide_gate(
                        gate.id,
                        GateDecision::Reject {
                            by: "timeout".into(),
                            reason,
                        },
                    )?;
                }
            }
        }
        Ok(holding)
    }
}

/// Writes a `REMINDER` line for `gate`, which has `waited` (and which the notifiers announce like the
/// gate itself), once it has waited another whole `every` since it opened. What was sent is remembered
/// by this runner only: a resumed one sends the current period's reminder once more.
fn remind(
    store: &dyn Blackboard,
    reminders: &Reminders,
    gate: &agency_core::gate::Gate,
    waited: chrono::Duration,
    every: chrono::Duration,
) -> Result<()> {
    let mut reminders = reminders
        .lock()
        .map_err(|_| EngineError::State("reminders poisoned".into()))?;
    let sent = reminders.entry(gate.id).or_insert(0);
    let Some(due) = gate_timing::reminder_due(waited, every, *sent) else {
        return Ok(());
    };
    *sent = due;
    let message = format!(
        "the {} gate has waited {} for a decision: `agency approve {run}` or `agency reject {run} --reason \"…\"`",
        gate.kind,
        human_duration(waited),
        run = gate.run.short()
    );
    let event = NewEvent::typed(
        gate.run,
        EventPayload::Log(LogLine {
            gate: Some(gate.id),
            reminder: Some(due),
            ..LogLine::new("normal", Some("REMINDER"), message)
        }),
    );
    store.append_event(event)?;
    Ok(())
}
