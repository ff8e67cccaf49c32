//! Learning II in the runner ([`agency_core::calibration`]): the records are read from the blackboard —
//! every finished, scored brief of the most recent runs, with its workstream's domain from its run's plan
//! and its outcome from the events that run already writes (no bookkeeping of its own on the hot path) —
//! and new workstreams' entry briefs are scored with the table when they are written. Each such brief keeps
//! `calibration/<brief>`: its domain, the dimensions as predicted (`variety_dimensions`), as used
//! (`calibrated`), and why; a bump is also a `CALIBRATED` log line.

use std::collections::{HashMap, HashSet};

use agency_core::calibration::{Calibrated, Calibration, Outcome, Record};
use agency_core::config::Calibration as CalibrationSetting;
use agency_core::event::{EventKind, EventPayload};
use agency_core::tiers::BriefRole;
use agency_core::{Brief, BriefId, BriefStatus, NewBrief, Plan, RunId, Tier};
use agency_store::Blackboard;
use agency_store::walk::each_event_of_kinds;

use crate::artifacts::brief_artifact_name;
use crate::engine::{Engine, output_name};
use crate::error::{EngineError, Result};

/// How many of the newest runs the records are read from: enough for a domain to reach its matches, few
/// enough that scoring a workstream reads a bounded part of a long-lived blackboard.
pub const RECENT_RUNS: usize = 50;

/// The artifact name of a brief's calibration record.
pub fn calibration_name(brief: BriefId) -> String {
    brief_artifact_name("calibration", brief)
}

/// Writes the entry briefs of new workstreams as [`crate::plan::write_children`] does, each scored
/// with the calibration of its workstream's domain first (unless `teachback.calibration: off`), and keeps
/// each one's calibration record.
pub(crate) fn write_calibrated(
    engine: &Engine,
    plan_brief: &Brief,
    plan: &Plan,
    mut entries: Vec<NewBrief>,
) -> Result<Vec<Brief>> {
    if entries.iter().all(|e| e.variety.is_none()) {
        return crate::plan::write_children(engine, plan_brief, entries);
    }
    let table = Calibration::from_records(&records(engine.store.as_ref(), RECENT_RUNS)?);
    let on = engine.config.teachback.calibration == CalibrationSetting::On;
    let mut scored: HashMap<String, Calibrated> = HashMap::new();
    for entry in &mut entries {
        let (Some(predicted), Some(workstream)) = (entry.variety, plan.workstream(&entry.workstream)) else {
            continue;
        };
        let calibrated = agency_flow::calibration::as_set(on, table.apply(&workstream.domain, predicted));
        entry.variety = Some(calibrated.calibrated);
        scored.insert(entry.title.clone(), calibrated);
    }
    let written = crate::plan::write_children(engine, plan_brief, entries)?;
    for brief in &written {
        let Some(calibrated) = scored.get(&brief.title) else {
            continue;
        };
        let text = serde_json::to_string_pretty(calibrated)
            .map_err(|e| crate::error::EngineError::State(format!("calibration record: {e}")))?;
        engine.put_text(brief, &calibration_name(brief.id), "application/json", &text)?;
        if agency_flow::calibration::announced(on, calibrated) {
            engine.log(
                brief.run,
                Some(brief.tier),
                "CALIBRATED",
                format!(
                    "{} ({}): {}",
                    brief.title,
                    brief.workstream,
                    calibrated.why.join("; ")
                ),
            )?;
        }
    }
    Ok(written)
}

/// The Learning II records of the newest `runs` runs on `store`: every `done` brief of tier 2–4 with a
/// variety, in a run whose plan was approved (the plan gives its workstream's domain). Its predicted
/// dimensions are those of its calibration record when it was calibrated, else its own.
pub fn records(store: &dyn Blackboard, runs: usize) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    for run in store.list_runs()?.into_iter().take(runs) {
        records.extend(run_records(store, run.id)?);
    }
    Ok(records)
}

