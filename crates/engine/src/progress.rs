//! Run-level progress: verified workstreams merge into the integration branch one at a time (each merge
//! re-verified against the workstream's contract), parallel groups start in sequence, and after the last
//! one T1 accepts or rejects the result against the goal anchor.

use agency_core::escalation::{Decision, EscalationTarget, Failure};
use agency_core::event::payload::{self, BriefStatusChange};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::tiers::{AcceptOutput, BriefRole, VerifierOutput};
use agency_core::verdict::SliceVerdict;
use agency_core::{Brief, BriefId, BriefStatus, RunId, Tier};
use agency_exec::MergeOutcome;
use agency_flow::tiers::{AfterMerged, after_all_merged};
use agency_flow::{ApprovedPlan, StageProgress, StageStep, latest_of};
use agency_store::RunStatus;

use std::collections::{HashMap, HashSet};

use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::handover::{ending, verify_rev};
use crate::plan::{accept_brief, approved, output_of, write_children};

use crate::artifacts::merged_name;

/// Starts stages, merges verified workstreams, and writes T1's accept brief when everything is in: carries
/// out the steps of the decision core's walk over the stages ([`agency_flow::StageWalk`]).
///
/// `touched` holds the workstreams whose briefs changed since they were last examined (`None`: any may
/// have); only those can have become ready to merge. What the walk did not examine (a stage still merging,
/// a stage started by this pass) is left in it for the next pass: an incremental pass never loses a ready
/// workstream. Every ready workstream of a stage is merged in the same pass. A stage that is to start is
/// handed back to the pass ([`Walked::start`]), which writes its entry briefs and then [`started`].
pub async fn workstreams(
    engine: &Engine,
    run: RunId,
    mut touched: Option<&mut HashSet<String>>,
) -> Result<Walked> {
    let Some(approved) = approved(engine, run)? else {
        return Ok(Walked::default());
    };
    let given = touched.as_deref_mut().map(std::mem::take);
    let mut walk = stages_of(&approved)?.walk(given);
    let mut progressed = false;
    let all_merged = loop {
        // The progress is locked for each step alone: a merge awaits its verify command in between.
        let step = walk.next(&*stages_of(&approved)?);
        match step {
            StageStep::FindStarted { .. } => find_started(engine, &approved)?,
            StageStep::Start { workstreams, .. } => {
                if let Some(t) = touched {
                    *t = walk.into_unexamined().unwrap_or_default();
                }
                return Ok(Walked {
                    progressed,
                    start: Some(workstreams),
                });
            }
            // What merged before this runner knew the plan (a runner resuming the run, one that took over
            // after T1 re-planned) is read from the blackboard once per stage; every later merge is this
            // runner's own and remembered as it is made.
            StageStep::LearnMerged { stage, workstreams } => {
                for id in &workstreams {
                    learn_merged(engine, &approved, id)?;
                }
                stages_of(&approved)?.set_learned(stage);
            }
            StageStep::Examine { workstream } => {
                let Some(ws) = approved.plan.workstream(&workstream) else {
                    continue;
                };
                if let Some(slices) = accepted_slices(engine, &approved.brief, &workstream)? {
                    // An approved path amendment asks for another pass first.
                    if crate::amendments::write_next_pass(engine, &approved.brief, &workstream)? {
                        progressed = true;
                        continue;
                    }
                    merge_workstream(engine, &approved.brief, ws, &slices).await?;
                    progressed = true;
                }
            }
            StageStep::Wait { .. } => break false,
            StageStep::AllMerged => break true,
        }
    };
    if let Some(t) = touched {
        *t = walk.into_unexamined().unwrap_or_default();
    }
    if !all_merged {
        return Ok(Walked {
            progressed,
            start: None,
        });
    }
    Ok(Walked {
        progressed: after_merged(engine, run, &approved)? || progressed,
        start: None,
    })
}

/// What a pass's walk over the stages did, and the stage it found to start.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// Whether it changed anything (a merge, the acceptance written or finished).
    pub progressed: bool,
    /// The workstreams of the stage that starts now: none of them started, and the one before it merged.
    pub start: Option<Vec<String>>,
}

/// `ids` were started (their entry briefs written): the walk need not look for them on the blackboard.
pub(crate) fn started(engine: &Engine, run: RunId, ids: &[String]) -> Result<()> {
    if let Some(approved) = approved(engine, run)? {
        let mut stages = stages_of(&approved)?;
        for id in ids {
            stages.mark_started(id);
        }
    }
    Ok(())
}

