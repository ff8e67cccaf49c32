//! T2: a lead's boundaries and its specialists, the synthesis once every specialist is done, and the
//! squads the canonical architecture hands to T3.

use agency_core::tiers::{BriefRole, LeadOutput, SYNTHESIS_TITLE, SpecialistOutput, SynthesisOutput};
use agency_core::{Brief, BriefStatus, NewBrief, RunId, Tier};
use agency_flow::latest_of;
use serde_json::json;

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

pub(super) fn expand_synthesis(engine: &Engine, brief: &Brief, announce: bool) -> Result<Vec<NewBrief>> {
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
