//! Failure handling exactly as the seed's table, driven by the escalation data in core: a failed brief is
//! retried with a corrected brief while its budget lasts, then escalated upward — to the nearest ancestor
//! of the owning tier, which is re-invoked with the failure as context — and a failure with no rung left, or
//! escalation repeated too often, opens a gate for a human.

use agency_core::escalation::{Decision, EscalationTarget, Failure};
use agency_core::event::payload::{self, BriefStatusChange, LogLine};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::{Gate, GateKind};
use agency_core::tiers::BriefRole;
use agency_core::{Brief, BriefId, BriefStatus, Tier};
use agency_exec::runtime::{AlgedonicSignal, SignalLevel};
use agency_flow::ladder::{
    self, AfterHalt, AfterRejection, Escalated, EscalationStep, FULL_PATH, Owner, after_halt,
    after_rejection, target_within,
};
use agency_flow::tiers::{on_blocked, on_failure};
use agency_store::{Blackboard, NewGate, RunStatus};
use serde_json::json;

use crate::engine::{Engine, feedback_name};
use crate::error::Result;

/// A brief failed (bad output, no report, partial work): retry or escalate as the table says.
pub fn fail_brief(engine: &Engine, brief: &Brief, why: &str) -> Result<()> {
    // T1 gets its retries too before the run is surfaced to the human (the decision core's rule).
    let (failure, decision) = on_failure(BriefRole::of(brief), brief.attempt, brief.retry_budget);
    apply(engine, brief, failure, decision, why)
}

/// A tier's output was rejected at its gate — by a human or by the gate's timeout. That counts against the
/// brief's retry budget like any failure: while attempts remain, the tier is re-invoked with the reason;
/// once they are spent, the ladder ends at a human (an escalation gate, which never times out), never in
/// a loop of re-plans.
pub fn gate_rejected(engine: &Engine, brief: &Brief, kind: GateKind, by: &str, reason: &str) -> Result<()> {
    let role = BriefRole::of(brief);
    match after_rejection(role, brief.attempt, brief.retry_budget, kind, by, reason) {
        AfterRejection::Retry {
            next_attempt,
            feedback,
        } => {
            engine.move_brief(brief, BriefStatus::Cancelled, BriefStatusChange::because(reason))?;
            retry(engine, brief, next_attempt, &feedback)?;
            Ok(())
        }
        AfterRejection::Escalate { failure, why } => apply(engine, brief, failure, Decision::OpenGate, &why),
    }
}

/// An implementer reported it is blocked: escalate to its owner at once, no retries.
pub fn blocked(engine: &Engine, brief: &Brief, why: &str) -> Result<()> {
    let (failure, decision) = on_blocked(
        brief.tier,
        BriefRole::of(brief),
        brief.attempt,
        brief.retry_budget,
    );
    apply(engine, brief, failure, decision, &format!("blocked: {why}"))
}

/// Applies a decision to a failed (still running or verifying) brief.
pub fn apply(engine: &Engine, brief: &Brief, failure: Failure, decision: Decision, why: &str) -> Result<()> {
    let payload = payload::Failure {
        title: brief.title.clone(),
        failure: Some(failure.as_str().to_string()),
        reason: why.to_string(),
        attempt: Some(brief.attempt),
        retry_budget: Some(brief.retry_budget),
        to: None,
    };
    let from = brief.status;
    failed_worktree(engine, brief);
    match decision {
        Decision::Retry { next_attempt } => {
            let event = NewEvent::typed(brief.run, EventPayload::Failed(payload))
                .brief(brief.id)
                .tier(brief.tier);
            engine
                .store
                .update_brief_status(brief.id, from, BriefStatus::Failed, event)?;
            retry(engine, brief, next_attempt, why)?;
        }
        Decision::Escalate { to } => {
            let to = target_within(to, &workstream_path(engine, brief)?);
            let payload = payload::Failure {
                to: Some(match to {
                    EscalationTarget::Tier(t) => t.as_str().to_string(),
                    EscalationTarget::Human => "human".into(),
                }),
                ..payload
            };
            let event = NewEvent::typed(brief.run, EventPayload::Escalated(payload))
                .brief(brief.id)
                .tier(brief.tier);
            engine
                .store
                .update_brief_status(brief.id, from, BriefStatus::Escalated, event)?;
            escalate(engine, brief, to, why)?;
        }
        Decision::Halt => {
            let event = NewEvent::typed(brief.run, EventPayload::Failed(payload))
                .brief(brief.id)
                .tier(brief.tier);
            engine
                .store
                .update_brief_status(brief.id, from, BriefStatus::Failed, event)?;
            engine.log(
                brief.run,
                Some(brief.tier),
                "HALT",
                format!("{} failed and cannot be retried: {why}", brief.title),
            )?;
            engine.store.set_run_status(brief.run, None, RunStatus::Failed)?;
        }
        Decision::OpenGate => {
            let event = NewEvent::typed(brief.run, EventPayload::Escalated(payload))
                .brief(brief.id)
                .tier(brief.tier);
            engine
                .store
                .update_brief_status(brief.id, from, BriefStatus::Escalated, event)?;
            open_escalation_gate(engine.store.as_ref(), brief, why)?;
        }
    }
    Ok(())
}