/// The records of one run (see [`records`]).
pub fn run_records(store: &dyn Blackboard, run: RunId) -> Result<Vec<Record>> {
    let briefs = store.list_briefs(run)?;
    let Some(plan) = plan_of(store, run, &briefs)? else {
        return Ok(Vec::new());
    };
    let scored: Vec<&Brief> = briefs
        .iter()
        .filter(|b| {
            b.status == BriefStatus::Done
                && b.variety.is_some()
                && matches!(b.tier, Tier::T2 | Tier::T3 | Tier::T4)
        })
        .collect();
    if scored.is_empty() {
        return Ok(Vec::new());
    }
    let events = outcome_events(store, run)?;
    let calibrated: HashSet<String> = store
        .list_artifacts(run, None)?
        .into_iter()
        .filter(|a| a.name.starts_with("calibration/"))
        .map(|a| a.name)
        .collect();
    let mut records = Vec::new();
    for brief in scored {
        let Some(workstream) = plan.workstream(&brief.workstream) else {
            continue;
        };
        let Some(mut predicted) = brief.variety else {
            continue;
        };
        let name = calibration_name(brief.id);
        if calibrated.contains(&name)
            && let Some(artifact) = store.latest_artifact(run, &name)?
            && let Ok(record) = serde_json::from_slice::<Calibrated>(&artifact.bytes)
        {
            predicted = record.variety_dimensions;
        }
        records.push(Record {
            domain: workstream.domain.clone(),
            predicted,
            outcome: outcome(brief, &briefs, &events),
        });
    }
    Ok(records)
}

/// The run's approved plan: that of its newest `done` plan brief.
fn plan_of(store: &dyn Blackboard, run: RunId, briefs: &[Brief]) -> Result<Option<Plan>> {
    let Some(plan_brief) = briefs
        .iter()
        .rev()
        .find(|b| b.status == BriefStatus::Done && BriefRole::of(b) == BriefRole::Plan)
    else {
        return Ok(None);
    };
    let Some(artifact) = store.latest_artifact(run, &output_name(plan_brief.id))? else {
        return Ok(None);
    };
    // A plan that no longer reads (an older build's) teaches nothing; it is skipped, not an error.
    let plan = serde_json::from_slice::<serde_json::Value>(&artifact.bytes)
        .ok()
        .and_then(|value| agency_core::validate_plan(&value).ok());
    Ok(plan)
}

/// The kinds of event an outcome is made of.
const OUTCOME_KINDS: [EventKind; 7] = [
    EventKind::Spawned,
    EventKind::Completed,
    EventKind::Escalated,
    EventKind::SignoffVerify,
    EventKind::SignoffRejected,
    EventKind::TeachbackCorrected,
    EventKind::Usage,
];

fn outcome_events(store: &dyn Blackboard, run: RunId) -> Result<Vec<agency_core::Event>> {
    let mut all = Vec::new();
    each_event_of_kinds::<EngineError>(store, run, &OUTCOME_KINDS, 0, |event| {
        all.push(event);
        Ok(())
    })?;
    Ok(all)
}

/// What happened to `brief` over all its attempts (the briefs of its run with its tier, workstream and
/// title) and their sign-offs (the verifiers under them).
fn outcome(brief: &Brief, briefs: &[Brief], events: &[agency_core::Event]) -> Outcome {
    let attempts: HashSet<BriefId> = briefs
        .iter()
        .filter(|b| b.tier == brief.tier && b.workstream == brief.workstream && b.title == brief.title)
        .map(|b| b.id)
        .collect();
    let signoffs: HashSet<BriefId> = briefs
        .iter()
        .filter(|b| b.tier == Tier::T5 && b.parent.is_some_and(|p| attempts.contains(&p)))
        .map(|b| b.id)
        .collect();
    let mut outcome = Outcome {
        retries: brief.attempt,
        ..Outcome::default()
    };
    let (mut first, mut last) = (None, None);
    for event in events {
        let Some(id) = event.brief else { continue };
        let own = attempts.contains(&id);
        if !own && !signoffs.contains(&id) {
            continue;
        }
        match event.kind {
            EventKind::Escalated if own => outcome.escalations += 1,
            // A verify record that does not read counts as a failure: calibration errs towards a higher score.
            EventKind::SignoffVerify => match event.typed() {
                Ok(EventPayload::SignoffVerify(verify)) if verify.passed => {}
                _ => outcome.verify_failures += 1,
            },
            EventKind::SignoffRejected => outcome.judge_rejections += 1,
            EventKind::TeachbackCorrected if own => outcome.teachback_corrections += 1,
            EventKind::Usage => {
                if let Ok(EventPayload::Usage(usage)) = event.typed() {
                    outcome.tokens += usage.input_tokens + usage.output_tokens;
                }
            }
            EventKind::Spawned if own => {
                first.get_or_insert(event.ts);
            }
            EventKind::Completed if own => last = Some(event.ts),
            _ => {}
        }
    }
    if let (Some(first), Some(last)) = (first, last) {
        outcome.wall_ms = u64::try_from((last - first).num_milliseconds()).unwrap_or(0);
    }
    outcome
}
