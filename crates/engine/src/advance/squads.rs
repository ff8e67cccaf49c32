//! T3: a squad lead's tasks go out once every squad lead of its mesh has committed (or the mesh times out
//! to T2), after the `t3_plan` gate.

use agency_core::BriefStatus;
use agency_core::escalation::{Decision, EscalationTarget, Failure};
use agency_core::gate::GateKind;
use agency_core::tiers::{SquadOutput, dependency_order};
use agency_core::{Brief, NewBrief, Tier};
use agency_flow::latest_of;
use agency_flow::tiers::{Mesh, MeshClock, mesh_clock};

use super::gates::{gate_of, gated_expand, has_children};
use crate::engine::Engine;
use crate::error::Result;
use crate::plan::output_of;

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
pub(super) fn squad_done(engine: &Engine, brief: &Brief) -> Result<bool> {
    let mesh = mesh_of(engine, brief)?;
    let peers: Vec<&Brief> = mesh.iter().collect();
    if agency_flow::tiers::mesh(&peers) == Mesh::Negotiating {
        mesh_timeout(engine, brief, &peers)?;
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

/// A T3 mesh that has not committed within `t3_mesh_timeout_minutes` escalates to T2; never force-commits.
fn mesh_timeout(engine: &Engine, brief: &Brief, peers: &[&Brief]) -> Result<()> {
    let limit = chrono::Duration::minutes(i64::from(engine.config.retry.t3_mesh_timeout_minutes));
    let started = peers
        .iter()
        .map(|p| p.created_at)
        .min()
        .unwrap_or(brief.created_at);
    if let MeshClock::WakeAt(due) = mesh_clock(started, chrono::Utc::now(), limit) {
        // Nothing may change on the blackboard before then: a pass must still come when it is due.
        return engine.wake_at(due);
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
