//! Agreement verification at the handoffs (seed 003; docs/protocols.md, "Agreement at each handoff"),
//! carried out: each check gathers the two sides, asks [`agency_flow::agreement::check`], and records an
//! `agreement` event; a significant mismatch is also an `anomaly`, so the next tier gate lists it for the
//! human. No check makes a model call, and none blocks the handoff: the seed's verification is
//! non-blocking, and the human is involved only through the gate.
//!
//! - L0 at T1→T2: the lead's `understanding` against the `files` and `interfaces` the plan declared for its
//!   workstream;
//! - L1 at T2→T3: a committed squad lead's `understanding` against its specialist's declared `files` and
//!   `interfaces` (T1→T3 on a path without T2: the plan's for the workstream);
//! - L1 at T4→T5: the slice as its verifier receives it (the paths its diff changes) against the files
//!   its squad lead's committed draft declared.
//!
//! The handing-over agent itself is never asked again (its conversation ended when it reported): its
//! record stands in for it. Where that record declares no scope, the outcome is the seed's fallback,
//! "Agreement: [assumed — specialist unavailable for verification]".

use std::collections::HashMap;

use agency_core::event::payload::{AgreementChecked, Anomaly};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::tiers::{BriefRole, SpecialistOutput, SquadOutput, Understanding};
use agency_core::{Brief, BriefId, Tier};
use agency_flow::agreement::{Level, Outcome, Scope, check, check_scope, diff_paths};

use crate::engine::Engine;
use crate::error::Result;
use crate::plan::output_of;

/// One handoff to record.
struct Handoff<'a> {
    level: Level,
    /// `t4→t5`.
    handoff: String,
    /// The receiving brief.
    receiver: &'a Brief,
    outcome: Outcome,
    restated: String,
}

/// A restatement as the `agreement` event keeps it: what it builds, then its files and interfaces.
fn restatement_text(understanding: &Understanding) -> String {
    let mut text = understanding.building.trim().to_string();
    if !understanding.files.is_empty() {
        text.push_str(&format!(" [files: {}]", understanding.files.join(", ")));
    }
    if !understanding.interfaces.is_empty() {
        text.push_str(&format!(" [interfaces: {}]", understanding.interfaces.join(", ")));
    }
    text
}

/// Records the check: the `agreement` event, and an `anomaly` for a significant mismatch. Held back to be
/// written with the pass's other writes (nothing waits on them), except a significant mismatch's, written
/// at once so the next gate lists it.
fn record(engine: &Engine, handoff: Handoff<'_>) -> Result<()> {
    let receiver = handoff.receiver;
    let (significant, differences) = match &handoff.outcome {
        Outcome::Mismatch {
            significant,
            differences,
        } => (*significant, differences.clone()),
        Outcome::Agreed | Outcome::Assumed => (false, Vec::new()),
    };
    let mut event = NewEvent::typed(
        receiver.run,
        EventPayload::Agreement(AgreementChecked {
            level: handoff.level.as_str().into(),
            handoff: handoff.handoff.clone(),
            workstream: receiver.workstream.clone(),
            outcome: handoff.outcome.as_str().into(),
            significant,
            differences: differences.clone(),
            restated: handoff.restated,
        }),
    );
    event.tier = Some(receiver.tier);
    event.brief = Some(receiver.id);
    engine.store.append_event_soon(event)?;
    if significant {
        let mut anomaly = NewEvent::typed(
            receiver.run,
            EventPayload::Anomaly(Anomaly {
                source: "agreement".into(),
                workstream: Some(receiver.workstream.clone()),
                brief: Some(receiver.id),
                message: format!(
                    "{} mismatch at {} ({}): {}",
                    handoff.level.as_str(),
                    handoff.handoff,
                    receiver.title,
                    differences.join("; ")
                ),
            }),
        );
        anomaly.tier = Some(receiver.tier);
        anomaly.brief = Some(receiver.id);
        engine.store.append_event_soon(anomaly)?;
        // Written now: the gate the anomaly belongs on may open in this very pass, and it lists only
        // what the blackboard holds.
        engine.store.flush_events()?;
    }
    Ok(())
}

/// The receiving side's restated scope.
fn restated_scope(understanding: &Understanding) -> Scope<'_> {
    Scope {
        files: &understanding.files,
        interfaces: &understanding.interfaces,
    }
}

