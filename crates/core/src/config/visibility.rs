//! How much of a run a human sees and where it stops for them: log detail, inspection gates, strict mode.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::gate::GateKind;

/// The `visibility` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct VisibilityConfig {
    /// Turns every inspection gate on; recommended for first runs on a new codebase or goal type.
    /// Default false.
    pub strict_mode: bool,
    /// Detail of the live log. Default normal.
    pub log_level: LogLevel,
    /// Which tier boundaries pause for a human.
    #[serde(deserialize_with = "super::null_as_default")]
    pub inspection_gates: InspectionGates,
    /// A pending tier gate with no decision after this many minutes is rejected (which counts against its
    /// brief's retry budget); a budget or escalation gate is announced again instead. Default 60.
    pub gate_timeout_minutes: u32,
}

impl Default for VisibilityConfig {
    fn default() -> Self {
        VisibilityConfig {
            strict_mode: false,
            log_level: LogLevel::Normal,
            inspection_gates: InspectionGates::default(),
            gate_timeout_minutes: 60,
        }
    }
}

impl VisibilityConfig {
    /// Whether the runner must stop at this gate.
    ///
    /// `t1_plan` is always on, and `strict_mode` turns on every inspection gate. Pause, budget, escalation
    /// and halt gates are not inspection points: they open whenever their cause occurs, so they are
    /// always enabled.
    pub fn gate_enabled(&self, kind: GateKind) -> bool {
        let gates = &self.inspection_gates;
        match kind {
            GateKind::T1Plan | GateKind::Pause | GateKind::Budget | GateKind::Escalation | GateKind::Halt => {
                true
            }
            _ if self.strict_mode => true,
            GateKind::T2Lead => gates.t2_lead,
            GateKind::T2Synthesis => gates.t2_synthesis,
            GateKind::T3Plan => gates.t3_plan,
            GateKind::T5Verdict => gates.t5_verdict,
            GateKind::Teachback => gates.teachback,
        }
    }
}

/// Detail of the live log (`agency watch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Tier-level events only.
    Normal,
    /// Adds a line for every T4 start and finish.
    Verbose,
}

/// The configurable pause points between tiers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct InspectionGates {
    /// Review T1's plan before any T2 spawns. Always true: required by design.
    pub t1_plan: bool,
    /// Review the T2 lead's boundaries before specialists spawn. Default false.
    pub t2_lead: bool,
    /// Review the canonical architecture before implementation. Default true.
    pub t2_synthesis: bool,
    /// Review each T3 task split before T4 dispatch. Default false.
    pub t3_plan: bool,
    /// Review each T3 joint verdict before the workstream is marked done. Default false.
    pub t5_verdict: bool,
    /// A human, not the parent tier's model, reviews blocking teachbacks. Default false.
    pub teachback: bool,
}

impl Default for InspectionGates {
    fn default() -> Self {
        InspectionGates {
            t1_plan: true,
            t2_lead: false,
            t2_synthesis: true,
            t3_plan: false,
            t5_verdict: false,
            teachback: false,
        }
    }
}
