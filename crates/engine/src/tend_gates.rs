//! Tending a run's pending gates on each pass: timing them out, approving them under `--auto-approve`,
//! releasing an outage's pause once the provider answers, and reminding a human of the ones that wait.

use agency_core::RunId;
use agency_core::event::payload::LogLine;
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::{GateDecision, GateKind};

use crate::engine::{Engine, human_duration};
use crate::error::{EngineError, Result};

impl Engine {
    /// Times out or auto-approves pending gates; returns whether any gate still holds the run.
    pub(crate) fn tend_gates(&self, run: RunId) -> Result<bool> {
        let timeout = match self.options.gate_timeout {
            Some(given) => chrono::Duration::from_std(given).unwrap_or(chrono::Duration::MAX),
            None => chrono::Duration::minutes(i64::from(self.config.visibility.gate_timeout_minutes)),
        };
        let mut holding = false;
        for gate in self.store.pending_gates(Some(run))? {
            if gate.kind == GateKind::Pause {
                // An outage's pause in a run with no human to wait for ends once the provider answers.
                if self.options.auto_approve && crate::outage::auto_resume(self, &gate)? {
                    continue;
                }
                holding = true;
                continue;
            }
            // Budget, escalation and halt gates are a human's ([`GateKind::needs_a_human`]): never
            // approved automatically.
            if self.options.auto_approve && !gate.kind.needs_a_human() {
                let note = Some("auto-approved (--auto-approve)".to_string());
                self.store.decide_gate(
                    gate.id,
                    GateDecision::Approve {
                        by: "auto".into(),
                        note,
                    },
                )?;
            } else if gate.kind.needs_a_human() {
                // These gates never time out (rejecting them would end the run); past the timeout they are
                // announced again, once per timeout, until someone decides.
                self.remind(&gate, timeout)?;
                holding = true;
            } else if crate::gate_clock::waited(&gate) > timeout {
                let reason = format!("no decision within {}", human_duration(timeout));
                self.store.decide_gate(
                    gate.id,
                    GateDecision::Reject {
                        by: "timeout".into(),
                        reason,
                    },
                )?;
            } else {
                holding = true;
            }
        }
        Ok(holding)
    }

    /// Writes a `REMINDER` line for `gate` (which the notifiers announce like the gate itself) once it has
    /// waited another whole `every` since it opened. What was sent is remembered by this runner only: a
    /// resumed one sends the current period's reminder once more.
    fn remind(&self, gate: &agency_core::gate::Gate, every: chrono::Duration) -> Result<()> {
        let waited = crate::gate_clock::waited(gate);
        if every <= chrono::Duration::zero() || waited < every {
            return Ok(());
        }
        let due = waited.num_seconds() / every.num_seconds().max(1);
        let mut reminders = self
            .reminders
            .lock()
            .map_err(|_| EngineError::State("reminders poisoned".into()))?;
        let sent = reminders.entry(gate.id).or_insert(0);
        if *sent >= due {
            return Ok(());
        }
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
        self.store.append_event(event)?;
        Ok(())
    }
}
