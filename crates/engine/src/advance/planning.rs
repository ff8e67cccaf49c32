//! T1's plan, once its agent reported: announced, held at the `t1_plan` gate, then the run is running and
//! [`crate::progress`] starts the first stage.

use agency_core::gate::GateKind;
use agency_core::{Brief, Tier};
use agency_flow::gates::AtGate;
use agency_store::RunStatus;
use serde_json::{Value, json};

use super::gates::{at_gate, finish, gate_of, gate_summary};
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::plan::output_of;

pub(super) fn plan_done(engine: &Engine, brief: &Brief) -> Result<bool> {
    let value: Value = output_of(engine, brief)?;
    let plan = agency_core::validate_plan(&value).map_err(|e| EngineError::State(e.to_string()))?;
    let ids: Vec<&str> = plan.workstreams.iter().map(|w| w.id.as_str()).collect();
    // The workstreams the plan starts with, read once for the log line, the gate's tiers and its summary.
    let starting: Vec<_> = plan
        .stages()
        .first()
        .map(|s| {
            s.workstreams
                .iter()
                .filter_map(|id| plan.workstream(id))
                .collect()
        })
        .unwrap_or_default();
    let first_stage: Vec<String> = starting
        .iter()
        .map(|w| format!("{} ({})", w.id, path_text(&w.tier_path)))
        .collect();
    if gate_of(engine, brief, GateKind::T1Plan)?.is_none() {
        let parallel = starting.len();
        engine.log(
            brief.run,
            Some(Tier::T1),
            "PLAN_DONE",
            format!(
                "{} workstream{} — {} ({parallel} parallel)",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" },
                ids.join(", ")
            ),
        )?;
    }
    // "before T2 spawns": the tiers the first stage's workstreams start with.
    let mut entry_tiers: Vec<Tier> = starting
        .iter()
        .filter_map(|w| w.tier_path.first().copied())
        .collect();
    entry_tiers.sort();
    entry_tiers.dedup();
    let entry_text = entry_tiers
        .iter()
        .map(|t| t.as_str().to_ascii_uppercase())
        .collect::<Vec<_>>()
        .join("/");
    let summary = || {
        gate_summary(
            format!("Waiting on approval before {entry_text} spawns"),
            json!({ "complexity": plan.complexity, "workstreams": plan.workstreams.iter().map(|w| json!({
                "id": w.id, "tier_path": w.tier_path, "variety_score": w.variety.score(), "done_when": w.contract.done_when,
            })).collect::<Vec<_>>(), "self_critique_summary": plan.self_critique_summary }),
            first_stage.clone(),
            plan.workstreams
                .iter()
                .filter_map(|w| {
                    w.shallower_path_reason
                        .as_ref()
                        .map(|r| format!("{}: shallower path — {r}", w.id))
                })
                .collect(),
        )
    };
    match at_gate(engine, brief, GateKind::T1Plan, summary)? {
        AtGate::Wait | AtGate::Open => return Ok(false),
        AtGate::Rejected => return Ok(true),
        AtGate::Go => {}
    }
    engine.store.set_run_status(brief.run, None, RunStatus::Running)?;
    finish(engine, brief, "plan approved")?;
    Ok(true)
}

pub(crate) fn path_text(path: &[Tier]) -> String {
    path.iter().map(|t| t.as_str()).collect::<Vec<_>>().join("→")
}
