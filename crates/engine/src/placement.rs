//! Placement, carried out: the driver records on the run the labels its workstreams need (team.yaml
//! `runner.workstream_labels`) before it writes any brief; every runner claims with its offer
//! ([`crate::EngineOptions::offer`]: the tiers and labels `agency worker --tiers/--runtime/--label` gave,
//! every tier and no label for the driver's own runner) and records it on the run while it works; and the
//! driver reports a brief nobody live can take with an ALERT. The rule itself is
//! [`agency_flow::placement`].

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use agency_core::event::payload::Signal;
use agency_core::event::{EventPayload, NewEvent};
use agency_core::placement::{LabelNeed, Offer};
use agency_core::{AlgedonicSignal, BriefId, BriefStatus, RunId, SignalCategory};
use agency_flow::placement::{Waiting, unplaced};

use crate::engine::Engine;
use crate::error::Result;

impl Engine {
    /// Records on `run` the labels its workstreams need, from team.yaml `runner.workstream_labels`
    /// (replacing what an earlier driver of the run recorded): before the driver writes any brief, so no
    /// runner claims one before its needs are known.
    pub(crate) fn record_label_needs(&self, run: RunId) -> Result<()> {
        let needs: Vec<LabelNeed> = self
            .config
            .runner
            .workstream_labels
            .iter()
            .flat_map(|(workstream, labels)| {
                labels.iter().map(|label| LabelNeed {
                    workstream: workstream.clone(),
                    label: label.clone(),
                })
            })
            .collect();
        // Nothing to write for a run that never needed a label (the common case): no write on the hot path.
        if needs.is_empty() && self.store.label_needs(run)?.is_empty() {
            return Ok(());
        }
        Ok(self.store.set_label_needs(run, &needs)?)
    }

    /// This engine, claiming with `offer` (`agency worker --tiers/--runtime/--label`).
    pub fn offering(mut self, offer: Offer) -> Self {
        std::sync::Arc::make_mut(&mut self.options).offer = offer;
        self
    }

    /// This runner's offer: what its briefs must need at most.
    pub(crate) fn offer(&self) -> &Offer {
        &self.options.offer
    }
}

/// How often the driver looks for briefs nobody can take, at most.
const LOOK_EVERY: Duration = Duration::from_secs(5);

/// The driver's watch for briefs no live runner can take: one ALERT per brief and wait.
#[derive(Debug, Default)]
pub(crate) struct UnplacedBriefs {
    /// When the next look is due.
    due: Option<Instant>,
    /// When each brief was first seen waiting (pending, its dependencies done, no gate open).
    waiting_since: HashMap<BriefId, Instant>,
    /// The briefs reported for their current wait.
    reported: HashSet<BriefId>,
}

impl UnplacedBriefs {
    /// Raises the ALERT for each brief that has waited past team.yaml's `runner.unplaced_alert_seconds`
    /// while no live runner (one that recorded its offer within a claim lease) offers what it needs.
    pub(crate) fn look(&mut self, engine: &Engine, run: RunId) -> Result<()> {
        let after = Duration::from_secs(u64::from(engine.config.runner.unplaced_alert_seconds.max(1)));
        let every = (after / 4).clamp(Duration::from_millis(200), LOOK_EVERY);
        if self.due.is_some_and(|due| Instant::now() < due) {
            return Ok(());
        }
        self.due = Some(Instant::now() + every);
        // While a gate holds the run nobody claims: its briefs wait for the gate, not for a runner.
        let pending = engine.store.list_briefs_by_status(run, BriefStatus::Pending)?;
        if pending.is_empty() || !engine.store.pending_gates(Some(run))?.is_empty() {
            self.waiting_since.clear();
            self.reported.clear();
            return Ok(());
        }
        let mut waiting = Vec::new();
        for brief in &pending {
            let mut ready = true;
            for dep in &brief.depends_on {
                if engine.store.get_brief(*dep)?.status != BriefStatus::Done {
                    ready = false;
                    break;
                }
            }
            if ready {
                let since = *self.waiting_since.entry(brief.id).or_insert_with(Instant::now);
                waiting.push(Waiting {
                    brief: brief.id,
                    tier: brief.tier,
                    workstream: brief.workstream.clone(),
                    waited: since.elapsed(),
                });
            }
        }
        self.waiting_since
            .retain(|id, _| waiting.iter().any(|w| w.brief == *id));
        self.reported.retain(|id| self.waiting_since.contains_key(id));
        if waiting.iter().all(|w| w.waited < after) {
            return Ok(());
        }
        let live_since = crate::gate_clock::liveness_now() - engine.lease();
        let offers: Vec<_> = engine
            .store
            .runner_offers(run)?
            .into_iter()
            .filter(|o| o.seen_at >= live_since)
            .collect();
        let live: Vec<&Offer> = offers.iter().map(|o| &o.offer).collect();
        let needs = engine.store.label_needs(run)?;
        let offered = if offers.is_empty() {
            "no runner is live".to_string()
        } else {
            offers
                .iter()
                .map(|o| format!("{} offers {}", o.runner, o.offer))
                .collect::<Vec<_>>()
                .join("; ")
        };
        for found in unplaced(&waiting, &needs, &live, after) {
            if !self.reported.insert(found.brief) {
                continue;
            }
            let Some(brief) = pending.iter().find(|b| b.id == found.brief) else {
                continue;
            };
            let waited = self.waiting_since.get(&brief.id).map_or(after, Instant::elapsed);
            let issue = format!(
                "{} {} ({}) has waited {} s and no live runner can take it: it needs {}; {offered}",
                brief.tier.as_str(),
                brief.title,
                brief.workstream,
                waited.as_secs(),
                found.needs,
            );
            engine.log(run, Some(brief.tier), "UNPLACED", issue.clone())?;
            engine.store.append_event(
                NewEvent::typed(
                    run,
                    EventPayload::Alert(Signal {
                        source: Some("placement".to_string()),
                        notify: Some(true),
                        brief: Some(brief.id),
                        ..AlgedonicSignal::alert(
                            SignalCategory::MetaBlock,
                            issue,
                            format!(
                                "pending and ready for {} s (runner.unplaced_alert_seconds: {}); live runners: \
                                 {offered}",
                                waited.as_secs(),
                                after.as_secs()
                            ),
                            format!("{} and what waits on it do not move", brief.title),
                            format!(
                                "start a runner that offers it: `agency worker {}` with --label for each label \
                                 it needs (and --tiers including {}), or change team.yaml \
                                 runner.workstream_labels and resume",
                                run.short(),
                                brief.tier.as_str()
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
