//! Turning finished briefs into what comes next. Each pass reads the run from the blackboard and acts on
//! briefs in `verifying` (their agent reported; the runner still has work to do) and on decided gates:
//!
//! - T1 plan → `t1_plan` gate → the first stage's workstreams start;
//! - T2 lead → `t2_lead` gate → specialists; specialists → synthesis → `t2_synthesis` gate → squads;
//! - T3 squad (once every squad of the workstream has committed) → `t3_plan` gate → T4 tasks;
//! - T4 → committed on its branch → a T5 verifier for that slice;
//! - T5 (once every slice is verified) → joint verdict → `t5_verdict` gate → merge, retry failed slices,
//!   or escalate; a merged workstream goes into the integration branch, re-verified;
//! - every workstream merged → the next stage, and after the last, T1 accept → the run succeeds.
//!
//! Every step checks what already exists before writing, so a pass after a crash repeats nothing.

use std::collections::{HashMap, HashSet};

use agency_core::event::payload::BriefStatusChange;
use agency_core::gate::GateKind;
use agency_core::plan::Plan;
use agency_core::tiers::{BriefRole, workstream_entry_brief};
use agency_core::{Brief, BriefId, BriefStatus, NewBrief, RunId, Tier};
use agency_flow::gates::{EscalationGateStep, escalation_gate, fresh_budget};
use agency_flow::tiers::{Next, next_for};
use agency_flow::{Attempt, current_done_tasks};
use agency_store::RunStatus;

use crate::engine::Engine;
use crate::error::{EngineError, Result};
pub(crate) use crate::plan::approved;
use crate::plan::retry_budget;
use crate::rounds::states;

mod gates;
mod leads;
mod planning;
mod squads;

/// The runner's passes over one run. A pass runs when the blackboard changed since the last one (its
/// newest event moved) or a timer is due; otherwise there is nothing new to act on and it is skipped. It
/// hands [`crate::progress::workstreams`] the workstreams whose briefs changed, so merges are considered
/// only where something happened.
#[derive(Debug, Default)]
pub(crate) struct Passes {
    last_seq: Option<i64>,
    families: Families,
    /// Workstreams touched by earlier events that no pass has examined yet (their stage was not reached):
    /// handed to the next pass with what it finds touched, so none is lost.
    unexamined: HashSet<String>,
}

/// Where briefs sit — parent and workstream, which never change — remembered for the briefs the passes ask
/// about again and again (the tasks of verifiers waiting for their squad's verdict), so a pass reads each
/// once instead of whole every time. Forgotten all at once past
/// [`Families::LIMIT`] entries, so memory stays flat however long the run.
#[derive(Debug, Default)]
struct Families {
    known: HashMap<BriefId, (Option<BriefId>, String)>,
}

impl Families {
    const LIMIT: usize = 4096;

    /// `id`'s parent and workstream.
    fn of(&mut self, engine: &Engine, id: BriefId) -> Result<(Option<BriefId>, String)> {
        if let Some(known) = self.known.get(&id) {
            return Ok(known.clone());
        }
        if self.known.len() >= Self::LIMIT {
            self.known.clear();
        }
        let brief = engine.store.get_brief(id)?;
        let family = (brief.parent, brief.workstream);
        self.known.insert(id, family.clone());
        Ok(family)
    }
}

impl Passes {
    /// Runs a pass if one is due. Returns whether anything changed.
    pub(crate) async fn run(&mut self, engine: &Engine, run: RunId) -> Result<bool> {
        let seq = engine.store.last_seq(Some(run))?;
        let due = engine.timer_due()?;
        let mut touched = match self.last_seq {
            // The first pass of a drive (a resume included) looks at everything once.
            None => None,
            Some(last) if last == seq && !due => return Ok(false),
            Some(last) => {
                let mut touched = touched_workstreams(engine, run, last)?;
                touched.extend(self.unexamined.drain());
                Some(touched)
            }
        };
        self.last_seq = Some(seq);
        let mut progressed = false;
        if touched.is_none() {
            progressed |= leads::synthesis_due_anywhere(engine, run)?;
        }
        progressed |= pass(engine, run, touched.as_mut(), &mut self.families).await?;
        if let Some(left) = touched {
            self.unexamined = left;
        }
        Ok(progressed)
    }

    /// Forgets what the passes knew, so the next one looks at everything again.
    pub(crate) fn reset(&mut self) {
        self.last_seq = None;
        self.unexamined.clear();
    }
}

/// The workstreams of the briefs that have events after `after`: one read, each brief looked up by the
/// store once (a lookup per brief here, cached, cost more the longer the run: past the cache's limit the
/// briefs of every pass were read whole again).
fn touched_workstreams(engine: &Engine, run: RunId, after: i64) -> Result<HashSet<String>> {
    Ok(engine
        .store
        .workstreams_in_events_after(run, after)?
        .into_iter()
        .collect())
}

