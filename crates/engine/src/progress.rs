//! Run-level progress: verified workstreams merge into the integration branch one at a time (each merge
//! re-verified against the workstream's contract), parallel groups start in sequence, and after the last
//! one T1 accepts or rejects the result against the goal anchor.

use agency_core::escalation::{Decision, EscalationTarget, Failure};
use agency_core::event::{EventKind, NewEvent};
use agency_core::tiers::{AcceptOutput, BriefRole};
use agency_core::{Brief, BriefStatus, RunId, Tier};
use agency_exec::MergeOutcome;
use agency_store::RunStatus;
use serde_json::json;

use std::collections::{HashMap, HashSet};

use crate::advance::{ApprovedPlan, accept_brief, approved, output_of, start_workstreams, write_children};
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::verify::{ending, verify_rev};

fn merged_name(workstream: &str) -> String {
    format!("merged/{workstream}")
}

/// What the runner knows of an approved plan's stages: which workstreams started and which merged. Both
/// only ever grow while the plan holds, so each is looked up on the blackboard once.
#[derive(Debug, Default)]
pub(crate) struct StageProgress {
    started: HashSet<String>,
    merged: HashSet<String>,
}

/// Starts stages, merges verified workstreams, and writes T1's accept brief when everything is in.
/// `touched` names the workstreams whose briefs changed since the last pass (`None`: any may have): only
/// those can have become ready to merge.
pub async fn workstreams(engine: &Engine, run: RunId, touched: Option<&HashSet<String>>) -> Result<bool> {
    let Some(approved) = approved(engine, run)? else {
        return Ok(false);
    };
    let (plan, plan_brief) = (&approved.plan, &approved.brief);
    for stage in plan.stages() {
        let ids: Vec<String> = stage.workstreams.to_vec();
        if !started_any(engine, &approved, &ids)? {
            start_workstreams(engine, run, plan, &ids)?;
            return Ok(true);
        }
        let mut all_merged = true;
        for ws in stage.workstreams.iter().filter_map(|id| plan.workstream(id)) {
            if merged(engine, &approved, &ws.id, touched)? {
                continue;
            }
            all_merged = false;
            let may_be_ready = touched.is_none_or(|t| t.contains(&ws.id));
            if may_be_ready && workstream_settled(engine, run, &ws.id)? {
                merge_workstream(engine, plan_brief, ws).await?;
                return Ok(true);
            }
        }
        if !all_merged {
            return Ok(false);
        }
    }
    let children = engine.store.list_children(plan_brief.id)?;
    if !children.iter().any(|b| BriefRole::of(b) == BriefRole::Accept) {
        engine.log(
            run,
            Some(Tier::T1),
            "ACCEPT_START",
            "Every workstream merged — validating against the goal anchor".into(),
        )?;
        write_children(
            engine,
            plan_brief,
            vec![accept_brief(plan, &plan_brief.goal_anchor)],
        )?;
        return Ok(true);
    }
    Ok(false)
}

fn stages_of(approved: &ApprovedPlan) -> Result<std::sync::MutexGuard<'_, StageProgress>> {
    approved
        .stages
        .lock()
        .map_err(|_| EngineError::State("stage progress poisoned".into()))
}

/// Whether any of `ids` was started under this plan (after T1 re-plans, what the superseded plan started
/// counts for nothing): its entry brief is a child of the plan brief.
fn started_any(engine: &Engine, approved: &ApprovedPlan, ids: &[String]) -> Result<bool> {
    if ids
        .iter()
        .any(|id| stages_of(approved).is_ok_and(|s| s.started.contains(id)))
    {
        return Ok(true);
    }
    let children = engine.store.list_children(approved.brief.id)?;
    let mut stages = stages_of(approved)?;
    for child in children.iter().filter(|b| b.tier != Tier::T1) {
        stages.started.insert(child.workstream.clone());
    }
    Ok(ids.iter().any(|id| stages.started.contains(id)))
}