/// The tier path of the brief's workstream today: the approved plan's, changed by the approved path
/// amendments (a second-pass implementer whose retries are spent, in a workstream planned without `t2`,
/// escalates to its own T2 specialist, not past it to T1); the full path when the plan does not name the
/// workstream.
fn workstream_path(engine: &Engine, brief: &Brief) -> Result<Vec<Tier>> {
    let approved = crate::plan::approved(engine, brief.run)?;
    match approved
        .as_ref()
        .and_then(|a| a.plan.workstream(&brief.workstream))
    {
        Some(workstream) => crate::amendments::path_now(engine, brief.run, workstream),
        None => Ok(FULL_PATH.to_vec()),
    }
}

/// Writes the next attempt of `brief` with what went wrong as its starting feedback.
pub fn retry(engine: &Engine, brief: &Brief, attempt: u32, feedback: &str) -> Result<Brief> {
    let mut next = brief.clone();
    next.id = BriefId::new();
    next.attempt = attempt;
    next.status = BriefStatus::Pending;
    next.teachback = agency_core::TeachbackState::Pending;
    next.claimed_by = None;
    next.branch = None;
    next.worktree = None;
    next.created_at = chrono::Utc::now();
    engine.store.insert_brief(&next)?;
    engine.put_text(&next, &feedback_name(next.id), "text/plain", feedback)?;
    engine.store.append_event(
        NewEvent::typed(
            brief.run,
            EventPayload::Retried(payload::Retried {
                title: brief.title.clone(),
                attempt,
                previous: Some(brief.id),
                reason: feedback.to_string(),
            }),
        )
        .brief(next.id)
        .tier(brief.tier),
    )?;
    repoint_dependents(engine, brief.id, next.id)?;
    Ok(next)
}

/// Pipeline tasks still waiting on `old` would wait for good (a brief is claimed only once everything it
/// depends on is done, and a superseded attempt never is): each is replaced by a copy that waits on `new`
/// instead, and so on down the pipeline.
fn repoint_dependents(engine: &Engine, old: BriefId, new: BriefId) -> Result<()> {
    let waiting: Vec<Brief> = engine
        .store
        .list_briefs_by_status(engine.store.get_brief(new)?.run, BriefStatus::Pending)?
        .into_iter()
        .filter(|b| b.depends_on.contains(&old))
        .collect();
    for dependent in waiting {
        engine.move_brief(
            &dependent,
            BriefStatus::Cancelled,
            BriefStatusChange::because("its predecessor was retried"),
        )?;
        let mut copy = dependent.clone();
        copy.id = BriefId::new();
        copy.depends_on = dependent
            .depends_on
            .iter()
            .map(|d| if *d == old { new } else { *d })
            .collect();
        copy.created_at = chrono::Utc::now();
        engine.store.insert_brief(&copy)?;
        if let Some(feedback) = engine.artifact_of(dependent.run, dependent.id, feedback_name)? {
            let text = String::from_utf8_lossy(&feedback.bytes);
            engine.put_text(&copy, &feedback_name(copy.id), "text/plain", &text)?;
        }
        repoint_dependents(engine, dependent.id, copy.id)?;
    }
    Ok(())
}

