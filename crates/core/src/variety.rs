//! Variety scoring (PACT): four dimensions, each an integer 1–4, summed to a score of 4–16. Every gate is
//! *derived* from the score by the functions here, never set by hand, so no caller can hold a different
//! opinion of what a score means.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tier::Tier;

/// The lowest score at which teachback blocks and an auditor is required (PACT's `ORCHESTRATE_MIN`).
pub const BLOCKING_THRESHOLD: u8 = 7;
/// Lowest value of one dimension.
pub const DIMENSION_MIN: u8 = 1;
/// Highest value of one dimension.
pub const DIMENSION_MAX: u8 = 4;
/// Lowest possible score.
pub const SCORE_MIN: u8 = 4;
/// Highest possible score.
pub const SCORE_MAX: u8 = 16;

/// The names of the four dimensions, in their canonical order.
pub const DIMENSION_NAMES: [&str; 4] = ["novelty", "scope", "uncertainty", "risk"];

/// Why a dimension or score was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VarietyError {
    /// The value was not an integer (a boolean, a float, a string, ...).
    #[error("variety dimension `{name}` must be an integer from 1 to 4, found {found}")]
    NotAnInteger { name: String, found: String },
    /// The value was an integer outside 1–4.
    #[error("variety dimension `{name}` must be from 1 to 4, found {found}")]
    OutOfRange { name: String, found: i64 },
    /// A dimension was missing.
    #[error("variety dimension `{name}` is missing (expected an integer from 1 to 4)")]
    Missing { name: String },
    /// A score outside 4–16.
    #[error("variety score must be from 4 to 16, found {0}")]
    ScoreOutOfRange(i64),
}

/// Checks one dimension value as it arrives from JSON (a hook's stdin, a model's output): it must be an
/// integer, not a boolean or float or string, and within 1–4. The error names the dimension.
pub fn validate_dimension(value: &serde_json::Value, name: &str) -> Result<u8, VarietyError> {
    let found = || value.to_string();
    match value {
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(v) => validate_dimension_int(v, name),
            None => Err(VarietyError::NotAnInteger {
                name: name.to_string(),
                found: found(),
            }),
        },
        _ => Err(VarietyError::NotAnInteger {
            name: name.to_string(),
            found: found(),
        }),
    }
}

/// Checks an integer dimension value is within 1–4.
pub fn validate_dimension_int(value: i64, name: &str) -> Result<u8, VarietyError> {
    if (i64::from(DIMENSION_MIN)..=i64::from(DIMENSION_MAX)).contains(&value) {
        // In range 1..=4, so the cast cannot truncate.
        Ok(value as u8)
    } else {
        Err(VarietyError::OutOfRange {
            name: name.to_string(),
            found: value,
        })
    }
}

/// Checks a score is within 4–16.
pub fn validate_score(score: i64) -> Result<u8, VarietyError> {
    if (i64::from(SCORE_MIN)..=i64::from(SCORE_MAX)).contains(&score) {
        Ok(score as u8)
    } else {
        Err(VarietyError::ScoreOutOfRange(score))
    }
}

/// The four assessed dimensions of a piece of work. Construct through [`Variety::new`] or
/// [`Variety::from_json`] so the values are always in range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Variety {
    /// 1 routine · 2 familiar · 3 novel · 4 unprecedented.
    #[schemars(range(min = 1, max = 4))]
    pub novelty: u8,
    /// 1 single concern · 2 a few · 3 many · 4 cross-cutting.
    #[schemars(range(min = 1, max = 4))]
    pub scope: u8,
    /// 1 clear · 2 mostly clear · 3 ambiguous · 4 unknown.
    #[schemars(range(min = 1, max = 4))]
    pub uncertainty: u8,
    /// 1 low · 2 medium · 3 high · 4 critical.
    #[schemars(range(min = 1, max = 4))]
    pub risk: u8,
}

