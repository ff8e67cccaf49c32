//! A pending gate's time: what its waiting means for each kind of gate (approved under `--auto-approve`,
//! rejected at its timeout, announced again to a human, or an outage's pause probed), when a reminder is
//! due, and how long a gate has waited on the monotonic clock. The clock readings are the caller's: the
//! engine reads the wall and monotonic clocks once and passes them in.
//!
//! - A gate has waited what it had waited, on the wall clock, when the runner first saw it pending (never
//!   less than nothing), plus the monotonic time since: [`GateClock::waited`].
//! - "Now" for leases is the wall clock as the runner first read it, advanced by its monotonic clock since,
//!   or the wall clock when that is earlier: [`Anchor::judge`]. Leases are stamped on their holders' wall
//!   clocks, so a holder whose clock stepped forward renews into the future (its claim lasts longer, never
//!   shorter), and after a backward step the wall clock is the earlier and judges leases stamped on it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use agency_core::GateId;
use agency_core::gate::GateKind;
use chrono::{DateTime, Duration, Utc};

/// What the runner does with a pending gate on this pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateCare {
    /// An outage's pause (or a human's) under `--auto-approve`: the runner probes the provider and
    /// releases the gate once it answers; until then it holds the run.
    ProbeOutage,
    /// It holds the run and nothing is due.
    Hold,
    /// Approved on the spot (`--auto-approve`, a gate that is not a human's).
    AutoApprove,
    /// A human's gate (budget, escalation, halt): it never times out (rejecting it would end the run) and
    /// holds the run; a reminder may be due ([`reminder_due`]).
    Remind,
    /// Waited past its timeout: rejected, saying `reason`.
    TimeOut {
        /// The rejection's reason.
        reason: String,
    },
}

/// What a pending gate of `kind` that has `waited` calls for, with `timeout` the gates' timeout, under
/// `--auto-approve` or not.
pub fn care(kind: GateKind, auto_approve: bool, waited: Duration, timeout: Duration) -> GateCare {
    if kind == GateKind::Pause {
        return if auto_approve {
            GateCare::ProbeOutage
        } else {
            GateCare::Hold
        };
    }
    if kind.needs_a_human() {
        return GateCare::Remind;
    }
    if auto_approve {
        return GateCare::AutoApprove;
    }
    if waited > timeout {
        GateCare::TimeOut {
            reason: format!("no decision within {}", human_duration(timeout)),
        }
    } else {
        GateCare::Hold
    }
}

/// The gates' timeout: the runner's own when given (`--gate-timeout`), else team.yaml's
/// `visibility.gate_timeout_minutes`.
pub fn timeout(given: Option<std::time::Duration>, config_minutes: u32) -> Duration {
    match given {
        Some(given) => Duration::from_std(given).unwrap_or(Duration::MAX),
        None => Duration::minutes(i64::from(config_minutes)),
    }
}

/// The number of the reminder due for a gate that has `waited`, reminded once per whole `every`, when
/// `sent` were sent already; `None` when none is due (not a whole period yet, or this one was sent).
pub fn reminder_due(waited: Duration, every: Duration, sent: i64) -> Option<i64> {
    if every <= Duration::zero() || waited < every {
        return None;
    }
    let due = waited.num_seconds() / every.num_seconds().max(1);
    (due > sent).then_some(due)
}

/// `45 s`, `12 min`, `3 h 5 min`.
pub fn human_duration(span: Duration) -> String {
    let seconds = span.num_seconds().max(0);
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3600 => format!("{} min", seconds / 60),
        _ => format!("{} h {} min", seconds / 3600, seconds % 3600 / 60),
    }
}

/// A wall-clock reading and the monotonic instant it was taken at.
#[derive(Debug, Clone, Copy)]
pub struct Anchor {
    wall: DateTime<Utc>,
    at: Instant,
}

impl Anchor {
    /// The wall clock read as `wall` at the monotonic instant `at`.
    pub fn new(wall: DateTime<Utc>, at: Instant) -> Self {
        Anchor { wall, at }
    }

    /// "Now" for judging other runners' leases: the earlier of [`Anchor::now`] at `mono` and the wall
    /// clock `wall`. A lease is judged ended only once it has ended on both: a forward wall step does not
    /// end it early, and a backward one (after which holders stamp their leases earlier) does not either.
    pub fn judge(&self, wall: DateTime<Utc>, mono: Instant) -> DateTime<Utc> {
        self.now(mono).min(wall)
    }