/// Hands a failure to the nearest ancestor of tier `to`: it is re-invoked with the failure as context and
/// its unfinished descendants are cancelled. Too many escalations in one run, or no such ancestor, opens
/// a gate for a human.
fn escalate(engine: &Engine, brief: &Brief, to: EscalationTarget, why: &str) -> Result<()> {
    let escalations = engine
        .store
        .list_briefs_by_status(brief.run, BriefStatus::Escalated)?
        .len();
    let owner = match to {
        EscalationTarget::Tier(tier) => ancestor_of_tier(engine.store.as_ref(), brief, tier)?,
        EscalationTarget::Human => None,
    };
    let from = Escalated {
        tier: brief.tier,
        title: &brief.title,
        attempt: brief.attempt,
        why,
    };
    let facts = owner.as_ref().map(|o| Owner {
        role: BriefRole::of(o),
        attempt: o.attempt,
        retry_budget: o.retry_budget,
    });
    let max = engine.config.retry.max_escalations_before_gate;
    let (owner, next_attempt, context) = match (ladder::escalate(from, to, escalations, max, facts), owner) {
        (
            EscalationStep::ReInvoke {
                next_attempt,
                context,
            },
            Some(owner),
        ) => (owner, next_attempt, context),
        (
            EscalationStep::OwnerFails {
                failure,
                decision,
                context,
            },
            Some(owner),
        ) => {
            cancel_descendants(engine, owner.id)?;
            return apply(engine, &owner, failure, decision, &context);
        }
        (EscalationStep::Gate { why }, _) => return open_escalation_gate(engine.store.as_ref(), brief, &why),
        // The core names an owner's step only when it was given one.
        (_, None) => return open_escalation_gate(engine.store.as_ref(), brief, why),
    };
    cancel_descendants(engine, owner.id)?;
    let event = NewEvent::typed(
        brief.run,
        EventPayload::Log(LogLine::new(
            "normal",
            Some("ESCALATED"),
            format!("{} re-invoked for {}", owner.title, brief.title),
        )),
    )
    .tier(owner.tier);
    engine.store.append_event(event)?;
    if !owner.status.is_terminal() || owner.status == BriefStatus::Done {
        engine.move_brief(
            &owner,
            BriefStatus::Cancelled,
            BriefStatusChange::because("re-invoked after an escalation"),
        )?;
    }
    retry(engine, &owner, next_attempt, &context)?;
    Ok(())
}

fn ancestor_of_tier(store: &dyn Blackboard, brief: &Brief, tier: Tier) -> Result<Option<Brief>> {
    let mut current = brief.parent;
    while let Some(id) = current {
        let parent = store.get_brief(id)?;
        if parent.tier == tier {
            return Ok(Some(parent));
        }
        current = parent.parent;
    }
    Ok(None)
}

/// Cancels every unfinished brief below `root`, running ones included: what their agents report later is
/// dropped, and nothing of a superseded subtree is left open to hold its workstream.
fn cancel_descendants(engine: &Engine, root: BriefId) -> Result<()> {
    let mut frontier = vec![root];
    while let Some(id) = frontier.pop() {
        for child in &engine.store.list_children(id)? {
            frontier.push(child.id);
            if matches!(
                child.status,
                BriefStatus::Pending | BriefStatus::Running | BriefStatus::Verifying
            ) {
                engine.move_brief(
                    child,
                    BriefStatus::Cancelled,
                    BriefStatusChange::because("superseded by an escalation"),
                )?;
            }
        }
    }
    Ok(())
}

/// Blocks the run on an escalation gate: a human decides whether the failed brief gets a fresh attempt
/// (approve) or the run stops (reject).
pub fn open_escalation_gate(store: &dyn Blackboard, brief: &Brief, why: &str) -> Result<()> {
    let summary = json!({
        "message": format!("Escalation: {} \"{}\" needs a human — {why}", brief.tier, brief.title),
        "produced": why,
        "next": "approve: the brief gets a fresh attempt; reject: the run stops",
    });
    let mut gate = NewGate::new(brief.run, GateKind::Escalation, summary);
    gate.brief = Some(brief.id);
    gate.tier = Some(brief.tier);
    store.open_gate(gate)?;
    Ok(())
}

