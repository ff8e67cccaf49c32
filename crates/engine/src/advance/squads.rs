//! T3: the mesh of a domain's squad leads, then each squad lead's tasks after the `t3_plan` gate.
//!
//! Every squad lead's report is its draft (the files it expects to touch, the interfaces it provides and
//! consumes, its tasks). Once every squad lead of the domain has reported, the round closes: the drafts are
//! published as `draft/<workstream>/<domain>/<squad>`, their overlaps computed
//! ([`agency_flow::mesh::overlaps`]) and a `MESH_ROUND` line says what is left. No overlap commits every
//! draft (`MESH_DONE`); overlaps send the squads in them back to draft again with their peers' drafts as
//! inputs and the overlaps as feedback; overlaps after the last round, or a mesh still drafting when
//! `t3_mesh_timeout_minutes` runs out, go to the domain's T2 specialist. Nothing is force-committed. The
//! round's state is the record `mesh/<workstream>/<domain>`, so a runner that restarts goes on from it.

use agency_core::escalation::{Decision, EscalationTarget, Failure};
use agency_core::event::payload::{Anomaly, BriefStatusChange};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::GateKind;
use agency_core::tiers::{SquadOutput, dependency_order};
use agency_core::{Brief, BriefId, BriefStatus, NewBrief, RunId, Tier};
use agency_flow::latest_of;
use agency_flow::mesh::{MeshStep, Overlap, overlaps_line};
use agency_flow::tiers::{Mesh, MeshClock, mesh_clock};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::gates::gated_expand;
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

/// Where a mesh stands between rounds, kept on the blackboard as `mesh/<workstream>/<domain>`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct MeshRecord {
    /// The brief the squads hang under (the domain's specialist): a record of an earlier domain brief (one
    /// re-invoked after an escalation) is not this mesh's.
    parent: BriefId,
    /// The rounds closed so far.
    round: u32,
    /// When the mesh's first drafts were asked for: its timeout counts from here.
    started: DateTime<Utc>,
    /// Whether the last round found no overlap: every draft is committed.
    committed: bool,
    /// The overlaps the last round left.
    overlaps: Vec<Overlap>,
    /// The squad leads the last round sent back to draft again (recorded before they are, so a runner that
    /// stops in between sends the rest on restart).
    redraft: Vec<BriefId>,
    /// The squad-lead briefs whose drafts are committed. A squad lead re-invoked after the commit (its
    /// `t3_plan` gate rejected, an escalation from its T4s) is a new brief, not among them: its new draft
    /// goes through a mesh round of its own against its peers' committed drafts ([`replan_round`]).
    /// Empty in records of builds before 2026-11-27, which let such a squad lead through unchecked.
    #[serde(default)]
    members: Vec<BriefId>,
    /// Rounds of the current re-plan (0 when none is under way): a re-invoked squad lead's new draft is
    /// its round 1, bounded by `retry.t3_mesh_rounds` like a mesh's.
    #[serde(default)]
    replan_round: u32,
}

/// The domain of a mesh: the title of the brief its squads hang under.
fn domain_of(engine: &Engine, brief: &Brief) -> Result<(BriefId, String)> {
    match brief.parent {
        Some(parent) => Ok((parent, engine.store.get_brief(parent)?.title)),
        None => Ok((brief.id, brief.title.clone())),
    }
}

fn record_name(workstream: &str, domain: &str) -> String {
    format!("mesh/{workstream}/{domain}")
}

/// The artifact a squad lead's draft is published as, for its peers to read.
pub(crate) fn draft_name(workstream: &str, domain: &str, squad: &str) -> String {
    format!("draft/{workstream}/{domain}/{squad}")
}

fn read_record(engine: &Engine, run: RunId, name: &str, parent: BriefId) -> Result<Option<MeshRecord>> {
    let Some(artifact) = engine.store.latest_artifact(run, name)? else {
        return Ok(None);
    };
    // A record this runner cannot read is a runner bug, not the agents': said loudly, never taken as
    // "no round closed yet" (that would restart the rounds and their bound).
    let record: MeshRecord = serde_json::from_slice(&artifact.bytes)
        .map_err(|e| crate::error::EngineError::State(format!("mesh record {name} is unreadable: {e}")))?;
    Ok((record.parent == parent).then_some(record))
}

