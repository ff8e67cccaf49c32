//! Placement, carried out: the driver records on the run the labels its workstreams need (team.yaml
//! `runner.workstream_labels`) before it writes any brief; every runner claims with its offer
//! ([`crate::EngineOptions::offer`]: the tiers and labels `agency worker --tiers/--runtime/--label` gave,
//! every tier and no label for the driver's own runner) and records it on the run while it works; and the
//! driver reports a brief nobody live can take with an ALERT. The rule itself is
//! [`agency_flow::placement`].

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use agency_core::event::payload::{LogLine, Signal};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::placement::{LabelNeed, Offer};
use agency_core::{AlgedonicSignal, BriefId, BriefStatus, RunId, SignalCategory};
use agency_flow::placement::{Waiting, unplaced};

use agency_store::Blackboard;

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
    /// while no live runner (one that recorded its offer within a claim `lease`) offers what it needs. It
    /// needs the blackboard and those two settings alone.
    pub(crate) fn look(
        &mut self,
        store: &dyn Blackboard,
        unplaced_alert_seconds: u32,
        lease: chrono::Duration,
        run: RunId,
    ) -> Result<()> {
        let after = Duration::from_secs(u64::from(unplaced_alert_seconds.max(1)));
        let every = (after / 4).clamp(Duration::from_millis(200), LOOK_EVERY);
        if self.due.is_some_and(|due| Instant::now() < due) {
            return Ok(());
        }
        self.due = Some(Instant::now() + every);
        // While a gate holds the run nobody claims: its briefs wait for the gate, not for a runner.
        let pending = store.list_briefs_by_status(run, BriefStatus::Pending)?;
        if pending.is_empty() || !store.pending_gates(Some(run))?.is_empty() {
            self.waiting_since.clear();
            self.reported.clear();
            return Ok(());
        }
        let mut waiting = Vec::new();
        for brief in &pending {
            let mut ready = true;
            for dep in &brief.depends_on {
                if store.get_brief(*dep)?.status != BriefStatus::Done {
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
        let live_since = crate::gate_clock::liveness_now() - lease;
        let offers: Vec<_> = store
            .runner_offers(run)?
            .into_iter()
            .filter(|o| o.seen_at >= live_since)
            .collect();
        let live: Vec<&Offer> = offers.iter().map(|o| &o.offer).collect();
        let needs = store.label_needs(run)?;
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
            let line = LogLine::new("normal", Some("UNPLACED"), issue.clone());
            store.append_event(NewEvent::typed(run, EventPayload::Log(line)).tier(brief.tier))?;
            store.append_event(
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

#[cfg(test)]
mod tests {
    //! The unplaced-brief watch on its own: a blackboard and two settings, no `Engine`.

    use agency_core::Brief;
    use agency_core::event::EventPayload;
    use agency_core::placement::LabelNeed;
    use agency_store::conformance::sample_brief;
    use agency_store::{Blackboard, NewRun, SqliteBlackboard};

    use super::UnplacedBriefs;

    #[test]
    fn a_ready_brief_no_live_runner_offers_is_reported_once_after_its_wait() {
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        store
            .set_label_needs(run, &[LabelNeed::new("ws-gpu", "gpu")])
            .unwrap();
        let brief = Brief {
            workstream: "ws-gpu".into(),
            ..sample_brief(run, "train")
        };
        store.insert_brief(&brief).unwrap();
        let said = || -> Vec<String> {
            store
                .events_after(Some(run), 0, 1000)
                .unwrap()
                .iter()
                .filter_map(|e| match e.typed() {
                    Ok(EventPayload::Log(line)) if line.tag.as_deref() == Some("UNPLACED") => {
                        Some(format!("{:?} {}", e.tier, line.message))
                    }
                    Ok(EventPayload::Alert(signal)) => Some(format!("ALERT {:?}", signal.brief)),
                    _ => None,
                })
                .collect()
        };
        let mut watch = UnplacedBriefs::default();
        let lease = chrono::Duration::seconds(30);
        watch.look(&store, 1, lease, run).unwrap();
        assert!(said().is_empty(), "not before it has waited");
        std::thread::sleep(std::time::Duration::from_millis(1100));
        watch.look(&store, 1, lease, run).unwrap();
        let lines = said();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("Some(T4) t4 train (ws-gpu) has waited 1 s and no live runner can take it"),
            "{lines:?}"
        );
        assert!(lines[0].ends_with("; no runner is live"), "{lines:?}");
        assert_eq!(lines[1], format!("ALERT {:?}", Some(brief.id)));
        std::thread::sleep(std::time::Duration::from_millis(300));
        watch.look(&store, 1, lease, run).unwrap();
        assert_eq!(said().len(), 2, "reported once for its wait");
    }
}
