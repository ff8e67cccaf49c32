//! Placement: which runner may take which brief, and which waiting briefs no live runner can take.
//!
//! A brief needs its tier and every label its workstream needs ([`LabelNeed`]s recorded on the run from
//! team.yaml `placement.labels`; the workstream `*` stands for all of them). A runner may take it when its
//! [`Offer`] has that tier (or every tier) and all those labels; more labels than needed are fine. The
//! blackboard's claim query applies this same rule (both backends, conformance-tested against the cases
//! below), so a brief never reaches a runner that does not offer what it needs.
//!
//! A brief that waits, claimable, longer than `runner.unplaced_alert_seconds` while no live runner can take
//! it is [`unplaced`]: the driver raises an ALERT naming what it needs and what the live runners offer.

use std::collections::BTreeSet;
use std::time::Duration;

use agency_core::placement::{LabelNeed, Offer};
use agency_core::{BriefId, Tier};

/// What a brief needs of the runner that takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needs {
    /// Its tier.
    pub tier: Tier,
    /// The labels its workstream needs.
    pub labels: BTreeSet<String>,
}

impl Needs {
    /// What a brief of `tier` in `workstream` needs, given the run's label needs.
    pub fn of(tier: Tier, workstream: &str, label_needs: &[LabelNeed]) -> Needs {
        Needs {
            tier,
            labels: label_needs
                .iter()
                .filter(|need| need.applies_to(workstream))
                .map(|need| need.label.clone())
                .collect(),
        }
    }
}

impl std::fmt::Display for Needs {
    /// `tier t4, labels gpu` (or `no labels`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tier {}", self.tier.as_str())?;
        if self.labels.is_empty() {
            write!(f, ", no labels")
        } else {
            let labels: Vec<&str> = self.labels.iter().map(String::as_str).collect();
            write!(f, ", labels {}", labels.join(", "))
        }
    }
}

/// What an offer lacks of what a brief needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmet {
    /// The offer does not take the brief's tier.
    Tier(Tier),
    /// The offer lacks this label.
    Label(String),
}

/// What `offer` lacks of `needs`, in order (the tier first, then labels by name); empty when it may take
/// the brief.
pub fn unmet(offer: &Offer, needs: &Needs) -> Vec<Unmet> {
    let mut lacking = Vec::new();
    if !offer.takes_tier(needs.tier) {
        lacking.push(Unmet::Tier(needs.tier));
    }
    for label in &needs.labels {
        if !offer.labels.contains(label) {
            lacking.push(Unmet::Label(label.clone()));
        }
    }
    lacking
}

/// Whether a runner offering `offer` may take a brief that needs `needs`.
pub fn can_take(offer: &Offer, needs: &Needs) -> bool {
    unmet(offer, needs).is_empty()
}

/// A brief that waits to be claimed: pending, its dependencies done, no gate holding the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The brief.
    pub brief: BriefId,
    /// Its tier.
    pub tier: Tier,
    /// Its workstream.
    pub workstream: String,
    /// How long it has waited.
    pub waited: Duration,
}

/// A waiting brief that no live runner can take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unplaced {
    /// The brief.
    pub brief: BriefId,
    /// What it needs.
    pub needs: Needs,
}

/// The briefs of `waiting` that have waited at least `after` and that none of the `live` offers can take.
/// A brief some live runner can take is only waiting for a free place, not unplaced.
pub fn unplaced(
    waiting: &[Waiting],
    label_needs: &[LabelNeed],
    live: &[&Offer],
    after: Duration,
) -> Vec<Unplaced> {
    waiting
        .iter()
        .filter(|w| w.waited >= after)
        .filter_map(|w| {
            let needs = Needs::of(w.tier, &w.workstream, label_needs);
            (!live.iter().any(|offer| can_take(offer, &needs))).then_some(Unplaced {
                brief: w.brief,
                needs,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brief_needs_its_tier_and_its_workstreams_labels() {
        let needs = [
            LabelNeed::new("ws-ml", "gpu"),
            LabelNeed::new("*", "linux"),
            LabelNeed::new("ws-other", "big-tests"),
        ];
        let ml = Needs::of(Tier::T4, "ws-ml", &needs);
        assert_eq!(ml.tier, Tier::T4);
        assert_eq!(
            ml.labels.iter().map(String::as_str).collect::<Vec<_>>(),
            ["gpu", "linux"]
        );
        assert_eq!(ml.to_string(), "tier t4, labels gpu, linux");
        let plain = Needs::of(Tier::T5, "ws-web", &[]);
        assert!(plain.labels.is_empty());
        assert_eq!(plain.to_string(), "tier t5, no labels");
    }

    #[test]
    fn an_offer_takes_a_brief_when_it_has_the_tier_and_every_label() {
        let gpu_t4 = Needs::of(Tier::T4, "ws-ml", &[LabelNeed::new("ws-ml", "gpu")]);
        let plain_t5 = Needs::of(Tier::T5, "ws-ml", &[]);
        // Every tier, no labels: anything that needs no label.
        assert!(can_take(&Offer::default(), &plain_t5));
        assert_eq!(unmet(&Offer::default(), &gpu_t4), [Unmet::Label("gpu".into())]);
        // The label, more labels than needed, every tier.
        assert!(can_take(&Offer::new(None, &["gpu", "big-tests"]), &gpu_t4));
        // The label but not the tier.
        assert_eq!(
            unmet(&Offer::new(Some(&[Tier::T5]), &["gpu"]), &gpu_t4),
            [Unmet::Tier(Tier::T4)]
        );
        // Neither: the tier is said first.
        assert_eq!(
            unmet(&Offer::new(Some(&[Tier::T5]), &[]), &gpu_t4),
            [Unmet::Tier(Tier::T4), Unmet::Label("gpu".into())]
        );
        // A labelled runner still takes briefs that need no label, of its tiers.
        assert!(can_take(&Offer::new(Some(&[Tier::T5]), &["gpu"]), &plain_t5));
        // No tier at all takes nothing.
        assert!(!can_take(&Offer::new(Some(&[]), &["gpu"]), &plain_t5));
    }

    #[test]
    fn a_brief_is_unplaced_once_it_has_waited_and_no_live_offer_takes_it() {
        let needs = [LabelNeed::new("ws-ml", "gpu")];
        let waiting = |brief: BriefId, workstream: &str, secs: u64| Waiting {
            brief,
            tier: Tier::T4,
            workstream: workstream.to_string(),
            waited: Duration::from_secs(secs),
        };
        let (ml, web, fresh) = (BriefId::new(), BriefId::new(), BriefId::new());
        let briefs = [
            waiting(ml, "ws-ml", 90),
            waiting(web, "ws-web", 90),
            waiting(fresh, "ws-ml", 5),
        ];
        let plain = Offer::default();
        let after = Duration::from_secs(60);
        // Only the plain runner lives: the gpu brief that waited is unplaced; the fresh one not yet.
        let found = unplaced(&briefs, &needs, &[&plain], after);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].brief, ml);
        assert_eq!(found[0].needs.to_string(), "tier t4, labels gpu");
        // A gpu runner joins: nothing is unplaced.
        let gpu = Offer::new(None, &["gpu"]);
        assert!(unplaced(&briefs, &needs, &[&plain, &gpu], after).is_empty());
        // Nobody lives: every brief that waited is unplaced.
        assert_eq!(unplaced(&briefs, &needs, &[], after).len(), 2);
    }
}
