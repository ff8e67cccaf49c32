//! Learning II (seed 000): per-domain calibration of the variety a planner predicts. Every finished brief
//! is a record — its domain, the four dimensions it was predicted with, and what happened to it (retries,
//! escalations, verify failures, judge rejections, teachback corrections, wall time, tokens). Per domain and
//! dimension, the drift is the share of the domain's records whose outcome shows that dimension was
//! under-predicted; with at least [`LEARNING_II_MIN_MATCHES`] records and a drift of at least
//! [`DRIFT_THRESHOLD`], new briefs of the domain get that dimension raised by [`LEARNING_II_MAX_BUMP`]
//! (never past 4). The brief keeps what was predicted beside what was used, and why.
//!
//! Which outcome counts against which dimension (an outcome that shows none of these counts against none):
//! - risk — the finished work was wrong: a verify command failed or the judge rejected it;
//! - uncertainty — the task was misunderstood: its teachback was corrected;
//! - scope — it took more than one attempt: it was retried;
//! - novelty — it was beyond the tier that had it: it was escalated.
//!
//! Wall time and tokens are recorded and shown, not scored: without a baseline per domain they say nothing
//! about any one dimension. Only under-prediction is corrected — the seed's bump only ever raises a
//! dimension, so a planner that over-predicts pays in gates, never in safety.
//!
//! This module is pure: the engine gathers the records from the blackboard and applies the result.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::variety::{DIMENSION_MAX, Variety};

/// Records of a domain needed before any of its dimensions is bumped.
pub const LEARNING_II_MIN_MATCHES: usize = 5;
/// The most a dimension is raised by calibration.
pub const LEARNING_II_MAX_BUMP: u8 = 1;
/// The share of a domain's records that must show a dimension under-predicted for it to be bumped.
pub const DRIFT_THRESHOLD: f64 = 0.5;

/// One of the four variety dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dimension {
    /// Novelty.
    Novelty,
    /// Scope.
    Scope,
    /// Uncertainty.
    Uncertainty,
    /// Risk.
    Risk,
}

impl Dimension {
    /// The four, in the seed's order.
    pub const ALL: [Dimension; 4] = [
        Dimension::Novelty,
        Dimension::Scope,
        Dimension::Uncertainty,
        Dimension::Risk,
    ];

    /// The dimension's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Novelty => "novelty",
            Dimension::Scope => "scope",
            Dimension::Uncertainty => "uncertainty",
            Dimension::Risk => "risk",
        }
    }

    /// Its value in `variety`.
    pub fn of(self, variety: &Variety) -> u8 {
        match self {
            Dimension::Novelty => variety.novelty,
            Dimension::Scope => variety.scope,
            Dimension::Uncertainty => variety.uncertainty,
            Dimension::Risk => variety.risk,
        }
    }

    fn slot(self, variety: &mut Variety) -> &mut u8 {
        match self {
            Dimension::Novelty => &mut variety.novelty,
            Dimension::Scope => &mut variety.scope,
            Dimension::Uncertainty => &mut variety.uncertainty,
            Dimension::Risk => &mut variety.risk,
        }
    }

    /// What in an outcome counts against this dimension, in words.
    pub fn evidence(self) -> &'static str {
        match self {
            Dimension::Novelty => "escalated",
            Dimension::Scope => "retried",
            Dimension::Uncertainty => "teachback corrected",
            Dimension::Risk => "verify failed or judge rejected",
        }
    }
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happened to a finished brief, over all its attempts and their sign-offs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Attempts after the first.
    pub retries: u32,
    /// Escalations to a higher tier or a human.
    pub escalations: u32,
    /// Verify commands that failed.
    pub verify_failures: u32,
    /// Judge rejections.
    pub judge_rejections: u32,
    /// Teachback corrections asked for.
    pub teachback_corrections: u32,
    /// From the first agent's start to the last completion, in milliseconds.
    pub wall_ms: u64,
    /// Input and output tokens of its agents.
    pub tokens: u64,
}