fn write_record(engine: &Engine, brief: &Brief, name: &str, record: &MeshRecord) -> Result<()> {
    let text = serde_json::to_string_pretty(record)
        .map_err(|e| crate::error::EngineError::State(format!("mesh record {name}: {e}")))?;
    engine.put_text(brief, name, "application/json", &text)
}

/// T3 mesh: a squad's tasks are dispatched only once every squad of its domain has committed its draft.
pub(super) fn squad_done(engine: &Engine, brief: &Brief) -> Result<bool> {
    let mesh = mesh_of(engine, brief)?;
    // A peer examined earlier in this pass may have closed the round: an escalation cancels this squad
    // lead, a re-draft supersedes it. What the pass read before is stale then; the mesh is read fresh.
    let Some(brief) = mesh.iter().find(|b| b.id == brief.id) else {
        return Ok(false);
    };
    if brief.status != BriefStatus::Verifying {
        return Ok(false);
    }
    if mesh.len() <= 1 {
        // Alone in its domain: nothing to negotiate.
        return gated_expand(engine, brief, GateKind::T3Plan, expand_squad);
    }
    let (parent, domain) = domain_of(engine, brief)?;
    let name = record_name(&brief.workstream, &domain);
    let record = read_record(engine, brief.run, &name, parent)?;
    if let Some(committed) = record.as_ref().filter(|r| r.committed) {
        if committed.members.is_empty() || committed.members.contains(&brief.id) {
            return gated_expand(engine, brief, GateKind::T3Plan, expand_squad);
        }
        return replan_round(engine, brief, &mesh, committed, &domain);
    }
    let peers: Vec<&Brief> = mesh.iter().collect();
    if agency_flow::tiers::mesh(&peers) == Mesh::Negotiating {
        mesh_timeout(engine, brief, &peers, record.as_ref())?;
        return Ok(false);
    }
    if let Some(record) = &record {
        // A round closed, but the runner stopped before it sent every squad of it back: send the rest.
        let unsent: Vec<&Brief> = peers
            .iter()
            .copied()
            .filter(|p| record.redraft.contains(&p.id) && p.status == BriefStatus::Verifying)
            .collect();
        if !unsent.is_empty() {
            for squad in unsent {
                redraft(engine, squad, record.round + 1, &record.overlaps, &peers, &domain)?;
            }
            return Ok(true);
        }
    }
    close_round(engine, brief, &peers, record.as_ref(), (parent, &domain))
}