/// An algedonic signal from an agent. A HALT (security, data, ethics) stops all work of the run until a
/// human acknowledges it ([`halt`]); an ALERT (quality, scope, meta-block) escalates the brief to a human
/// on an escalation gate, which holds the run until decided.
pub fn signal(store: &dyn Blackboard, brief: &Brief, signal: &AlgedonicSignal) -> Result<()> {
    let payload = payload::Signal {
        title: Some(brief.title.clone()),
        ..signal.payload()
    };
    match signal.level {
        SignalLevel::Halt => halt(store, brief, signal, payload),
        SignalLevel::Alert => {
            store.append_event(
                NewEvent::typed(brief.run, EventPayload::Alert(payload))
                    .brief(brief.id)
                    .tier(brief.tier),
            )?;
            let event = NewEvent::typed(
                brief.run,
                EventPayload::Escalated(payload::Failure {
                    title: brief.title.clone(),
                    reason: "ALERT raised".to_string(),
                    to: Some("human".to_string()),
                    ..payload::Failure::default()
                }),
            )
            .brief(brief.id);
            store.update_brief_status(brief.id, brief.status, BriefStatus::Escalated, event)?;
            open_escalation_gate(
                store,
                brief,
                &format!("ALERT {}: {}", signal.category, signal.issue),
            )
        }
    }
}

/// The tag of the log line each agent stopped by a HALT gets.
const HALTED: &str = "HALTED";

/// A HALT: every piece of work of the run stops until a human acknowledges it. The raising brief waits
/// (`escalated`) on a `halt` gate carrying the signal's four fields; every other running agent is stopped —
/// its brief goes back to `pending` (the crew drops an agent whose claim it lost, and the brief starts again
/// in its worktree once the run resumes) — and no agent starts while the gate is pending, on this runner or
/// any worker. Stopping rather than letting agents finish: a HALT says something must not go on (a secret
/// leaking, data being destroyed), and a running agent may be the one doing it.
fn halt(
    store: &dyn Blackboard,
    brief: &Brief,
    signal: &AlgedonicSignal,
    payload: payload::Signal,
) -> Result<()> {
    let run = brief.run;
    let short = run.short();
    let payload = payload::Signal {
        next: Some(format!(
            "`agency ack {short} --note \"…\" --resume` gives the brief a fresh attempt with your note; \
             `--cancel` cancels the run"
        )),
        ..payload
    };
    store.append_event(
        NewEvent::typed(run, EventPayload::Halt(payload))
            .brief(brief.id)
            .tier(brief.tier),
    )?;
    let event = NewEvent::typed(
        run,
        EventPayload::Escalated(payload::Failure {
            title: brief.title.clone(),
            reason: format!("HALT {} raised: {}", signal.category, signal.issue),
            to: Some("human".to_string()),
            ..payload::Failure::default()
        }),
    )
    .brief(brief.id)
    .tier(brief.tier);
    store.update_brief_status(brief.id, brief.status, BriefStatus::Escalated, event)?;
    let summary = json!({
        "message": format!(
            "HALT {} from {} \"{}\": {}",
            signal.category, brief.tier, brief.title, signal.issue
        ),
        "signal": signal,
        "produced": format!(
            "Issue: {}\nEvidence: {}\nImpact: {}\nRecommended action: {}",
            signal.issue, signal.evidence, signal.impact, signal.recommended_action
        ),
        "next": format!(
            "all work is stopped: `agency ack {short} --note \"…\" --resume` (or approve) gives the brief a fresh \
             attempt with your note; `agency ack {short} --note \"…\" --cancel` (or reject) cancels the run"
        ),
    });
    let mut gate = NewGate::new(run, GateKind::Halt, summary);
    gate.brief = Some(brief.id);
    gate.tier = Some(brief.tier);
    store.open_gate(gate)?;
    for running in store.list_briefs_by_status(run, BriefStatus::Running)? {
        if running.id == brief.id {
            continue;
        }
        let line = LogLine {
            from: Some(BriefStatus::Running.as_str().to_string()),
            to: Some(BriefStatus::Pending.as_str().to_string()),
            claimed_by: running.claimed_by.clone(),
            reason: Some("halt".to_string()),
            ..LogLine::new(
                "normal",
                Some(HALTED),
                format!(
                    "{} stopped by the HALT of \"{}\"; it starts again once a human resumes the run",
                    running.title, brief.title
                ),
            )
        };
        let event = NewEvent::typed(run, EventPayload::Log(line))
            .brief(running.id)
            .tier(running.tier);
        match store.update_brief_status(running.id, BriefStatus::Running, BriefStatus::Pending, event) {
            // It finished or was taken back meanwhile: nothing left to stop.
            Ok(_) | Err(agency_store::StoreError::Conflict { .. }) => {}
            Err(other) => return Err(other.into()),
        }
    }
    Ok(())
}

