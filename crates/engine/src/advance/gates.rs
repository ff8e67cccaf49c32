//! A tier's output at its gate: opened once with a summary, waited on, and on approval its children
//! written at once (what [`agency_flow::gates::at_gate`] decides, carried out).

use agency_core::event::payload::BriefStatusChange;
use agency_core::gate::{Gate, GateKind, GateStatus};
use agency_core::tiers::Conflict;
use agency_core::{Brief, BriefStatus, NewBrief};
use agency_flow::gates::AtGate;
use agency_store::NewGate;
use serde_json::{Value, json};

use crate::artifacts::output_name;
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::plan::write_children;

/// Moves a verifying brief to done with a `completed`-style log.
pub(super) fn finish(engine: &Engine, brief: &Brief, note: &str) -> Result<bool> {
    engine.move_brief(brief, BriefStatus::Done, BriefStatusChange::noted(note))?;
    Ok(true)
}

/// The newest gate of `kind` opened for `brief`.
pub(super) fn gate_of(engine: &Engine, brief: &Brief, kind: GateKind) -> Result<Option<Gate>> {
    Ok(engine
        .store
        .list_gates_of_kind(brief.run, kind)?
        .into_iter()
        .rev()
        .find(|g| g.brief == Some(brief.id)))
}

/// Opens the gate for `brief` if needed and reports where it stands. A rejection re-invokes the tier with
/// the reason.
pub(super) fn at_gate(
    engine: &Engine,
    brief: &Brief,
    kind: GateKind,
    summary: impl FnOnce() -> Value,
) -> Result<AtGate> {
    let enabled = engine.config.visibility.gate_enabled(kind);
    let gate = if enabled {
        gate_of(engine, brief, kind)?
    } else {
        None
    };
    let at = agency_flow::gates::at_gate(enabled, gate.as_ref().map(|g| g.status));
    match at {
        AtGate::Go | AtGate::Wait => {}
        AtGate::Open => {
            let summary = crate::amendments::with_review(engine.store.as_ref(), brief.run, summary())?;
            let mut gate = NewGate::new(brief.run, kind, summary);
            gate.brief = Some(brief.id);
            gate.tier = Some(brief.tier);
            engine.store.open_gate(gate)?;
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
    json!({ "message": message, "produced": produced, "next": next, "anomalies": anomalies })
}

/// Whether `brief`'s gate of `kind` is open and waiting for a human (never, when the gate is disabled).
pub(super) fn gate_pending(engine: &Engine, brief: &Brief, kind: GateKind) -> Result<bool> {
    if !engine.config.visibility.gate_enabled(kind) {
        return Ok(false);
    }
    Ok(gate_of(engine, brief, kind)?.is_some_and(|g| g.status == GateStatus::Pending))
}

/// The summary of a tier's gate: its stored output as `produced`, what it flags as anomalies (see
/// [`anomalies_of`]), and `next`.
pub(super) fn tier_summary(engine: &Engine, brief: &Brief, message: String, next: Vec<String>) -> Value {
    let produced = engine
        .artifact_of(brief.run, brief.id, output_name)
        .ok()
        .flatten()
        .and_then(|a| serde_json::from_slice::<Value>(&a.bytes).ok())
        .unwrap_or(Value::Null);
    let anomalies = anomalies_of(&produced);
    gate_summary(message, produced, next, anomalies)
}

/// What a tier's output flags for the human: a squad lead's notes (`SquadOutput.notes`: overlaps it
/// resolved, anomalies it wants seen) and the conflicts a synthesis left unresolved
/// (`SynthesisOutput.unresolved_conflicts`).
fn anomalies_of(produced: &Value) -> Vec<String> {
    let strings = |key: &str| -> Vec<String> {
        produced
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
            .collect()
    };
    // A conflict is `{about, positions: [{specialist, position}]}` (`agency_core::tiers::Conflict`); one
    // that does not read as that is still shown, as its JSON, rather than dropped.
    let mut flagged: Vec<String> = produced
        .get("unresolved_conflicts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| match serde_json::from_value::<Conflict>(c.clone()) {
            Ok(conflict) => {
                let sides: Vec<String> = conflict
                    .positions
                    .iter()
                    .map(|p| format!("{}: {}", p.specialist, p.position))
                    .collect();
                format!("unresolved conflict: {} ({})", conflict.about, sides.join("; "))
            }
            Err(_) => format!("unresolved conflict: {c}"),
        })
        .collect();
    flagged.extend(strings("notes").into_iter().map(|n| format!("squad note: {n}")));
    flagged
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
    let gate = if engine.config.visibility.gate_enabled(kind) {
        gate_of(engine, brief, kind)?
    } else {
        None
    };
    if gate.as_ref().is_some_and(|g| g.status == GateStatus::Pending) {
        return Ok(false);
    }
    let children = expand(engine, brief, gate.is_none())?;
    let next: Vec<String> = children
        .iter()
        .map(|c| format!("{} {}", c.tier, c.title))
        .collect();
    let summary = || {
        let message = format!(
            "{} {} ready for review",
            brief.tier.as_str().to_ascii_uppercase(),
            brief.title
        );
        tier_summary(engine, brief, message, next)
    };
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
