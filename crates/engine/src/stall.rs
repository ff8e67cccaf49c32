//! The stall detector: a driver whose run has not ended, with no agent at work anywhere, no gate open, no
//! pause and no timer set, is waiting for something that will never come. It never stays silent about it:
//! first it looks at the whole run again (a full pass, in case an incremental one missed something), and
//! if that changes nothing it writes one ALERT event that says which workstreams wait on what — and the
//! notifiers announce it like any ALERT. The ALERT is written once per stall: the next is raised only after
//! the run moved again.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use agency_core::event::payload::{LogLine, Signal};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::{AlgedonicSignal, SignalCategory};
use agency_core::{BriefId, BriefStatus, RunId};
use agency_flow::stall::{self, IdleLook, QuietTurn, Stalled, Workstream};

use agency_store::Blackboard;

use crate::advance::{Passes, approved};
use crate::engine::Engine;
use crate::error::Result;

/// What the driver knows of its run's quiet turns: the decision core's watch
/// ([`agency_flow::stall::StallWatch`]), fed the run's newest event and this process's clock.
#[derive(Debug, Default)]
pub(crate) struct StallWatch(stall::StallWatch);

impl StallWatch {
    /// Something ran, started or moved: the run is not stalled. If it moved only because of the full pass
    /// [`StallWatch::quiet_turn`] asked for, an incremental pass had missed work: that is said in the log
    /// (a defect of the runner, which the tests look for), since the run went on only seconds late.
    pub(crate) fn busy(&mut self, store: &dyn Blackboard, run: RunId) -> Result<()> {
        if self.0.busy() {
            store.append_event(NewEvent::typed(
                run,
                EventPayload::Log(LogLine::new(
                    "verbose",
                    Some("RESCAN"),
                    "a full pass over the run moved it on after it had been quiet: an incremental pass \
                     missed work",
                )),
            ))?;
        }
        Ok(())
    }

    /// A turn in which the driver ran nothing, started nothing and moved nothing, while no gate or pause
    /// holds the run. Asks for a full pass, then raises the ALERT, once the quiet has lasted
    /// [`stall::grace`] and nothing anywhere can move the run on.
    pub(crate) fn quiet_turn(&mut self, engine: &Engine, run: RunId, passes: &mut Passes) -> Result<()> {
        let seq = engine.store.last_seq(Some(run))?;
        let QuietTurn::Due { since } =
            self.0
                .quiet_turn(seq, Instant::now(), stall::grace(engine.options.poll))
        else {
            return Ok(());
        };
        if engine.has_timer()? || at_work(engine.store.as_ref(), run)? {
            return Ok(());
        }
        if self.0.stalled() == Stalled::Rescan {
            passes.reset();
            return Ok(());
        }
        let waiting = diagnose(engine, run)?;
        let issue = format!(
            "the run is not ended, yet nothing is running, nothing can start and no gate is open: {}",
            if waiting.is_empty() {
                "no workstream says what it waits for".to_string()
            } else {
                waiting.join("; ")
            }
        );
        engine.log(run, None, "STALL", issue.clone())?;
        engine.store.append_event(NewEvent::typed(
            run,
            EventPayload::Alert(Signal {
                source: Some("stall".to_string()),
                waiting: Some(waiting.iter().map(ToString::to_string).collect()),
                next: Some(format!(
                    "`agency inspect {short}` shows the briefs; `agency cancel {short}` ends the run",
                    short = run.short()
                )),
                notify: Some(true),
                ..AlgedonicSignal::alert(
                    SignalCategory::MetaBlock,
                    issue,
                    format!(
                        "for {:.0} s (and a full pass over the run) no agent ran, no brief could start, no gate or \
                         pause was open and no timer was set",
                        since.elapsed().as_secs_f64()
                    ),
                    "the run never ends on its own: its workstreams wait for something nothing will do",
                    format!(
                        "look at what waits with `agency inspect {short}`; decide or retry what is stuck, or end the \
                         run with `agency cancel {short}`",
                        short = run.short()
                    ),
                )
                .payload()
            }),
        ))?;
        // What was just written is this watch's own: the stall goes on, and is not reported again.
        self.0.alerted(since, engine.store.last_seq(Some(run))?);
        Ok(())
    }
}

