//! T2: a lead's boundaries and its specialists; the synthesis once every specialist is done, with its
//! conflict cycles ([`agency_flow::conflicts`]: back to the specialists in a conflict with the other side's
//! position, at most `retry.t2_conflict_cycles` times, then T1's ruling, then a human); and, once the
//! canonical architecture passes its gate, each specialist's own squads written under it (its slice, the
//! canonical architecture and the lead's boundaries as inputs), so no squad spans two domains.

use agency_core::escalation::{Decision, Failure};
use agency_core::event::payload::BriefStatusChange;
use agency_core::gate::GateKind;
use agency_core::tiers::{
    ARBITRATE_TITLE, ArbitrationOutput, BriefRole, LeadOutput, SYNTHESIS_TITLE, SpecialistOutput,
    SynthesisOutput, VALIDATE_TITLE, ValidationOutput,
};
use agency_core::{Brief, BriefId, BriefStatus, NewBrief, RunId, Tier};
use agency_flow::conflicts::{ConflictStep, brief_for, problems};
use agency_flow::gates::AtGate;
use agency_flow::latest_of;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::gates::{at_gate, finish, gate_pending, tier_summary};
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::plan::{approved, output_of, write_children};

pub(super) fn expand_lead(engine: &Engine, brief: &Brief, announce: bool) -> Result<Vec<NewBrief>> {
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

fn architecture_name(workstream: &str, specialist: &str) -> String {
    format!("architecture/{workstream}/{specialist}")
}

/// A specialist reported its architecture: it is published for the synthesis (every attempt, so a
/// synthesis after a conflict cycle reads the revision). A specialist re-invoked after its squads' mesh
/// escalated, whose lead's canonical architecture already stands, writes its re-scoped squads at once.
pub(crate) fn specialist_done(engine: &Engine, spec: &Brief) -> Result<()> {
    let out: SpecialistOutput = output_of(engine, spec)?;
    engine.put_text(
        spec,
        &architecture_name(&spec.workstream, &spec.title),
        "text/markdown",
        &out.architecture,
    )?;
    let Some(lead) = spec.parent else {
        return Ok(());
    };
    let children = engine.store.list_children(lead)?;
    let canonical = latest_of(children.iter().filter(|b| b.title == SYNTHESIS_TITLE))
        .first()
        .is_some_and(|s| s.status == BriefStatus::Done);
    if canonical {
        write_squads(engine, spec)?;
    }
    Ok(())
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
    let has_synthesis = children.iter().any(|b| b.title == SYNTHESIS_TITLE);
    if !agency_flow::tiers::synthesis_due(true, &specialists, has_synthesis) {
        return Ok(false);
    }
    let mut inputs = vec![format!("boundaries/{}", lead.workstream)];
    for spec in &specialists {
        let name = architecture_name(&lead.workstream, &spec.title);
        if engine.store.latest_artifact(lead.run, &name)?.is_none() {
            // A runner that stopped between the specialist's finish and its publication.
            let out: SpecialistOutput = output_of(engine, spec)?;
            engine.put_text(spec, &name, "text/markdown", &out.architecture)?;
        }
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

/// How far a lead's conflict resolution went, kept as `conflicts/<workstream>`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ConflictRecord {
    /// The lead it belongs to (a re-invoked lead starts over).
    lead: Option<BriefId>,
    /// Cycles sent back to the specialists so far.
    cycles: u32,
    /// Whether T1 was asked to rule.
    ruled: bool,
    /// The synthesis attempt whose conflicts started the last cycle (or T1's ruling): the step's key. The
    /// record is written first, so a runner that stopped before the step's other writes finds its own
    /// attempt named here on restart and finishes that step instead of starting another
    /// ([`agency_flow::conflicts::step_of`]). Absent in records of builds before 2026-11-27.
    #[serde(default)]
    synthesis: Option<BriefId>,
}

fn conflict_record(engine: &Engine, run: RunId, workstream: &str, lead: BriefId) -> Result<ConflictRecord> {
    let name = format!("conflicts/{workstream}");
    let Some(artifact) = engine.store.latest_artifact(run, &name)? else {
        return Ok(ConflictRecord::default());
    };
    let record: ConflictRecord = serde_json::from_slice(&artifact.bytes)
        .map_err(|e| EngineError::State(format!("conflict record {name} is unreadable: {e}")))?;
    Ok(if record.lead == Some(lead) {
        record
    } else {
        ConflictRecord::default()
    })
}

/// The synthesis reported: its conflicts go round (or to T1, or a human); without any it is the canonical
/// architecture, held at the `t2_synthesis` gate, then every specialist's squads are written under it.
pub(super) fn synthesis_done(engine: &Engine, brief: &Brief) -> Result<bool> {
    let synthesis: SynthesisOutput = output_of(engine, brief)?;
    let lead = brief
        .parent
        .ok_or_else(|| EngineError::State("synthesis without a lead".into()))?;
    let children = engine.store.list_children(lead)?;
    let specialists: Vec<&Brief> = latest_of(
        children
            .iter()
            .filter(|b| BriefRole::of(b) == BriefRole::Specialist),
    );
    let titles: Vec<&str> = specialists.iter().map(|s| s.title.as_str()).collect();
    let conflicts = &synthesis.unresolved_conflicts;
    let wrong = problems(conflicts, &titles);
    if !wrong.is_empty() {
        crate::failure::fail_brief(engine, brief, &wrong.join("\n"))?;
        return Ok(true);
    }
    let record = conflict_record(engine, brief.run, &brief.workstream, lead)?;
    let limit = engine.config.retry.t2_conflict_cycles;
    let record_name = format!("conflicts/{}", brief.workstream);
    let about: Vec<&str> = conflicts.iter().map(|c| c.about.as_str()).collect();
    let decided_here = record.synthesis == Some(brief.id);
    match agency_flow::conflicts::step_of(conflicts.len(), record.cycles, limit, record.ruled, decided_here) {
        ConflictStep::Canonical => canonical(engine, brief, &specialists),
        ConflictStep::BackToSpecialists { cycle } => {
            if !decided_here {
                let next = ConflictRecord {
                    lead: Some(lead),
                    cycles: cycle,
                    ruled: false,
                    synthesis: Some(brief.id),
                };
                write_json(engine, brief, &record_name, &next)?;
            }
            let mut revising = Vec::new();
            let mut names = Vec::new();
            let mut sent = 0;
            for spec in &specialists {
                let Some(told) = brief_for(&spec.title, conflicts, cycle, limit) else {
                    continue;
                };
                names.push(spec.title.as_str());
                match spec.status {
                    // Asked already, before the runner stopped: it revises for this cycle.
                    BriefStatus::Pending
                    | BriefStatus::Running
                    | BriefStatus::Verifying
                    | BriefStatus::Escalated => {
                        revising.push(spec.id);
                        continue;
                    }
                    // Cancelled for this cycle, and the runner stopped before its new attempt.
                    BriefStatus::Cancelled => {}
                    _ => {
                        engine.move_brief(
                            spec,
                            BriefStatus::Cancelled,
                            BriefStatusChange::because(format!(
                                "revises its architecture in conflict cycle {cycle}"
                            )),
                        )?;
                    }
                }
                let mut again = (*spec).clone();
                // A conflict cycle is design work, not a failure: not charged to the retry budget.
                again.retry_budget = spec.retry_budget.saturating_add(1);
                revising.push(crate::failure::retry(engine, &again, spec.attempt + 1, &told)?.id);
                sent += 1;
            }
            // Said once per cycle: a replay that only finishes it says nothing again.
            if sent > 0 || !decided_here {
                engine.log(
                    brief.run,
                    Some(Tier::T2),
                    "CONFLICT_CYCLE",
                    format!(
                        "{}: cycle {cycle} of {limit} — {} back to {}: {}",
                        brief.workstream,
                        count(conflicts.len()),
                        names.join(", "),
                        about.join("; ")
                    ),
                )?;
            }
            let feedback = format!(
                "Conflict cycle {cycle}: {} revised their architectures (your inputs) on: {}. Resolve again.",
                names.join(", "),
                about.join("; ")
            );
            next_synthesis(engine, brief, revising, &feedback, None)?;
            Ok(true)
        }
        ConflictStep::ToT1 => {
            if !decided_here {
                let next = ConflictRecord {
                    lead: Some(lead),
                    cycles: record.cycles,
                    ruled: true,
                    synthesis: Some(brief.id),
                };
                write_json(engine, brief, &record_name, &next)?;
            }
            let sides: Vec<String> = conflicts
                .iter()
                .map(|c| {
                    let each: Vec<String> = c
                        .positions
                        .iter()
                        .map(|p| format!("  - {}: {}", p.specialist, p.position))
                        .collect();
                    format!("- {}\n{}", c.about, each.join("\n"))
                })
                .collect();
            let mut inputs = vec![format!("boundaries/{}", brief.workstream)];
            inputs.extend(titles.iter().map(|t| architecture_name(&brief.workstream, t)));
            let arbiter = NewBrief {
                tier: Tier::T1,
                workstream: brief.workstream.clone(),
                title: ARBITRATE_TITLE.into(),
                personality: None,
                instructions: format!(
                    "The T2 specialists of workstream {} did not resolve these conflicts in {limit} cycles. \
                     Decide each against the goal anchor: {}\n{}",
                    brief.workstream,
                    brief.goal_anchor,
                    sides.join("\n")
                ),
                inputs,
                variety: None,
                contract: None,
                depends_on: vec![],
            };
            // Written already, before the runner stopped: T1's ruling is what the synthesis waits on.
            let asked: Vec<BriefId> = children
                .iter()
                .filter(|b| BriefRole::of(b) == BriefRole::Arbiter)
                .map(|b| b.id)
                .collect();
            let written: Vec<BriefId> = if asked.is_empty() {
                let lead_brief = engine.store.get_brief(lead)?;
                write_children(engine, &lead_brief, vec![arbiter])?
                    .iter()
                    .map(|b| b.id)
                    .collect()
            } else {
                asked
            };
            engine.log(
                brief.run,
                Some(Tier::T1),
                "CONFLICT_TO_T1",
                format!(
                    "{}: {} left after {limit} cycle{} — T1 decides: {}",
                    brief.workstream,
                    count(conflicts.len()),
                    if limit == 1 { "" } else { "s" },
                    about.join("; ")
                ),
            )?;
            let ruling = ruling_name(&brief.workstream);
            let feedback = format!(
                "T1 ruled on the conflicts the specialists did not resolve ({}); its ruling is your input {ruling}. \
                 Write the canonical architecture that applies it.",
                about.join("; ")
            );
            next_synthesis(engine, brief, written, &feedback, Some(ruling))?;
            Ok(true)
        }
        ConflictStep::ToHuman => {
            let why = format!(
                "the synthesis still reports {} after T1 ruled: {}",
                count(conflicts.len()),
                about.join("; ")
            );
            crate::failure::apply(engine, brief, Failure::T2DesignWrong, Decision::OpenGate, &why)?;
            Ok(true)
        }
    }
}

fn count(n: usize) -> String {
    if n == 1 {
        "1 conflict".into()
    } else {
        format!("{n} conflicts")
    }
}

fn ruling_name(workstream: &str) -> String {
    format!("ruling/{workstream}")
}

fn write_json(engine: &Engine, brief: &Brief, name: &str, value: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| EngineError::State(format!("{name}: {e}")))?;
    engine.put_text(brief, name, "application/json", &text)
}

/// The synthesis is asked again once `waits_on` are done (the revising specialists, or T1's ruling).
fn next_synthesis(
    engine: &Engine,
    synthesis: &Brief,
    waits_on: Vec<BriefId>,
    feedback: &str,
    input: Option<String>,
) -> Result<()> {
    engine.move_brief(
        synthesis,
        BriefStatus::Cancelled,
        BriefStatusChange::because("conflicts left; asked again once they are answered"),
    )?;
    let mut again = synthesis.clone();
    again.depends_on = waits_on;
    again.retry_budget = synthesis.retry_budget.saturating_add(1);
    if let Some(input) = input
        && !again.inputs.contains(&input)
    {
        again.inputs.push(input);
    }
    crate::failure::retry(engine, &again, synthesis.attempt + 1, feedback)?;
    Ok(())
}

/// T1 ruled: the ruling is published for the synthesis that waits on it.
pub(super) fn ruling_done(engine: &Engine, brief: &Brief) -> Result<bool> {
    let out: ArbitrationOutput = output_of(engine, brief)?;
    let text: Vec<String> = out
        .rulings
        .iter()
        .map(|r| format!("- {}: {}", r.about, r.decision))
        .collect();
    engine.put_text(
        brief,
        &ruling_name(&brief.workstream),
        "text/markdown",
        &text.join("\n"),
    )?;
    engine.log(
        brief.run,
        Some(Tier::T1),
        "RULED",
        format!("{}: {} ruled", brief.workstream, out.rulings.len()),
    )?;
    finish(engine, brief, "ruling published")
}

/// A conflict-free synthesis: announced once, validated by T1 against the goal anchor, held at its gate,
/// then each specialist's squads written.
fn canonical(engine: &Engine, brief: &Brief, specialists: &[&Brief]) -> Result<bool> {
    let mut written_any = false;
    for spec in specialists {
        written_any |= has_squads(engine, spec)?;
    }
    if !written_any {
        // Seed 001, T2 step 8: T1 checks the canonical architecture before any T3 spawns. An invalid one
        // fails this synthesis (see [`validation_done`]), so a validator found here is pending or passed.
        let children = engine.store.list_children(brief.id)?;
        let validator = latest_of(
            children
                .iter()
                .filter(|b| BriefRole::of(b) == BriefRole::Validator),
        )
        .first()
        .map(|b| b.status);
        match validator {
            None => {
                announce_canonical(engine, brief)?;
                let check = NewBrief {
                    tier: Tier::T1,
                    workstream: brief.workstream.clone(),
                    title: VALIDATE_TITLE.into(),
                    personality: None,
                    instructions: format!(
                        "Check workstream {}'s canonical architecture against the goal anchor before its squads \
                         are written.",
                        brief.workstream
                    ),
                    inputs: vec![
                        format!("architecture/{}", brief.workstream),
                        format!("boundaries/{}", brief.workstream),
                    ],
                    variety: None,
                    contract: brief.contract.clone(),
                    depends_on: vec![],
                };
                write_children(engine, brief, vec![check])?;
                return Ok(true);
            }
            Some(BriefStatus::Done) => {}
            // T1 is at work; its report decides.
            Some(_) => return Ok(false),
        }
        let kind = GateKind::T2Synthesis;
        if gate_pending(engine, brief, kind)? {
            return Ok(false);
        }
        let mut next = Vec::new();
        for spec in specialists {
            let out: SpecialistOutput = output_of(engine, spec)?;
            next.extend(
                out.squads
                    .iter()
                    .map(|s| format!("t3 {} (owned by {})", s.title, spec.title)),
            );
        }
        let summary = || tier_summary(engine, brief, "T2 synthesis ready for review".into(), next);
        match at_gate(engine, brief, kind, summary)? {
            AtGate::Wait | AtGate::Open => return Ok(false),
            AtGate::Rejected => return Ok(true),
            AtGate::Go => {}
        }
    }
    for spec in specialists {
        write_squads(engine, spec)?;
    }
    finish(engine, brief, "squads written under their specialists")
}

/// The canonical architecture, published for T1's check and the squads, and said once.
fn announce_canonical(engine: &Engine, brief: &Brief) -> Result<()> {
    let synthesis: SynthesisOutput = output_of(engine, brief)?;
    let name = format!("architecture/{}", brief.workstream);
    engine.put_text(brief, &name, "text/markdown", &synthesis.canonical_architecture)?;
    engine.log(
        brief.run,
        Some(Tier::T2),
        "SYNTH_DONE",
        "Canonical architecture written to blackboard".into(),
    )
}

/// T1 checked a canonical architecture: valid, its synthesis goes on to its gate; invalid, the synthesis
/// fails with T1's problems (retried while its budget lasts, then escalated like any T2 design failure).
pub(super) fn validation_done(engine: &Engine, brief: &Brief) -> Result<bool> {
    let out: ValidationOutput = output_of(engine, brief)?;
    let synthesis = match brief.parent {
        Some(parent) => engine.store.get_brief(parent)?,
        None => return Err(EngineError::State("a validation without its synthesis".into())),
    };
    if out.valid {
        engine.log(
            brief.run,
            Some(Tier::T1),
            "ARCH_VALID",
            format!(
                "{}: canonical architecture fits the goal anchor",
                brief.workstream
            ),
        )?;
        return finish(engine, brief, "architecture valid");
    }
    let problems = if out.problems.is_empty() {
        vec!["(T1 gave no reason)".to_string()]
    } else {
        out.problems.clone()
    };
    engine.log(
        brief.run,
        Some(Tier::T1),
        "ARCH_INVALID",
        format!("{}: {}", brief.workstream, problems.join("; ")),
    )?;
    finish(engine, brief, "architecture invalid")?;
    if synthesis.status == BriefStatus::Verifying {
        let why = format!(
            "T1 found the canonical architecture does not fit the goal anchor:\n- {}",
            problems.join("\n- ")
        );
        crate::failure::fail_brief(engine, &synthesis, &why)?;
    }
    Ok(true)
}

/// Whether a specialist's squads were written: as T3 squad leads, or as T4 implementers when an approved
/// amendment skipped the squad lead ([`squads_skip_to`]).
fn has_squads(engine: &Engine, spec: &Brief) -> Result<bool> {
    Ok(engine
        .store
        .list_children(spec.id)?
        .iter()
        .any(|b| matches!(b.tier, Tier::T3 | Tier::T4)))
}

/// The tier a specialist's squads are written at: T3 squad leads, or T4 implementers when the workstream's
/// path goes from T2 straight to T4 in the specialist's pass (planned so by T1, or a shallower path an approved amendment gave it:
/// each squad the specialist drew is one implementer's task). Said once in the log.
fn squads_skip_to(engine: &Engine, spec: &Brief, count: usize) -> Result<Tier> {
    // The pass the specialist works in is its lead's: the first pass's `lead`, or a later architecture
    // pass's `amended-pass-<n>`.
    let pass = match spec.parent {
        Some(lead) => crate::amendments::pass_of_lead(&engine.store.get_brief(lead)?),
        None => 0,
    };
    let tier = crate::amendments::after_architecture(engine, spec.run, &spec.workstream, pass)?;
    if tier == Tier::T4 {
        engine.log(
            spec.run,
            Some(Tier::T2),
            "NO_SQUAD_LEAD",
            format!(
                "{}: its path goes from T2 to T4 — {}'s {count} squad{} go{} to implementers",
                spec.workstream,
                spec.title,
                if count == 1 { "" } else { "s" },
                if count == 1 { "es" } else { "" },
            ),
        )?;
    }
    Ok(tier)
}

/// A specialist's squads, written under it (once): each reads the canonical architecture, its
/// specialist's slice and the lead's boundaries (the interface contracts).
fn write_squads(engine: &Engine, spec: &Brief) -> Result<()> {
    if has_squads(engine, spec)? {
        return Ok(());
    }
    let out: SpecialistOutput = output_of(engine, spec)?;
    let tier = squads_skip_to(engine, spec, out.squads.len())?;
    let inputs = [
        format!("architecture/{}", spec.workstream),
        architecture_name(&spec.workstream, &spec.title),
        format!("boundaries/{}", spec.workstream),
    ];
    let squads: Vec<NewBrief> = out
        .squads
        .into_iter()
        .map(|squad| {
            let mut new = squad.into_new_brief(tier, &spec.workstream, spec.contract.as_ref());
            new.inputs.extend(inputs.iter().cloned());
            new
        })
        .collect();
    let written = write_children(engine, spec, squads)?;
    crate::narrate::children_started(engine, spec, &written)
}
