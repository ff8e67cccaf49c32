//! `agency-core` is the vocabulary of agency and its pure policy: identifiers, the tiers, the T1 plan and
//! its validation, briefs, events, gates, variety scoring and the gates derived from it, the teachback state
//! machine, T5 verdicts and their consensus, the escalation ladder as data, and the `team.yaml` model.
//!
//! Nothing here does I/O or async work; every other crate builds on these plain types, so that the store, the
//! runner, the hook and the CLI all agree on one meaning for each word.

pub mod algedonic;
pub mod brief;
pub mod calibration;
pub mod config;
pub mod contract;
pub mod escalation;
pub mod event;
pub mod gate;
pub mod goals;
pub mod ids;
pub mod intercept;
pub mod placement;
pub mod plan;
pub mod redact;
pub mod teachback;
pub mod tier;
pub mod tiers;
pub mod variety;
pub mod verdict;

pub use algedonic::{AlgedonicSignal, SignalCategory, SignalLevel};
pub use brief::{Brief, BriefErrors, BriefStatus, NewBrief, validate_new_brief};
pub use escalation::{Decision, Failure, decide};
pub use event::{Event, EventKind, NewEvent};
pub use gate::{Gate, GateDecision, GateKind, GateStatus};
pub use ids::{BriefId, GateId, RunId};
pub use plan::{Plan, PlanErrors, Problem, Workstream, validate_plan};
pub use teachback::{Teachback, TeachbackAction, TeachbackState};
pub use tier::Tier;
pub use variety::{Gates, Variety};
pub use verdict::{JointVerdict, T5Result, joint_verdict};
