//! Run-level progress: verified workstreams merge into the integration branch one at a time (each merge
//! re-verified against the workstream's contract), parallel groups start in sequence, and after the last
//! one T1 accepts or rejects the result against the goal anchor.

use agency_core::escalation::{Decision, EscalationTarget, Failure};
use agency_core::event::payload::{self, BriefStatusChange};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::tiers::{AcceptOutput, BriefRole, VerifierOutput};
use agency_core::verdict::Verdict;
use agency_core::{Brief, BriefId, BriefStatus, Plan, RunId, Tier};
use agency_exec::MergeOutcome;
use agency_store::RunStatus;

use std::collections::{HashMap, HashSet};

use crate::advance::{
    ApprovedPlan, accept_brief, approved, latest_of, output_of, start_workstreams, write_children,
};
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::verify::{ending, verify_rev};

pub(crate) fn merged_name(workstream: &str) -> String {
    format!("merged/{workstream}")
}

/// What the runner knows of an approved plan's stages: which workstreams started and which merged. Both
/// only ever grow while the plan holds, so each is looked up on the blackboard once; after that only the
/// runner itself merges (it alone drives the run).
#[derive(Debug)]
pub(crate) struct StageProgress {
    started: HashSet<String>,
    merged: HashSet<String>,
    /// Each workstream's stage (its place in the plan's sequence) and its place in that stage.
    places: HashMap<String, (usize, usize)>,
    /// What is counted of each stage, in the plan's sequence.
    stages: Vec<StageCount>,
}

/// One stage's workstreams: how many there are, how many of them are in `merged`, and whether its merges
/// were read from the blackboard (after that, `merged` is complete for it).
#[derive(Debug, Clone, Copy, Default)]
struct StageCount {
    size: usize,
    merged: usize,
    learned: bool,
}

impl StageProgress {
    /// Nothing known yet of `plan`'s stages.
    pub(crate) fn new(plan: &Plan) -> Self {
        let stage_list = plan.stages();
        let mut places = HashMap::new();
        for (stage, workstreams) in stage_list.iter().enumerate() {
            for (place, id) in workstreams.workstreams.iter().enumerate() {
                places.entry(id.clone()).or_insert((stage, place));
            }
        }
        let mut stages = vec![StageCount::default(); stage_list.len()];
        for (stage, _) in places.values() {
            stages[*stage].size += 1;
        }
        StageProgress {
            started: HashSet::new(),
            merged: HashSet::new(),
            places,
            stages,
        }
    }

    fn mark_merged(&mut self, workstream: &str) {
        if self.merged.insert(workstream.to_string())
            && let Some((stage, _)) = self.places.get(workstream)
        {
            self.stages[*stage].merged += 1;
        }
    }

    fn learned(&self, stage: usize) -> bool {
        self.stages.get(stage).is_some_and(|s| s.learned)
    }

    fn set_learned(&mut self, stage: usize) {
        if let Some(count) = self.stages.get_mut(stage) {
            count.learned = true;
        }
    }

    fn stage_merged(&self, stage: usize) -> bool {
        self.stages.get(stage).is_none_or(|s| s.merged == s.size)
    }

    /// The workstreams of `stage` among `touched`, in the stage's order.
    fn touched_in<'t>(&self, stage: usize, touched: &'t HashSet<String>) -> Vec<&'t str> {
        let mut found: Vec<(usize, &str)> = touched
            .iter()
            .filter_map(|id| match self.places.get(id) {
                Some((s, place)) if *s == stage => Some((*place, id.as_str())),
                _ => None,
            })
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, id)| id).collect()
    }
}

