//! Liveness on the monotonic clock. A gate's timeout and the end of another runner's lease are judged by
//! the process that owns the judgement, on its monotonic clock (`Instant`), so a wall-clock step (NTP, a
//! VM restored from a snapshot, a clock set by hand) neither rejects a gate opened seconds ago nor makes
//! every lease look ended. The wall clock is kept for display and for what this process could not have
//! watched itself (a gate opened before it started).
//!
//! - A gate has waited what it had waited, on the wall clock, when this process first saw it pending
//!   (never less than nothing), plus the monotonic time since: [`waited`].
//! - "Now" for leases is the wall clock as this process first read it, advanced by its monotonic clock
//!   since, or the wall clock when that is earlier: [`liveness_now`]. Leases are stamped on their holders'
//!   wall clocks, so a holder whose clock stepped forward renews into the future (its claim lasts longer,
//!   never shorter), and after a backward step the wall clock is the earlier and judges leases stamped on
//!   it; runners whose clocks disagree by more than a lease still need their clocks fixed.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

use agency_core::GateId;
use agency_core::gate::Gate;
use chrono::{DateTime, Duration, Utc};

/// How long `gate` has waited for a decision, as this process judges it (see the module docs).
pub(crate) fn waited(gate: &Gate) -> Duration {
    static SEEN: OnceLock<GateClock> = OnceLock::new();
    SEEN.get_or_init(GateClock::default)
        .waited(gate.id, gate.opened_at, Utc::now(), Instant::now())
}

/// "Now" for judging other runners' leases: the wall clock as this process first read it, advanced by the
/// monotonic time since — or the wall clock, when that is earlier. A lease is judged ended only once it
/// has ended on both: a forward wall step does not end it early, and a backward one (after which holders
/// stamp their leases earlier) does not either; it only ends later by the step.
pub(crate) fn liveness_now() -> DateTime<Utc> {
    static ANCHOR: OnceLock<Anchor> = OnceLock::new();
    let wall = Utc::now();
    ANCHOR
        .get_or_init(|| Anchor::new(wall, Instant::now()))
        .judge(wall, Instant::now())
}

/// A wall-clock reading and the monotonic instant it was taken at.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    wall: DateTime<Utc>,
    at: Instant,
}

impl Anchor {
    fn new(wall: DateTime<Utc>, at: Instant) -> Self {
        Anchor { wall, at }
    }

    /// The earlier of [`Anchor::now`] at `mono` and the wall clock `wall`.
    fn judge(&self, wall: DateTime<Utc>, mono: Instant) -> DateTime<Utc> {
        self.now(mono).min(wall)
    }

    /// The wall clock as it read at the anchor, advanced by the monotonic time from the anchor to `mono`.
    fn now(&self, mono: Instant) -> DateTime<Utc> {
        Duration::from_std(mono.saturating_duration_since(self.at))
            .ok()
            .and_then(|elapsed| self.wall.checked_add_signed(elapsed))
            .unwrap_or(self.wall)
    }
}

/// When this process first saw each gate pending, and how long it had waited by then.
#[derive(Debug, Default)]
struct GateClock {
    seen: Mutex<HashMap<GateId, Seen>>,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    at: Instant,
    waited_before: Duration,
}

/// Gates remembered at most; past it the one seen longest ago is forgotten (and judged afresh, from its
/// wall-clock age, should it still be pending).
const REMEMBERED: usize = 4096;

impl GateClock {
    fn waited(&self, gate: GateId, opened_at: DateTime<Utc>, wall: DateTime<Utc>, mono: Instant) -> Duration {
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

    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
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
        let seen = clock.seen.lock().unwrap();
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
}
