//! Path amendments on the blackboard (seed 001, "Path Amendment Mechanism"): a tier proposes a different
//! path for its workstream (the built-in agent's `propose_path_amendment` tool, or `agency amendment
//! propose` through the runner's gate service for an external runtime); the proposal is a `path_amendment`
//! event, informational for the tiers above (a log line at the tier above the proposer, no agent is
//! interrupted), and is listed on the next tier gate that opens. A human approves or rejects each one
//! (`agency amendment approve|reject`); an approved one changes the workstream's remaining path, which
//! [`agency_flow::amendments`] computes, and the runner carries it out before the workstream merges.
//!
//! Also here: what a tier gate's summary gains when it opens — the amendments still undecided and the
//! anomalies recorded since the previous gate ([`with_review`]).

use std::collections::HashSet;

use agency_core::event::payload::{
    Anomaly, LogLine, PathAmendmentDecided, PathAmendmentProposed, PathChange,
};
use agency_core::event::{Event, EventKind, EventPayload};
use agency_core::gate::GateKind;
use agency_core::plan::Plan;
use agency_core::tiers::BriefRole;
use agency_core::{Brief, BriefId, BriefStatus, NewBrief, NewEvent, RunId, Tier};
pub use agency_flow::amendments::path_text;
use agency_flow::amendments::{Proposal, amended_path, extra_pass_title, not_carried_out};
use agency_store::Blackboard;
use serde_json::{Value, json};

use crate::artifacts::{brief_artifact, output_name};
use crate::engine::Engine;
use crate::error::{EngineError, Result};

/// How many events one read of the blackboard pages through.
const PAGE: usize = 500;

/// One proposal as recorded, with its decision when a human made one.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The `path_amendment` event's seq: the amendment's number (`#12`).
    pub seq: i64,
    /// The proposal.
    pub proposal: PathAmendmentProposed,
    /// The decision, once made.
    pub decision: Option<PathAmendmentDecided>,
}

impl Recorded {
    /// The workstream it concerns.
    pub fn workstream(&self) -> Option<&str> {
        self.proposal
            .amendment
            .as_ref()
            .map(|a| a.workstream.as_str())
            .or(self.proposal.workstream.as_deref())
    }

    /// One line: `#12 ws-arith: add t3 before t5 — why (by t4/fix-add)`.
    pub fn line(&self) -> String {
        let change = self
            .proposal
            .amendment
            .as_ref()
            .map(|a| format!("{}: {} — ", a.workstream, a.describe()))
            .unwrap_or_default();
        format!(
            "#{} {change}{} (by {})",
            self.seq, self.proposal.reason, self.proposal.proposed_by
        )
    }

    /// Where it stands, who decided it and why: `proposed, undecided`, `approved by cli:alice: path
    /// t3→t4→t3→t5`, `rejected by dashboard: one pass is enough`.
    pub fn status_line(&self) -> String {
        match &self.decision {
            None => "proposed, undecided".into(),
            Some(d) if d.approved => format!(
                "approved by {}{}{}",
                d.by,
                if d.path_after.is_empty() {
                    String::new()
                } else {
                    format!(": path {}", path_text(&d.path_after))
                },
                d.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
            ),
            Some(d) => format!(
                "rejected by {}: {}",
                d.by,
                d.note.as_deref().unwrap_or("no reason given")
            ),
        }
    }

    fn as_proposal(&self) -> Option<Proposal> {
        Some(Proposal {
            seq: self.seq,
            at: self.proposal.tier,
            change: self.proposal.amendment.clone()?,
        })
    }
}

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

/// Every path amendment of `run`, in the order proposed, each with its decision.
pub fn recorded(store: &dyn Blackboard, run: RunId) -> Result<Vec<Recorded>> {
    let mut found: Vec<Recorded> = Vec::new();
    let mut after = 0;
    loop {
        let page = store.events_of_kinds_after(
            run,
            &[EventKind::PathAmendment, EventKind::PathAmendmentDecided],
            after,
            PAGE,
        )?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for event in &page {
            match event.typed() {
                Ok(EventPayload::PathAmendment(proposal)) => found.push(Recorded {
                    seq: event.seq,
                    proposal,
                    decision: None,
                }),
                Ok(EventPayload::PathAmendmentDecided(decision)) => {
                    if let Some(r) = found.iter_mut().find(|r| r.seq == decision.amendment) {
                        r.decision.get_or_insert(decision);
                    }
                }
                Ok(_) => {}
                Err(err) => return Err(EngineError::State(format!("event {}: {err}", event.seq))),
            }
        }
    }
    Ok(found)
}

/// The run's approved plan, read from the blackboard alone (the gate service and the CLI have no engine).
fn plan_of(store: &dyn Blackboard, run: RunId) -> Result<Option<Plan>> {
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
    agency_core::validate_plan(&value)
        .map(Some)
        .map_err(|e| EngineError::State(e.to_string()))
}

/// `workstream`'s path today: the plan's with every approved amendment applied in order. `None` when the
/// run has no approved plan or the plan no such workstream.
pub fn current_path(store: &dyn Blackboard, run: RunId, workstream: &str) -> Result<Option<Vec<Tier>>> {
    let Some(plan) = plan_of(store, run)? else {
        return Ok(None);
    };
    let Some(ws) = plan.workstream(workstream) else {
        return Ok(None);
    };
    let all = recorded(store, run)?;
    Ok(Some(path_with(&ws.tier_path, &all, workstream)))
}