/// What T1's plan declared for `workstream` (its `files` and `interfaces`), or nothing when no approved
/// plan names it.
fn planned_scope(engine: &Engine, brief: &Brief) -> Result<(Vec<String>, Vec<String>)> {
    let approved = crate::plan::approved(engine, brief.run)?;
    Ok(approved
        .as_ref()
        .and_then(|a| a.plan.workstream(&brief.workstream))
        .map(|ws| (ws.files.clone(), ws.interfaces.clone()))
        .unwrap_or_default())
}

/// L0 at T1→T2: the lead restated its workstream's topic; held against the files and interfaces T1's
/// plan declared for the workstream (the fallback when it declared none).
pub(crate) fn lead_received(
    engine: &Engine,
    lead: &Brief,
    understanding: Option<&Understanding>,
) -> Result<()> {
    let (files, interfaces) = planned_scope(engine, lead)?;
    let handed = Scope {
        files: &files,
        interfaces: &interfaces,
    };
    record(
        engine,
        Handoff {
            level: Level::L0,
            handoff: "t1→t2".into(),
            receiver: lead,
            outcome: check_scope(Level::L0, handed, understanding.map(restated_scope)),
            restated: understanding.map(restatement_text).unwrap_or_default(),
        },
    )
}

/// L1 at T2→T3 (T1→T3 on a path without T2): a squad lead's committed task list restated the design it
/// was handed; held against its specialist's declared `files` and `interfaces` (or, under T1, the plan's
/// for the workstream). A handing-over side that declared none is recorded with the fallback.
pub(crate) fn squad_received(engine: &Engine, squad: &Brief, output: &SquadOutput) -> Result<()> {
    let understanding = output.understanding.as_ref();
    let parent = match squad.parent {
        Some(parent) => Some(engine.store.get_brief(parent)?),
        None => None,
    };
    let from = parent.as_ref().map_or(Tier::T2, |p| p.tier);
    let (files, interfaces) = match &parent {
        Some(p) if BriefRole::of(p) == BriefRole::Specialist => {
            let spec: SpecialistOutput = output_of(engine, p)?;
            (spec.files, spec.interfaces)
        }
        Some(p) if p.tier == Tier::T1 => planned_scope(engine, squad)?,
        _ => (Vec::new(), Vec::new()),
    };
    let handed = Scope {
        files: &files,
        interfaces: &interfaces,
    };
    record(
        engine,
        Handoff {
            level: Level::L1,
            handoff: format!("{from}→t3"),
            receiver: squad,
            outcome: check_scope(Level::L1, handed, understanding.map(restated_scope)),
            restated: understanding.map(restatement_text).unwrap_or_default(),
        },
    )
}

/// L1 at T4→T5 for the implementers just handed to their verifiers: each slice's changed paths (its diff,
/// the verifier's input) against the files its squad lead's committed draft declared. An implementer
/// without a squad lead (a `t4→t5` path) or whose squad declared no files is recorded with the fallback.
pub(crate) fn slices_received(engine: &Engine, implementers: &[&Brief]) -> Result<()> {
    // One read of each squad's draft per pass, however many of its slices were handed over.
    let mut drafts: HashMap<BriefId, Vec<String>> = HashMap::new();
    for implementer in implementers {
        let declared = match implementer.parent {
            Some(parent) => match drafts.get(&parent) {
                Some(files) => files.clone(),
                None => {
                    let squad = engine.store.get_brief(parent)?;
                    let files = if squad.tier == Tier::T3 {
                        output_of::<SquadOutput>(engine, &squad)?.files
                    } else {
                        Vec::new()
                    };
                    drafts.insert(parent, files.clone());
                    files
                }
            },
            None => Vec::new(),
        };
        // Without a declared design there is nothing to compare: the diff is not read at all.
        let changed = if declared.is_empty() {
            Vec::new()
        } else {
            let name = crate::artifacts::diff_name(implementer.id);
            match engine.store.latest_artifact(implementer.run, &name)? {
                Some(diff) => diff_paths(&String::from_utf8_lossy(&diff.bytes)),
                None => Vec::new(),
            }
        };
        let outcome = check(Level::L1, &declared, Some(&changed));
        record(
            engine,
            Handoff {
                level: Level::L1,
                handoff: "t4→t5".into(),
                receiver: implementer,
                outcome,
                restated: if changed.is_empty() {
                    String::new()
                } else {
                    format!("the slice changes {}", changed.join(", "))
                },
            },
        )?;
    }
    engine.store.flush_events()?;
    Ok(())
}
