//! Turning blackboard rows into text for humans: the live log of `agency watch`, the tree of
//! `agency inspect` and the review of `agency show`. `log` and `tree` are `agency-render`'s and `review`
//! is `agency-review`'s, libraries the dashboard shares; `follow` tails a run's events through `log` as
//! the blackboard fills.

pub mod follow;

/// The live log and the tree live in their own crate so the dashboard prints the same lines.
pub use agency_render::{log, tree};
/// The review renderers live in their own crate so the dashboard shares them.
pub use agency_review as review;