/// Whether `workstream` is merged into the integration branch. Known merges are remembered; the
/// blackboard is asked only where something changed (or on a full pass).
fn merged(
    engine: &Engine,
    approved: &ApprovedPlan,
    workstream: &str,
    touched: Option<&HashSet<String>>,
) -> Result<bool> {
    if stages_of(approved)?.merged.contains(workstream) {
        return Ok(true);
    }
    if touched.is_some_and(|t| !t.contains(workstream) && !t.contains(&approved.brief.workstream)) {
        return Ok(false);
    }
    let found = engine
        .store
        .latest_artifact(approved.brief.run, &merged_name(workstream))?
        .is_some();
    if found {
        stages_of(approved)?.merged.insert(workstream.to_string());
    }
    Ok(found)
}

/// Whether every implementer of a workstream is done, verified and merged into its branch: it has T4
/// work, nothing of it is pending, running or verifying, and each of its verifiers is done or superseded
/// (no retry outstanding). Three indexed counts, not a read of the workstream.
fn workstream_settled(engine: &Engine, run: RunId, workstream: &str) -> Result<bool> {
    let open = [BriefStatus::Pending, BriefStatus::Running, BriefStatus::Verifying];
    let unsettled_verifiers = [
        BriefStatus::Pending,
        BriefStatus::Running,
        BriefStatus::Verifying,
        BriefStatus::Failed,
        BriefStatus::Escalated,
    ];
    if engine.store.count_briefs(run, workstream, Some(Tier::T4), &[])? == 0
        || engine.store.count_briefs(run, workstream, None, &open)? > 0
    {
        return Ok(false);
    }
    if engine
        .store
        .count_briefs(run, workstream, Some(Tier::T5), &unsettled_verifiers)?
        == 0
    {
        return Ok(true);
    }
    // A sign-off whose judge gave no verdict failed and was retried: only each sign-off's last attempt
    // counts. Rare, so the workstream is read only then.
    if engine
        .store
        .count_briefs(run, workstream, Some(Tier::T5), &[BriefStatus::Failed])?
        == 0
    {
        return Ok(false);
    }
    let briefs = engine.store.list_briefs(run)?;
    let mut last: HashMap<(Option<agency_core::BriefId>, &str), &Brief> = HashMap::new();
    for brief in briefs
        .iter()
        .filter(|b| b.tier == Tier::T5 && b.workstream == workstream)
    {
        let slot = last.entry((brief.parent, brief.title.as_str())).or_insert(brief);
        if brief.attempt > slot.attempt {
            *slot = brief;
        }
    }
    Ok(last
        .values()
        .all(|b| matches!(b.status, BriefStatus::Done | BriefStatus::Cancelled)))
}

async fn merge_workstream(engine: &Engine, plan_brief: &Brief, ws: &agency_core::Workstream) -> Result<()> {
    let run = plan_brief.run;
    let branches = engine.branches(run);
    let from = branches.ensure_workstream(&ws.id)?;
    let into = branches.integration();
    match branches.merge(
        &into,
        &from,
        &format!("merge workstream {} (agency run {})", ws.id, run.short()),
    )? {
        MergeOutcome::Merged { .. } | MergeOutcome::AlreadyUpToDate => {}
        MergeOutcome::Conflict { files } => {
            let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            let why = format!(
                "workstream {} conflicts with the integration branch in {}",
                ws.id,
                files.join(", ")
            );
            return escalate_workstream(engine, run, &ws.id, &why);
        }
    }
    if let Some(command) = &ws.contract.verify {
        let rev = engine.repo.rev_parse(&into)?;
        let result = verify_rev(engine, &rev, command).await?;
        engine.store.append_event(
            NewEvent::new(
                run,
                EventKind::SignoffVerify,
                json!({
                    "workstream": ws.id, "command": command, "rev": rev, "passed": result.passed,
                    "status": ending(&result), "duration_ms": result.duration_ms, "tail": result.tail,
                }),
            )
            .tier(Tier::T1),
        )?;
        if !result.passed {
            let why = format!(
                "after merging {} the integration branch fails `{command}` ({}):\n{}",
                ws.id,
                result.describe(),
                result.tail
            );
            return escalate_workstream(engine, run, &ws.id, &why);
        }
    }
    engine.put_text(plan_brief, &merged_name(&ws.id), "text/plain", &into)?;
    if let Some(approved) = approved(engine, run)? {
        stages_of(&approved)?.merged.insert(ws.id.clone());
    }
    engine.log(
        run,
        Some(Tier::T5),
        "VERDICT",
        format!("✓  workstream {} merged into {into}", ws.id),
    )?;
    Ok(())
}

