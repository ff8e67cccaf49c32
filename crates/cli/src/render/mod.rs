//! Turning blackboard rows into text for humans: the live log of `agency watch`, the tree of
//! `agency inspect` and the review of `agency show`. `log`, `tree` and `review` are pure functions over core
//! types, so the dashboard can reuse them; `follow` tails a run's events through `log` as the blackboard
//! fills.

pub mod follow;
pub mod log;
pub mod tree;

/// The review renderers live in their own crate so the dashboard shares them.
pub use agency_review as review;
