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

use crate::advance::{accept_brief, approved_plan, output_of, start_workstreams, write_children};
use crate::engine::Engine;
use crate::error::Result;
use crate::verify::{ending, verify_rev, workstream_verified};

fn merged_name(workstream: &str) -> String {
    format!("merged/{workstream}")
}

/// Starts stages, merges verified workstreams, and writes T1's accept brief when everything is in.
pub async fn workstreams(engine: &Engine, run: RunId) -> Result<bool> {
    let Some(plan) = approved_plan(engine, run)? else {
        return Ok(false);
    };
    let briefs = engine.store.list_briefs(run)?;
    let Some(plan_brief) = briefs
        .iter()
        .rev()
        .find(|b| BriefRole::of(b) == BriefRole::Plan && b.status == BriefStatus::Done)
    else {
        return Ok(false);
    };
    // Started under the current plan: after T1 re-plans, what the superseded plan started counts for nothing.
    let started = |ws: &str| {
        briefs
            .iter()
            .any(|b| b.workstream == ws && b.tier != Tier::T1 && b.parent == Some(plan_brief.id))
    };
    for stage in plan.stages() {
        let ids: Vec<String> = stage.workstreams.to_vec();
        if !ids.iter().any(|id| started(id)) {
            start_workstreams(engine, run, &plan, &ids)?;
            return Ok(true);
        }
        let mut all_merged = true;
        for ws in stage.workstreams.iter().filter_map(|id| plan.workstream(id)) {
            if engine.store.latest_artifact(run, &merged_name(&ws.id))?.is_some() {
                continue;
            }
            all_merged = false;
            if workstream_verified(&briefs, &ws.id) {
                merge_workstream(engine, plan_brief, ws).await?;
                return Ok(true);
            }
        }
        if !all_merged {
            return Ok(false);
        }
    }
    if !briefs.iter().any(|b| BriefRole::of(b) == BriefRole::Accept) {
        engine.log(
            run,
            Some(Tier::T1),
            "ACCEPT_START",
            "Every workstream merged — validating against the goal anchor".into(),
        )?;
        write_children(
            engine,
            plan_brief,
            vec![accept_brief(&plan, &plan_brief.goal_anchor)],
        )?;
        return Ok(true);
    }
    Ok(false)
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
    let briefs = engine.store.list_briefs(run)?;
    if let Some(last) = briefs
        .iter()
        .rev()
        .find(|b| b.workstream == workstream && b.tier == Tier::T4 && b.status == BriefStatus::Done)
    {
        let decision = Decision::Escalate {
            to: EscalationTarget::Human,
        };
        crate::failure::apply(engine, last, Failure::RepeatedEscalation, decision, why)?;
    }
    Ok(())
}

/// T1 accepted or rejected the integrated result.
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
    let event = NewEvent::new(
        brief.run,
        EventKind::SignoffAccepted,
        json!({ "title": brief.title, "summary": out.summary, "branch": branch }),
    )
    .brief(brief.id)
    .tier(Tier::T1);
    engine
        .store
        .update_brief_status(brief.id, BriefStatus::Verifying, BriefStatus::Done, event)?;
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
        return Ok(());
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
