//! The clock the blackboard stamps its own records with (`created_at`, `opened_at`, the canonical events).
//! Injectable so tests and replays are deterministic; events passed in by callers keep their own `ts`.

use std::fmt;
use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

/// A source of "now".
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock for tests: starts at a given instant and advances by a fixed step on every reading, so records
/// stamped one after another have distinct, increasing times.
#[derive(Debug)]
pub struct SteppingClock {
    next: Mutex<DateTime<Utc>>,
    step: Duration,
}

impl SteppingClock {
    /// A clock that first reads `start` and then advances by `step` per reading.
    pub fn new(start: DateTime<Utc>, step: Duration) -> Self {
        SteppingClock {
            next: Mutex::new(start),
            step,
        }
    }
}

impl Clock for SteppingClock {
    fn now(&self) -> DateTime<Utc> {
        let mut next = self
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = *next;
        *next = now + self.step;
        now
    }
}