/// Every squad lead of the mesh reported: the round's drafts are published and their overlaps decide.
fn close_round(
    engine: &Engine,
    brief: &Brief,
    peers: &[&Brief],
    record: Option<&MeshRecord>,
    (parent, domain): (BriefId, &str),
) -> Result<bool> {
    let round = record.map_or(0, |r| r.round) + 1;
    let started = record.map_or_else(|| mesh_started(peers), |r| r.started);
    let mut outputs: Vec<(&Brief, SquadOutput)> = Vec::with_capacity(peers.len());
    for peer in peers {
        outputs.push((peer, output_of(engine, peer)?));
    }
    let drafts: Vec<(&str, &SquadOutput)> = outputs.iter().map(|(b, o)| (b.title.as_str(), o)).collect();
    let overlaps = agency_flow::mesh::overlaps(&drafts);
    for (peer, draft) in &outputs {
        let text = serde_json::to_string_pretty(draft).unwrap_or_default();
        engine.put_text(
            peer,
            &draft_name(&peer.workstream, domain, &peer.title),
            "application/json",
            &text,
        )?;
    }
    let where_ = format!("{}/{domain}", brief.workstream);
    engine.log(
        brief.run,
        Some(Tier::T3),
        "MESH_ROUND",
        format!("{where_}: round {round} — {}", overlaps_line(&overlaps)),
    )?;
    let name = record_name(&brief.workstream, domain);
    let mut next = MeshRecord {
        parent,
        round,
        started,
        committed: false,
        overlaps: overlaps.clone(),
        redraft: vec![],
        members: vec![],
        replan_round: 0,
    };
    match agency_flow::mesh::step(round, engine.config.retry.t3_mesh_rounds, &overlaps) {
        MeshStep::Commit => {
            next.committed = true;
            next.members = peers.iter().map(|p| p.id).collect();
            write_record(engine, brief, &name, &next)?;
            crate::narrate::mesh_done(engine, brief, domain, &outputs, round)?;
            gated_expand(engine, brief, GateKind::T3Plan, expand_squad)
        }
        MeshStep::Reconcile { round: again, squads } => {
            let sent: Vec<&Brief> = peers
                .iter()
                .copied()
                .filter(|p| squads.contains(&p.title) && p.status == BriefStatus::Verifying)
                .collect();
            if sent.is_empty() {
                // Every squad in an overlap already went on (committed in an earlier mesh): none can
                // re-draft, so the domain's owner must.
                return escalate(engine, brief, peers, &overlaps, "cannot re-draft");
            }
            next.redraft = sent.iter().map(|b| b.id).collect();
            write_record(engine, brief, &name, &next)?;
            for squad in sent {
                redraft(engine, squad, again, &overlaps, peers, domain)?;
            }
            Ok(true)
        }
        MeshStep::Escalate => {
            write_record(engine, brief, &name, &next)?;
            escalate(
                engine,
                brief,
                peers,
                &overlaps,
                &format!(
                    "did not reconcile in {} round{}",
                    engine.config.retry.t3_mesh_rounds,
                    if engine.config.retry.t3_mesh_rounds == 1 {
                        ""
                    } else {
                        "s"
                    }
                ),
            )
        }
    }
}

/// A squad lead re-invoked after its mesh committed re-plans in a mesh round of its own: its new draft
/// against its peers' committed drafts (they went on and cannot re-draft). No overlap with them commits it;
/// overlaps send it back to draft again (its peers' drafts as inputs) while `retry.t3_mesh_rounds` lasts,
/// then to the domain's specialist. Nothing is force-committed.
fn replan_round(
    engine: &Engine,
    brief: &Brief,
    mesh: &[Brief],
    record: &MeshRecord,
    domain: &str,
) -> Result<bool> {
    // Its peers with committed drafts; a peer re-invoked as well re-plans in a round of its own.
    let peers: Vec<&Brief> = mesh
        .iter()
        .filter(|p| p.id == brief.id || record.members.contains(&p.id))
        .collect();
    if record.redraft.contains(&brief.id) {
        // The round closed and recorded it, but the runner stopped before it was sent back.
        redraft(
            engine,
            brief,
            record.replan_round + 1,
            &record.overlaps,
            &peers,
            domain,
        )?;
        return Ok(true);
    }
    let round = record.replan_round + 1;
    let mut outputs: Vec<(&Brief, SquadOutput)> = Vec::with_capacity(peers.len());
    for peer in &peers {
        outputs.push((peer, output_of(engine, peer)?));
    }
    let drafts: Vec<(&str, &SquadOutput)> = outputs.iter().map(|(b, o)| (b.title.as_str(), o)).collect();
    // Only the re-planned draft is in question: its peers' overlaps among themselves were settled.
    let overlaps: Vec<Overlap> = agency_flow::mesh::overlaps(&drafts)
        .into_iter()
        .filter(|o| o.squads.contains(&brief.title))
        .collect();
    if let Some((_, draft)) = outputs.iter().find(|(b, _)| b.id == brief.id) {
        let text = serde_json::to_string_pretty(draft).unwrap_or_default();
        engine.put_text(
            brief,
            &draft_name(&brief.workstream, domain, &brief.title),
            "application/json",
            &text,
        )?;
    }
    engine.log(
        brief.run,
        Some(Tier::T3),
        "MESH_ROUND",
        format!(
            "{}/{domain}: {} re-plans, round {round} — {}",
            brief.workstream,
            brief.title,
            overlaps_line(&overlaps)
        ),
    )?;
    let name = record_name(&brief.workstream, domain);
    let mut next = record.clone();
    next.overlaps = overlaps.clone();
    next.redraft = vec![];
    match agency_flow::mesh::step(round, engine.config.retry.t3_mesh_rounds, &overlaps) {
        MeshStep::Commit => {
            next.members.push(brief.id);
            next.replan_round = 0;
            write_record(engine, brief, &name, &next)?;
            crate::narrate::mesh_done(engine, brief, domain, &outputs, round)?;
            gated_expand(engine, brief, GateKind::T3Plan, expand_squad)
        }
        MeshStep::Reconcile { round: again, .. } => {
            next.replan_round = round;
            next.redraft = vec![brief.id];
            write_record(engine, brief, &name, &next)?;
            redraft(engine, brief, again, &overlaps, &peers, domain)?;
            Ok(true)
        }
        MeshStep::Escalate => {
            next.replan_round = 0;
            write_record(engine, brief, &name, &next)?;
            let rounds = engine.config.retry.t3_mesh_rounds;
            escalate(
                engine,
                brief,
                &peers,
                &overlaps,
                &format!(
                    "did not reconcile {}'s re-plan in {rounds} round{}",
                    brief.title,
                    if rounds == 1 { "" } else { "s" }
                ),
            )
        }
    }
}