    /// The wall clock as it read at the anchor, advanced by the monotonic time from the anchor to `mono`.
    pub fn now(&self, mono: Instant) -> DateTime<Utc> {
        Duration::from_std(mono.saturating_duration_since(self.at))
            .ok()
            .and_then(|elapsed| self.wall.checked_add_signed(elapsed))
            .unwrap_or(self.wall)
    }
}

/// When the runner first saw each gate pending, and how long it had waited by then.
#[derive(Debug, Default)]
pub struct GateClock {
    seen: Mutex<HashMap<GateId, Seen>>,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    at: Instant,
    waited_before: Duration,
}

/// Gates remembered at most; past it the one seen longest ago is forgotten (and judged afresh, from its
/// wall-clock age, should it still be pending).
pub const REMEMBERED: usize = 4096;

impl GateClock {
    /// How long `gate`, opened at `opened_at`, has waited at the wall clock `wall` and monotonic `mono`.
    pub fn waited(
        &self,
        gate: GateId,
        opened_at: DateTime<Utc>,
        wall: DateTime<Utc>,
        mono: Instant,
    ) -> Duration {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if !seen.contains_key(&gate)
            && seen.len() >= REMEMBERED
            && let Some(oldest) = seen.iter().min_by_key(|(_, s)| s.at).map(|(id, _)| *id)
        {
            seen.remove(&oldest);
        }
        let first = *seen.entry(gate).or_insert_with(|| Seen {
            at: mono,
            waited_before: (wall - opened_at).max(Duration::zero()),
        });
        let since = Duration::from_std(mono.saturating_duration_since(first.at)).unwrap_or(Duration::MAX);
        first.waited_before.checked_add(&since).unwrap_or(Duration::MAX)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration as StdDuration;

    use proptest::prelude::*;

    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap_or_default()
    }

    #[test]
    fn a_tier_gate_times_out_a_human_gate_is_reminded_and_a_pause_holds() {
        let five = Duration::minutes(5);
        let past = Duration::minutes(6);
        assert_eq!(
            care(GateKind::T3Plan, false, past, five),
            GateCare::TimeOut {
                reason: "no decision within 5 min".into()
            }
        );
        assert_eq!(
            care(GateKind::T3Plan, false, five, five),
            GateCare::Hold,
            "at the timeout itself"
        );
        assert_eq!(
            care(GateKind::T3Plan, true, Duration::zero(), five),
            GateCare::AutoApprove
        );
        for human in [GateKind::Budget, GateKind::Escalation, GateKind::Halt] {
            assert_eq!(care(human, false, past, five), GateCare::Remind);
            assert_eq!(
                care(human, true, past, five),
                GateCare::Remind,
                "never auto-approved"
            );
        }
        assert_eq!(
            care(GateKind::Pause, false, past, five),
            GateCare::Hold,
            "never times out"
        );
        assert_eq!(care(GateKind::Pause, true, past, five), GateCare::ProbeOutage);
        assert_eq!(timeout(Some(StdDuration::from_secs(3)), 60), Duration::seconds(3));
        assert_eq!(timeout(None, 60), Duration::hours(1));
        assert_eq!(timeout(Some(StdDuration::MAX), 60), Duration::MAX);
    }

    #[test]
    fn a_reminder_is_due_once_per_whole_period() {
        let every = Duration::minutes(10);
        assert_eq!(reminder_due(Duration::minutes(9), every, 0), None);
        assert_eq!(reminder_due(Duration::minutes(10), every, 0), Some(1));
        assert_eq!(reminder_due(Duration::minutes(15), every, 1), None, "sent");
        assert_eq!(
            reminder_due(Duration::minutes(35), every, 1),
            Some(3),
            "one for the missed ones"
        );
        assert_eq!(reminder_due(Duration::hours(9), Duration::zero(), 0), None);
        assert_eq!(reminder_due(Duration::hours(9), Duration::seconds(-1), 0), None);
        // A sub-second period counts as a second.
        assert_eq!(
            reminder_due(Duration::seconds(4), Duration::milliseconds(500), 0),
            Some(4)
        );
    }

    #[test]
    fn durations_read_as_a_human_says_them() {
        assert_eq!(human_duration(Duration::seconds(-3)), "0 s");
        assert_eq!(human_duration(Duration::seconds(59)), "59 s");
        assert_eq!(human_duration(Duration::seconds(60)), "1 min");
        assert_eq!(human_duration(Duration::seconds(3600 + 5 * 60 + 9)), "1 h 5 min");
    }