impl Outcome {
    /// Whether this outcome shows `dimension` was predicted too low (see the module's list).
    pub fn under_predicted(&self, dimension: Dimension) -> bool {
        match dimension {
            Dimension::Risk => self.verify_failures + self.judge_rejections > 0,
            Dimension::Uncertainty => self.teachback_corrections > 0,
            Dimension::Scope => self.retries > 0,
            Dimension::Novelty => self.escalations > 0,
        }
    }
}

/// One finished brief: its domain, what was predicted, what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The plan's domain of its workstream.
    pub domain: String,
    /// The dimensions it was predicted with (before any calibration).
    pub predicted: Variety,
    /// What happened.
    pub outcome: Outcome,
}

/// One domain and dimension of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The domain.
    pub domain: String,
    /// The dimension.
    pub dimension: Dimension,
    /// Records of the domain.
    pub matches: usize,
    /// Of those, the records whose outcome shows this dimension under-predicted (and that were predicted
    /// below 4, so could have been higher).
    pub under_predicted: usize,
    /// `under_predicted / matches`, 0 without matches.
    pub drift: f64,
    /// What new briefs of the domain get added to this dimension: 0 or [`LEARNING_II_MAX_BUMP`].
    pub bump: u8,
}

/// The calibration table, domain × dimension.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Sorted by domain, then dimension in the seed's order.
    pub cells: Vec<Cell>,
}

/// What calibration made of one brief's predicted variety.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibrated {
    /// The brief's domain.
    pub domain: String,
    /// As predicted.
    pub variety_dimensions: Variety,
    /// As used: its gates derive from this.
    pub calibrated: Variety,
    /// One line per bumped dimension, empty when nothing was.
    pub why: Vec<String>,
}

impl Calibration {
    /// The table of `records`.
    pub fn from_records(records: &[Record]) -> Calibration {
        let mut by_domain: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
        for record in records {
            by_domain.entry(&record.domain).or_default().push(record);
        }
        let mut cells = Vec::new();
        for (domain, records) in by_domain {
            for dimension in Dimension::ALL {
                let matches = records.len();
                let under_predicted = records
                    .iter()
                    .filter(|r| {
                        dimension.of(&r.predicted) < DIMENSION_MAX && r.outcome.under_predicted(dimension)
                    })
                    .count();
                let drift = if matches == 0 {
                    0.0
                } else {
                    under_predicted as f64 / matches as f64
                };
                let bump = if matches >= LEARNING_II_MIN_MATCHES && drift >= DRIFT_THRESHOLD {
                    LEARNING_II_MAX_BUMP
                } else {
                    0
                };
                cells.push(Cell {
                    domain: domain.to_string(),
                    dimension,
                    matches,
                    under_predicted,
                    drift,
                    bump,
                });
            }
        }
        Calibration { cells }
    }