/// Agents that went silent: a brief `running` whose agent has recorded nothing on the blackboard (a tool
/// call, a message, a teachback) for `runner.agent_idle_minutes` gets one ALERT per silence
/// ([`agency_flow::stall::IdleWatch`] decides). Looked at every few seconds from the briefs that have new
/// events, so it costs one indexed read however many agents run.
#[derive(Debug, Default)]
pub(crate) struct IdleAgents(stall::IdleWatch);

impl IdleAgents {
    /// Raises the ALERT for each agent silent past the limit (`limit` overrides team.yaml's minutes).
    pub(crate) fn look(&mut self, engine: &Engine, run: RunId, limit: Option<Duration>) -> Result<()> {
        let limit = stall::idle_limit(limit, engine.config.runner.agent_idle_minutes);
        let now = Instant::now();
        let IdleLook::Look { after } = self.0.due(now, limit) else {
            return Ok(());
        };
        let seq = engine.store.last_seq(Some(run))?;
        let heard = match after {
            Some(after) => engine.store.briefs_in_events_after(run, after)?,
            None => Vec::new(),
        };
        let running = engine.store.list_briefs_by_status(run, BriefStatus::Running)?;
        let ids: Vec<BriefId> = running.iter().map(|b| b.id).collect();
        // An agent waiting at a gate (its teachback before a human, say) is waiting, not stuck.
        let at_gate: HashSet<BriefId> = engine
            .store
            .pending_gates(Some(run))?
            .into_iter()
            .filter_map(|g| g.brief)
            .collect();
        for (id, silent) in self.0.look(now, seq, limit, &heard, &ids, &at_gate) {
            let Some(brief) = running.iter().find(|b| b.id == id) else {
                continue;
            };
            let issue = format!(
                "{} {} ({}) has recorded nothing for {} — its agent may be stuck; `agency inspect {} --brief {}` \
                 shows its last events",
                brief.tier.as_str(),
                brief.title,
                brief.claimed_by.as_deref().unwrap_or("no runner"),
                stall::silence(silent),
                run.short(),
                brief.id.short()
            );
            engine.log(run, Some(brief.tier), "AGENT_IDLE", issue.clone())?;
            // Not attributed to the brief (the payload names it): an event of the brief would count as
            // hearing from its agent.
            engine.store.append_event(
                NewEvent::typed(
                    run,
                    EventPayload::Alert(Signal {
                        source: Some("agent_idle".to_string()),
                        notify: Some(true),
                        brief: Some(brief.id),
                        ..AlgedonicSignal::alert(
                            SignalCategory::MetaBlock,
                            issue,
                            format!(
                                "no tool call, message or teachback of its agent on the blackboard since {:.0} s ago \
                                 (runner.agent_idle_minutes)",
                                silent.as_secs_f64()
                            ),
                            format!(
                                "{} holds its claim and its workstream waits on it; nothing else of that \
                                 workstream moves",
                                brief.title
                            ),
                            format!(
                                "look at its last events with `agency inspect {} --brief {}`: a stuck agent is \
                                 stopped at its time limit and its brief retried; to stop sooner, `agency cancel {}` \
                                 ends the run",
                                run.short(),
                                brief.id.short(),
                                run.short()
                            ),
                        )
                        .payload()
                    }),
                )
                .tier(brief.tier),
            )?;
        }
        Ok(())
    }
}

/// Whether any brief of the run is held by an agent, this runner's or a worker's.
fn at_work(store: &dyn Blackboard, run: RunId) -> Result<bool> {
    Ok(!store.list_briefs_by_status(run, BriefStatus::Running)?.is_empty())
}

/// One line per workstream of the approved plan that is not merged: the state of its newest briefs. Before
/// a plan is approved, the briefs of the run that are not done ([`agency_flow::stall::diagnose`]).
fn diagnose(engine: &Engine, run: RunId) -> Result<Vec<String>> {
    let briefs = engine.store.list_briefs(run)?;
    let Some(approved) = approved(engine, run)? else {
        return Ok(stall::diagnose(None, &briefs));
    };
    let mut plan = Vec::with_capacity(approved.plan.workstreams.len());
    for ws in &approved.plan.workstreams {
        let merged = engine
            .store
            .latest_artifact(run, &crate::artifacts::merged_name(&ws.id))?
            .is_some();
        plan.push(Workstream { id: &ws.id, merged });
    }
    Ok(stall::diagnose(Some(&plan), &briefs))
}
