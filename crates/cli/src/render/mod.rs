//! Turning blackboard rows into text for humans: the live log of `agency watch` and the tree of
//! `agency inspect`. Pure functions over core types, so the dashboard can reuse them.

pub mod log;
pub mod tree;
