//! Integration tests for the agent runtimes, compiled into one binary.

// Test helpers outside `#[test]` functions panic on setup failure by design; that is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod builtin;
mod claude_code;
mod codex;
mod command;
mod confinement;
mod isolation;
mod mistakes;
mod pi;
mod support;
