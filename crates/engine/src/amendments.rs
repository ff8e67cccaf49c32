//! Path amendments on the blackboard (seed 001, "Path Amendment Mechanism"): a tier proposes a different
//! path for its workstream (the built-in agent's `propose_path_amendment` tool, or `agency amendment
//! propose` through the runner's gate service for an external runtime); the proposal is a `path_amendment`
//! event, informational for the tiers above (a log line at the tier above the proposer, no agent is
//! interrupted), and is listed on the next tier gate that opens. A human approves or rejects each one
//! (`agency amendment approve|reject`); an approved one changes the workstream's remaining path, which
//! [`agency_flow::amendments`] computes from where the workstream stands (read again at approval, so a
//! change it moved past is refused), and the runner follows it: a workstream's entry brief is written from
//! its path today ([`amended_workstreams`]), a specialist's squads become implementers when the path skips
//! the squad lead ([`after_architecture`]), and an extra pass is written once the one before is verified and
//! before the workstream merges ([`write_next_pass`]) — a T2 lead for a second architecture pass (its
//! specialists, synthesis, T1 validation and squads follow as in a first pass), a squad lead or an
//! implementer otherwise.
//!
//! Also here: what a tier gate's summary gains when it opens — the amendments still undecided and the
//! anomalies recorded since the previous gate ([`with_review`]).

use std::collections::HashMap;

use agency_core::event::payload::{
    Anomaly, LogLine, PathAmendmentDecided, PathAmendmentProposed, PathChange,
};
use agency_core::event::{Event, EventKind, EventPayload};
use agency_core::gate::GateKind;
use agency_core::plan::Plan;
use agency_core::tiers::BriefRole;
use agency_core::{Brief, BriefId, BriefStatus, NewBrief, NewEvent, RunId, Tier, Workstream};
pub use agency_flow::amendments::path_text;
use agency_flow::amendments::{
    AfterPass, Approval, EarlierPass, PassReason, Progress, after_pass, amended_path, earlier_passes_name,
    earlier_passes_text, pass_entry, pass_of_entry, passes, position,
};
use agency_store::Blackboard;
use agency_store::walk::each_event_of_kinds;
use serde_json::{Value, json};

pub use crate::amendment_log::{Recorded, recorded};
use crate::artifacts::{brief_artifact, output_name};
use crate::engine::Engine;
use crate::error::{EngineError, Result};

/// Who proposes: an agent on its brief, or a human.
#[derive(Debug, Clone)]
pub struct Proposer {
    /// `t4/fix-add`, `cli:alice`.
    pub name: String,
    /// The proposing brief, when an agent proposes.
    pub brief: Option<Brief>,
}

impl Proposer {
    /// An agent working on `brief`.
    pub fn agent(brief: &Brief) -> Proposer {
        Proposer {
            name: format!("{}/{}", brief.tier.as_str(), brief.title),
            brief: Some(brief.clone()),
        }
    }
}

/// The run's approved plan and its brief, read from the blackboard alone (the gate service and the CLI have
/// no engine).
fn plan_of(store: &dyn Blackboard, run: RunId) -> Result<Option<(Brief, Plan)>> {
    let done = store.list_briefs_by_status(run, BriefStatus::Done)?;
    let Some(brief) = done
        .into_iter()
        .rev()
        .find(|b| BriefRole::of(b) == BriefRole::Plan)
    else {
        return Ok(None);
    };
    let Some(artifact) = brief_artifact(store, run, brief.id, output_name)? else {
        return Ok(None);
    };
    let value: Value = serde_json::from_slice(&artifact.bytes)
        .map_err(|e| EngineError::State(format!("the plan's output: {e}")))?;
    let plan = agency_core::validate_plan(&value).map_err(|e| EngineError::State(e.to_string()))?;
    Ok(Some((brief, plan)))
}

/// `workstream`'s path today: the plan's, changed by each approved amendment in the order approved. `None`
/// when the run has no approved plan or the plan no such workstream.
pub fn current_path(store: &dyn Blackboard, run: RunId, workstream: &str) -> Result<Option<Vec<Tier>>> {
    let Some((plan_brief, plan)) = plan_of(store, run)? else {
        return Ok(None);
    };
    let Some(ws) = plan.workstream(workstream) else {
        return Ok(None);
    };
    let all = recorded(store, run)?;
    Ok(Some(path_with(&plan_brief, &ws.tier_path, &all, workstream)))
}

