//! Learning II's setting as plain values. Took over from `crates/engine/tests/engine/calibration.rs`:
//!
//! - `calibration_off_keeps_the_planners_dimensions_and_says_what_it_would_have_done` (off: the planner's
//!   dimensions are used, the record says what calibration would have done, no `CALIBRATED` line). The
//!   wiring — the records read from earlier runs, the brief written with the dimensions chosen, its
//!   record kept — is driven by the kept `ten_under_predicted_risks_make_the_eleventh_one_higher`, through
//!   the same [`as_set`] call.

use agency_core::calibration::{Calibration, Outcome, Record};
use agency_core::variety::Variety;
use agency_flow::calibration::{announced, as_set};

fn variety(risk: u8) -> Variety {
    Variety {
        novelty: 1,
        scope: 1,
        uncertainty: 1,
        risk,
    }
}

/// Ten finished briefs of `backend`, each predicted at risk 1 and each with a rejected sign-off.
fn ten_under_predicted_risks() -> Calibration {
    let rejected = Outcome {
        judge_rejections: 1,
        ..Outcome::default()
    };
    let records: Vec<Record> = (0..10)
        .map(|_| Record {
            domain: "backend".into(),
            predicted: variety(1),
            outcome: rejected.clone(),
        })
        .collect();
    Calibration::from_records(&records)
}

#[test]
fn on_ten_under_predicted_risks_raise_the_next_briefs_risk_by_one_and_say_so() {
    let used = as_set(true, ten_under_predicted_risks().apply("backend", variety(1)));
    assert_eq!((used.variety_dimensions.risk, used.calibrated.risk), (1, 2));
    assert!(
        used.why[0].starts_with("risk 1 → 2: 10 of 10 finished briefs in domain backend"),
        "{:?}",
        used.why
    );
    assert!(announced(true, &used));
}

#[test]
fn off_the_planners_dimensions_are_used_and_the_record_says_what_would_have_been() {
    let kept = as_set(false, ten_under_predicted_risks().apply("backend", variety(1)));
    assert_eq!(kept.calibrated, variety(1), "the planner's dimensions");
    assert_eq!(kept.variety_dimensions, variety(1));
    assert_eq!(kept.why.len(), 1);
    assert!(
        kept.why[0].starts_with("not applied (teachback.calibration: off): risk 1 → 2"),
        "{:?}",
        kept.why
    );
    assert!(!announced(false, &kept), "no CALIBRATED line");
}

#[test]
fn nothing_to_calibrate_is_the_same_either_way_and_never_announced() {
    let table = ten_under_predicted_risks();
    for on in [true, false] {
        // Another domain has no records: nothing is bumped.
        let other = as_set(on, table.apply("frontend", variety(3)));
        assert_eq!((other.calibrated, other.why.len()), (variety(3), 0), "on {on}");
        assert!(!announced(on, &other));
    }
}
