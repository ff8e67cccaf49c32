//! End-to-end tests of the runner: real git repositories, a real SQLite blackboard, real verify processes,
//! the built-in agent, and a scripted model (`tests/scripts/*.yaml`). One test binary, small helpers in
//! `support`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod agreement;
mod amendments;
mod audit;
mod board_review;
mod bounded_gates;
mod budgets;
mod calibration;
mod claims;
mod conflicts;
mod escalation;
mod fences;
mod gates;
mod leases;
mod liveness;
mod mesh;
mod mistakes;
mod outage;
mod profiles;
mod restate;
mod retries;
mod sandbox;
mod second_pass;
mod signals;
mod signoff;
mod verdicts;
mod wake;
mod worktrees;