fn approved_of<'r>(all: &'r [Recorded], workstream: &'r str) -> impl Iterator<Item = &'r Recorded> {
    all.iter().filter(move |r| {
        r.workstream() == Some(workstream) && r.decision.as_ref().is_some_and(|d| d.approved)
    })
}

fn path_with(planned: &[Tier], all: &[Recorded], workstream: &str) -> Vec<Tier> {
    let approved: Vec<Proposal> = approved_of(all, workstream)
        .filter_map(Recorded::as_proposal)
        .collect();
    agency_flow::amendments::current_path(planned, &approved).0
}

/// Whether `workstream` went into the integration branch already: too late to change its path.
fn merged(store: &dyn Blackboard, run: RunId, workstream: &str) -> Result<bool> {
    Ok(store
        .latest_artifact(run, &crate::progress::merged_name(workstream))?
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
    let planned = plan_of(store, run)
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
    let current = path_with(&ws.tier_path, &all, &change.workstream);
    let after = amended_path(&current, at, &change).map_err(|e| e.to_string())?;
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

/// A human's decision on proposal `seq`. Approval is refused when the change no longer applies, the
/// workstream merged, or the runner cannot carry the change out ([`not_carried_out`]): an approval on the
/// blackboard always means the path changes.
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
        if let Some(why) = not_carried_out(change) {
            return Err(format!("amendment #{seq}: {why}"));
        }
        if merged(store, run, &workstream).map_err(|e| e.to_string())? {
            return Err(format!(
                "amendment #{seq}: workstream {workstream} is merged already; its path can no longer change — reject it"
            ));
        }
        let plan = plan_of(store, run)
            .map_err(|e| e.to_string())?
            .ok_or("the run has no approved plan")?;
        let planned = plan
            .workstream(&workstream)
            .ok_or_else(|| format!("the plan has no workstream {workstream}"))?;
        let before = path_with(&planned.tier_path, &all, &workstream);
        let after = amended_path(&before, found.proposal.tier, change).map_err(|e| {
            format!(
                "amendment #{seq} no longer applies to {}: {e}",
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

/// Before `workstream` merges: the extra squad-lead passes its approved amendments ask for that are not
/// written yet, written now under the plan's brief (one T3 brief each, `amended-pass-<n>`). Returns
/// whether it wrote any; the workstream then waits for them like for its first pass.
pub(crate) fn write_extra_passes(engine: &Engine, plan_brief: &Brief, workstream: &str) -> Result<bool> {
    let run = plan_brief.run;
    let all = recorded(engine.store.as_ref(), run)?;
    let asked: Vec<&Recorded> = approved_of(&all, workstream).collect();
    if asked.is_empty() {
        return Ok(false);
    }
    let Some(ws) = crate::plan::approved(engine, run)?.and_then(|a| a.plan.workstream(workstream).cloned())
    else {
        return Ok(false);
    };
    let written: HashSet<String> = engine
        .store
        .list_workstream_briefs(run, workstream)?
        .into_iter()
        .filter(|b| b.tier == Tier::T3)
        .map(|b| b.title)
        .collect();
    let mut new = Vec::new();
    for (i, amendment) in asked.iter().enumerate() {
        let title = extra_pass_title(i + 1);
        if written.contains(&title) {
            continue;
        }
        new.push(NewBrief {
            tier: Tier::T3,
            workstream: workstream.to_string(),
            title: title.clone(),
            personality: ws.specialist.clone(),
            instructions: format!(
                "An extra squad-lead pass, approved by {} as path amendment #{}: {}\nThe workstream's earlier \
                 tasks are done and verified on its branch; plan only the tasks this pass needs.\n{}",
                amendment.decision.as_ref().map_or("a human", |d| d.by.as_str()),
                amendment.seq,
                amendment.proposal.reason,
                ws.notes
            ),
            inputs: vec![],
            variety: Some(ws.variety),
            contract: Some(ws.contract.clone()),
            depends_on: vec![],
        });
        engine.log(
            run,
            Some(Tier::T3),
            "AMENDED_PASS",
            format!(
                "{workstream}: {title} starts (amendment #{}, path {})",
                amendment.seq,
                amendment
                    .decision
                    .as_ref()
                    .map(|d| path_text(&d.path_after))
                    .unwrap_or_default()
            ),
        )?;
    }
    if new.is_empty() {
        return Ok(false);
    }
    crate::plan::write_children(engine, plan_brief, new)?;
    Ok(true)
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
    let mut after = 0;
    loop {
        let page =
            store.events_of_kinds_after(run, &[EventKind::GatePending, EventKind::Anomaly], after, PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for event in &page {
            match event.typed() {
                // Those before a tier gate were shown on it; other gates (budget, teachback, ...) list none.
                Ok(EventPayload::GatePending(opened)) if opened.kind.is_some_and(lists_review) => {
                    anomalies.clear()
                }
                Ok(EventPayload::Anomaly(a)) => anomalies.push(anomaly_line(&a)),
                _ => {}
            }
        }
    }
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
