//! The tier-level lines of the live log (seed 001, "Human-Readable Live Log") that say a tier's agents
//! started or a tier's work is ready: `SPEC_START`, `SPEC_DONE`, `MESH_START`, `MESH_DONE`, `SWARM_START`,
//! `VERIFY_START`. Each is written once, at the step that makes it true (children written, a brief moved),
//! never from a pass that merely looks, so a run's log reads like the seed's example however often the
//! runner polls.

use agency_core::tiers::{BriefRole, SquadOutput};
use agency_core::{Brief, BriefStatus, Tier};

use crate::engine::Engine;
use crate::error::Result;
use agency_flow::latest_of;

/// "1 worker" / "3 workers".
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `parent` just had `children` written: the line saying which agents start now.
pub(crate) fn children_started(engine: &Engine, parent: &Brief, children: &[Brief]) -> Result<()> {
    match BriefRole::of(parent) {
        BriefRole::Lead => {
            let names: Vec<&str> = children.iter().map(|c| c.title.as_str()).collect();
            engine.log(
                parent.run,
                Some(Tier::T2),
                "SPEC_START",
                format!(
                    "{} spawned (parallel): {}",
                    count(children.len(), "specialist"),
                    names.join(", ")
                ),
            )
        }
        BriefRole::Specialist if children.len() > 1 => engine.log(
            parent.run,
            Some(Tier::T3),
            "MESH_START",
            format!(
                "{}/{}: {} negotiating task boundaries",
                parent.workstream,
                parent.title,
                count(children.len(), "squad lead")
            ),
        ),
        BriefRole::Specialist => {
            for child in children {
                engine.log(
                    parent.run,
                    Some(Tier::T3),
                    "START",
                    format!("T3 {} spawned for {}", child.title, child.workstream),
                )?;
            }
            Ok(())
        }
        BriefRole::SquadLead => {
            let pipeline = children.iter().filter(|c| !c.depends_on.is_empty()).count();
            let swarm = children.len() - pipeline;
            let started = match swarm {
                1 => "1 worker spawned".to_string(),
                n => format!("{n} workers spawned in parallel"),
            };
            let behind = match pipeline {
                0 => String::new(),
                n => format!(
                    ", {n} pipelined behind {}",
                    if swarm == 1 { "it" } else { "them" }
                ),
            };
            engine.log(
                parent.run,
                Some(Tier::T4),
                "SWARM_START",
                format!("{}: {started}{behind}", parent.title),
            )
        }
        _ => Ok(()),
    }
}

/// A T2 specialist's architecture was accepted into the workstream.
pub(crate) fn specialist_done(engine: &Engine, brief: &Brief) -> Result<()> {
    engine.log(
        brief.run,
        Some(Tier::T2),
        "SPEC_DONE",
        format!("{} architecture draft ready", brief.title),
    )
}

/// Every squad lead of a mesh committed its draft in `round`: the whole split, once per mesh.
pub(crate) fn mesh_done(
    engine: &Engine,
    brief: &Brief,
    domain: &str,
    drafts: &[(&Brief, SquadOutput)],
    round: u32,
) -> Result<()> {
    let (mut tasks, mut pipeline) = (0, 0);
    for (_, squad) in drafts {
        tasks += squad.tasks.len();
        pipeline += squad.tasks.iter().filter(|t| !t.depends_on.is_empty()).count();
    }
    engine.log(
        brief.run,
        Some(Tier::T3),
        "MESH_DONE",
        format!(
            "{}/{domain}: task split committed by {} in round {round} — {} ({} swarm, {pipeline} pipeline)",
            brief.workstream,
            count(drafts.len(), "squad lead"),
            count(tasks, "T4 task"),
            tasks - pipeline
        ),
    )
}

/// `implementer` (and maybe others of its squad) just got its verifier. When that completes the squad's
/// round (every current task done and handed to a verifier), one line says how many verifiers this round
/// spawned. Called once per squad and pass.
pub(crate) fn verifiers_started(engine: &Engine, implementer: &Brief) -> Result<()> {
    let Some(parent) = implementer.parent else {
        return Ok(());
    };
    let Some(tasks) =
        crate::rounds::done_squad_tasks(engine.store.as_ref(), parent, &implementer.workstream)?
    else {
        return Ok(());
    };
    let mut round = 0;
    for task in &tasks {
        let children = engine.store.list_children(task.id)?;
        if latest_of(children.iter())
            .iter()
            .any(|v| v.tier == Tier::T5 && v.status != BriefStatus::Done)
        {
            round += 1;
        }
    }
    if round == 0 {
        return Ok(());
    }
    let owner = engine.store.get_brief(parent)?;
    let squad = if owner.tier == Tier::T3 {
        owner.title.as_str()
    } else {
        implementer.workstream.as_str()
    };
    engine.log(
        implementer.run,
        Some(Tier::T5),
        "VERIFY_START",
        format!("{squad}: {} spawned", count(round, "verifier")),
    )
}