// Deserialised through the raw JSON values so that booleans and floats are refused with the dimension's
// name, exactly as `validate_dimension` refuses them everywhere else.
impl<'de> Deserialize<'de> for Variety {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawVariety::deserialize(deserializer)?;
        Variety::try_from(raw).map_err(serde::de::Error::custom)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariety {
    novelty: serde_json::Value,
    scope: serde_json::Value,
    uncertainty: serde_json::Value,
    risk: serde_json::Value,
}

impl TryFrom<RawVariety> for Variety {
    type Error = VarietyError;
    fn try_from(raw: RawVariety) -> Result<Self, Self::Error> {
        Ok(Variety {
            novelty: validate_dimension(&raw.novelty, "novelty")?,
            scope: validate_dimension(&raw.scope, "scope")?,
            uncertainty: validate_dimension(&raw.uncertainty, "uncertainty")?,
            risk: validate_dimension(&raw.risk, "risk")?,
        })
    }
}

impl Variety {
    /// Builds a variety from four integers, naming the first one out of range.
    pub fn new(novelty: i64, scope: i64, uncertainty: i64, risk: i64) -> Result<Self, VarietyError> {
        Ok(Variety {
            novelty: validate_dimension_int(novelty, "novelty")?,
            scope: validate_dimension_int(scope, "scope")?,
            uncertainty: validate_dimension_int(uncertainty, "uncertainty")?,
            risk: validate_dimension_int(risk, "risk")?,
        })
    }

    /// Reads the four dimensions from a JSON object, naming the first missing or invalid one.
    pub fn from_json(object: &serde_json::Value) -> Result<Self, VarietyError> {
        let dim = |name: &str| -> Result<u8, VarietyError> {
            match object.get(name) {
                Some(v) => validate_dimension(v, name),
                None => Err(VarietyError::Missing {
                    name: name.to_string(),
                }),
            }
        };
        Ok(Variety {
            novelty: dim("novelty")?,
            scope: dim("scope")?,
            uncertainty: dim("uncertainty")?,
            risk: dim("risk")?,
        })
    }

    /// The summed score, 4–16.
    pub fn score(&self) -> u8 {
        score_variety(self)
    }

    /// The gates this variety implies.
    pub fn gates(&self) -> Gates {
        gates_for_score(self.score())
    }
}

/// Sums the four dimensions. A [`Variety`] is always in range, so the result is always 4–16.
pub fn score_variety(variety: &Variety) -> u8 {
    variety.novelty + variety.scope + variety.uncertainty + variety.risk
}

/// The workflow a score routes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Route {
    /// 4–6: straight to an implementer and a verifier.
    Compact,
    /// 7–10: a squad lead coordinates.
    Orchestrate,
    /// 11–14: an architecture pass first.
    PlanMode,
    /// 15–16: research before any plan.
    ResearchSpike,
}

impl Route {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Compact => "compact",
            Route::Orchestrate => "orchestrate",
            Route::PlanMode => "plan-mode",
            Route::ResearchSpike => "research-spike",
        }
    }

    /// The default tier path for this route. A research spike starts with one T2 research brief and then
    /// re-plans, so its path is just `[t2]`.
    pub fn default_tier_path(self) -> &'static [Tier] {
        match self {
            Route::Compact => &[Tier::T4, Tier::T5],
            Route::Orchestrate => &[Tier::T3, Tier::T4, Tier::T5],
            Route::PlanMode => &[Tier::T2, Tier::T3, Tier::T4, Tier::T5],
            Route::ResearchSpike => &[Tier::T2],
        }
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Routes a score: ≤6 compact, ≤10 orchestrate, ≤14 plan-mode, else research-spike.
pub fn route_for_score(score: u8) -> Route {
    match score {
        0..=6 => Route::Compact,
        7..=10 => Route::Orchestrate,
        11..=14 => Route::PlanMode,
        _ => Route::ResearchSpike,
    }
}

/// Whether an agent must wait for its teachback to be approved before it may edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TeachbackMode {
    /// Edits are denied until the teachback is approved.
    Blocking,
    /// The teachback is recorded; work proceeds at once.
    Advisory,
}

