//! Learning II's setting at a new workstream's entry brief ([`agency_core::calibration`] makes the table
//! and what it would make of a brief): with `teachback.calibration: on` the brief is scored with its
//! domain's calibration; with `off` it keeps the planner's dimensions, and its record says what calibration
//! would have done.

use agency_core::calibration::Calibrated;

/// What a new entry brief is scored with and its record says, given what its domain's table made of its
/// predicted dimensions (`calibrated`) and whether calibration is `on`. Off, the dimensions used are the
/// predicted ones and each bump the table would have made is kept as `not applied (…): <why>`.
pub fn as_set(on: bool, calibrated: Calibrated) -> Calibrated {
    if on || calibrated.why.is_empty() {
        return calibrated;
    }
    Calibrated {
        calibrated: calibrated.variety_dimensions,
        why: calibrated
            .why
            .iter()
            .map(|why| format!("not applied (teachback.calibration: off): {why}"))
            .collect(),
        ..calibrated
    }
}

/// Whether the brief's calibration is a `CALIBRATED` line in the log: only a bump that was applied.
pub fn announced(on: bool, calibrated: &Calibrated) -> bool {
    on && !calibrated.why.is_empty()
}