fn approved_of<'r>(all: &'r [Recorded], workstream: &'r str) -> impl Iterator<Item = &'r Recorded> {
    all.iter().filter(move |r| {
        r.workstream() == Some(workstream) && r.decision.as_ref().is_some_and(|d| d.approved)
    })
}

/// The planned path (of the plan `plan_brief` made) with the approvals of `workstream` under that plan
/// applied in the order made ([`agency_flow::amendments::current_path`]). Approvals recorded before the
/// plan's brief was written were made on a plan T1 has since replaced, and count for nothing.
fn path_with(plan_brief: &Brief, planned: &[Tier], all: &[Recorded], workstream: &str) -> Vec<Tier> {
    agency_flow::amendments::current_path(
        planned,
        approved_under(plan_brief, all, workstream)
            .into_iter()
            .filter_map(|r| r.decision.as_ref())
            .map(|d| Approval {
                seq: d.amendment,
                before: &d.path_before,
                after: &d.path_after,
            }),
    )
    .0
}

/// The approvals of `workstream` made under the plan `plan_brief` made, in the order they were made (which
/// `recorded`, in proposal order, does not keep).
fn approved_under<'r>(plan_brief: &Brief, all: &'r [Recorded], workstream: &'r str) -> Vec<&'r Recorded> {
    let mut approved: Vec<&Recorded> = approved_of(all, workstream)
        .filter(|r| r.decided_ts.is_some_and(|ts| ts >= plan_brief.created_at))
        .collect();
    approved.sort_by_key(|r| r.decided_seq);
    approved
}

/// Where `workstream` stands under the plan brief `plan_brief`: how many passes have an entry brief (a
/// child of the plan brief: the workstream's entry, then each `amended-pass-<n>`), and the deepest tier
/// any brief of the newest pass reached.
fn progress_of(store: &dyn Blackboard, plan_brief: &Brief, workstream: &str) -> Result<Progress> {
    let briefs = store.list_workstream_briefs(plan_brief.run, workstream)?;
    let mut children: HashMap<BriefId, Vec<&Brief>> = HashMap::new();
    for brief in &briefs {
        if let Some(parent) = brief.parent {
            children.entry(parent).or_default().push(brief);
        }
    }
    // Each pass's entry, once per title (a retry is another attempt of the same pass), oldest first.
    let mut entries: Vec<&Brief> = children
        .get(&plan_brief.id)
        .into_iter()
        .flatten()
        .copied()
        .filter(|b| b.tier != Tier::T1)
        .collect();
    entries.sort_by_key(|b| b.created_at);
    let mut titles: Vec<&str> = Vec::new();
    for entry in &entries {
        if !titles.contains(&entry.title.as_str()) {
            titles.push(&entry.title);
        }
    }
    let Some(newest) = titles.last() else {
        return Ok(Progress::default());
    };
    let mut deepest: Option<Tier> = None;
    let mut frontier: Vec<&Brief> = entries.iter().copied().filter(|b| b.title == *newest).collect();
    while let Some(brief) = frontier.pop() {
        if matches!(brief.tier, Tier::T2 | Tier::T3 | Tier::T4) {
            deepest = deepest.max(Some(brief.tier));
        }
        frontier.extend(children.get(&brief.id).into_iter().flatten().copied());
    }
    Ok(Progress {
        passes_started: titles.len(),
        deepest,
    })
}

/// A workstream's path today and where the workstream stands on it.
struct Standing {
    path: Vec<Tier>,
    progress: Progress,
    /// How many tiers of `path` it started ([`position`]).
    started: usize,
}

fn standing(
    store: &dyn Blackboard,
    plan_brief: &Brief,
    planned: &[Tier],
    all: &[Recorded],
    workstream: &str,
) -> Result<Standing> {
    let path = path_with(plan_brief, planned, all, workstream);
    let progress = progress_of(store, plan_brief, workstream)?;
    let started = position(&path, progress);
    Ok(Standing {
        path,
        progress,
        started,
    })
}

/// Whether `workstream` went into the integration branch already: too late to change its path.
fn merged(store: &dyn Blackboard, run: RunId, workstream: &str) -> Result<bool> {
    Ok(store
        .latest_artifact(run, &crate::artifacts::merged_name(workstream))?
        .is_some())
}