/// One full pass over the run, as a runner that starts driving makes it. Returns whether anything changed.
pub async fn advance(engine: &Engine, run: RunId) -> Result<bool> {
    let mut progressed = leads::synthesis_due_anywhere(engine, run)?;
    progressed |= pass(engine, run, None, &mut Families::default()).await?;
    Ok(progressed)
}

/// One pass: `touched` names the workstreams that changed since the last one (`None`: all may have).
async fn pass(
    engine: &Engine,
    run: RunId,
    touched: Option<&mut HashSet<String>>,
    families: &mut Families,
) -> Result<bool> {
    // Only an escalated brief waits on an escalation or halt gate, and most passes find none: one indexed
    // read says so for both, where reading every gate of the run on every pass grew with the run.
    let escalated = !engine
        .store
        .list_briefs_by_status(run, BriefStatus::Escalated)?
        .is_empty();
    let mut progressed = escalated && handle_escalation_gates(engine, run)?;
    progressed |= crate::budget::handle_budget_gates(engine.store.as_ref(), engine.ledger.as_ref(), run)?;
    progressed |= escalated && crate::failure::handle_halt_gates(engine, run)?;
    // Only what is `verifying` needs the runner; everything else waits on an agent or a human.
    let verifying = engine.store.list_briefs_by_status(run, BriefStatus::Verifying)?;
    // Implementers' own restatements (L1 at T3→T4), checked once their teachback is decided, before any
    // of them is handed on in this pass; a question is asked with the pass's others, at its end.
    progressed |= crate::agreement::tasks_restated(engine, run)?;
    // L0 agreement of leads that just reported, checked and its question answered before their gate opens.
    progressed |= crate::agreement::leads_received(engine, &verifying).await?;
    // Implementers handed to their verifiers in this pass, one per squad: whether that completes the squad's
    // round is asked once per squad, not once per implementer (each asking reads the whole squad).
    let mut handed_over: Vec<&Brief> = Vec::new();
    // Every implementer handed over in this pass: its slice's agreement (L1 at T4→T5) is checked once
    // the hand-overs are written.
    let mut slices: Vec<&Brief> = Vec::new();
    for brief in &verifying {
        progressed |= match next_for(BriefRole::of(brief)) {
            Next::Plan => planning::plan_done(engine, brief)?,
            Next::Expand(kind @ GateKind::T2Lead) => {
                gates::gated_expand(engine, brief, kind, leads::expand_lead)?
            }
            Next::Expand(_) => leads::synthesis_done(engine, brief)?,
            Next::Rule => leads::ruling_done(engine, brief)?,
            Next::Validate => leads::validation_done(engine, brief)?,
            Next::FinishSpecialist => {
                gates::finish(engine, brief, "architecture ready")?;
                crate::narrate::specialist_done(engine, brief)?;
                leads::specialist_done(engine, brief)?;
                if let Some(lead) = brief.parent {
                    leads::synthesis_due(engine, &engine.store.get_brief(lead)?)?;
                }
                true
            }
            Next::Mesh => squads::squad_done(engine, brief)?,
            Next::HandOver => {
                let handover = crate::handover::implementer_done(engine, brief).await?;
                if handover == crate::handover::Handover::ToVerifier {
                    slices.push(brief);
                }
                if handover == crate::handover::Handover::ToVerifier
                    && !handed_over
                        .iter()
                        .any(|b| b.parent == brief.parent && b.workstream == brief.workstream)
                {
                    handed_over.push(brief);
                }
                true
            }
            Next::AwaitJointVerdict => false,
            Next::Accept => {
                // L2 at the run's acceptance, recorded before the runner acts on it.
                crate::agreement::acceptance_checked(engine, brief)?;
                crate::progress::accept_done(engine, brief)?
            }
        };
    }
    // The implementers' hand-overs were held back to be one commit: written before anything reads on.
    engine.store.flush_events()?;
    for implementer in handed_over {
        crate::narrate::verifiers_started(engine, implementer)?;
    }
    if !slices.is_empty() {
        crate::agreement::slices_received(engine, &slices)?;
    }
    // Significant agreement mismatches found in this pass (or left unasked by a runner that stopped) are
    // put to the tier that handed the work over; a mismatch that stands goes on the next gate to open.
    progressed |= crate::agreement::confirm_pending(engine, run).await?;
    let judged = judged_squads(engine, &verifying, touched.as_deref(), families)?;
    if !judged.is_empty() {
        progressed |= crate::handover::joint_verdicts(engine, &judged).await?;
    }
    let walked = crate::progress::workstreams(engine, run, touched).await?;
    progressed |= walked.progressed;
    if let Some(stage) = walked.start
        && let Some(approved) = approved(engine, run)?
    {
        start_workstreams(engine, run, &approved.plan, &stage)?;
        crate::progress::started(engine, run, &stage)?;
        progressed = true;
    }
    // What the pass held back and no later write of it took (the agreement records, say) is committed
    // with the pass, in one write.
    engine.store.flush_events()?;
    Ok(progressed)
}

