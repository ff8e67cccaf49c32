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

use std::collections::BTreeMap;

use agency_core::brief::BriefPlacement;
use agency_core::event::payload::BriefStatusChange;
use agency_core::gate::{Gate, GateKind, GateStatus};
use agency_core::plan::Plan;
use agency_core::tiers::{
    ACCEPT_TITLE, AcceptOutput, BriefRole, ChildBrief, LeadOutput, RUN_WORKSTREAM, SYNTHESIS_TITLE,
    SpecialistOutput, SquadOutput, SynthesisOutput, VerifierOutput, check_siblings, dependency_order,
    workstream_entry_brief,
};
use agency_core::{Brief, BriefId, BriefStatus, NewBrief, RunId, Tier};
use agency_store::{BriefState, NewGate, RunStatus};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::engine::{Engine, output_name};
use crate::error::{EngineError, Result};
pub use crate::failure::{blocked, fail_brief, signal};

/// Checks a role's structured output against its schema; the problems, one per line, when it does not fit.
pub fn check_output(role: BriefRole, output: &Value) -> std::result::Result<(), String> {
    fn parse<T: DeserializeOwned>(output: &Value) -> std::result::Result<(), String> {
        serde_json::from_value::<T>(output.clone())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    match role {
        BriefRole::Plan => agency_core::validate_plan(output)
            .map_err(|e| e.to_string())
            .and_then(|plan| {
                runnable_verifies(
                    plan.workstreams
                        .iter()
                        .map(|ws| (format!("workstreams[{}]", ws.id), ws.contract.verify.as_deref())),
                )
            }),
        BriefRole::Accept => parse::<AcceptOutput>(output),
        BriefRole::Lead => parse::<LeadOutput>(output).and_then(|_| {
            let lead: LeadOutput = serde_json::from_value(output.clone()).map_err(|e| e.to_string())?;
            siblings(&lead.specialists)
        }),
        BriefRole::Specialist => parse::<SpecialistOutput>(output).and_then(|_| {
            let spec: SpecialistOutput = serde_json::from_value(output.clone()).map_err(|e| e.to_string())?;
            siblings(&spec.squads)
        }),
        BriefRole::Synthesis => parse::<SynthesisOutput>(output),
        BriefRole::SquadLead => parse::<SquadOutput>(output).and_then(|_| {
            let squad: SquadOutput = serde_json::from_value(output.clone()).map_err(|e| e.to_string())?;
            siblings(&squad.tasks)
        }),
        BriefRole::Implementer => Ok(()),
        BriefRole::Verifier => parse::<VerifierOutput>(output),
    }
}

/// Every verify command among `commands` (each with where it is in the output) is one agency can run: it
/// runs without a shell, so a pipeline, a redirection or a substitution is refused here, where the tier
/// that wrote it can still correct it, instead of when its slice is verified.
fn runnable_verifies<'a>(
    commands: impl Iterator<Item = (String, Option<&'a str>)>,
) -> std::result::Result<(), String> {
    let problems: Vec<String> = commands
        .filter_map(|(at, command)| {
            let command = command?;
            agency_signoff::verify::verify_argv(command)
                .err()
                .map(|e| format!("{at}.contract.verify: {e}"))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn siblings(children: &[ChildBrief]) -> std::result::Result<(), String> {
    let verifies = runnable_verifies(children.iter().map(|c| {
        (
            format!("tasks[{}]", c.title),
            c.contract.as_ref().and_then(|k| k.verify.as_deref()),
        )
    }));
    let problems = check_siblings(children);
    match (problems.is_empty(), verifies) {
        (true, verifies) => verifies,
        (false, Ok(())) => Err(problems.join("\n")),
        (false, Err(more)) => Err(format!("{}\n{more}", problems.join("\n"))),
    }
}

/// A brief's stored structured output.
pub(crate) fn output_of<T: DeserializeOwned>(engine: &Engine, brief: &Brief) -> Result<T> {
    let artifact = engine
        .artifact_of(brief.run, brief.id, output_name)?
        .ok_or_else(|| EngineError::State(format!("brief {} has no stored output", brief.id.short())))?;
    serde_json::from_slice(&artifact.bytes)
        .map_err(|e| EngineError::State(format!("brief {} output: {e}", brief.id.short())))
}

/// The newest T1 plan brief that was approved, and its plan.
#[derive(Debug)]
pub struct ApprovedPlan {
    /// The plan brief (status `done`): every workstream's entry brief is its child.
    pub brief: Brief,
    /// Its validated plan.
    pub plan: Plan,
    /// What the runner already knows of its stages: never forgotten while this plan holds.
    pub(crate) stages: std::sync::Mutex<crate::progress::StageProgress>,
}

/// The plan of the newest T1 plan brief that was approved, if any.
pub fn approved_plan(engine: &Engine, run: RunId) -> Result<Option<Plan>> {
    Ok(approved(engine, run)?.map(|a| a.plan.clone()))
}

/// The run's approved plan, parsed once per runner: it is read again only when its brief stopped being the
/// approved one (T1 re-planned after an escalation) — one status lookup per call instead of a scan of the
/// run, an artifact read and a validation.
pub(crate) fn approved(engine: &Engine, run: RunId) -> Result<Option<std::sync::Arc<ApprovedPlan>>> {
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
    let approved = std::sync::Arc::new(ApprovedPlan {
        stages: std::sync::Mutex::new(crate::progress::StageProgress::new(&plan)),
        brief,
        plan,
    });
    *engine
        .plan_cache
        .lock()
        .map_err(|_| EngineError::State("plan cache poisoned".into()))? = Some(approved.clone());
    Ok(Some(approved))
}

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
    unexamined: std::collections::HashSet<String>,
}

/// Where briefs sit — parent and workstream, which never change — remembered for the briefs the passes ask
/// about again and again (the tasks of verifiers waiting for their squad's verdict, the briefs of new
/// events), so a pass reads each once instead of whole every time. Forgotten all at once past
/// [`Families::LIMIT`] entries, so memory stays flat however long the run.
#[derive(Debug, Default)]
struct Families {
    known: std::collections::HashMap<BriefId, (Option<BriefId>, String)>,
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
                let mut touched = touched_workstreams(engine, run, last, &mut self.families)?;
                touched.extend(self.unexamined.drain());
                Some(touched)
            }
        };
        self.last_seq = Some(seq);
        let mut progressed = false;
        if touched.is_none() {
            progressed |= synthesis_due_anywhere(engine, run)?;
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

/// The workstreams of the briefs that have events after `after`.
fn touched_workstreams(
    engine: &Engine,
    run: RunId,
    after: i64,
    families: &mut Families,
) -> Result<std::collections::HashSet<String>> {
    let briefs = engine.store.briefs_in_events_after(run, after)?;
    let mut touched = std::collections::HashSet::new();
    for id in briefs {
        touched.insert(families.of(engine, id)?.1);
    }
    Ok(touched)
}

/// One full pass over the run, as a runner that starts driving makes it. Returns whether anything changed.
pub async fn advance(engine: &Engine, run: RunId) -> Result<bool> {
    let mut progressed = synthesis_due_anywhere(engine, run)?;
    progressed |= pass(engine, run, None, &mut Families::default()).await?;
    Ok(progressed)
}

/// One pass: `touched` names the workstreams that changed since the last one (`None`: all may have).
async fn pass(
    engine: &Engine,
    run: RunId,
    touched: Option<&mut std::collections::HashSet<String>>,
    families: &mut Families,
) -> Result<bool> {
    let mut progressed = handle_escalation_gates(engine, run)?;
    progressed |= crate::budget::handle_budget_gates(engine, run)?;
    progressed |= crate::failure::handle_halt_gates(engine, run)?;
    // Only what is `verifying` needs the runner; everything else waits on an agent or a human.
    let verifying = engine.store.list_briefs_by_status(run, BriefStatus::Verifying)?;
    // Implementers handed to their verifiers in this pass, one per squad: whether that completes the squad's
    // round is asked once per squad, not once per implementer (each asking reads the whole squad).
    let mut handed_over: Vec<&Brief> = Vec::new();
    for brief in &verifying {
        progressed |= match BriefRole::of(brief) {
            BriefRole::Plan => plan_done(engine, brief)?,
            BriefRole::Lead => gated_expand(engine, brief, GateKind::T2Lead, expand_lead)?,
            BriefRole::Specialist => {
                finish(engine, brief, "architecture ready")?;
                crate::narrate::specialist_done(engine, brief)?;
                if let Some(lead) = brief.parent {
                    synthesis_due(engine, &engine.store.get_brief(lead)?)?;
                }
                true
            }
            BriefRole::Synthesis => gated_expand(engine, brief, GateKind::T2Synthesis, expand_synthesis)?,
            BriefRole::SquadLead => squad_done(engine, brief)?,
            BriefRole::Implementer => {
                let handover = crate::verify::implementer_done(engine, brief).await?;
                if handover == crate::verify::Handover::ToVerifier
                    && !handed_over
                        .iter()
                        .any(|b| b.parent == brief.parent && b.workstream == brief.workstream)
                {
                    handed_over.push(brief);
                }
                true
            }
            BriefRole::Verifier => false,
            BriefRole::Accept => crate::progress::accept_done(engine, brief)?,
        };
    }
    // The implementers' hand-overs were held back to be one commit: written before anything reads on.
    engine.store.flush_events()?;
    for implementer in handed_over {
        crate::narrate::verifiers_started(engine, implementer)?;
    }
    let judged = judged_squads(engine, &verifying, families)?;
    if !judged.is_empty() {
        progressed |= crate::verify::joint_verdicts(engine, &judged).await?;
    }
    progressed |= crate::progress::workstreams(engine, run, touched).await?;
    Ok(progressed)
}

/// The squads (parent brief, workstream) whose round is fully judged — each current task's verifier
/// `verifying`, or `done` from an earlier round — so a joint verdict is due. Looks only at the squads of
/// the verifiers that are `verifying` now, one read of each squad's tasks.
fn judged_squads(
    engine: &Engine,
    verifying: &[Brief],
    families: &mut Families,
) -> Result<Vec<(BriefId, String)>> {
    let judged: std::collections::HashSet<BriefId> = verifying
        .iter()
        .filter(|b| b.tier == Tier::T5)
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
        let siblings = engine.store.list_children_states(parent)?;
        let Some(tasks) = current_done_tasks(&siblings, &workstream) else {
            continue;
        };
        let mut complete = true;
        for task in tasks.iter().filter(|t| !judged.contains(&t.id)) {
            // Not judged in this round: it must have passed an earlier one.
            let children = engine.store.list_children_states(task.id)?;
            let passed = latest_of(children.iter())
                .iter()
                .any(|v| v.tier == Tier::T5 && v.status == BriefStatus::Done);
            if !passed {
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

/// Whether any task of the squad under `parent` in `workstream` is still open: an indexed count says so
/// without reading the squad's whole briefs.
fn squad_open(engine: &Engine, parent: BriefId, workstream: &str) -> Result<bool> {
    Ok(engine
        .store
        .count_children(parent, workstream, Some(Tier::T4), &OPEN)?
        > 0)
}

/// The current tasks (newest attempts, T4, of `workstream`) among `siblings`, in [`latest_of`]'s order,
/// when there are some and every one is done.
fn current_done_tasks<'a, B: Attempt>(siblings: &'a [B], workstream: &str) -> Option<Vec<&'a B>> {
    let tasks: Vec<&B> = latest_of(siblings.iter())
        .into_iter()
        .filter(|b| b.tier() == Tier::T4 && b.workstream() == workstream)
        .collect();
    let done = !tasks.is_empty() && tasks.iter().all(|t| t.status() == BriefStatus::Done);
    done.then_some(tasks)
}

/// The current tasks (newest attempts) of the squad under `parent` in `workstream`, when there are some and
/// every one is done; `None` otherwise.
pub(crate) fn done_squad_tasks(
    engine: &Engine,
    parent: BriefId,
    workstream: &str,
) -> Result<Option<Vec<Brief>>> {
    if squad_open(engine, parent, workstream)? {
        return Ok(None);
    }
    let siblings = engine.store.list_children(parent)?;
    let Some(current) = current_done_tasks(&siblings, workstream) else {
        return Ok(None);
    };
    // Picked by reference, then moved out of the list read in that order (no copies of whole briefs).
    let order: std::collections::HashMap<BriefId, usize> = current
        .iter()
        .enumerate()
        .map(|(place, b)| (b.id, place))
        .collect();
    let mut slots: Vec<Option<Brief>> = (0..order.len()).map(|_| None).collect();
    for brief in siblings {
        if let Some(&place) = order.get(&brief.id) {
            slots[place] = Some(brief);
        }
    }
    Ok(Some(slots.into_iter().flatten().collect()))
}

/// The statuses of a brief that is not finished: waiting, at work, or being signed off.
pub(crate) const OPEN: [BriefStatus; 3] =
    [BriefStatus::Pending, BriefStatus::Running, BriefStatus::Verifying];

/// Moves a verifying brief to done with a `completed`-style log.
fn finish(engine: &Engine, brief: &Brief, note: &str) -> Result<bool> {
    engine.move_brief(brief, BriefStatus::Done, BriefStatusChange::noted(note))?;
    Ok(true)
}

/// The newest gate of `kind` opened for `brief`.
fn gate_of(engine: &Engine, brief: &Brief, kind: GateKind) -> Result<Option<Gate>> {
    Ok(engine
        .store
        .list_gates_of_kind(brief.run, kind)?
        .into_iter()
        .rev()
        .find(|g| g.brief == Some(brief.id)))
}

/// Where a brief stands at its gate.
enum AtGate {
    /// No gate configured, or approved: go on.
    Go,
    /// Waiting for a decision.
    Wait,
    /// Rejected: the brief was re-invoked with the reason.
    Rejected,
}

/// Opens the gate for `brief` if needed and reports where it stands. A rejection re-invokes the tier with
/// the reason.
fn at_gate(
    engine: &Engine,
    brief: &Brief,
    kind: GateKind,
    summary: impl FnOnce() -> Value,
) -> Result<AtGate> {
    if !engine.config.visibility.gate_enabled(kind) {
        return Ok(AtGate::Go);
    }
    match gate_of(engine, brief, kind)? {
        None => {
            let mut gate = NewGate::new(brief.run, kind, summary());
            gate.brief = Some(brief.id);
            gate.tier = Some(brief.tier);
            engine.store.open_gate(gate)?;
            Ok(AtGate::Wait)
        }
        Some(gate) => match gate.status {
            GateStatus::Pending => Ok(AtGate::Wait),
            GateStatus::Approved => Ok(AtGate::Go),
            GateStatus::Rejected => {
                let reason = gate.note.unwrap_or_else(|| "rejected".into());
                let by = gate.decided_by.unwrap_or_else(|| "a human".into());
                crate::failure::gate_rejected(engine, brief, kind, &by, &reason)?;
                Ok(AtGate::Rejected)
            }
        },
    }
}

/// The summary a gate shows: what was produced, what happens next, anomalies.
fn gate_summary(message: String, produced: Value, next: Vec<String>, anomalies: Vec<String>) -> Value {
    json!({ "message": message, "produced": produced, "next": next, "anomalies": anomalies })
}

fn plan_done(engine: &Engine, brief: &Brief) -> Result<bool> {
    let value: Value = output_of(engine, brief)?;
    let plan = agency_core::validate_plan(&value).map_err(|e| EngineError::State(e.to_string()))?;
    let ids: Vec<&str> = plan.workstreams.iter().map(|w| w.id.as_str()).collect();
    let first_stage: Vec<String> = plan
        .stages()
        .first()
        .map(|s| {
            s.workstreams
                .iter()
                .filter_map(|id| plan.workstream(id))
                .map(|w| format!("{} ({})", w.id, path_text(&w.tier_path)))
                .collect()
        })
        .unwrap_or_default();
    if gate_of(engine, brief, GateKind::T1Plan)?.is_none() {
        let parallel = plan.stages().first().map(|s| s.workstreams.len()).unwrap_or(0);
        engine.log(
            brief.run,
            Some(Tier::T1),
            "PLAN_DONE",
            format!(
                "{} workstream{} — {} ({parallel} parallel)",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" },
                ids.join(", ")
            ),
        )?;
    }
    // "before T2 spawns": the tiers the first stage's workstreams start with.
    let mut entry_tiers: Vec<Tier> = plan
        .stages()
        .first()
        .map(|s| {
            s.workstreams
                .iter()
                .filter_map(|id| plan.workstream(id))
                .filter_map(|w| w.tier_path.first().copied())
                .collect()
        })
        .unwrap_or_default();
    entry_tiers.sort();
    entry_tiers.dedup();
    let entry_text = entry_tiers
        .iter()
        .map(|t| t.as_str().to_ascii_uppercase())
        .collect::<Vec<_>>()
        .join("/");
    let summary = || {
        gate_summary(
            format!("Waiting on approval before {entry_text} spawns"),
            json!({ "complexity": plan.complexity, "workstreams": plan.workstreams.iter().map(|w| json!({
                "id": w.id, "tier_path": w.tier_path, "variety_score": w.variety.score(), "done_when": w.contract.done_when,
            })).collect::<Vec<_>>(), "self_critique_summary": plan.self_critique_summary }),
            first_stage.clone(),
            plan.workstreams
                .iter()
                .filter_map(|w| {
                    w.shallower_path_reason
                        .as_ref()
                        .map(|r| format!("{}: shallower path — {r}", w.id))
                })
                .collect(),
        )
    };
    match at_gate(engine, brief, GateKind::T1Plan, summary)? {
        AtGate::Wait => return Ok(false),
        AtGate::Rejected => return Ok(true),
        AtGate::Go => {}
    }
    engine.store.set_run_status(brief.run, None, RunStatus::Running)?;
    finish(engine, brief, "plan approved")?;
    Ok(true)
}

pub(crate) fn path_text(path: &[Tier]) -> String {
    path.iter().map(|t| t.as_str()).collect::<Vec<_>>().join("→")
}

/// Gate, then expansion, for roles whose children are written at once.
fn gated_expand(
    engine: &Engine,
    brief: &Brief,
    kind: GateKind,
    expand: fn(&Engine, &Brief, bool) -> Result<Vec<NewBrief>>,
) -> Result<bool> {
    if has_children(engine, brief)? {
        return finish(engine, brief, "children written");
    }
    // Every pass comes here while a human reads the gate: nothing to redo until it is decided, and the
    // tier's outcome is announced (logged, its artifacts stored) only once, before the gate opens.
    let gate = if engine.config.visibility.gate_enabled(kind) {
        gate_of(engine, brief, kind)?
    } else {
        None
    };
    if gate.as_ref().is_some_and(|g| g.status == GateStatus::Pending) {
        return Ok(false);
    }
    let children = expand(engine, brief, gate.is_none())?;
    let next: Vec<String> = children
        .iter()
        .map(|c| format!("{} {}", c.tier, c.title))
        .collect();
    let summary = || {
        let produced = engine
            .artifact_of(brief.run, brief.id, output_name)
            .ok()
            .flatten()
            .and_then(|a| serde_json::from_slice::<Value>(&a.bytes).ok())
            .unwrap_or(Value::Null);
        gate_summary(
            format!(
                "{} {} ready for review",
                brief.tier.as_str().to_ascii_uppercase(),
                brief.title
            ),
            produced,
            next,
            vec![],
        )
    };
    match at_gate(engine, brief, kind, summary)? {
        AtGate::Wait => Ok(false),
        AtGate::Rejected => Ok(true),
        AtGate::Go => {
            let written = write_children(engine, brief, children)?;
            crate::narrate::children_started(engine, brief, &written)?;
            finish(engine, brief, "children written")
        }
    }
}

fn has_children(engine: &Engine, brief: &Brief) -> Result<bool> {
    Ok(!engine.store.list_children(brief.id)?.is_empty())
}

fn expand_lead(engine: &Engine, brief: &Brief, announce: bool) -> Result<Vec<NewBrief>> {
    let lead: LeadOutput = output_of(engine, brief)?;
    let name = format!("boundaries/{}", brief.workstream);
    if announce {
        let boundaries = serde_json::to_string_pretty(
            &json!({ "boundaries": lead.boundaries, "shared_assumptions": lead.shared_assumptions }),
        )
        .unwrap_or_default();
        engine.put_text(brief, &name, "application/json", &boundaries)?;
        engine.log(
            brief.run,
            Some(Tier::T2),
            "BOUNDS_READY",
            "Domain boundaries + shared assumptions published".into(),
        )?;
    }
    Ok(lead
        .specialists
        .into_iter()
        .map(|c| {
            let mut new = c.into_new_brief(Tier::T2, &brief.workstream, brief.contract.as_ref());
            new.inputs.push(name.clone());
            new
        })
        .collect())
}

/// Once every specialist of a done lead is done, the lead's synthesis brief is written (once). Called when
/// a specialist finishes, and for every lead when a runner starts driving (a crash between the two steps).
pub(crate) fn synthesis_due(engine: &Engine, lead: &Brief) -> Result<bool> {
    if BriefRole::of(lead) != BriefRole::Lead || lead.status != BriefStatus::Done {
        return Ok(false);
    }
    let children = engine.store.list_children(lead.id)?;
    let specialists: Vec<&Brief> = latest_of(
        children
            .iter()
            .filter(|b| BriefRole::of(b) == BriefRole::Specialist),
    );
    if specialists.is_empty() || specialists.iter().any(|s| s.status != BriefStatus::Done) {
        return Ok(false);
    }
    if children.iter().any(|b| b.title == SYNTHESIS_TITLE) {
        return Ok(false);
    }
    let mut inputs = vec![format!("boundaries/{}", lead.workstream)];
    for spec in &specialists {
        let out: SpecialistOutput = output_of(engine, spec)?;
        let name = format!("architecture/{}/{}", lead.workstream, spec.title);
        engine.put_text(spec, &name, "text/markdown", &out.architecture)?;
        inputs.push(name);
    }
    let synthesis = NewBrief {
        tier: Tier::T2,
        workstream: lead.workstream.clone(),
        title: SYNTHESIS_TITLE.into(),
        personality: lead.personality.clone(),
        instructions:
            "Resolve conflicts between the specialists' architectures and write the canonical architecture."
                .into(),
        inputs,
        variety: lead.variety,
        contract: lead.contract.clone(),
        depends_on: vec![],
    };
    write_children(engine, lead, vec![synthesis])?;
    Ok(true)
}

/// [`synthesis_due`] for every lead under the approved plan: what a runner that starts driving checks once.
pub(crate) fn synthesis_due_anywhere(engine: &Engine, run: RunId) -> Result<bool> {
    let Some(approved) = approved(engine, run)? else {
        return Ok(false);
    };
    let mut progressed = false;
    for lead in engine.store.list_children(approved.brief.id)? {
        progressed |= synthesis_due(engine, &lead)?;
    }
    Ok(progressed)
}

fn expand_synthesis(engine: &Engine, brief: &Brief, announce: bool) -> Result<Vec<NewBrief>> {
    let name = format!("architecture/{}", brief.workstream);
    if announce {
        let synthesis: SynthesisOutput = output_of(engine, brief)?;
        engine.put_text(brief, &name, "text/markdown", &synthesis.canonical_architecture)?;
        engine.log(
            brief.run,
            Some(Tier::T2),
            "SYNTH_DONE",
            "Canonical architecture written to blackboard".into(),
        )?;
    }
    let lead = brief
        .parent
        .ok_or_else(|| EngineError::State("synthesis without a lead".into()))?;
    let children = engine.store.list_children(lead)?;
    let mut squads = Vec::new();
    for spec in latest_of(children.iter())
        .into_iter()
        .filter(|b| BriefRole::of(b) == BriefRole::Specialist)
    {
        let out: SpecialistOutput = output_of(engine, spec)?;
        for squad in out.squads {
            let mut new = squad.into_new_brief(Tier::T3, &brief.workstream, brief.contract.as_ref());
            new.inputs.push(name.clone());
            squads.push(new);
        }
    }
    Ok(squads)
}

/// What [`latest_of`] and a squad's checks read of a brief: a whole [`Brief`], or a [`BriefState`] read
/// without its contents.
pub(crate) trait Attempt {
    fn tier(&self) -> Tier;
    fn workstream(&self) -> &str;
    fn title(&self) -> &str;
    fn attempt(&self) -> u32;
    fn status(&self) -> BriefStatus;
    fn created_at(&self) -> chrono::DateTime<chrono::Utc>;
}

macro_rules! attempt_by_fields {
    ($type:ty) => {
        impl Attempt for $type {
            fn tier(&self) -> Tier {
                self.tier
            }
            fn workstream(&self) -> &str {
                &self.workstream
            }
            fn title(&self) -> &str {
                &self.title
            }
            fn attempt(&self) -> u32 {
                self.attempt
            }
            fn status(&self) -> BriefStatus {
                self.status
            }
            fn created_at(&self) -> chrono::DateTime<chrono::Utc> {
                self.created_at
            }
        }
    };
}
attempt_by_fields!(Brief);
attempt_by_fields!(BriefState);

/// The newest attempt of each title among `children` (oldest first), skipping cancelled ones.
pub(crate) fn latest_of<'a, B: Attempt + 'a>(children: impl Iterator<Item = &'a B>) -> Vec<&'a B> {
    let mut by_title: BTreeMap<&str, &B> = BTreeMap::new();
    for brief in children.filter(|b| b.status() != BriefStatus::Cancelled) {
        let keep = by_title
            .get(brief.title())
            .is_none_or(|b| b.attempt() <= brief.attempt());
        if keep {
            by_title.insert(brief.title(), brief);
        }
    }
    let mut list: Vec<&B> = by_title.into_values().collect();
    list.sort_by_key(|b| b.created_at());
    list
}

/// The squad leads of `brief`'s mesh (itself included, newest attempts): the T3 siblings of its
/// workstream. On a [t3, t4, t5] path every workstream's squad hangs off T1's plan, and those are not peers.
fn mesh_of(engine: &Engine, brief: &Brief) -> Result<Vec<Brief>> {
    let Some(parent) = brief.parent else {
        return Ok(vec![brief.clone()]);
    };
    let siblings = engine.store.list_children(parent)?;
    Ok(latest_of(siblings.iter())
        .into_iter()
        .filter(|b| b.tier == Tier::T3 && b.workstream == brief.workstream)
        .cloned()
        .collect())
}

/// T3 mesh: a squad's tasks are dispatched only once every squad of its workstream has committed.
fn squad_done(engine: &Engine, brief: &Brief) -> Result<bool> {
    let mesh = mesh_of(engine, brief)?;
    let peers: Vec<&Brief> = mesh.iter().collect();
    if peers
        .iter()
        .any(|p| matches!(p.status, BriefStatus::Pending | BriefStatus::Running))
    {
        crate::progress::mesh_timeout(engine, brief, &peers)?;
        return Ok(false);
    }
    // One line per mesh: the first squad lead's expansion says it.
    let first = peers.first().map(|p| p.id) == Some(brief.id);
    if peers.len() > 1
        && first
        && gate_of(engine, brief, GateKind::T3Plan)?.is_none()
        && !has_children(engine, brief)?
    {
        crate::narrate::mesh_done(engine, brief, &peers)?;
    }
    gated_expand(engine, brief, GateKind::T3Plan, expand_squad)
}

fn expand_squad(engine: &Engine, brief: &Brief, announce: bool) -> Result<Vec<NewBrief>> {
    let squad: SquadOutput = output_of(engine, brief)?;
    let pipeline = squad.tasks.iter().filter(|t| !t.depends_on.is_empty()).count();
    if announce {
        // In a mesh, MESH_DONE already gave the whole split; each squad's share is detail.
        let in_mesh = mesh_of(engine, brief)?.len() > 1;
        let level = if in_mesh { "verbose" } else { "normal" };
        engine.log_at(
            brief.run,
            Some(Tier::T3),
            level,
            "TASKS",
            format!(
                "{}: {} T4 tasks ({} swarm, {pipeline} pipeline)",
                brief.title,
                squad.tasks.len(),
                squad.tasks.len() - pipeline
            ),
        )?;
    }
    Ok(dependency_order(squad.tasks)
        .into_iter()
        .map(|t| t.into_new_brief(Tier::T4, &brief.workstream, brief.contract.as_ref()))
        .collect())
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

/// Writes the entry briefs of the given workstreams under the plan brief.
pub(crate) fn start_workstreams(engine: &Engine, run: RunId, plan: &Plan, ids: &[String]) -> Result<()> {
    let Some(approved) = approved(engine, run)? else {
        return Err(EngineError::State("no approved plan brief".into()));
    };
    let plan_brief = &approved.brief;
    let entries: Vec<NewBrief> = ids
        .iter()
        .filter_map(|id| plan.workstream(id))
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

/// Decided escalation gates: approve gives the brief a fresh attempt; reject stops the run.
fn handle_escalation_gates(engine: &Engine, run: RunId) -> Result<bool> {
    // Only an escalated brief waits on its gate, and most passes find none: one indexed read says so,
    // where reading every gate of the run on every pass grew with the run.
    if engine
        .store
        .list_briefs_by_status(run, BriefStatus::Escalated)?
        .is_empty()
    {
        return Ok(false);
    }
    let mut progressed = false;
    for gate in engine.store.list_gates_of_kind(run, GateKind::Escalation)? {
        let Some(id) = gate.brief else { continue };
        let brief = engine.store.get_brief(id)?;
        if brief.status != BriefStatus::Escalated {
            continue;
        }
        match gate.status {
            GateStatus::Pending => {}
            GateStatus::Approved => {
                engine.move_brief(
                    &brief,
                    BriefStatus::Cancelled,
                    BriefStatusChange::because("a human unblocked it"),
                )?;
                let mut fresh = brief.clone();
                fresh.retry_budget = brief.attempt + 1 + retry_budget(engine, run)?;
                let note = gate.note.unwrap_or_default();
                crate::failure::retry(
                    engine,
                    &fresh,
                    brief.attempt + 1,
                    &format!("A human unblocked this brief after an escalation. {note}"),
                )?;
                progressed = true;
            }
            GateStatus::Rejected => {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_with_verify(verify: &str) -> Value {
        json!({
            "run_id": "0190f0a0-1234-7abc-8def-0123456789ab", "goal_anchor": "a goal", "complexity": "low",
            "retry_budget_multiplier": 1,
            "workstreams": [{
                "id": "ws-a", "name": "a", "domain": "core", "tier_path": ["t4", "t5"], "parallel_group": "A",
                "variety": {"novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1},
                "contract": {"done_when": "done", "verify": verify}
            }],
            "parallelism": {"groups": {"A": ["ws-a"]}, "sequence": ["A"]},
            "self_critique_summary": "fine"
        })
    }

    #[test]
    fn a_verify_command_that_needs_a_shell_is_refused_where_its_tier_can_correct_it() {
        let problem = check_output(BriefRole::Plan, &plan_with_verify("cargo test | tee log")).unwrap_err();
        assert!(
            problem.starts_with("workstreams[ws-a].contract.verify: ") && problem.contains("shell"),
            "{problem}"
        );
        check_output(BriefRole::Plan, &plan_with_verify("sh -c 'cargo test | tee log'")).unwrap();

        let squad = json!({ "tasks": [{
            "title": "t", "instructions": "i", "variety": {"novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1},
            "contract": { "done_when": "d", "verify": "make test > out" }
        }]});
        let problem = check_output(BriefRole::SquadLead, &squad).unwrap_err();
        assert!(problem.starts_with("tasks[t].contract.verify: "), "{problem}");
    }
}
