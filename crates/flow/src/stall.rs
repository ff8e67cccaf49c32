//! Whether a run is stalled, and what each of its workstreams waits on. A driver whose run has not ended,
//! with no agent at work, no gate open, no pause and no timer set, is waiting for something that will
//! never come: after a quiet grace it first asks for a full pass (in case an incremental one missed
//! something), and if that changes nothing it raises one ALERT naming what every unmerged workstream
//! waits on. The next ALERT comes only after the run moved again. Agents that went silent are judged
//! here too: how often to look, and how a silence reads.
//!
//! The clock readings and the blackboard's newest event are the caller's, passed in as values.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use agency_core::tiers::BriefRole;
use agency_core::{Brief, BriefId, BriefStatus, Tier};

use crate::attempts::latest_of;

/// What the driver knows of its run's quiet turns.
#[derive(Debug, Default)]
pub struct StallWatch {
    /// When the current quiet stretch began, and the blackboard's newest event then.
    quiet: Option<(Instant, i64)>,
    /// The full pass was made for this quiet stretch.
    rescanned: bool,
    /// The ALERT was written for the stall at this event.
    reported: Option<i64>,
}

/// What a quiet turn calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuietTurn {
    /// Not quiet for long enough yet (or this stall was reported): nothing.
    Wait,
    /// Quiet since `since` past the grace: the driver looks whether anything holds the run (an agent at
    /// work, a timer) and, if nothing does, asks [`StallWatch::stalled`].
    Due {
        /// When the quiet began.
        since: Instant,
    },
}

/// What a quiet run that nothing holds calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stalled {
    /// A full pass over the run, once per quiet stretch.
    Rescan,
    /// The full pass changed nothing: the ALERT, once per stall.
    Alert,
}

impl StallWatch {
    /// Something ran, started or moved: the run is not stalled. Returns whether it moved only because of
    /// the full pass a quiet stretch asked for: an incremental pass had missed work, which the runner says
    /// in its log (a defect of the runner, which the tests look for).
    pub fn busy(&mut self) -> bool {
        let missed = self.rescanned;
        self.quiet = None;
        self.rescanned = false;
        missed
    }

    /// A turn in which the driver ran nothing, started nothing and moved nothing while no gate or pause
    /// holds the run, at `now` with `seq` the run's newest event: a new quiet stretch begins when the run
    /// moved since the last; a stretch that lasted `grace` and was not reported yet is due.
    pub fn quiet_turn(&mut self, seq: i64, now: Instant, grace: Duration) -> QuietTurn {
        let since = match self.quiet {
            Some((since, at)) if at == seq => since,
            _ => {
                self.quiet = Some((now, seq));
                self.rescanned = false;
                return QuietTurn::Wait;
            }
        };
        if now.saturating_duration_since(since) < grace || self.reported == Some(seq) {
            return QuietTurn::Wait;
        }
        QuietTurn::Due { since }
    }

    /// A due quiet stretch that nothing holds: a full pass first, then the ALERT.
    pub fn stalled(&mut self) -> Stalled {
        if self.rescanned {
            Stalled::Alert
        } else {
            self.rescanned = true;
            Stalled::Rescan
        }
    }

    /// The ALERT was written for the stretch quiet `since`, and the run's newest event is now `seq` (the
    /// ALERT's own): the stall goes on, and is not reported again until the run moves.
    pub fn alerted(&mut self, since: Instant, seq: i64) {
        self.reported = Some(seq);
        self.quiet = Some((since, seq));
    }
}

/// How long a run must be quiet before it counts as stalled, polled every `poll`: three seconds (long
/// enough for a worker's claim, a gate or an agent's first event to show up, short enough that a human is
/// told within seconds) or ten polls, whichever is longer.
pub fn grace(poll: Duration) -> Duration {
    Duration::from_secs(3).max(poll.saturating_mul(10))
}

/// A workstream of the approved plan, as the stall diagnosis reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workstream<'a> {
    /// Its id.
    pub id: &'a str,
    /// Whether it was merged into the integration branch.
    pub merged: bool,
}

