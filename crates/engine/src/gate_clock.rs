//! Liveness on the monotonic clock: this process's clocks, read here and handed to the decision core
//! ([`agency_flow::gate_timing`], which holds the judgement and its tests). A gate's timeout and the end of another runner's lease are judged by
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

use std::sync::OnceLock;
use std::time::Instant;

use agency_core::gate::Gate;
use agency_flow::gate_timing::{Anchor, GateClock};
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
