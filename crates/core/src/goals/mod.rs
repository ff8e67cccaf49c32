//! plan.md, the one file that holds a session's goals (pi-goals §4): each goal's contract (`done_when`,
//! `verify`, `failure_modes`, `may_edit`), its status and subtask checkboxes, and a short append-only `## Log`.
//!
//! ```text
//! ## Goal: Implement cache layer
//! <!-- id: cache-layer-1 -->
//! status: active
//! done_when: p95 < 50ms on bench-X
//! verify: pytest tests/cache -q
//! failure_modes:
//!   - cache silently bypassed
//! - [x] wire cache client
//! - [ ] eviction policy
//! ```
//!
//! [`PlanDoc::parse`] is a tolerant line scanner: it never fails, keeps every line, ignores what it does not
//! understand, and reports only malformed known fields as [`Diagnostic`]s with their line numbers. Changes
//! are line-exact patches ([`PlanDoc::set_status`], [`PlanDoc::tick_subtask`], [`PlanDoc::append_log`],
//! [`PlanDoc::add_goal`]) that leave every other byte alone; the file is never re-rendered.
//! [`render_active_summary`] is the byte-stable digest the goal hooks inject. No I/O here: callers read and
//! write the file.

mod model;
mod patch;
mod scan;
mod summary;
mod syntax;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use model::{
    Diagnostic, Goal, GoalLines, GoalStatus, ListLines, LogEntry, LogSection, PlanDoc, Subtask,
    UnknownGoalStatus,
};
pub use patch::{NewGoal, PatchError, SubtaskRef, log_entry};
pub use summary::render_active_summary;