/// One line per workstream of the approved plan (`plan`, in its order) that is not merged: the state of
/// its newest briefs among `briefs`, or that it has none, or that every one is done yet it is not
/// merged. Before a plan is approved (`plan` is `None`), the newest briefs of the run that are not done.
pub fn diagnose(plan: Option<&[Workstream<'_>]>, briefs: &[Brief]) -> Vec<String> {
    let Some(workstreams) = plan else {
        return latest_of(briefs.iter())
            .into_iter()
            .filter(|b| b.status != BriefStatus::Done)
            .map(describe)
            .collect();
    };
    let mut lines = Vec::new();
    for ws in workstreams.iter().filter(|ws| !ws.merged) {
        let own: Vec<&Brief> = briefs
            .iter()
            .filter(|b| b.workstream == ws.id && b.tier != Tier::T1)
            .collect();
        if own.is_empty() {
            lines.push(format!("{}: not started", ws.id));
            continue;
        }
        let open: Vec<String> = latest_of(own.into_iter())
            .into_iter()
            .filter(|b| b.status != BriefStatus::Done)
            .map(describe)
            .collect();
        if open.is_empty() {
            lines.push(format!(
                "{}: every brief is done, yet it was not merged into the integration branch",
                ws.id
            ));
        } else {
            lines.push(format!("{}: {}", ws.id, open.join(", ")));
        }
    }
    lines
}

/// `t4 add-mul (implementer) is pending`.
fn describe(brief: &Brief) -> String {
    format!(
        "{} {} ({}) is {}",
        brief.tier.as_str(),
        brief.title,
        BriefRole::of(brief).as_str(),
        brief.status.as_str()
    )
}

/// How often the runner looks for silent agents when an agent may be silent for `limit`: a quarter of
/// it, between a tenth of a second and fifteen seconds.
pub fn idle_look_every(limit: Duration) -> Duration {
    (limit / 4).clamp(Duration::from_millis(100), Duration::from_secs(15))
}

/// How a silence of `silent` reads in the ALERT: whole minutes from two minutes on, tenths of a second
/// below.
pub fn silence(silent: Duration) -> String {
    if silent.as_secs() >= 120 {
        format!("{} min", silent.as_secs() / 60)
    } else {
        format!("{:.1} s", silent.as_secs_f64())
    }
}

/// How long an agent may record nothing before it is reported: the runner's own limit when given (a test's
/// `agent_idle`), else team.yaml's `runner.agent_idle_minutes`; zero turns the watch off.
pub fn idle_limit(given: Option<Duration>, minutes: u32) -> Duration {
    given.unwrap_or(Duration::from_secs(u64::from(minutes) * 60))
}

/// Agents that went silent: a brief `running` whose agent has recorded nothing on the blackboard (a tool
/// call, a message, a teachback) for the limit gets one ALERT per silence. An agent waiting at a gate is
/// waiting, not stuck. The briefs heard from, the running ones and the clock are the caller's.
#[derive(Debug, Default)]
pub struct IdleWatch {
    /// When the last look was taken, and the newest event then.
    looked: Option<(Instant, i64)>,
    /// When each running brief was last heard from (or first seen running).
    heard: HashMap<BriefId, Instant>,
    /// The briefs reported for their current silence.
    reported: HashSet<BriefId>,
}

/// Whether a look is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleLook {
    /// Looked less than [`idle_look_every`] ago.
    NotYet,
    /// Look: the briefs with events after `after` (none at the first look) were heard from.
    Look {
        /// The newest event at the last look.
        after: Option<i64>,
    },
}

impl IdleWatch {
    /// Whether a look is due at `now` for agents that may be silent for `limit`.
    pub fn due(&self, now: Instant, limit: Duration) -> IdleLook {
        match self.looked {
            _ if limit.is_zero() => IdleLook::NotYet,
            Some((at, _)) if now.saturating_duration_since(at) < idle_look_every(limit) => IdleLook::NotYet,
            Some((_, after)) => IdleLook::Look { after: Some(after) },
            None => IdleLook::Look { after: None },
        }
    }

