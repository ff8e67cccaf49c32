//! Placement: which runner may take which brief. A runner (the driver's own, or an `agency worker`)
//! offers some tiers and some labels ([`Offer`]); a workstream may need labels (team.yaml `placement.labels`,
//! recorded on the run as [`LabelNeed`]s). A runner claims only briefs whose tier it offers and whose
//! workstream's every needed label it offers. The rule itself is `agency_flow::placement`; the blackboard's
//! claim query applies the same rule (both backends, conformance-tested).

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Tier;

/// What a runner offers: the tiers whose briefs it takes (`None`: every tier) and its labels.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offer {
    /// The tiers it takes; `None` takes every tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<BTreeSet<Tier>>,
    /// Its labels (`gpu`, `big-tests`); a brief whose workstream needs a label it lacks is not for it.
    #[serde(default)]
    pub labels: BTreeSet<String>,
}

impl Offer {
    /// An offer of `tiers` (`None`: every tier) and `labels`.
    pub fn new(tiers: Option<&[Tier]>, labels: &[&str]) -> Offer {
        Offer {
            tiers: tiers.map(|tiers| tiers.iter().copied().collect()),
            labels: labels.iter().map(|label| (*label).to_owned()).collect(),
        }
    }

    /// Whether it offers `tier`.
    pub fn takes_tier(&self, tier: Tier) -> bool {
        self.tiers.as_ref().is_none_or(|tiers| tiers.contains(&tier))
    }

    /// The offered tiers as wire names, `None` for every tier (for the claim query's parameters).
    pub fn tier_names(&self) -> Option<Vec<&'static str>> {
        self.tiers
            .as_ref()
            .map(|tiers| tiers.iter().map(|t| t.as_str()).collect())
    }
}

impl fmt::Display for Offer {
    /// `tiers t4, t5; labels gpu` — `every tier`, `no labels` when so.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tiers {
            None => write!(f, "every tier")?,
            Some(tiers) if tiers.is_empty() => write!(f, "no tier")?,
            Some(tiers) => {
                let names: Vec<&str> = tiers.iter().map(|t| t.as_str()).collect();
                write!(f, "tiers {}", names.join(", "))?;
            }
        }
        if self.labels.is_empty() {
            write!(f, "; no labels")
        } else {
            let labels: Vec<&str> = self.labels.iter().map(String::as_str).collect();
            write!(f, "; labels {}", labels.join(", "))
        }
    }
}

/// The workstream name in a [`LabelNeed`] that stands for every workstream of the run.
pub const EVERY_WORKSTREAM: &str = "*";

/// One label a run's workstream needs of whoever takes its briefs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LabelNeed {
    /// The workstream's id, or [`EVERY_WORKSTREAM`].
    pub workstream: String,
    /// The label.
    pub label: String,
}

impl LabelNeed {
    /// `workstream` (or [`EVERY_WORKSTREAM`]) needs `label`.
    pub fn new(workstream: impl Into<String>, label: impl Into<String>) -> LabelNeed {
        LabelNeed {
            workstream: workstream.into(),
            label: label.into(),
        }
    }

    /// Whether this need is one of `workstream`'s.
    pub fn applies_to(&self, workstream: &str) -> bool {
        self.workstream == EVERY_WORKSTREAM || self.workstream == workstream
    }
}

/// A runner's offer as recorded on the run, with when it last said it is alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerOffer {
    /// The runner's name (`runner-HOST-PID`, `worker-HOST-PID`).
    pub runner: String,
    /// What it offers.
    pub offer: Offer,
    /// When it last recorded its offer (the blackboard's clock).
    pub seen_at: chrono::DateTime<chrono::Utc>,
}

/// Whether `label` is a valid label: 1 to 64 of letters, digits, `-`, `_`, `.` (it goes into SQL as a
/// parameter, into log lines and onto the command line).
pub fn valid_label(label: &str) -> bool {
    (1..=64).contains(&label.len())
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offer_says_its_tiers_and_labels() {
        assert_eq!(Offer::new(None, &[]).to_string(), "every tier; no labels");
        assert_eq!(Offer::new(None, &[]), Offer::default());
        assert_eq!(Offer::new(Some(&[]), &["gpu"]).to_string(), "no tier; labels gpu");
        let offer = Offer::new(Some(&[Tier::T5, Tier::T4]), &["gpu", "big-tests"]);
        assert_eq!(offer.to_string(), "tiers t4, t5; labels big-tests, gpu");
        assert!(offer.takes_tier(Tier::T4) && !offer.takes_tier(Tier::T3));
    }

    #[test]
    fn a_need_of_every_workstream_applies_to_each() {
        assert!(LabelNeed::new(EVERY_WORKSTREAM, "linux").applies_to("ws-a"));
        assert!(LabelNeed::new("ws-a", "gpu").applies_to("ws-a"));
        assert!(!LabelNeed::new("ws-a", "gpu").applies_to("ws-b"));
    }
}