/// When the mesh's first drafts were asked for: its oldest squad lead's creation.
fn mesh_started(peers: &[&Brief]) -> DateTime<Utc> {
    peers.iter().map(|p| p.created_at).min().unwrap_or_else(Utc::now)
}

/// Sends `squad` back to draft again in `round`, with its peers' drafts as inputs and the overlaps. A mesh
/// round is negotiation, not a failure: it is not charged to the squad lead's retry budget.
fn redraft(
    engine: &Engine,
    squad: &Brief,
    round: u32,
    overlaps: &[Overlap],
    peers: &[&Brief],
    domain: &str,
) -> Result<()> {
    engine.move_brief(
        squad,
        BriefStatus::Cancelled,
        BriefStatusChange::because(format!("re-drafts its task list in mesh round {round}")),
    )?;
    let mut next = squad.clone();
    next.retry_budget = squad.retry_budget.saturating_add(1);
    let mut names = Vec::new();
    for peer in peers.iter().filter(|p| p.title != squad.title) {
        let name = draft_name(&squad.workstream, domain, &peer.title);
        if !next.inputs.contains(&name) {
            next.inputs.push(name.clone());
        }
        names.push(name);
    }
    let mine: Vec<String> = overlaps
        .iter()
        .filter(|o| o.squads.contains(&squad.title))
        .map(|o| format!("- {o}"))
        .collect();
    let last = engine.config.retry.t3_mesh_rounds;
    let feedback = format!(
        "Mesh round {round} of at most {last}: your draft overlaps your peers' drafts.\n{}\n\
         Your peers' drafts are among your inputs ({}). Agree the split: keep what is yours, release what a \
         peer claims as well, and list in files and provides only what your tasks will touch and provide. \
         Overlaps left after round {last} go to your domain's T2 specialist to re-scope.",
        mine.join("\n"),
        names.join(", ")
    );
    crate::failure::retry(engine, &next, squad.attempt + 1, &feedback)?;
    Ok(())
}

