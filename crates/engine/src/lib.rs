//! `agency-engine` is the runner: the tiered pipeline from a goal to a verified branch. It stays thin —
//! tier behaviour lives in the prompts (`prompts/`), the output schemas and the pure handlers in
//! `agency_core::tiers`, and what happens next is decided by `agency_flow`, the decision core, from what
//! the engine reads; the engine claims briefs, runs their agents through a runtime, checks their work out
//! of their reach, carries out the core's decisions, and writes every step to the blackboard, from which a
//! killed run resumes.

pub mod advance;
mod agreement;
mod agreement_asks;
mod amendment_log;
pub mod amendments;
mod artifacts;
pub mod assembly;
mod board_review;
pub mod branches;
pub mod brief_link;
pub mod budget;
pub mod calibration;
mod claimer;
mod crew;
mod drive;
pub mod engine;
pub mod error;
mod failure;
mod finish;
mod forge;
mod gate_clock;
mod handover;
mod http;
pub mod leftovers;
mod narrate;
pub mod notify;
mod outage;
mod outputs;
mod placement;
mod plan;
mod previous;
mod probes;
mod progress;
pub mod prompts;
pub mod remote;
mod reviewer_outage;
mod rounds;
mod sandbox;
mod signoff;
mod slice_diffs;
mod spare_pool;
mod spares;
mod spawn;
mod stall;
pub mod task;
pub mod teachback_gate;
pub mod teachback_review;
mod tend_gates;
mod verify_log;

pub use claimer::Role;
pub use engine::{DriveOutcome, Engine, EngineOptions};
pub use error::{EngineError, Result};