/// The run's gates of `kind` whose brief still waits on them (`escalated`), each with that brief: the gates
/// an escalation or a HALT opened that a human's decision has not been acted on yet.
pub(crate) fn gates_of_escalated(
    store: &dyn Blackboard,
    run: agency_core::RunId,
    kind: GateKind,
) -> Result<Vec<(Gate, Brief)>> {
    let mut waiting = Vec::new();
    for gate in store.list_gates_of_kind(run, kind)? {
        let Some(id) = gate.brief else { continue };
        let brief = store.get_brief(id)?;
        if brief.status == BriefStatus::Escalated {
            waiting.push((gate, brief));
        }
    }
    Ok(waiting)
}

/// Acts on decided `halt` gates once each (the raising brief is still `escalated` until then). Approved
/// (`agency ack --resume`): the brief gets a fresh attempt with the human's note, not charged to its retry
/// budget (a HALT is not a failure), and the run's stopped briefs start again. Rejected (`agency ack
/// --cancel`): the brief is cancelled and so is the run.
/// The pass asks it only when some brief of the run is `escalated`.
pub fn handle_halt_gates(engine: &Engine, run: agency_core::RunId) -> Result<bool> {
    let mut progressed = false;
    for (gate, brief) in gates_of_escalated(engine.store.as_ref(), run, GateKind::Halt)? {
        let by = gate.decided_by.clone().unwrap_or_default();
        let note = gate.note.clone().unwrap_or_default();
        match after_halt(gate.status, &by, &note, brief.attempt, brief.retry_budget) {
            AfterHalt::Wait => {}
            AfterHalt::Resume {
                next_attempt,
                retry_budget,
                feedback,
            } => {
                engine.move_brief(
                    &brief,
                    BriefStatus::Cancelled,
                    BriefStatusChange::because(format!(
                        "a human ({by}) acknowledged the HALT and resumed the run"
                    )),
                )?;
                let mut fresh = brief.clone();
                fresh.retry_budget = retry_budget;
                retry(engine, &fresh, next_attempt, &feedback)?;
                engine.log(
                    run,
                    Some(brief.tier),
                    "RESUMED",
                    format!("HALT acknowledged by {by}: the run resumes — {note}"),
                )?;
                progressed = true;
            }
            AfterHalt::Cancel => {
                engine.move_brief(
                    &brief,
                    BriefStatus::Cancelled,
                    BriefStatusChange::because(format!("a human ({by}) cancelled the run after its HALT")),
                )?;
                engine.log(
                    run,
                    Some(brief.tier),
                    "CANCELLED",
                    format!("HALT acknowledged by {by}: the run is cancelled — {note}"),
                )?;
                engine.store.set_run_status(run, None, RunStatus::Cancelled)?;
                progressed = true;
            }
        }
    }
    Ok(progressed)
}

/// `runner.keep_worktrees_on_failure`: a failed (or escalated) implementer's worktree is kept for a human
/// to look into — its path is the brief's `worktree`, which `agency inspect --brief` prints, and `agency
/// gc` removes it once the run is finished — unless the key is off, when it goes at the runner's next
/// sweep like a finished one's (its branch stays, so a partial attempt's salvaged work is not lost). Only
/// implementers have worktrees worth keeping: a reader's checkout goes when its agent ends either way.
pub(crate) fn failed_worktree(engine: &Engine, brief: &agency_core::Brief) {
    if engine.config.runner.keep_worktrees_on_failure || !BriefRole::of(brief).writes() {
        return;
    }
    engine.branches(brief.run).remove_worktree(brief);
}