/// The mesh cannot agree: the domain's T2 specialist re-scopes, with the overlaps left. Never force-commits.
fn escalate(
    engine: &Engine,
    brief: &Brief,
    peers: &[&Brief],
    overlaps: &[Overlap],
    how: &str,
) -> Result<bool> {
    let names: Vec<&str> = peers.iter().map(|p| p.title.as_str()).collect();
    let left: Vec<String> = overlaps.iter().map(|o| format!("- {o}")).collect();
    let why = format!(
        "T3 mesh of {} {how}; unreconciled overlaps:\n{}\nRe-scope the squads so no two claim one file or provide one interface.",
        names.join(", "),
        left.join("\n")
    );
    engine.log(
        brief.run,
        Some(Tier::T3),
        "MESH_ESCALATED",
        format!("{}: {how} — {}", brief.workstream, overlaps_line(overlaps)),
    )?;
    flag_anomaly(
        engine,
        brief,
        format!("T3 mesh {how}: {}", overlaps_line(overlaps)),
    )?;
    let decision = Decision::Escalate {
        to: EscalationTarget::Tier(Tier::T2),
    };
    crate::failure::apply(engine, brief, Failure::T3Stuck, decision, &why)?;
    Ok(true)
}

/// Records a mesh that escalated as an anomaly, so the next tier gate lists it for the human
/// (docs/protocols.md, "Anomalies on gate summaries").
fn flag_anomaly(engine: &Engine, brief: &Brief, message: String) -> Result<()> {
    let mut event = NewEvent::typed(
        brief.run,
        EventPayload::Anomaly(Anomaly {
            source: "mesh".into(),
            workstream: Some(brief.workstream.clone()),
            brief: Some(brief.id),
            message,
        }),
    );
    event.tier = Some(Tier::T3);
    event.brief = Some(brief.id);
    engine.store.append_event(event)?;
    Ok(())
}

fn expand_squad(engine: &Engine, brief: &Brief, announce: bool) -> Result<Vec<NewBrief>> {
    let squad: SquadOutput = output_of(engine, brief)?;
    let pipeline = squad.tasks.iter().filter(|t| !t.depends_on.is_empty()).count();
    if announce {
        crate::agreement::squad_received(engine, brief, &squad)?;
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

/// A T3 mesh that has not committed within `t3_mesh_timeout_minutes` (counted from its first drafts)
/// escalates to the domain's T2 specialist with the squads still drafting and the overlaps the last round
/// left; never force-commits.
fn mesh_timeout(engine: &Engine, brief: &Brief, peers: &[&Brief], record: Option<&MeshRecord>) -> Result<()> {
    let limit = chrono::Duration::minutes(i64::from(engine.config.retry.t3_mesh_timeout_minutes));
    let started = record.map_or_else(|| mesh_started(peers), |r| r.started);
    if let MeshClock::WakeAt(due) = mesh_clock(started, Utc::now(), limit) {
        // Nothing may change on the blackboard before then: a pass must still come when it is due.
        return engine.wake_at(due);
    }
    let stuck: Vec<&str> = peers
        .iter()
        .filter(|p| matches!(p.status, BriefStatus::Pending | BriefStatus::Running))
        .map(|p| p.title.as_str())
        .collect();
    let overlaps = record.map(|r| r.overlaps.as_slice()).unwrap_or_default();
    let left: Vec<String> = overlaps.iter().map(|o| format!("- {o}")).collect();
    let why = format!(
        "T3 mesh timeout: squad leads {} did not commit within {} minutes; the domain boundaries need re-scoping.{}",
        stuck.join(", "),
        engine.config.retry.t3_mesh_timeout_minutes,
        if left.is_empty() {
            String::new()
        } else {
            format!("\nUnreconciled overlaps of the last round:\n{}", left.join("\n"))
        }
    );
    engine.log(brief.run, Some(Tier::T3), "MESH_TIMEOUT", why.clone())?;
    flag_anomaly(
        engine,
        brief,
        format!(
            "T3 mesh timed out after {} minutes: squad leads {} did not commit",
            engine.config.retry.t3_mesh_timeout_minutes,
            stuck.join(", ")
        ),
    )?;
    let decision = Decision::Escalate {
        to: EscalationTarget::Tier(Tier::T2),
    };
    crate::failure::apply(engine, brief, Failure::T3Stuck, decision, &why)
}