/// The squads (parent brief, workstream) whose round is fully judged — each current task's verifier
/// `verifying`, or `done` from an earlier round — so a joint verdict is due. Looks only at the squads of
/// the verifiers that are `verifying` now, and of those only at the squads of the workstreams `touched`
/// since the last pass (`None`: all): a squad whose workstream logged nothing since was answered then, and
/// nothing of its round has moved. One read of each squad's tasks.
fn judged_squads(
    engine: &Engine,
    verifying: &[Brief],
    touched: Option<&HashSet<String>>,
    families: &mut Families,
) -> Result<Vec<(BriefId, String)>> {
    let judged: HashSet<BriefId> = verifying
        .iter()
        .filter(|b| b.tier == Tier::T5)
        .filter(|b| touched.is_none_or(|t| t.contains(&b.workstream)))
        .filter_map(|b| b.parent)
        .collect();
    let mut squads: Vec<(BriefId, String)> = Vec::new();
    for task in &judged {
        let (parent, workstream) = families.of(engine, *task)?;
        if let Some(parent) = parent
            && !squads.iter().any(|(p, w)| *p == parent && *w == workstream)
        {
            squads.push((parent, workstream));
        }
    }
    let mut due = Vec::new();
    for (parent, workstream) in squads {
        // Asked on every pass in which one of the squad's verifiers finished: the squad's states are read,
        // not its whole briefs, once (a count of its open tasks first read them all as well, and while its
        // verifiers work none is open).
        let siblings = states(engine.store.list_children_states(parent)?);
        let Some(tasks) = current_done_tasks(&siblings, &workstream) else {
            continue;
        };
        let mut complete = true;
        for task in tasks.iter().filter(|t| !judged.contains(&t.id())) {
            // Not judged in this round: it must have passed an earlier one.
            let children = states(engine.store.list_children_states(task.id())?);
            if !agency_flow::attempts::verified_before(children.iter()) {
                complete = false;
                break;
            }
        }
        if complete {
            due.push((parent, workstream));
        }
    }
    Ok(due)
}

/// Writes the entry briefs of the given workstreams under the plan brief.
pub(crate) fn start_workstreams(engine: &Engine, run: RunId, plan: &Plan, ids: &[String]) -> Result<()> {
    let Some(approved) = approved(engine, run)? else {
        return Err(EngineError::State("no approved plan brief".into()));
    };
    let plan_brief = &approved.brief;
    // An amendment approved before its stage started may have changed where a workstream starts.
    let starting: Vec<_> = ids.iter().filter_map(|id| plan.workstream(id)).collect();
    let entries: Vec<NewBrief> = crate::amendments::amended_workstreams(engine, run, &starting)?
        .iter()
        .filter_map(workstream_entry_brief)
        .collect();
    for entry in &entries {
        let tier = entry.tier.as_str().to_ascii_uppercase();
        let (tag, message) = if entry.tier == Tier::T2 {
            (
                "LEAD_START",
                format!("Lead Architect spawned for {}", entry.workstream),
            )
        } else {
            (
                "START",
                format!("{tier} {} spawned for {}", entry.title, entry.workstream),
            )
        };
        engine.log(run, Some(entry.tier), tag, message)?;
    }
    crate::calibration::write_calibrated(engine, plan_brief, plan, entries)?;
    Ok(())
}

/// Decided escalation gates: approve gives the brief a fresh attempt; reject stops the run.
fn handle_escalation_gates(engine: &Engine, run: RunId) -> Result<bool> {
    let mut progressed = false;
    for (gate, brief) in crate::failure::gates_of_escalated(engine.store.as_ref(), run, GateKind::Escalation)?
    {
        match escalation_gate(gate.status) {
            EscalationGateStep::Wait => {}
            EscalationGateStep::RetryFresh => {
                engine.move_brief(
                    &brief,
                    BriefStatus::Cancelled,
                    BriefStatusChange::because("a human unblocked it"),
                )?;
                let mut fresh = brief.clone();
                fresh.retry_budget = fresh_budget(brief.attempt, retry_budget(engine, run)?);
                let note = gate.note.unwrap_or_default();
                crate::failure::retry(
                    engine,
                    &fresh,
                    brief.attempt + 1,
                    &format!("A human unblocked this brief after an escalation. {note}"),
                )?;
                progressed = true;
            }
            EscalationGateStep::StopRun => {
                engine.move_brief(
                    &brief,
                    BriefStatus::Cancelled,
                    BriefStatusChange::because("a human stopped the run"),
                )?;
                engine.store.set_run_status(run, None, RunStatus::Failed)?;
                progressed = true;
            }
        }
    }
    Ok(progressed)
}
