//! What an infrastructure failure pauses and when the pause is released. A model call that fails after
//! its retries because the provider is down is not the agent's failure: its brief waits unspent and the
//! run pauses at one outage gate. An `--auto-approve` runner probes the provider with a growing wait
//! between probes and releases the gate itself once a probe is answered; it stops probing after
//! `runner.outage_probe_minutes` (or at an answer that is not an outage's) and leaves the gate to a human.
//! A writer's agent that ends on a full filesystem stops the runner.

use std::time::Duration;

use agency_core::Tier;

/// The first wait between two probes of a provider in an outage; each failed probe doubles it, up to
/// [`PROBE_WAIT_MAX`].
pub const PROBE_WAIT_FIRST: Duration = Duration::from_secs(2);
/// The longest wait between two probes.
pub const PROBE_WAIT_MAX: Duration = Duration::from_secs(120);

/// Below this many bytes free, the filesystem an agent wrote to is taken for full: a write of any size
/// may fail there, and one that did has filled it to the last block.
pub const FULL_BELOW: u64 = 64 * 1024;

/// Whether a filesystem with `available` bytes free is full.
pub fn disk_full(available: u64) -> bool {
    available < FULL_BELOW
}

/// Whether a brief paused for an outage opens the outage gate: only when no `pause` gate (an outage's
/// or a human's) holds the run already. The brief waits either way.
pub fn opens_gate(pause_pending: bool) -> bool {
    !pause_pending
}

/// How long an `--auto-approve` runner probes a provider before it leaves the gate to a human, given
/// `runner.outage_probe_minutes`; `None` (no probing at all) for 0.
pub fn probing_bound(minutes: u32) -> Option<Duration> {
    (minutes > 0).then(|| Duration::from_secs(u64::from(minutes) * 60))
}

/// The tier whose model is probed, as the gate names it; the implementers' when it names none that reads.
pub fn probed_tier(named: Option<&str>) -> Tier {
    named.and_then(|t| t.parse().ok()).unwrap_or(Tier::T4)
}

/// The wait after `wait` once another probe failed: doubled, at most [`PROBE_WAIT_MAX`].
pub fn next_wait(wait: Duration) -> Duration {
    wait.saturating_mul(2).min(PROBE_WAIT_MAX)
}

/// How a probe came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeAnswer {
    /// The model answered.
    Answered,
    /// Still the provider's trouble (an outage's error), saying this.
    Outage(String),
    /// Anything else (a budget refusal, a rejected request, a provider with nothing to say): the runner
    /// cannot tell the provider is back.
    Other(String),
}

/// What a probe's answer does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterProbe {
    /// The gate is released by the runner, noting this.
    Release(String),
    /// Another probe after the next wait; the line says so.
    Again(String),
    /// Probing stops; a human resumes the run. The line says why and how.
    GiveUp(String),
}

/// The facts of one probe's answer.
#[derive(Debug, Clone, Copy)]
pub struct Probed<'a> {
    /// The probed tier.
    pub tier: Tier,
    /// How many probes were sent (this one included).
    pub sent: u32,
    /// How long this runner has probed.
    pub probing_for: Duration,
    /// How long it may probe ([`probing_bound`]).
    pub bound: Duration,
    /// The wait before the next probe, should one come.
    pub wait: Duration,
    /// The run's short id, for the command a human runs.
    pub run: &'a str,
}