/// A workstream that cannot be integrated goes to a human: its last implementer's escalation gate.
fn escalate_workstream(engine: &Engine, run: RunId, workstream: &str, why: &str) -> Result<()> {
    engine.log(run, Some(Tier::T1), "INTEGRATION", why.to_string())?;
    let done = engine.store.list_briefs_by_status(run, BriefStatus::Done)?;
    if let Some(last) = done
        .iter()
        .rev()
        .find(|b| b.workstream == workstream && b.tier == Tier::T4)
    {
        let decision = Decision::Escalate {
            to: EscalationTarget::Human,
        };
        crate::failure::apply(engine, last, Failure::RepeatedEscalation, decision, why)?;
    }
    Ok(())
}

/// T1's acceptance sign-off accepted or rejected the integrated result.
pub fn accept_done(engine: &Engine, brief: &Brief) -> Result<bool> {
    let out: AcceptOutput = output_of(engine, brief)?;
    if !out.accept {
        let why = format!(
            "T1 did not accept the result: {}\nmissing: {}",
            out.summary,
            out.missing.join("; ")
        );
        let decision = Decision::Escalate {
            to: EscalationTarget::Human,
        };
        crate::failure::apply(engine, brief, Failure::T2DesignWrong, decision, &why)?;
        return Ok(true);
    }
    let branch = engine.branches(brief.run).integration();
    // The sign-off record (`signoff_accepted`, T1) was written by the acceptance sign-off itself.
    engine.move_brief(
        brief,
        BriefStatus::Done,
        json!({ "note": "accepted", "summary": out.summary, "branch": branch }),
    )?;
    engine.log(
        brief.run,
        Some(Tier::T1),
        "ACCEPTED",
        format!("✓  {} — review and merge branch {branch}", out.summary),
    )?;
    engine
        .store
        .set_run_status(brief.run, None, RunStatus::Succeeded)?;
    Ok(true)
}

/// A T3 mesh that has not committed within `t3_mesh_timeout_minutes` escalates to T2; never force-commits.
pub fn mesh_timeout(engine: &Engine, brief: &Brief, peers: &[&Brief]) -> Result<()> {
    let limit = chrono::Duration::minutes(i64::from(engine.config.retry.t3_mesh_timeout_minutes));
    let started = peers
        .iter()
        .map(|p| p.created_at)
        .min()
        .unwrap_or(brief.created_at);
    if chrono::Utc::now() - started <= limit {
        // Nothing may change on the blackboard before then: a pass must still come when it is due.
        return engine.wake_at(started + limit);
    }
    let stuck: Vec<&str> = peers
        .iter()
        .filter(|p| matches!(p.status, BriefStatus::Pending | BriefStatus::Running))
        .map(|p| p.title.as_str())
        .collect();
    let why = format!(
        "T3 mesh timeout: squad leads {} did not commit within {} minutes; the domain boundaries need re-scoping",
        stuck.join(", "),
        engine.config.retry.t3_mesh_timeout_minutes
    );
    engine.log(brief.run, Some(Tier::T3), "MESH_TIMEOUT", why.clone())?;
    let decision = Decision::Escalate {
        to: EscalationTarget::Tier(Tier::T2),
    };
    crate::failure::apply(engine, brief, Failure::T3Stuck, decision, &why)
}