/// Every workstream merged: T1's acceptance is written once, or an acceptance the runner did not finish
/// before it stopped is finished.
fn after_merged(engine: &Engine, run: RunId, approved: &ApprovedPlan) -> Result<bool> {
    let plan_brief = &approved.brief;
    let children = engine.store.list_children(plan_brief.id)?;
    let accepts = || children.iter().filter(|b| BriefRole::of(b) == BriefRole::Accept);
    let newest_done = latest_of(accepts())
        .into_iter()
        .find(|b| b.status == BriefStatus::Done);
    let run_ended = match newest_done {
        Some(_) => engine.store.run_status(run)?.is_terminal(),
        None => false,
    };
    match after_all_merged(accepts().next().is_some(), newest_done.is_some(), run_ended) {
        AfterMerged::FinishAccepted => {
            let Some(accepted) = newest_done else {
                return Ok(false);
            };
            let out: AcceptOutput = output_of(engine, accepted)?;
            finish_accepted(engine, accepted, &out.summary)?;
            Ok(true)
        }
        AfterMerged::WriteAccept => {
            engine.log(
                run,
                Some(Tier::T1),
                "ACCEPT_START",
                "Every workstream merged — validating against the goal anchor".into(),
            )?;
            write_children(
                engine,
                plan_brief,
                vec![accept_brief(&approved.plan, &plan_brief.goal_anchor)],
            )?;
            Ok(true)
        }
        AfterMerged::Nothing => Ok(false),
    }
}

fn stages_of(approved: &ApprovedPlan) -> Result<std::sync::MutexGuard<'_, StageProgress>> {
    approved
        .stages
        .lock()
        .map_err(|_| EngineError::State("stage progress poisoned".into()))
}

/// Which workstreams were started under this plan (after T1 re-plans, what the superseded plan started
/// counts for nothing): those whose entry brief is a child of the plan brief.
fn find_started(engine: &Engine, approved: &ApprovedPlan) -> Result<()> {
    let children = engine.store.list_children(approved.brief.id)?;
    let mut stages = stages_of(approved)?;
    for child in children.iter().filter(|b| b.tier != Tier::T1) {
        stages.mark_started(&child.workstream);
    }
    Ok(())
}

/// Remembers `workstream` as merged into the integration branch when the blackboard records it so.
fn learn_merged(engine: &Engine, approved: &ApprovedPlan, workstream: &str) -> Result<()> {
    if stages_of(approved)?.is_merged(workstream) {
        return Ok(());
    }
    if engine
        .store
        .latest_artifact(approved.brief.run, &merged_name(workstream))?
        .is_some()
    {
        stages_of(approved)?.mark_merged(workstream);
    }
    Ok(())
}

/// The slices of `workstream` when every one of them was accepted, `None` while any is not (yet).
///
/// A workstream may go to the integration branch only when the joint verdict of its slices passed, which
/// merged them into its branch. Two indexed counts rule out the usual cases first (no T4 work yet,
/// something still pending, running or verifying); only then is the workstream's subtree under the
/// approved plan walked, newest attempts only: every slice must be done and its newest sign-off done with
/// a `pass` verdict, and every tier above them done. A slice (or squad lead) that failed or escalated (a
/// joint `fail` leaves its slice escalated, its sign-off done) keeps the workstream out until a human's
/// decision at its gate gives it a fresh attempt that passes.
fn accepted_slices(engine: &Engine, plan_brief: &Brief, workstream: &str) -> Result<Option<Vec<Brief>>> {
    let run = plan_brief.run;
    // Open briefs first: a workstream still at work (the usual answer mid-run) is ruled out by one count.
    if engine
        .store
        .count_briefs(run, workstream, None, &agency_flow::OPEN)?
        > 0
        || engine.store.count_briefs(run, workstream, Some(Tier::T4), &[])? == 0
    {
        return Ok(None);
    }
    // The workstream's briefs in one read (a slice's sign-offs are of its workstream too); its tree under the
    // approved plan is walked in memory.
    let briefs = engine.store.list_workstream_briefs(run, workstream)?;
    let mut children: HashMap<BriefId, Vec<&Brief>> = HashMap::new();
    for brief in &briefs {
        if let Some(parent) = brief.parent {
            children.entry(parent).or_default().push(brief);
        }
    }
    let children_of = |id: BriefId| children.get(&id).into_iter().flatten().copied();
    let mut slices = Vec::new();
    let mut frontier = vec![plan_brief.id];
    while let Some(id) = frontier.pop() {
        for brief in latest_of(children_of(id)) {
            match brief.tier {
                Tier::T4 if slice_accepted(engine, brief, children_of(brief.id))? => {
                    slices.push(brief.clone())
                }
                Tier::T4 => return Ok(None),
                Tier::T5 => {}
                // A lead or squad lead whose newest attempt failed or escalated is waiting at a gate (a
                // retry or a re-invoked owner would be newer): its part of the workstream is missing.
                _ if brief.status != BriefStatus::Done => return Ok(None),
                _ => frontier.push(brief.id),
            }
        }
    }
    if slices.is_empty() {
        return Ok(None);
    }
    slices.sort_by_key(|b| b.created_at);
    Ok(Some(slices))
}

