//! A tier's output at its gate: opened once with a summary, waited on, and on approval its children
//! written at once (what [`agency_flow::gates::at_gate`] decides, carried out).
//!
//! Opening and reading gates takes a narrow context, a [`GateDesk`] (the blackboard and which gates
//! team.yaml turns on); what the summary says is [`agency_flow::summaries`], plain values in and out.

use agency_core::config::VisibilityConfig;
use agency_core::event::payload::BriefStatusChange;
use agency_core::gate::{Gate, GateKind, GateStatus};
use agency_core::{Brief, BriefStatus, NewBrief};
use agency_flow::gates::AtGate;
use agency_flow::summaries::{GateSummary, next_briefs, ready_for_review};
use agency_store::{Blackboard, NewGate};
use serde_json::Value;

use crate::artifacts::output_name;
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::plan::write_children;

/// What opening and reading a tier's gates needs of the runner: the blackboard, and which gates
/// team.yaml turns on (`visibility`).
#[derive(Clone, Copy)]
pub(crate) struct GateDesk<'a> {
    pub(crate) store: &'a dyn Blackboard,
    pub(crate) visibility: &'a VisibilityConfig,
}

impl Engine {
    /// This runner's [`GateDesk`].
    pub(crate) fn gate_desk(&self) -> GateDesk<'_> {
        GateDesk {
            store: self.store.as_ref(),
            visibility: &self.config.visibility,
        }
    }
}

impl GateDesk<'_> {
    /// Whether team.yaml turns gates of `kind` on.
    pub(crate) fn enabled(&self, kind: GateKind) -> bool {
        self.visibility.gate_enabled(kind)
    }

    /// The newest gate of `kind` opened for `brief`.
    pub(crate) fn newest(&self, brief: &Brief, kind: GateKind) -> Result<Option<Gate>> {
        Ok(self
            .store
            .list_gates_of_kind(brief.run, kind)?
            .into_iter()
            .rev()
            .find(|g| g.brief == Some(brief.id)))
    }

    /// The newest gate of `kind` opened for `brief`, when that kind is turned on; `None` when it is off.
    pub(crate) fn newest_enabled(&self, brief: &Brief, kind: GateKind) -> Result<Option<Gate>> {
        match self.enabled(kind) {
            true => self.newest(brief, kind),
            false => Ok(None),
        }
    }

    /// Opens `brief`'s gate of `kind` showing `summary`, with what the blackboard says since the previous
    /// tier gate added to it (the undecided path amendments, the anomalies recorded:
    /// [`crate::amendments::with_review`]).
    pub(crate) fn open(&self, brief: &Brief, kind: GateKind, summary: Value) -> Result<()> {
        let summary = crate::amendments::with_review(self.store, brief.run, summary)?;
        let mut gate = NewGate::new(brief.run, kind, summary);
        gate.brief = Some(brief.id);
        gate.tier = Some(brief.tier);
        self.store.open_gate(gate)?;
        Ok(())
    }
}

/// Moves a verifying brief to done with a `completed`-style log.
pub(super) fn finish(engine: &Engine, brief: &Brief, note: &str) -> Result<bool> {
    engine.move_brief(brief, BriefStatus::Done, BriefStatusChange::noted(note))?;
    Ok(true)
}

/// The newest gate of `kind` opened for `brief`.
pub(super) fn gate_of(engine: &Engine, brief: &Brief, kind: GateKind) -> Result<Option<Gate>> {
    engine.gate_desk().newest(brief, kind)
}

/// Opens the gate for `brief` if needed and reports where it stands. A rejection re-invokes the tier with
/// the reason.
pub(super) fn at_gate(
    engine: &Engine,
    brief: &Brief,
    kind: GateKind,
    summary: impl FnOnce() -> Value,
) -> Result<AtGate> {
    let desk = engine.gate_desk();
    let gate = desk.newest_enabled(brief, kind)?;
    let at = agency_flow::gates::at_gate(desk.enabled(kind), gate.as_ref().map(|g| g.status));
    match at {
        AtGate::Go | AtGate::Wait => {}
        AtGate::Open => {
            desk.open(brief, kind, summary())?;
            return Ok(AtGate::Wait);
        }
        AtGate::Rejected => {
            let gate = gate.ok_or_else(|| EngineError::State("a rejected gate that is not there".into()))?;
            let reason = gate.note.unwrap_or_else(|| "rejected".into());
            let by = gate.decided_by.unwrap_or_else(|| "a human".into());
            crate::failure::gate_rejected(engine, brief, kind, &by, &reason)?;
        }
    }
    Ok(at)
}

/// The summary a gate shows: what was produced, what happens next, anomalies.
pub(super) fn gate_summary(
    message: String,
    produced: Value,
    next: Vec<String>,
    anomalies: Vec<String>,
) -> Value {
    GateSummary {
        message,
        produced,
        next,
        anomalies,
    }
    .to_value()
}

