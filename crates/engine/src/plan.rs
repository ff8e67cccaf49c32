//! The run's approved plan as the runner keeps it (parsed once, with what it knows of its stages:
//! [`agency_flow::ApprovedPlan`]), a brief's stored output, and writing new briefs under a parent with the
//! plan's retry budget.

use std::sync::Arc;

use agency_core::brief::BriefPlacement;
use agency_core::plan::Plan;
use agency_core::tiers::{ACCEPT_TITLE, BriefRole, RUN_WORKSTREAM};
use agency_core::{Brief, BriefId, BriefStatus, NewBrief, RunId, Tier};
use agency_flow::ApprovedPlan;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::artifacts::output_name;
use crate::engine::Engine;
use crate::error::{EngineError, Result};

/// A brief's stored structured output.
pub(crate) fn output_of<T: DeserializeOwned>(engine: &Engine, brief: &Brief) -> Result<T> {
    let artifact = engine
        .artifact_of(brief.run, brief.id, output_name)?
        .ok_or_else(|| EngineError::State(format!("brief {} has no stored output", brief.id.short())))?;
    serde_json::from_slice(&artifact.bytes)
        .map_err(|e| EngineError::State(format!("brief {} output: {e}", brief.id.short())))
}

/// The plan of the newest T1 plan brief that was approved, if any.
pub fn approved_plan(engine: &Engine, run: RunId) -> Result<Option<Plan>> {
    Ok(approved(engine, run)?.map(|a| a.plan.clone()))
}

/// The run's approved plan, parsed once per runner: it is read again only when its brief stopped being the
/// approved one (T1 re-planned after an escalation) — one status lookup per call instead of a scan of the
/// run, an artifact read and a validation.
pub(crate) fn approved(engine: &Engine, run: RunId) -> Result<Option<Arc<ApprovedPlan>>> {
    let cached = engine
        .plan_cache
        .lock()
        .map_err(|_| EngineError::State("plan cache poisoned".into()))?
        .clone();
    if let Some(cached) = cached
        && cached.brief.run == run
        && engine.store.brief_status(cached.brief.id)? == BriefStatus::Done
    {
        return Ok(Some(cached));
    }
    let done = engine.store.list_briefs_by_status(run, BriefStatus::Done)?;
    let Some(brief) = done
        .into_iter()
        .rev()
        .find(|b| BriefRole::of(b) == BriefRole::Plan)
    else {
        // No plan holds (any more): [`retry_budget`] must not go on using the one that did.
        *engine
            .plan_cache
            .lock()
            .map_err(|_| EngineError::State("plan cache poisoned".into()))? = None;
        return Ok(None);
    };
    let value: Value = output_of(engine, &brief)?;
    let plan = agency_core::validate_plan(&value).map_err(|e| EngineError::State(e.to_string()))?;
    let approved = Arc::new(ApprovedPlan::new(brief, plan));
    *engine
        .plan_cache
        .lock()
        .map_err(|_| EngineError::State("plan cache poisoned".into()))? = Some(approved.clone());
    Ok(Some(approved))
}

/// Writes children of `parent` (resolving `depends_on` titles among them) in one transaction.
pub(crate) fn write_children(engine: &Engine, parent: &Brief, children: Vec<NewBrief>) -> Result<Vec<Brief>> {
    let written = place_children(engine, parent, children)?;
    engine.store.insert_briefs(&written)?;
    Ok(written)
}

/// The briefs [`write_children`] writes, not written yet: for a caller that writes them with more.
pub(crate) fn place_children(engine: &Engine, parent: &Brief, children: Vec<NewBrief>) -> Result<Vec<Brief>> {
    let budget = retry_budget(engine, parent.run)?;
    let mut written: Vec<Brief> = Vec::with_capacity(children.len());
    for child in children {
        let depends_on = child
            .depends_on
            .iter()
            .filter_map(|title| written.iter().find(|w| &w.title == title).map(|w| w.id))
            .collect();
        let placement = BriefPlacement {
            id: BriefId::new(),
            run: parent.run,
            parent: Some(parent.id),
            goal_anchor: parent.goal_anchor.clone(),
            retry_budget: budget,
            depends_on,
            created_at: chrono::Utc::now(),
        };
        written.push(child.into_brief(placement));
    }
    Ok(written)
}

/// The retry budget of new briefs: the configured base times the plan's multiplier. The plan is the one the
/// runner last found approved — every pass checks that it still is ([`crate::progress::workstreams`]) —
/// rather than asked again for every verifier an implementer hands over: that lookup, once per slice, was
/// most of the plan brief's status reads, and a re-plan only changes this number.
pub(crate) fn retry_budget(engine: &Engine, run: RunId) -> Result<u32> {
    let known = engine
        .plan_cache
        .lock()
        .map_err(|_| EngineError::State("plan cache poisoned".into()))?
        .clone()
        .filter(|a| a.brief.run == run);
    let approved = match known {
        Some(known) => Some(known),
        None => approved(engine, run)?,
    };
    let multiplier = approved.map(|a| a.plan.retry_budget_multiplier).unwrap_or(1);
    Ok(agency_core::escalation::retry_budget(
        engine.config.retry.base_budget,
        multiplier,
    ))
}

/// The accept brief, written once every workstream is merged.
pub(crate) fn accept_brief(plan: &Plan, goal: &str) -> NewBrief {
    let done_when: Vec<String> = plan
        .workstreams
        .iter()
        .map(|w| format!("- {}: {}", w.id, w.contract.done_when))
        .collect();
    NewBrief {
        tier: Tier::T1,
        workstream: RUN_WORKSTREAM.into(),
        title: ACCEPT_TITLE.into(),
        personality: None,
        instructions: format!(
            "Accept or reject the integrated result against the goal anchor: {goal}\nWorkstream contracts:\n{}",
            done_when.join("\n")
        ),
        inputs: vec![],
        variety: None,
        contract: None,
        depends_on: vec![],
    }
}