    /// The look at `now`, the run's newest event being `seq`: `heard` were heard from since the last look,
    /// `running` are the running briefs and `at_gate` the ones waiting at a gate. Returns each brief silent
    /// past `limit` and not reported for this silence yet, with how long it has been silent.
    pub fn look(
        &mut self,
        now: Instant,
        seq: i64,
        limit: Duration,
        heard: &[BriefId],
        running: &[BriefId],
        at_gate: &HashSet<BriefId>,
    ) -> Vec<(BriefId, Duration)> {
        for id in heard {
            self.heard.insert(*id, now);
            self.reported.remove(id);
        }
        self.looked = Some((now, seq));
        self.heard.retain(|id, _| running.contains(id));
        self.reported.retain(|id| running.contains(id));
        let mut silent = Vec::new();
        for id in running {
            if at_gate.contains(id) {
                self.heard.insert(*id, now);
                continue;
            }
            let since = *self.heard.entry(*id).or_insert(now);
            let quiet = now.saturating_duration_since(since);
            if quiet < limit || !self.reported.insert(*id) {
                continue;
            }
            silent.push((*id, quiet));
        }
        silent
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::attempts::tests::brief;

    fn in_ws(mut b: Brief, ws: &str) -> Brief {
        b.workstream = ws.into();
        b
    }

    #[test]
    fn a_quiet_run_is_rescanned_once_then_reported_once_per_stall() {
        let mut watch = StallWatch::default();
        let t0 = Instant::now();
        let grace = Duration::from_secs(3);
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert_eq!(
            watch.quiet_turn(10, at(0), grace),
            QuietTurn::Wait,
            "the stretch begins"
        );
        assert_eq!(
            watch.quiet_turn(10, at(2), grace),
            QuietTurn::Wait,
            "within the grace"
        );
        assert_eq!(watch.quiet_turn(10, at(3), grace), QuietTurn::Due { since: t0 });
        assert_eq!(watch.stalled(), Stalled::Rescan);
        assert_eq!(watch.quiet_turn(10, at(4), grace), QuietTurn::Due { since: t0 });
        assert_eq!(watch.stalled(), Stalled::Alert);
        watch.alerted(t0, 12);
        assert_eq!(
            watch.quiet_turn(12, at(60), grace),
            QuietTurn::Wait,
            "reported once"
        );
        // The run moves: a new stretch, rescanned and reported afresh.
        assert_eq!(watch.quiet_turn(13, at(61), grace), QuietTurn::Wait);
        assert_eq!(
            watch.quiet_turn(13, at(64), grace),
            QuietTurn::Due { since: at(61) }
        );
        assert_eq!(watch.stalled(), Stalled::Rescan);
        // Work found by the full pass: an incremental pass had missed it.
        assert!(watch.busy());
        assert!(!watch.busy(), "said once");
    }

    #[test]
    fn the_grace_is_three_seconds_or_ten_polls() {
        assert_eq!(grace(Duration::from_millis(50)), Duration::from_secs(3));
        assert_eq!(grace(Duration::from_secs(1)), Duration::from_secs(10));
        assert_eq!(grace(Duration::MAX), Duration::MAX, "never overflows");
    }

    #[test]
    fn a_stall_names_what_each_unmerged_workstream_waits_on() {
        let plan = [
            Workstream {
                id: "api",
                merged: false,
            },
            Workstream {
                id: "ui",
                merged: false,
            },
            Workstream {
                id: "db",
                merged: true,
            },
            Workstream {
                id: "docs",
                merged: false,
            },
        ];
        let briefs = vec![
            in_ws(brief(Tier::T1, "plan", 0, BriefStatus::Done), "api"),
            in_ws(brief(Tier::T4, "add-mul", 0, BriefStatus::Failed), "api"),
            in_ws(brief(Tier::T4, "add-mul", 1, BriefStatus::Pending), "api"),
            in_ws(brief(Tier::T4, "form", 0, BriefStatus::Done), "ui"),
            in_ws(brief(Tier::T4, "schema", 0, BriefStatus::Escalated), "db"),
        ];
        assert_eq!(
            diagnose(Some(&plan), &briefs),
            [
                "api: t4 add-mul (implementer) is pending",
                "ui: every brief is done, yet it was not merged into the integration branch",
                "docs: not started",
            ]
        );
        // Before a plan is approved: the briefs that are not done.
        let plan_only = vec![brief(Tier::T1, "plan", 0, BriefStatus::Verifying)];
        assert_eq!(diagnose(None, &plan_only), ["t1 plan (planner) is verifying"]);
        assert!(diagnose(Some(&[]), &briefs).is_empty());
    }

    #[test]
    fn silent_agents_are_looked_for_often_enough_and_their_silence_reads_plainly() {
        assert_eq!(idle_look_every(Duration::from_secs(60)), Duration::from_secs(15));
        assert_eq!(
            idle_look_every(Duration::from_secs(2)),
            Duration::from_millis(500)
        );
        assert_eq!(
            idle_look_every(Duration::from_millis(40)),
            Duration::from_millis(100)
        );
        assert_eq!(silence(Duration::from_millis(2_500)), "2.5 s");
        assert_eq!(silence(Duration::from_secs(119)), "119.0 s");
        assert_eq!(silence(Duration::from_secs(600)), "10 min");
    }

    #[test]
    fn a_silent_agent_is_reported_once_per_silence_and_never_at_a_gate() {
        let mut watch = IdleWatch::default();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let limit = Duration::from_millis(400);
        let (a, b) = (BriefId::new(), BriefId::new());
        let none = HashSet::new();
        assert_eq!(watch.due(at(0), limit), IdleLook::Look { after: None });
        assert!(
            watch.look(at(0), 1, limit, &[], &[a, b], &none).is_empty(),
            "first seen now"
        );
        assert_eq!(
            watch.due(at(50), limit),
            IdleLook::NotYet,
            "a quarter of the limit apart"
        );
        assert_eq!(watch.due(at(100), limit), IdleLook::Look { after: Some(1) });
        // b waits at a gate: waiting, not stuck.
        let gated: HashSet<BriefId> = [b].into();
        assert_eq!(
            watch.look(at(500), 2, limit, &[], &[a, b], &gated),
            [(a, Duration::from_millis(500))]
        );
        assert!(
            watch.look(at(900), 2, limit, &[], &[a, b], &gated).is_empty(),
            "once per silence"
        );
        // a is heard from: a new silence, reported again past the limit.
        assert!(watch.look(at(1_000), 3, limit, &[a], &[a, b], &none).is_empty());
        assert_eq!(
            watch.look(at(1_500), 3, limit, &[], &[a, b], &none),
            [(a, Duration::from_millis(500)), (b, Duration::from_millis(600))]
        );
        // No longer running: forgotten.
        assert!(watch.look(at(9_000), 4, limit, &[], &[], &none).is_empty());
        assert_eq!(
            IdleWatch::default().due(at(0), Duration::ZERO),
            IdleLook::NotYet,
            "off"
        );
        assert_eq!(idle_limit(None, 10), Duration::from_secs(600));
        assert_eq!(
            idle_limit(Some(Duration::from_millis(400)), 10),
            Duration::from_millis(400)
        );
    }

    proptest! {
        /// A stall diagnosis always names every waiting (unmerged) workstream, once, in the plan's order,
        /// and never a merged one, however the briefs stand.
        #[test]
        fn a_diagnosis_names_every_waiting_workstream(
            merged in prop::collection::vec(any::<bool>(), 1..30),
            briefs in prop::collection::vec((0usize..30, 0usize..5, 0u32..3, 0usize..7), 0..60),
        ) {
            let ids: Vec<String> = (0..merged.len()).map(|i| format!("ws-{i}")).collect();
            let plan: Vec<Workstream<'_>> =
                ids.iter().zip(&merged).map(|(id, m)| Workstream { id, merged: *m }).collect();
            let statuses = [
                BriefStatus::Pending,
                BriefStatus::Running,
                BriefStatus::Verifying,
                BriefStatus::Done,
                BriefStatus::Failed,
                BriefStatus::Escalated,
                BriefStatus::Cancelled,
            ];
            let tiers = [Tier::T1, Tier::T2, Tier::T3, Tier::T4, Tier::T5];
            let briefs: Vec<Brief> = briefs
                .into_iter()
                .map(|(ws, tier, attempt, status)| {
                    in_ws(
                        brief(tiers[tier], &format!("b{tier}"), attempt, statuses[status]),
                        &format!("ws-{ws}"),
                    )
                })
                .collect();
            let lines = diagnose(Some(&plan), &briefs);
            let waiting: Vec<&str> = plan.iter().filter(|w| !w.merged).map(|w| w.id).collect();
            prop_assert_eq!(lines.len(), waiting.len());
            for (line, id) in lines.iter().zip(&waiting) {
                prop_assert!(line.starts_with(&format!("{id}: ")), "{} for {}", line, id);
            }
        }

        /// However the turns come, the ALERT is raised only after a full pass, and once per stall.
        #[test]
        fn a_stall_is_alerted_after_a_rescan_and_once(
            turns in prop::collection::vec((0u64..3, 0i64..3, any::<bool>()), 1..60),
        ) {
            let mut watch = StallWatch::default();
            let t0 = Instant::now();
            let (mut now, mut seq) = (t0, 0i64);
            let mut rescanned_this_stretch = false;
            let mut alerted_at: Option<i64> = None;
            for (wait, moved, busy) in turns {
                now += Duration::from_secs(wait);
                seq += moved;
                if moved > 0 {
                    rescanned_this_stretch = false;
                }
                if busy {
                    watch.busy();
                    rescanned_this_stretch = false;
                    continue;
                }
                if let QuietTurn::Due { since } = watch.quiet_turn(seq, now, Duration::from_secs(3)) {
                    match watch.stalled() {
                        Stalled::Rescan => rescanned_this_stretch = true,
                        Stalled::Alert => {
                            prop_assert!(rescanned_this_stretch, "alerted without a full pass");
                            prop_assert!(alerted_at != Some(seq), "alerted twice for one stall");
                            alerted_at = Some(seq);
                            watch.alerted(since, seq);
                        }
                    }
                }
            }
        }
    }
}