/// Whether `brief`'s gate of `kind` is open and waiting for a human (never, when the gate is disabled).
pub(super) fn gate_pending(engine: &Engine, brief: &Brief, kind: GateKind) -> Result<bool> {
    Ok(engine
        .gate_desk()
        .newest_enabled(brief, kind)?
        .is_some_and(|g| g.status == GateStatus::Pending))
}

/// The summary of a tier's gate ([`agency_flow::summaries::tier_summary`]): its stored output as
/// `produced` (`null` when there is none or it does not read), what it flags, and `next`.
pub(super) fn tier_summary(engine: &Engine, brief: &Brief, message: String, next: Vec<String>) -> Value {
    let produced = engine
        .artifact_of(brief.run, brief.id, output_name)
        .ok()
        .flatten()
        .and_then(|a| serde_json::from_slice::<Value>(&a.bytes).ok())
        .unwrap_or(Value::Null);
    agency_flow::summaries::tier_summary(message, produced, next).to_value()
}

/// Gate, then expansion, for roles whose children are written at once.
pub(super) fn gated_expand(
    engine: &Engine,
    brief: &Brief,
    kind: GateKind,
    expand: fn(&Engine, &Brief, bool) -> Result<Vec<NewBrief>>,
) -> Result<bool> {
    if has_children(engine, brief)? {
        return finish(engine, brief, "children written");
    }
    // Every pass comes here while a human reads the gate: nothing to redo until it is decided, and the
    // tier's outcome is announced (logged, its artifacts stored) only once, before the gate opens.
    let gate = engine.gate_desk().newest_enabled(brief, kind)?;
    if gate.as_ref().is_some_and(|g| g.status == GateStatus::Pending) {
        return Ok(false);
    }
    let children = expand(engine, brief, gate.is_none())?;
    let next = next_briefs(children.iter().map(|c| (c.tier, c.title.as_str())));
    let summary = || tier_summary(engine, brief, ready_for_review(brief.tier, &brief.title), next);
    match at_gate(engine, brief, kind, summary)? {
        AtGate::Wait | AtGate::Open => Ok(false),
        AtGate::Rejected => Ok(true),
        AtGate::Go => {
            let written = write_children(engine, brief, children)?;
            crate::narrate::children_started(engine, brief, &written)?;
            finish(engine, brief, "children written")
        }
    }
}

pub(super) fn has_children(engine: &Engine, brief: &Brief) -> Result<bool> {
    Ok(!engine.store.list_children(brief.id)?.is_empty())
}

#[cfg(test)]
mod tests {
    //! The gate executor on its own: a blackboard and team.yaml's visibility, no `Engine`.

    use agency_core::config::VisibilityConfig;
    use agency_core::gate::{GateKind, GateStatus};
    use agency_core::{Brief, Tier};
    use agency_flow::summaries::tier_summary;
    use agency_store::conformance::sample_brief;
    use agency_store::{Blackboard, NewRun, SqliteBlackboard};
    use serde_json::json;

    use super::GateDesk;

    #[test]
    fn a_gate_opens_once_with_its_summary_and_an_off_kind_is_never_read() {
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let brief = Brief {
            tier: Tier::T3,
            workstream: "ws-a".into(),
            ..sample_brief(run, "squad")
        };
        store.insert_brief(&brief).unwrap();
        let strict = VisibilityConfig {
            strict_mode: true,
            ..VisibilityConfig::default()
        };
        let desk = GateDesk {
            store: &store,
            visibility: &strict,
        };
        assert!(desk.newest_enabled(&brief, GateKind::T3Plan).unwrap().is_none());
        let produced = json!({ "notes": ["two tasks touch one file"] });
        let summary = tier_summary("T3 squad ready for review".into(), produced, vec!["t4 a".into()]);
        desk.open(&brief, GateKind::T3Plan, summary.to_value()).unwrap();

        let gate = desk.newest_enabled(&brief, GateKind::T3Plan).unwrap().unwrap();
        assert_eq!(gate.status, GateStatus::Pending);
        assert_eq!((gate.brief, gate.tier), (Some(brief.id), Some(Tier::T3)));
        // Nothing recorded since the previous gate: the summary is shown as it was built.
        assert_eq!(gate.summary, summary.to_value());
        assert_eq!(
            gate.summary["anomalies"],
            json!(["squad note: two tasks touch one file"])
        );

        // With the kind turned off, the gate opened before is not looked up.
        let default = VisibilityConfig::default();
        let off = GateDesk {
            store: &store,
            visibility: &default,
        };
        assert!(!off.enabled(GateKind::T3Plan));
        assert!(off.newest_enabled(&brief, GateKind::T3Plan).unwrap().is_none());
        assert!(off.newest(&brief, GateKind::T3Plan).unwrap().is_some());
    }
}