/// What `answer` to the probe `probed` does.
pub fn after_probe(probed: Probed<'_>, answer: &ProbeAnswer) -> AfterProbe {
    let Probed {
        tier,
        sent,
        probing_for,
        bound,
        wait,
        run,
    } = probed;
    match answer {
        ProbeAnswer::Answered => AfterProbe::Release(format!(
            "the provider answered probe {sent} of the {tier} model after {} s; resumed by the runner \
             (--auto-approve)",
            probing_for.as_secs()
        )),
        ProbeAnswer::Outage(error) if probing_for >= bound => AfterProbe::GiveUp(format!(
            "probe {sent} of the {tier} model failed ({error}); stopped probing after {} s \
             (runner.outage_probe_minutes): `agency resume {run}` once the provider answers",
            probing_for.as_secs()
        )),
        ProbeAnswer::Outage(error) => AfterProbe::Again(format!(
            "probe {sent} of the {tier} model failed ({error}); next probe in {} s",
            wait.as_secs()
        )),
        ProbeAnswer::Other(error) => AfterProbe::GiveUp(format!(
            "the {tier} model cannot be probed ({error}); the run waits for `agency resume {run}`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn probed(sent: u32, probing_for: u64, bound: u64) -> Probed<'static> {
        Probed {
            tier: Tier::T4,
            sent,
            probing_for: Duration::from_secs(probing_for),
            bound: Duration::from_secs(bound),
            wait: Duration::from_secs(8),
            run: "r1",
        }
    }

    #[test]
    fn a_probe_answered_releases_the_gate_and_a_failed_one_probes_again_until_the_bound() {
        assert_eq!(
            after_probe(probed(3, 14, 600), &ProbeAnswer::Answered),
            AfterProbe::Release(
                "the provider answered probe 3 of the t4 model after 14 s; resumed by the runner (--auto-approve)"
                    .into()
            )
        );
        assert_eq!(
            after_probe(probed(3, 14, 600), &ProbeAnswer::Outage("529".into())),
            AfterProbe::Again("probe 3 of the t4 model failed (529); next probe in 8 s".into())
        );
        assert!(matches!(
            after_probe(probed(9, 600, 600), &ProbeAnswer::Outage("529".into())),
            AfterProbe::GiveUp(line) if line.contains("`agency resume r1`") && line.contains("after 600 s")
        ));
        // An answer that is not an outage's: the runner cannot tell, a human decides at once.
        assert!(matches!(
            after_probe(probed(1, 0, 600), &ProbeAnswer::Other("budget".into())),
            AfterProbe::GiveUp(line) if line.contains("cannot be probed (budget)")
        ));
        // Answered even past the bound: released.
        assert!(matches!(
            after_probe(probed(9, 900, 600), &ProbeAnswer::Answered),
            AfterProbe::Release(_)
        ));
    }

    #[test]
    fn the_probing_schedule_and_its_edges() {
        assert_eq!(probing_bound(0), None, "no probing");
        assert_eq!(probing_bound(10), Some(Duration::from_secs(600)));
        assert_eq!(next_wait(PROBE_WAIT_FIRST), Duration::from_secs(4));
        assert_eq!(next_wait(Duration::from_secs(100)), PROBE_WAIT_MAX);
        assert_eq!(next_wait(Duration::MAX), PROBE_WAIT_MAX, "never overflows");
        assert_eq!(probed_tier(Some("t5")), Tier::T5);
        assert_eq!(probed_tier(Some("t9")), Tier::T4);
        assert_eq!(probed_tier(None), Tier::T4);
        assert!(opens_gate(false));
        assert!(!opens_gate(true), "one pause at a time");
        assert!(disk_full(0));
        assert!(disk_full(FULL_BELOW - 1));
        assert!(!disk_full(FULL_BELOW));
    }

    proptest! {
        /// However many probes fail, the waits grow, never pass the maximum, and probing ends once the
        /// bound is reached: an outage's gate is never probed forever.
        #[test]
        fn probing_always_ends(minutes in 1u32..30, answers in prop::collection::vec(any::<bool>(), 1..200)) {
            let bound = probing_bound(minutes).unwrap_or_default();
            let (mut wait, mut elapsed, mut sent) = (PROBE_WAIT_FIRST, Duration::ZERO, 0u32);
            for outage in answers.iter().copied().chain(std::iter::repeat(true)).take(10_000) {
                sent += 1;
                let answer = if outage { ProbeAnswer::Outage("down".into()) } else { ProbeAnswer::Answered };
                let facts = Probed { tier: Tier::T4, sent, probing_for: elapsed, bound, wait, run: "r" };
                match after_probe(facts, &answer) {
                    AfterProbe::Release(_) => { prop_assert!(!outage); return Ok(()); }
                    AfterProbe::GiveUp(_) => { prop_assert!(elapsed >= bound); return Ok(()); }
                    AfterProbe::Again(_) => {
                        let next = next_wait(wait);
                        prop_assert!(next >= wait && next <= PROBE_WAIT_MAX);
                        elapsed += wait;
                        wait = next;
                    }
                }
            }
            prop_assert!(false, "probing did not end");
        }
    }
}