/// Starts stages, merges verified workstreams, and writes T1's accept brief when everything is in.
///
/// `touched` holds the workstreams whose briefs changed since they were last examined (`None`: any may
/// have); only those can have become ready to merge. A workstream leaves the set only once it has been
/// examined — found merged, merged now, or found not ready (it becomes ready only through an event on its
/// briefs, which puts it back) — so what a pass does not reach (a stage still merging, a stage started by
/// this pass) stays for the next one: an incremental pass never loses a ready workstream. Every ready
/// workstream of a stage is merged in the same pass.
pub async fn workstreams(
    engine: &Engine,
    run: RunId,
    mut touched: Option<&mut HashSet<String>>,
) -> Result<bool> {
    let Some(approved) = approved(engine, run)? else {
        return Ok(false);
    };
    let (plan, plan_brief) = (&approved.plan, &approved.brief);
    if let Some(t) = touched.as_deref_mut() {
        // Briefs outside the plan's workstreams (the plan's own, a superseded plan's) wait for nothing here.
        let progress = stages_of(&approved)?;
        t.retain(|id| progress.places.contains_key(id));
    }
    let mut progressed = false;
    for (place, stage) in plan.stages().iter().enumerate() {
        // Borrowed, not copied: a stage may list a thousand workstreams, and this runs on every pass.
        let ids = stage.workstreams;
        if !started_any(engine, &approved, ids)? {
            start_workstreams(engine, run, plan, ids)?;
            return Ok(true);
        }
        // What merged before this runner knew the plan (a runner resuming the run, one that took over
        // after T1 re-planned) is read from the blackboard once per stage; every later merge is this
        // runner's own and remembered as it is made.
        if !stages_of(&approved)?.learned(place) {
            for id in ids {
                learn_merged(engine, &approved, id)?;
            }
            stages_of(&approved)?.set_learned(place);
        }
        // Only a workstream whose briefs changed can have become ready to merge: a pass looks at those
        // alone, so its cost does not grow with the number of workstreams.
        let asked: Vec<String> = match touched.as_deref() {
            Some(t) => stages_of(&approved)?
                .touched_in(place, t)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            None => ids.to_vec(),
        };
        for id in asked {
            if let Some(t) = touched.as_deref_mut() {
                t.remove(&id);
            }
            if stages_of(&approved)?.merged.contains(&id) {
                continue;
            }
            let Some(ws) = plan.workstream(&id) else { continue };
            if let Some(slices) = accepted_slices(engine, plan_brief, &id)? {
                merge_workstream(engine, plan_brief, ws, &slices).await?;
                progressed = true;
            }
        }
        if !stages_of(&approved)?.stage_merged(place) {
            return Ok(progressed);
        }
    }
    let children = engine.store.list_children(plan_brief.id)?;
    // T1 accepted, but the runner stopped before it marked the run succeeded: that is all that is left.
    if let Some(accepted) = latest_of(children.iter().filter(|b| BriefRole::of(b) == BriefRole::Accept))
        .into_iter()
        .find(|b| b.status == BriefStatus::Done)
        && !engine.store.run_status(run)?.is_terminal()
    {
        let out: AcceptOutput = output_of(engine, accepted)?;
        finish_accepted(engine, accepted, &out.summary)?;
        return Ok(true);
    }
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
    Ok(progressed)
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

/// Remembers `workstream` as merged into the integration branch when the blackboard records it so.
fn learn_merged(engine: &Engine, approved: &ApprovedPlan, workstream: &str) -> Result<()> {
    if stages_of(approved)?.merged.contains(workstream) {
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
    if engine.store.count_briefs(run, workstream, Some(Tier::T4), &[])? == 0
        || engine
            .store
            .count_briefs(run, workstream, None, &crate::advance::OPEN)?
            > 0
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
    Ok(out.verdict == Verdict::Pass)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan() -> Plan {
        let ws = |id: &str, group: &str| {
            json!({
                "id": id, "name": id, "domain": "core", "tier_path": ["t4", "t5"], "parallel_group": group,
                "variety": {"novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1},
                "contract": {"done_when": "done"}
            })
        };
        agency_core::validate_plan(&json!({
            "run_id": "0190f0a0-1234-7abc-8def-0123456789ab",
            "goal_anchor": "a goal",
            "complexity": "low",
            "retry_budget_multiplier": 1,
            "workstreams": [ws("ws-c", "A"), ws("ws-a", "A"), ws("ws-b", "A"), ws("ws-d", "B")],
            "parallelism": {"groups": {"A": ["ws-c", "ws-a", "ws-b"], "B": ["ws-d"]}, "sequence": ["A", "B"]},
            "self_critique_summary": "fine"
        }))
        .unwrap()
    }

    #[test]
    fn touched_workstreams_come_in_their_stage_order_and_a_stage_is_merged_when_all_of_it_is() {
        let mut progress = StageProgress::new(&plan());
        let touched: HashSet<String> = ["ws-b", "ws-d", "ws-c", "elsewhere"].map(String::from).into();
        assert_eq!(progress.touched_in(0, &touched), ["ws-c", "ws-b"]);
        assert_eq!(progress.touched_in(1, &touched), ["ws-d"]);

        assert!(!progress.learned(0));
        progress.set_learned(0);
        assert!(progress.learned(0) && !progress.learned(1) && !progress.learned(7));

        for ws in ["ws-a", "ws-c", "ws-a"] {
            progress.mark_merged(ws);
        }
        assert!(
            !progress.stage_merged(0),
            "two of three, one of them marked twice"
        );
        progress.mark_merged("ws-b");
        assert!(progress.stage_merged(0));
        assert!(!progress.stage_merged(1));
        progress.mark_merged("ws-d");
        assert!(progress.stage_merged(1));
    }
}