    /// The cell of `domain` and `dimension`, if the domain has records.
    pub fn cell(&self, domain: &str, dimension: Dimension) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.domain == domain && c.dimension == dimension)
    }

    /// `predicted` for a new brief of `domain`, each dimension raised by its bump (never past 4), with
    /// why.
    pub fn apply(&self, domain: &str, predicted: Variety) -> Calibrated {
        let mut calibrated = predicted;
        let mut why = Vec::new();
        for dimension in Dimension::ALL {
            let Some(cell) = self.cell(domain, dimension) else {
                continue;
            };
            let slot = dimension.slot(&mut calibrated);
            let raised = slot.saturating_add(cell.bump).min(DIMENSION_MAX);
            if raised == *slot {
                continue;
            }
            why.push(format!(
                "{dimension} {} → {raised}: {} of {} finished briefs in domain {domain} were under-predicted \
                 ({}; drift {:.2} ≥ {DRIFT_THRESHOLD})",
                *slot,
                cell.under_predicted,
                cell.matches,
                dimension.evidence(),
                cell.drift
            ));
            *slot = raised;
        }
        Calibrated {
            domain: domain.to_string(),
            variety_dimensions: predicted,
            calibrated,
            why,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variety(risk: u8) -> Variety {
        Variety::new(1, 1, 1, i64::from(risk)).unwrap()
    }

    fn rejected() -> Outcome {
        Outcome {
            judge_rejections: 1,
            retries: 0,
            ..Outcome::default()
        }
    }

    fn records(domain: &str, n: usize, outcome: Outcome) -> Vec<Record> {
        (0..n)
            .map(|_| Record {
                domain: domain.into(),
                predicted: variety(2),
                outcome: outcome.clone(),
            })
            .collect()
    }

    #[test]
    fn ten_under_predicted_risks_raise_the_eleventh_by_one() {
        let table = Calibration::from_records(&records("backend", 10, rejected()));
        let risk = table.cell("backend", Dimension::Risk).unwrap();
        assert_eq!((risk.matches, risk.under_predicted, risk.bump), (10, 10, 1));
        assert!((risk.drift - 1.0).abs() < f64::EPSILON);
        let eleventh = table.apply("backend", variety(2));
        assert_eq!(eleventh.variety_dimensions.risk, 2);
        assert_eq!(eleventh.calibrated.risk, 3);
        assert_eq!(
            (
                eleventh.calibrated.novelty,
                eleventh.calibrated.scope,
                eleventh.calibrated.uncertainty
            ),
            (1, 1, 1),
            "only the drifting dimension moves"
        );
        assert_eq!(eleventh.why.len(), 1);
        assert!(
            eleventh.why[0].starts_with("risk 2 → 3: 10 of 10"),
            "{:?}",
            eleventh.why
        );
        // Another domain learns nothing from this one.
        assert_eq!(table.apply("frontend", variety(2)).calibrated.risk, 2);
    }

    #[test]
    fn fewer_than_five_matches_or_a_minority_bump_nothing() {
        let four = Calibration::from_records(&records("backend", 4, rejected()));
        assert_eq!(four.cell("backend", Dimension::Risk).unwrap().bump, 0);
        assert!(four.apply("backend", variety(2)).why.is_empty());
        let mut mixed = records("backend", 4, rejected());
        mixed.extend(records("backend", 5, Outcome::default()));
        let table = Calibration::from_records(&mixed);
        let risk = table.cell("backend", Dimension::Risk).unwrap();
        assert_eq!((risk.matches, risk.under_predicted, risk.bump), (9, 4, 0));
        let mut half = records("backend", 5, rejected());
        half.extend(records("backend", 5, Outcome::default()));
        assert_eq!(
            Calibration::from_records(&half)
                .cell("backend", Dimension::Risk)
                .unwrap()
                .bump,
            1
        );
    }

    #[test]
    fn the_bump_is_at_most_one_and_never_past_four() {
        let table = Calibration::from_records(&records("backend", 50, rejected()));
        assert_eq!(table.apply("backend", variety(1)).calibrated.risk, 2);
        let at_top = table.apply("backend", variety(4));
        assert_eq!(at_top.calibrated.risk, 4);
        assert!(at_top.why.is_empty());
    }

    #[test]
    fn each_outcome_counts_against_its_own_dimension() {
        let cases = [
            (
                Outcome {
                    escalations: 1,
                    ..Outcome::default()
                },
                Dimension::Novelty,
            ),
            (
                Outcome {
                    retries: 2,
                    ..Outcome::default()
                },
                Dimension::Scope,
            ),
            (
                Outcome {
                    teachback_corrections: 1,
                    ..Outcome::default()
                },
                Dimension::Uncertainty,
            ),
            (
                Outcome {
                    verify_failures: 1,
                    ..Outcome::default()
                },
                Dimension::Risk,
            ),
        ];
        for (outcome, dimension) in cases {
            for other in Dimension::ALL {
                assert_eq!(
                    outcome.under_predicted(other),
                    other == dimension,
                    "{outcome:?} {other}"
                );
            }
        }
        // Time and tokens alone count against nothing.
        let slow = Outcome {
            wall_ms: 9_000_000,
            tokens: 5_000_000,
            ..Outcome::default()
        };
        assert!(Dimension::ALL.iter().all(|d| !slow.under_predicted(*d)));
    }

    #[test]
    fn a_dimension_predicted_at_four_is_never_under_predicted() {
        let records: Vec<Record> = (0..6)
            .map(|_| Record {
                domain: "ops".into(),
                predicted: variety(4),
                outcome: rejected(),
            })
            .collect();
        let table = Calibration::from_records(&records);
        assert_eq!(table.cell("ops", Dimension::Risk).unwrap().under_predicted, 0);
    }
}