    #[test]
    fn a_wall_clock_step_does_not_age_a_gate_opened_seconds_ago() {
        let clock = GateClock::default();
        let gate = GateId::new();
        let start = Instant::now();
        // Opened at 0, first seen at once.
        assert_eq!(clock.waited(gate, at(0), at(0), start), Duration::zero());
        // 4 s later on the monotonic clock, the wall clock has jumped two hours ahead.
        let later = start + StdDuration::from_secs(4);
        assert_eq!(
            clock.waited(gate, at(0), at(2 * 3600 + 4), later),
            Duration::seconds(4)
        );
        // And back again: never less than the monotonic time.
        let later = start + StdDuration::from_secs(9);
        assert_eq!(clock.waited(gate, at(0), at(-3600), later), Duration::seconds(9));
    }

    #[test]
    fn a_gate_opened_before_this_process_counts_its_wall_clock_age_then() {
        let clock = GateClock::default();
        let gate = GateId::new();
        let start = Instant::now();
        // A resumed runner first sees a gate opened an hour ago.
        assert_eq!(
            clock.waited(gate, at(0), at(3600), start),
            Duration::seconds(3600)
        );
        let later = start + StdDuration::from_secs(30);
        assert_eq!(
            clock.waited(gate, at(0), at(3600 + 30), later),
            Duration::seconds(3630)
        );
        // A gate stamped in the future (a clock stepped back since) has waited nothing yet, not less.
        let other = GateId::new();
        assert_eq!(clock.waited(other, at(100), at(0), start), Duration::zero());
    }

    #[test]
    fn forgetting_the_oldest_gate_keeps_the_memory_bounded() {
        let clock = GateClock::default();
        let start = Instant::now();
        let first = GateId::new();
        clock.waited(first, at(0), at(0), start);
        for n in 1..=REMEMBERED {
            clock.waited(
                GateId::new(),
                at(0),
                at(0),
                start + StdDuration::from_millis(n as u64),
            );
        }
        let seen = clock.seen.lock().unwrap_or_else(PoisonError::into_inner);
        assert_eq!(seen.len(), REMEMBERED);
        assert!(!seen.contains_key(&first));
    }

    #[test]
    fn liveness_now_follows_the_monotonic_clock_not_wall_steps() {
        let start = Instant::now();
        let anchor = Anchor::new(at(0), start);
        assert_eq!(anchor.now(start), at(0));
        // Whatever the wall clock did meanwhile, ten monotonic minutes are ten minutes.
        assert_eq!(anchor.now(start + StdDuration::from_secs(600)), at(600));
        // Judged: a forward wall step is ignored, a backward one followed.
        let later = start + StdDuration::from_secs(600);
        assert_eq!(anchor.judge(at(2 * 3600 + 600), later), at(600));
        assert_eq!(anchor.judge(at(600 - 3600), later), at(600 - 3600));
        // A monotonic reading from before the anchor does not go back.
        assert_eq!(
            anchor.now(start.checked_sub(StdDuration::from_secs(5)).unwrap_or(start)),
            at(0)
        );
    }

    proptest! {
        /// A gate a human must decide never times out and is never approved automatically; a tier's gate
        /// is rejected exactly when it waited past the timeout (unless auto-approved); nothing else ends a
        /// pause.
        #[test]
        fn only_a_tier_gate_times_out(
            kind in prop::sample::select(GateKind::ALL.to_vec()),
            auto in any::<bool>(),
            waited in 0i64..100_000,
            limit in 0i64..100_000,
        ) {
            let got = care(kind, auto, Duration::seconds(waited), Duration::seconds(limit));
            let times_out = matches!(got, GateCare::TimeOut { .. });
            prop_assert_eq!(times_out, !kind.needs_a_human() && kind != GateKind::Pause && !auto && waited > limit);
            if kind.needs_a_human() && kind != GateKind::Pause {
                prop_assert_eq!(got, GateCare::Remind);
            }
        }

        /// Reminders come one per whole period, their numbers only grow, and none comes before the first
        /// period ends.
        #[test]
        fn reminders_only_grow(every in 1i64..5_000, steps in prop::collection::vec(0i64..3_000, 1..40)) {
            let every = Duration::seconds(every);
            let (mut waited, mut sent) = (Duration::zero(), 0);
            for step in steps {
                waited += Duration::seconds(step);
                if let Some(due) = reminder_due(waited, every, sent) {
                    prop_assert!(due > sent);
                    prop_assert!(waited >= every);
                    prop_assert_eq!(due, waited.num_seconds() / every.num_seconds());
                    sent = due;
                }
            }
        }
    }
}