impl TeachbackMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TeachbackMode::Blocking => "blocking",
            TeachbackMode::Advisory => "advisory",
        }
    }
}

/// `blocking` at or above [`BLOCKING_THRESHOLD`], `advisory` below.
pub fn teachback_mode_for_score(score: u8) -> TeachbackMode {
    if score >= BLOCKING_THRESHOLD {
        TeachbackMode::Blocking
    } else {
        TeachbackMode::Advisory
    }
}

/// Whether an independent auditor (verifier) is mandatory: at or above [`BLOCKING_THRESHOLD`].
pub fn auditor_required_for_score(score: u8) -> bool {
    score >= BLOCKING_THRESHOLD
}

/// The canonical gate configuration for a score. Always derived, never accepted from a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Gates {
    /// Blocking or advisory teachback.
    pub teachback_mode: TeachbackMode,
    /// Whether an auditor must verify the work.
    pub auditor_required: bool,
    /// The workflow the score routes to.
    pub workflow_route: Route,
}

/// All gates for a score.
pub fn gates_for_score(score: u8) -> Gates {
    Gates {
        teachback_mode: teachback_mode_for_score(score),
        auditor_required: auditor_required_for_score(score),
        workflow_route: route_for_score(score),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn expected_route(score: u8) -> Route {
        if score <= 6 {
            Route::Compact
        } else if score <= 10 {
            Route::Orchestrate
        } else if score <= 14 {
            Route::PlanMode
        } else {
            Route::ResearchSpike
        }
    }

    #[test]
    fn all_256_combinations_score_route_and_gate_consistently() {
        let mut seen = 0;
        for n in 1..=4 {
            for s in 1..=4 {
                for u in 1..=4 {
                    for r in 1..=4 {
                        let v = Variety::new(n, s, u, r).unwrap();
                        let score = v.score();
                        assert_eq!(i64::from(score), n + s + u + r);
                        assert!((SCORE_MIN..=SCORE_MAX).contains(&score));
                        let gates = v.gates();
                        assert_eq!(gates, gates_for_score(score));
                        assert_eq!(gates.workflow_route, expected_route(score));
                        let blocking = score >= 7;
                        assert_eq!(gates.teachback_mode == TeachbackMode::Blocking, blocking, "{v:?}");
                        assert_eq!(gates.auditor_required, blocking, "{v:?}");
                        // The same variety read from JSON, and written back, is the same variety.
                        let json = json!({"novelty": n, "scope": s, "uncertainty": u, "risk": r});
                        assert_eq!(Variety::from_json(&json), Ok(v));
                        assert_eq!(serde_json::from_value::<Variety>(json.clone()).unwrap(), v);
                        assert_eq!(serde_json::to_value(v).unwrap(), json);
                        seen += 1;
                    }
                }
            }
        }
        assert_eq!(seen, 256);
    }

    #[test]
    fn boundaries_between_routes_and_modes() {
        let cases = [
            (6, Route::Compact, TeachbackMode::Advisory, false),
            (7, Route::Orchestrate, TeachbackMode::Blocking, true),
            (10, Route::Orchestrate, TeachbackMode::Blocking, true),
            (11, Route::PlanMode, TeachbackMode::Blocking, true),
            (14, Route::PlanMode, TeachbackMode::Blocking, true),
            (15, Route::ResearchSpike, TeachbackMode::Blocking, true),
        ];
        for (score, route, mode, auditor) in cases {
            assert_eq!(
                gates_for_score(score),
                Gates {
                    teachback_mode: mode,
                    auditor_required: auditor,
                    workflow_route: route
                },
                "score {score}"
            );
        }
        assert_eq!(BLOCKING_THRESHOLD, 7);
        assert_eq!(route_for_score(SCORE_MIN), Route::Compact);
        assert_eq!(route_for_score(SCORE_MAX), Route::ResearchSpike);
    }

    #[test]
    fn routes_have_their_default_tier_paths() {
        assert_eq!(Route::Compact.default_tier_path(), [Tier::T4, Tier::T5]);
        assert_eq!(
            Route::Orchestrate.default_tier_path(),
            [Tier::T3, Tier::T4, Tier::T5]
        );
        assert_eq!(
            Route::PlanMode.default_tier_path(),
            [Tier::T2, Tier::T3, Tier::T4, Tier::T5]
        );
        assert_eq!(Route::ResearchSpike.default_tier_path(), [Tier::T2]);
        assert_eq!(serde_json::to_value(Route::PlanMode).unwrap(), json!("plan-mode"));
        assert_eq!(Route::ResearchSpike.to_string(), "research-spike");
    }

    #[test]
    fn non_integers_are_refused_naming_the_dimension() {
        for (value, found) in [
            (json!(true), "true"),
            (json!(false), "false"),
            (json!(2.0), "2.0"),
            (json!(2.5), "2.5"),
            (json!("2"), "\"2\""),
            (json!(null), "null"),
            (json!([2]), "[2]"),
        ] {
            let err = validate_dimension(&value, "uncertainty").unwrap_err();
            assert_eq!(
                err,
                VarietyError::NotAnInteger {
                    name: "uncertainty".into(),
                    found: found.into()
                }
            );
            assert_eq!(
                err.to_string(),
                format!("variety dimension `uncertainty` must be an integer from 1 to 4, found {found}")
            );
        }
    }

    #[test]
    fn out_of_range_integers_are_refused_naming_the_dimension() {
        for bad in [0, 5, -1, 100, i64::MIN, i64::MAX] {
            let err = validate_dimension(&json!(bad), "risk").unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("variety dimension `risk` must be from 1 to 4, found {bad}")
            );
            assert!(Variety::new(2, 2, 2, bad).is_err());
        }
        // u64 beyond i64 is not representable as i64 and is refused as not an integer in range.
        assert!(validate_dimension(&json!(u64::MAX), "risk").is_err());
        assert_eq!(
            Variety::new(1, 0, 1, 1).unwrap_err().to_string(),
            "variety dimension `scope` must be from 1 to 4, found 0"
        );
    }

    #[test]
    fn from_json_names_the_missing_or_bad_dimension() {
        assert_eq!(
            Variety::from_json(&json!({"novelty": 1, "scope": 1, "uncertainty": 1})),
            Err(VarietyError::Missing { name: "risk".into() })
        );
        let err = Variety::from_json(&json!({"novelty": 1, "scope": true, "uncertainty": 1, "risk": 1}))
            .unwrap_err();
        assert!(err.to_string().contains("`scope`"), "{err}");
    }

    #[test]
    fn deserialisation_refuses_booleans_and_unknown_fields() {
        let err = serde_json::from_value::<Variety>(
            json!({"novelty": true, "scope": 1, "uncertainty": 1, "risk": 1}),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("variety dimension `novelty` must be an integer"),
            "{err}"
        );
        let err =
            serde_json::from_str::<Variety>(r#"{"novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1.5}"#)
                .unwrap_err();
        assert!(err.to_string().contains("`risk`"), "{err}");
        assert!(
            serde_json::from_value::<Variety>(
                json!({"novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1, "score": 4})
            )
            .is_err()
        );
    }

    #[test]
    fn scores_outside_4_to_16_are_refused() {
        assert_eq!(validate_score(4), Ok(4));
        assert_eq!(validate_score(16), Ok(16));
        assert_eq!(validate_score(3), Err(VarietyError::ScoreOutOfRange(3)));
        assert_eq!(
            validate_score(17).unwrap_err().to_string(),
            "variety score must be from 4 to 16, found 17"
        );
    }

    proptest! {
        #[test]
        fn validate_dimension_accepts_exactly_1_to_4(value in any::<i64>()) {
            let accepted = validate_dimension(&json!(value), "novelty").is_ok();
            prop_assert_eq!(accepted, (1..=4).contains(&value));
        }
    }
}