/// Whether an implementer's slice was accepted: it is done and its newest sign-off (a judge that gave no
/// verdict is retried) among its `children` is done with a `pass` verdict.
fn slice_accepted<'a>(
    engine: &Engine,
    slice: &Brief,
    children: impl Iterator<Item = &'a Brief>,
) -> Result<bool> {
    if slice.status != BriefStatus::Done {
        return Ok(false);
    }
    let Some(signoff) = latest_of(children).into_iter().find(|b| b.tier == Tier::T5) else {
        return Ok(false);
    };
    if signoff.status != BriefStatus::Done {
        return Ok(false);
    }
    let out: VerifierOutput = output_of(engine, signoff)?;
    Ok(out.verdict == SliceVerdict::Pass)
}

/// Merges an accepted workstream into the integration branch and re-verifies it there against its contract.
async fn merge_workstream(
    engine: &Engine,
    plan_brief: &Brief,
    ws: &agency_core::Workstream,
    slices: &[Brief],
) -> Result<()> {
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
            return escalate_workstream(engine, slices, &why);
        }
    }
    if let Some(command) = &ws.contract.verify {
        let rev = engine.repo.rev_parse(&into)?;
        let result = verify_rev(engine, run, &rev, command).await?;
        engine.store.append_event(
            NewEvent::typed(
                run,
                EventPayload::SignoffVerify(payload::SignoffVerify {
                    workstream: Some(ws.id.clone()),
                    command: command.clone(),
                    rev: rev.clone(),
                    passed: result.passed,
                    status: Some(ending(&result)),
                    duration_ms: result.duration_ms,
                    tail: result.tail.clone(),
                    ..payload::SignoffVerify::default()
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
            return escalate_workstream(engine, slices, &why);
        }
    }
    engine.put_text(plan_brief, &merged_name(&ws.id), "text/plain", &into)?;
    if let Some(approved) = approved(engine, run)? {
        stages_of(&approved)?.mark_merged(&ws.id);
    }
    engine.log(
        run,
        Some(Tier::T5),
        "VERDICT",
        format!("✓  workstream {} merged into {into}", ws.id),
    )?;
    Ok(())
}

/// A workstream that cannot be integrated goes to a human: the escalation gate of its newest accepted slice.
/// That slice is escalated, so the workstream is no longer accepted and is not tried again until the
/// human's decision gives the slice a fresh attempt (or stops the run).
fn escalate_workstream(engine: &Engine, slices: &[Brief], why: &str) -> Result<()> {
    let Some(last) = slices.last() else {
        return Err(EngineError::State(format!(
            "escalating a workstream with no accepted slice: {why}"
        )));
    };
    engine.log(last.run, Some(Tier::T1), "INTEGRATION", why.to_string())?;
    let decision = Decision::Escalate {
        to: EscalationTarget::Human,
    };
    crate::failure::apply(engine, last, Failure::RepeatedEscalation, decision, why)
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
        BriefStatusChange {
            summary: Some(out.summary.clone()),
            branch: Some(branch.clone()),
            ..BriefStatusChange::noted("accepted")
        },
    )?;
    finish_accepted(engine, brief, &out.summary)?;
    Ok(true)
}

/// The run of an accepted T1 acceptance succeeds. Also called on resume when the runner stopped between
/// the acceptance and this (see [`workstreams`]).
fn finish_accepted(engine: &Engine, accept: &Brief, summary: &str) -> Result<()> {
    let branch = engine.branches(accept.run).integration();
    engine.log(
        accept.run,
        Some(Tier::T1),
        "ACCEPTED",
        format!("✓  {summary} — review and merge branch {branch}"),
    )?;
    engine
        .store
        .set_run_status(accept.run, None, RunStatus::Succeeded)?;
    Ok(())
}
