//! The liveness watches' decisions in the cases `crates/engine/tests/engine/liveness.rs` drives. Every
//! engine test there stays: they are the wide runs (generated plans of 1-32 workstreams, 4-32 parallel
//! ones), a crash and resume at two points, and the two watches driven on the wall clock (a silent agent,
//! a stalled run). The decisions those watches make, here with plain values and more cases: what a stalled
//! run's ALERT names (at width too), that a stall is reported once however long it lasts, and that a
//! silent agent is reported once per silence, never while it waits at a gate.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use agency_core::{Brief, BriefId, BriefStatus, RunId, TeachbackState, Tier};
use agency_flow::stall::{IdleWatch, QuietTurn, StallWatch, Stalled, Workstream, diagnose};
use chrono::Utc;
use proptest::prelude::*;

fn brief(tier: Tier, workstream: &str, title: &str, attempt: u32, status: BriefStatus) -> Brief {
    Brief {
        id: BriefId::new(),
        run: RunId::new(),
        parent: None,
        tier,
        workstream: workstream.into(),
        title: title.into(),
        personality: None,
        goal_anchor: "goal".into(),
        instructions: String::new(),
        inputs: Vec::new(),
        variety: None,
        contract: None,
        retry_budget: 2,
        attempt,
        depends_on: Vec::new(),
        branch: None,
        worktree: None,
        status,
        teachback: TeachbackState::Pending,
        claimed_by: None,
        created_at: Utc::now(),
    }
}

#[test]
fn a_run_stalled_before_its_plan_names_the_escalated_plan_brief() {
    let plan = brief(Tier::T1, "run", "plan", 0, BriefStatus::Escalated);
    assert_eq!(diagnose(None, &[plan]), ["t1 plan (planner) is escalated"]);
}

#[test]
fn a_stall_at_width_names_every_workstream_not_merged_and_only_those() {
    const WIDTH: usize = 24;
    let ids: Vec<String> = (0..WIDTH).map(|k| format!("ws-{k}")).collect();
    let plan: Vec<Workstream<'_>> = ids
        .iter()
        .enumerate()
        .map(|(k, id)| Workstream {
            id,
            merged: k % 4 == 0,
        })
        .collect();
    let mut briefs = vec![brief(Tier::T1, "run", "plan", 0, BriefStatus::Done)];
    for (k, id) in ids.iter().enumerate() {
        match k % 4 {
            // Merged: its briefs are done.
            0 => briefs.push(brief(Tier::T4, id, "task", 0, BriefStatus::Done)),
            // Not started.
            1 => {}
            // Its newest attempt waits; the older one failed.
            2 => {
                briefs.push(brief(Tier::T4, id, "task", 0, BriefStatus::Failed));
                briefs.push(brief(Tier::T4, id, "task", 1, BriefStatus::Pending));
            }
            // Every brief done, yet not merged.
            _ => briefs.push(brief(Tier::T4, id, "task", 0, BriefStatus::Done)),
        }
    }
    let lines = diagnose(Some(&plan), &briefs);
    let expected: Vec<String> = ids
        .iter()
        .enumerate()
        .filter_map(|(k, id)| match k % 4 {
            0 => None,
            1 => Some(format!("{id}: not started")),
            2 => Some(format!("{id}: t4 task (implementer) is pending")),
            _ => Some(format!(
                "{id}: every brief is done, yet it was not merged into the integration branch"
            )),
        })
        .collect();
    assert_eq!(lines, expected);
}

/// The driver's quiet turns, polled every 20 ms as the runner does, once the grace passed: a rescan,
/// then one ALERT; then nothing more while the run stays where it is.
fn alerts_over(turns: u32, grace: Duration) -> usize {
    let mut watch = StallWatch::default();
    let start = Instant::now();
    let mut seq = 10;
    let mut alerts = 0;
    for turn in 0..turns {
        let now = start + Duration::from_millis(20) * turn;
        if let QuietTurn::Due { since } = watch.quiet_turn(seq, now, grace)
            && watch.stalled() == Stalled::Alert
        {
            alerts += 1;
            // The ALERT is an event of its own: the run's newest is now it.
            seq += 1;
            watch.alerted(since, seq);
        }
    }
    alerts
}

#[test]
fn a_stall_is_reported_once_however_long_it_lasts() {
    let grace = Duration::from_secs(3);
    assert_eq!(alerts_over(100, grace), 0, "two seconds: within the grace");
    assert_eq!(alerts_over(500, grace), 1, "ten seconds");
    assert_eq!(alerts_over(30_000, grace), 1, "ten minutes");
}

proptest! {
    /// However the quiet turns are spaced, a stall that does not move is reported at most once, and once
    /// it lasted past the grace, exactly once.
    #[test]
    fn a_stall_that_does_not_move_is_reported_exactly_once(
        gaps in proptest::collection::vec(1u64..2_000, 1..200),
        grace_ms in 100u64..5_000,
    ) {
        let grace = Duration::from_millis(grace_ms);
        let mut watch = StallWatch::default();
        let start = Instant::now();
        let (mut now, mut seq, mut alerts) = (start, 7, 0);
        let mut first_due: Option<Instant> = None;
        for gap in &gaps {
            now += Duration::from_millis(*gap);
            if let QuietTurn::Due { since } = watch.quiet_turn(seq, now, grace) {
                first_due.get_or_insert(now);
                if watch.stalled() == Stalled::Alert {
                    alerts += 1;
                    seq += 1;
                    watch.alerted(since, seq);
                }
            }
        }
        prop_assert!(alerts <= 1, "{alerts} alerts");
        // Two due turns (the rescan, then the ALERT) need the stretch to have lasted past the grace twice.
        let dues = {
            let mut watch = StallWatch::default();
            let mut now = start;
            let mut dues = 0;
            for gap in &gaps {
                now += Duration::from_millis(*gap);
                if watch.quiet_turn(7, now, grace) != QuietTurn::Wait {
                    dues += 1;
                }
            }
            dues
        };
        prop_assert_eq!(alerts == 1, dues >= 2, "dues {}, alerts {}", dues, alerts);
    }
}

#[test]
fn a_silent_agent_is_reported_once_per_silence_and_never_at_a_gate() {
    let limit = Duration::from_millis(400);
    let (slow, waiting) = (BriefId::new(), BriefId::new());
    let running = [slow, waiting];
    let at_gate: HashSet<BriefId> = [waiting].into();
    let mut watch = IdleWatch::default();
    let start = Instant::now();
    let mut reported = Vec::new();
    // Looks every 100 ms for 1.5 s of silence: the slow agent once, the one at its gate never.
    for step in 0..=15 {
        let now = start + Duration::from_millis(100) * step;
        for (id, silent) in watch.look(now, 1, limit, &[], &running, &at_gate) {
            assert!(silent >= limit);
            reported.push(id);
        }
    }
    assert_eq!(reported, [slow]);
    // It is heard from, then falls silent again: a new silence, reported again.
    let later = start + Duration::from_secs(2);
    assert!(
        watch
            .look(later, 2, limit, &[slow], &running, &at_gate)
            .is_empty()
    );
    let again = watch.look(later + limit, 2, limit, &[], &running, &at_gate);
    assert_eq!(again.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [slow]);
}