/// Records a proposal after checking it against the workstream's current path; the refusal, when there is
/// one, is a message for the proposer (an agent fixes its call from it). The tier above the proposer is
/// told with a log line; nothing waits on it.
pub fn propose(
    store: &dyn Blackboard,
    run: RunId,
    proposer: &Proposer,
    reason: &str,
    change: PathChange,
) -> std::result::Result<Event, String> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err("reason: must say why the path should change".into());
    }
    let at = proposer.brief.as_ref().map(|b| b.tier);
    if let Some(brief) = &proposer.brief
        && brief.workstream != change.workstream
    {
        return Err(format!(
            "workstream: a brief of {} may amend only its own workstream's path, not {}",
            brief.workstream, change.workstream
        ));
    }
    let (plan_brief, planned) = plan_of(store, run)
        .map_err(|e| e.to_string())?
        .ok_or("the run has no approved plan yet: there is no path to amend")?;
    let ws = planned.workstream(&change.workstream).ok_or_else(|| {
        format!(
            "workstream: the plan has no workstream {:?} (it has {})",
            change.workstream,
            planned
                .workstreams
                .iter()
                .map(|w| w.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    let all = recorded(store, run).map_err(|e| e.to_string())?;
    let now =
        standing(store, &plan_brief, &ws.tier_path, &all, &change.workstream).map_err(|e| e.to_string())?;
    let after = amended_path(&now.path, now.started, &change).map_err(|e| e.to_string())?;
    if merged(store, run, &change.workstream).map_err(|e| e.to_string())? {
        return Err(format!(
            "workstream {} is merged already: its path can no longer change",
            change.workstream
        ));
    }
    let workstream = change.workstream.clone();
    let describe = change.describe();
    let payload = PathAmendmentProposed {
        proposed_by: proposer.name.clone(),
        workstream: Some(workstream.clone()),
        reason: reason.to_string(),
        amendment: Some(change),
        brief: proposer.brief.as_ref().map(|b| b.id),
        tier: at,
    };
    let mut event = NewEvent::typed(run, EventPayload::PathAmendment(payload));
    if let Some(brief) = &proposer.brief {
        event = event.brief(brief.id).tier(brief.tier);
    }
    let written = store.append_event(event).map_err(|e| e.to_string())?;
    // The seed's notification: the tier above learns of it from the runner, and is not blocked.
    let above = at.and_then(tier_above).unwrap_or(Tier::T1);
    let notice = NewEvent::typed(
        run,
        EventPayload::Log(LogLine::new(
            "normal",
            Some("AMENDMENT"),
            format!(
                "{} informed of #{}: {workstream} {describe} would make its path {} (for the next gate; nothing waits)",
                above.as_str().to_ascii_uppercase(),
                written.seq,
                path_text(&after)
            ),
        )),
    )
    .tier(above);
    store.append_event(notice).map_err(|e| e.to_string())?;
    Ok(written)
}

fn tier_above(tier: Tier) -> Option<Tier> {
    match tier {
        Tier::T1 => None,
        Tier::T2 => Some(Tier::T1),
        Tier::T3 => Some(Tier::T2),
        Tier::T4 => Some(Tier::T3),
        Tier::T5 => Some(Tier::T3),
    }
}

/// A human's decision on proposal `seq`. Approval is refused when the change no longer applies (the path
/// it gives is one the runner cannot walk, or the workstream moved past its insert point) or the workstream
/// merged: an approval on the blackboard always means the path changes.
pub fn decide(
    store: &dyn Blackboard,
    run: RunId,
    seq: i64,
    approve: bool,
    by: &str,
    note: Option<String>,
) -> std::result::Result<Event, String> {
    let all = recorded(store, run).map_err(|e| e.to_string())?;
    let Some(found) = all.iter().find(|r| r.seq == seq) else {
        let known: Vec<String> = all.iter().map(|r| format!("#{}", r.seq)).collect();
        return Err(format!(
            "run {} has no path amendment #{seq} (it has {})",
            run.short(),
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        ));
    };
    if let Some(decision) = &found.decision {
        return Err(format!(
            "amendment #{seq} was {} by {} already",
            if decision.approved { "approved" } else { "rejected" },
            decision.by
        ));
    }
    let workstream = found
        .workstream()
        .ok_or_else(|| format!("amendment #{seq} names no workstream"))?
        .to_string();
    let mut decision = PathAmendmentDecided {
        amendment: seq,
        workstream: workstream.clone(),
        approved: approve,
        by: by.to_string(),
        note,
        ..PathAmendmentDecided::default()
    };
    if approve {
        let change = found.proposal.amendment.as_ref().ok_or_else(|| {
            format!("amendment #{seq} records no change (an older build's record): reject it")
        })?;
        if merged(store, run, &workstream).map_err(|e| e.to_string())? {
            return Err(format!(
                "amendment #{seq}: workstream {workstream} is merged already; its path can no longer change — reject it"
            ));
        }
        let (plan_brief, plan) = plan_of(store, run)
            .map_err(|e| e.to_string())?
            .ok_or("the run has no approved plan")?;
        let planned = plan
            .workstream(&workstream)
            .ok_or_else(|| format!("the plan has no workstream {workstream}"))?;
        // Where the workstream stands now, not where it stood when the change was proposed: it may have
        // moved past the insert point while the amendment waited.
        let now =
            standing(store, &plan_brief, &planned.tier_path, &all, &workstream).map_err(|e| e.to_string())?;
        let before = now.path;
        let after = amended_path(&before, now.started, change).map_err(|e| {
            format!(
                "amendment #{seq} no longer applies to {workstream}'s path {} — reject it: {e}",
                path_text(&before)
            )
        })?;
        decision.path_before = before;
        decision.path_after = after;
    }
    store
        .append_event(NewEvent::typed(run, EventPayload::PathAmendmentDecided(decision)))
        .map_err(|e| e.to_string())
}

/// `workstream`'s path today for the runner: the approved plan's, changed by the approved amendments.
pub(crate) fn path_now(engine: &Engine, run: RunId, ws: &Workstream) -> Result<Vec<Tier>> {
    let Some(approved) = crate::plan::approved(engine, run)? else {
        return Ok(ws.tier_path.clone());
    };
    let all = engine.amendment_log.recorded(engine.store.as_ref(), run)?;
    Ok(path_with(&approved.brief, &ws.tier_path, &all, &ws.id))
}

/// `starting` with their paths today: what their entry briefs are written from when their stage starts (an
/// amendment approved before then may have added a T2 pass or skipped the squad lead). The amendments are
/// read once for the whole stage.
pub(crate) fn amended_workstreams(
    engine: &Engine,
    run: RunId,
    starting: &[&Workstream],
) -> Result<Vec<Workstream>> {
    let all = engine.amendment_log.recorded(engine.store.as_ref(), run)?;
    let approved = crate::plan::approved(engine, run)?;
    let mut amended = Vec::with_capacity(starting.len());
    for ws in starting {
        let path = match &approved {
            Some(approved) if !all.is_empty() => path_with(&approved.brief, &ws.tier_path, &all, &ws.id),
            _ => ws.tier_path.clone(),
        };
        if path != ws.tier_path {
            engine.log(
                run,
                path.first().copied(),
                "AMENDED_PATH",
                format!(
                    "{}: starts on its amended path {} (planned {})",
                    ws.id,
                    path_text(&path),
                    path_text(&ws.tier_path)
                ),
            )?;
        }
        amended.push(Workstream {
            tier_path: path,
            ..(*ws).clone()
        });
    }
    Ok(amended)
}

/// The tier that follows `workstream`'s architecture pass at 0-based index `pass` (the pass its lead's
/// title names, [`pass_of_entry`]): `t3` (squads under each specialist) unless its path today — planned
/// so, or as an approved amendment left it — goes to `t4` (the specialists' squads go straight to
/// implementers).
pub(crate) fn after_architecture(engine: &Engine, run: RunId, workstream: &str, pass: usize) -> Result<Tier> {
    let Some(ws) = crate::plan::approved(engine, run)?.and_then(|a| a.plan.workstream(workstream).cloned())
    else {
        return Ok(Tier::T3);
    };
    let path = path_now(engine, run, &ws)?;
    Ok(agency_flow::amendments::after_architecture(&path, pass).unwrap_or(Tier::T3))
}

/// The 0-based index of the pass `lead` (a T2 lead, the entry of its pass) starts.
pub(crate) fn pass_of_lead(lead: &Brief) -> usize {
    pass_of_entry(&lead.title)
}

/// Once `workstream`'s newest pass is verified and before it merges: the next pass its path asks for (an
/// approved amendment added it), written now under the plan's brief ([`pass_entry`]) — a T2 lead (a
/// second architecture pass), a T3 squad lead or a T4 implementer titled `amended-pass-<n>`, told why and,
/// in the record [`earlier_passes_name`] names (written first), what the earlier passes built. Returns
/// whether it wrote one; the workstream then waits for it like for its first pass, and comes back here when
/// it is verified.
pub(crate) fn write_next_pass(engine: &Engine, plan_brief: &Brief, workstream: &str) -> Result<bool> {
    let run = plan_brief.run;
    let all = engine.amendment_log.recorded(engine.store.as_ref(), run)?;
    if approved_of(&all, workstream).next().is_none() {
        return Ok(false);
    }
    let Some(ws) = crate::plan::approved(engine, run)?.and_then(|a| a.plan.workstream(workstream).cloned())
    else {
        return Ok(false);
    };
    let now = standing(engine.store.as_ref(), plan_brief, &ws.tier_path, &all, workstream)?;
    let index = match after_pass(&now.path, now.progress.passes_started) {
        AfterPass::Merge => return Ok(false),
        AfterPass::Start { index, .. } => index,
    };
    // Whose reason the pass carries out: the first approval that gave the path this pass.
    let approvals = approved_under(plan_brief, &all, workstream);
    let amendment = approvals
        .iter()
        .find(|r| {
            r.decision
                .as_ref()
                .is_some_and(|d| passes(&d.path_after).len() > index)
        })
        .or(approvals.last())
        .ok_or_else(|| EngineError::State(format!("{workstream}: an amended path without its approval")))?;
    let earlier = earlier_passes(engine, plan_brief, workstream)?;
    let diffs: Vec<String> = earlier
        .iter()
        .flat_map(|(_, slices)| slices.iter().map(|s| crate::artifacts::diff_name(s.id)))
        .collect();
    let why = PassReason {
        seq: amendment.seq,
        by: amendment.decision.as_ref().map_or("a human", |d| d.by.as_str()),
        reason: &amendment.proposal.reason,
    };
    let Some(entry) = pass_entry(
        &now.path,
        now.progress.passes_started,
        workstream,
        why,
        &ws.notes,
        &diffs,
    ) else {
        return Ok(false);
    };
    let record: Vec<EarlierPass> = earlier.into_iter().map(|(pass, _)| pass).collect();
    engine.put_text(
        plan_brief,
        &earlier_passes_name(workstream, entry.index),
        "text/markdown",
        &earlier_passes_text(workstream, &now.path, &record),
    )?;
    let new = NewBrief {
        tier: entry.tier,
        workstream: workstream.to_string(),
        title: entry.title.clone(),
        personality: ws.specialist.clone(),
        instructions: entry.instructions,
        inputs: entry.inputs,
        variety: Some(ws.variety),
        contract: Some(ws.contract.clone()),
        depends_on: vec![],
    };
    engine.log(
        run,
        Some(entry.tier),
        "AMENDED_PASS",
        format!(
            "{workstream}: {} ({}{}) starts (amendment #{}, path {})",
            entry.title,
            entry.tier.as_str().to_ascii_uppercase(),
            if entry.tier == Tier::T2 {
                ", a second architecture pass"
            } else {
                ""
            },
            amendment.seq,
            path_text(&now.path)
        ),
    )?;
    crate::plan::write_children(engine, plan_brief, vec![new])?;
    Ok(true)
}

/// What each of `workstream`'s passes under `plan_brief` built, oldest first, with its accepted slices:
/// the entry (newest attempt of each title), its lead's boundaries and its synthesis's canonical
/// architecture when it had a T2, and the done implementers of its tree (newest attempts).
fn earlier_passes(
    engine: &Engine,
    plan_brief: &Brief,
    workstream: &str,
) -> Result<Vec<(EarlierPass, Vec<Brief>)>> {
    let briefs = engine.store.list_workstream_briefs(plan_brief.run, workstream)?;
    let mut children: HashMap<BriefId, Vec<&Brief>> = HashMap::new();
    for brief in &briefs {
        if let Some(parent) = brief.parent {
            children.entry(parent).or_default().push(brief);
        }
    }
    let children_of = |id: BriefId| children.get(&id).into_iter().flatten().copied();
    let entries = agency_flow::latest_of(children_of(plan_brief.id).filter(|b| b.tier != Tier::T1));
    let mut found = Vec::new();
    for entry in entries {
        let mut pass = EarlierPass {
            index: pass_of_entry(&entry.title),
            entry: format!("{} {}", entry.tier.as_str(), entry.title),
            ..EarlierPass::default()
        };
        if BriefRole::of(entry) == BriefRole::Lead {
            let lead: agency_core::tiers::LeadOutput = crate::plan::output_of(engine, entry)?;
            pass.boundaries = serde_json::to_string_pretty(
                &json!({ "boundaries": lead.boundaries, "shared_assumptions": lead.shared_assumptions }),
            )
            .ok();
            let synthesis = agency_flow::latest_of(children_of(entry.id))
                .into_iter()
                .find(|b| BriefRole::of(b) == BriefRole::Synthesis && b.status == BriefStatus::Done);
            if let Some(synthesis) = synthesis {
                let out: agency_core::tiers::SynthesisOutput = crate::plan::output_of(engine, synthesis)?;
                pass.architecture = Some(out.canonical_architecture);
            }
        }
        let mut slices: Vec<Brief> = Vec::new();
        let mut frontier = vec![entry];
        while let Some(brief) = frontier.pop() {
            if brief.tier == Tier::T4 && brief.status == BriefStatus::Done {
                slices.push(brief.clone());
            }
            if brief.tier != Tier::T4 {
                frontier.extend(agency_flow::latest_of(children_of(brief.id)));
            }
        }
        slices.sort_by_key(|b| b.created_at);
        pass.slices = slices
            .iter()
            .map(|b| (b.title.clone(), b.instructions.clone()))
            .collect();
        found.push((pass, slices));
    }
    found.sort_by_key(|(pass, _)| pass.index);
    Ok(found)
}

/// What a tier gate's summary gains as it opens (the plan, lead, synthesis, task-split and T5 verdict
/// gates call it): `amendments`, the path amendments no human decided yet (each
/// `{seq, line, workstream}`), and in `anomalies`, every `anomaly` event recorded since the previous gate
/// of the run opened.
pub(crate) fn with_review(store: &dyn Blackboard, run: RunId, mut summary: Value) -> Result<Value> {
    let undecided: Vec<Value> = recorded(store, run)?
        .into_iter()
        .filter(|r| r.decision.is_none())
        .map(|r| json!({ "seq": r.seq, "workstream": r.workstream(), "line": r.line() }))
        .collect();
    let mut anomalies: Vec<String> = Vec::new();
    let kinds = [EventKind::GatePending, EventKind::Anomaly];
    each_event_of_kinds::<EngineError>(store, run, &kinds, 0, |event| {
        match event.typed() {
            // Those before a tier gate were shown on it; other gates (budget, teachback, ...) list none.
            Ok(EventPayload::GatePending(opened)) if opened.kind.is_some_and(lists_review) => {
                anomalies.clear()
            }
            Ok(EventPayload::Anomaly(a)) => anomalies.push(anomaly_line(&a)),
            _ => {}
        }
        Ok(())
    })?;
    if let Some(object) = summary.as_object_mut() {
        if !undecided.is_empty() {
            object.insert("amendments".into(), Value::Array(undecided));
        }
        if !anomalies.is_empty() {
            let list = object.entry("anomalies").or_insert_with(|| Value::Array(vec![]));
            if let Some(list) = list.as_array_mut() {
                list.extend(anomalies.into_iter().map(Value::String));
            }
        }
    }
    Ok(summary)
}

/// Whether a gate of `kind` lists the review ([`with_review`]): the tier gates.
fn lists_review(kind: GateKind) -> bool {
    matches!(
        kind,
        GateKind::T1Plan | GateKind::T2Lead | GateKind::T2Synthesis | GateKind::T3Plan | GateKind::T5Verdict
    )
}

/// An anomaly as a gate lists it: `ws-arith: message (source)`.
pub fn anomaly_line(a: &Anomaly) -> String {
    let about = a
        .workstream
        .as_deref()
        .map(|w| format!("{w}: "))
        .unwrap_or_default();
    format!("{about}{} ({})", a.message, a.source)
}

/// The brief `id` of `run`, when it is one.
pub fn brief_of_run(store: &dyn Blackboard, run: RunId, id: BriefId) -> Result<Option<Brief>> {
    let brief = store.get_brief(id)?;
    Ok((brief.run == run).then_some(brief))
}
