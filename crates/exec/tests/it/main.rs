//! Integration tests for agency-exec, compiled into one binary.

// Test helpers outside `#[test]` functions panic on setup failure by design; that is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod git;
mod merge_together;
mod process;
mod support;
