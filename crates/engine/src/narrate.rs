//! The tier-level lines of the live log (seed 001, "Human-Readable Live Log") that say a tier's agents
//! started or a tier's work is ready: `SPEC_START`, `SPEC_DONE`, `MESH_START`, `MESH_DONE`, `SWARM_START`,
//! `VERIFY_START`. Each is written once, at the step that makes it true (children written, a brief moved),
//! never from a pass that merely looks, so a run's log reads like the seed's example however often the
//! runner polls. What each line says is [`agency_flow::narration`]; this writes it.

use agency_core::event::payload::LogLine;
use agency_core::event::{EventPayload, NewEvent};
use agency_core::tiers::SquadOutput;
use agency_core::{Brief, BriefStatus, RunId, Tier};
use agency_flow::narration::{self, Line};
use agency_store::Blackboard;

use crate::engine::Engine;
use crate::error::Result;
use agency_flow::{Attempt, latest_of};

/// Writes `line` in `run`'s log (a `normal` line, as [`Engine::log`] writes).
fn write(store: &dyn Blackboard, run: RunId, line: Line) -> Result<()> {
    let payload = EventPayload::Log(LogLine::new("normal", Some(line.tag), line.message));
    store.append_event(NewEvent::typed(run, payload).tier(line.tier))?;
    Ok(())
}

/// `parent` just had `children` written: the line saying which agents start now.
pub(crate) fn children_started(engine: &Engine, parent: &Brief, children: &[Brief]) -> Result<()> {
    for line in narration::children_started(parent, children) {
        write(engine.store.as_ref(), parent.run, line)?;
    }
    Ok(())
}

/// A T2 specialist's architecture was accepted into the workstream.
pub(crate) fn specialist_done(engine: &Engine, brief: &Brief) -> Result<()> {
    write(
        engine.store.as_ref(),
        brief.run,
        narration::specialist_done(brief),
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
    let line = narration::mesh_done(&brief.workstream, domain, drafts.len(), tasks, pipeline, round);
    write(engine.store.as_ref(), brief.run, line)
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
        // States only: a task's verifiers are counted, their contents never read.
        let children = crate::rounds::states(engine.store.list_children_states(task.id)?);
        if latest_of(children.iter())
            .iter()
            .any(|v| v.tier() == Tier::T5 && v.status() != BriefStatus::Done)
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
    match narration::verifiers_started(squad, round) {
        Some(line) => write(engine.store.as_ref(), implementer.run, line),
        None => Ok(()),
    }
}
