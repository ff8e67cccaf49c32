//! The parsed plan.md: the original lines kept verbatim, the goals read from them with the line of every
//! field, the `## Log` entries, and diagnostics for known fields that are malformed. The model is read-only;
//! changes go through the line-exact patches in [`super::patch`], which need the line numbers kept here.
//! The parts serialise (for `agency goal list --json` and the dashboard) but are never written back from
//! that form: plan.md is only ever patched.

use std::fmt;
use std::ops::{Range, RangeInclusive};
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::syntax::SourceLine;
use crate::contract::GoalContract;

/// Where a goal stands (pi-goals §4: `open | active | done | cancelled`; several may be active at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GoalStatus {
    /// Agreed but not being worked yet.
    Open,
    /// Being worked; the session may not stop while it lacks a sign-off.
    Active,
    /// Signed off (or ticked by hand, which the sign-off record tells apart).
    Done,
    /// Dropped, with a reason in the log; not a sign-off.
    Cancelled,
}

impl GoalStatus {
    /// Every status, in the order the seed lists them.
    pub const ALL: [GoalStatus; 4] = [
        GoalStatus::Open,
        GoalStatus::Active,
        GoalStatus::Done,
        GoalStatus::Cancelled,
    ];

    /// The word written in plan.md.
    pub fn as_str(self) -> &'static str {
        match self {
            GoalStatus::Open => "open",
            GoalStatus::Active => "active",
            GoalStatus::Done => "done",
            GoalStatus::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for GoalStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status word that is none of `open`, `active`, `done`, `cancelled`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown goal status \"{0}\" (expected one of open, active, done, cancelled)")]
pub struct UnknownGoalStatus(pub String);

impl FromStr for GoalStatus {
    type Err = UnknownGoalStatus;

    /// Case-insensitive, and accepts the American `canceled`: plans are hand-edited.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let word = s.trim().to_ascii_lowercase();
        if word == "canceled" {
            return Ok(GoalStatus::Cancelled);
        }
        GoalStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == word)
            .ok_or_else(|| UnknownGoalStatus(s.trim().to_string()))
    }
}

/// A subtask checkbox (`- [ ] text` / `- [x] text`) under a goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Subtask {
    /// The text after the checkbox.
    pub text: String,
    /// Whether the box is ticked.
    pub checked: bool,
    /// Its 1-based line number.
    pub line: usize,
    /// Byte offset of the mark between the brackets, the one byte a tick rewrites.
    #[serde(skip)]
    pub(crate) mark: usize,
}

/// Where a list field (`failure_modes:`, `may_edit:`) sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListLines {
    /// The 1-based line of the `field:` header.
    pub header: usize,
    /// The 1-based line of each item, in order; an inline value on the header line counts as on the header.
    pub items: Vec<usize>,
}

/// The 1-based line numbers of a goal's parts, so callers can point at them and patches can edit them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoalLines {
    /// The `## Goal: …` heading.
    pub heading: usize,
    /// The last non-blank line of the goal's section.
    pub end: usize,
    /// The `<!-- id: … -->` marker.
    pub id: Option<usize>,
    /// The `status:` line.
    pub status: Option<usize>,
    /// The `done_when:` line and its indented continuation lines.
    pub done_when: Option<RangeInclusive<usize>>,
    /// The `verify:` line.
    pub verify: Option<usize>,
    /// The `failure_modes:` list.
    pub failure_modes: Option<ListLines>,
    /// The `may_edit:` list.
    pub may_edit: Option<ListLines>,
    /// Byte range of the status value in the status line, the bytes a status patch rewrites.
    #[serde(skip)]
    pub(crate) status_value: Option<Range<usize>>,
}

/// One goal as written in plan.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Goal {
    /// The stable key from `<!-- id: … -->`; `None` when the goal has no (valid) marker.
    pub id: Option<String>,
    /// The heading text after `Goal:`.
    pub title: String,
    /// The parsed status; `None` when missing or not a known status (a diagnostic says which).
    pub status: Option<GoalStatus>,
    /// The observable condition that makes the goal done.
    pub done_when: Option<String>,
    /// The stage-1 command, run without a shell.
    pub verify: Option<String>,
    /// Ways the goal can look done while it is not.
    pub failure_modes: Vec<String>,
    /// Protected paths (tests, verify scripts) this goal is nonetheless allowed to edit.
    pub may_edit: Vec<String>,
    /// The checkbox subtasks, in order.
    pub subtasks: Vec<Subtask>,
    /// Where each part was found.
    pub lines: GoalLines,
}

impl Goal {
    /// The contract the runner checks sign-off against. A missing `done_when` becomes empty; the scanner has
    /// already reported it, and the sign-off refuses an empty contract.
    pub fn contract(&self) -> GoalContract {
        GoalContract {
            done_when: self.done_when.clone().unwrap_or_default(),
            verify: self.verify.clone(),
            failure_modes: self.failure_modes.clone(),
            may_edit: self.may_edit.clone(),
        }
    }

    /// How many subtasks are ticked.
    pub fn subtasks_done(&self) -> usize {
        self.subtasks.iter().filter(|s| s.checked).count()
    }
}

/// One `## Log` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    /// The text after the list marker.
    pub text: String,
    /// Its 1-based line number.
    pub line: usize,
}

/// The `## Log` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogSection {
    /// The 1-based line of the `## Log` heading.
    pub heading: usize,
    /// The entries, oldest first.
    pub entries: Vec<LogEntry>,
}

/// A known field the scanner found malformed (or a required one it did not find). The document still parses;
/// this says where and what was expected, e.g. `7: status: expected one of open, active, done, cancelled,
/// found "finished"` (a caller prefixes the file name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The 1-based line.
    pub line: usize,
    /// The field concerned (`status`, `verify`, `subtask`, `id`, …).
    pub field: &'static str,
    /// What would have been understood.
    pub expected: String,
    /// What was there; `None` when nothing was.
    pub found: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: expected {}, ", self.line, self.field, self.expected)?;
        match &self.found {
            Some(found) => write!(f, "found {found:?}"),
            None => f.write_str("found nothing"),
        }
    }
}

/// A parsed plan.md. Parsing never fails; [`PlanDoc::text`] is always the exact input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDoc {
    pub(crate) lines: Vec<SourceLine>,
    pub(crate) objective: Option<String>,
    pub(crate) goals: Vec<Goal>,
    pub(crate) log: Option<LogSection>,
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// The marker of a code fence left open at the end, which would swallow anything appended after it.
    pub(crate) open_fence: Option<&'static str>,
}

impl PlanDoc {
    /// The original text, byte for byte.
    pub fn text(&self) -> String {
        self.lines
            .iter()
            .map(|l| format!("{}{}", l.content, l.ending.as_str()))
            .collect()
    }

    /// The objective from a `# Plan: …` heading.
    pub fn objective(&self) -> Option<&str> {
        self.objective.as_deref()
    }

    /// Every goal, in file order.
    pub fn goals(&self) -> &[Goal] {
        &self.goals
    }

    /// The first goal with this id. Anything that acts on a goal uses [`PlanDoc::unique_goal`] instead, which
    /// refuses an id two goals share.
    pub fn goal(&self, id: &str) -> Option<&Goal> {
        self.goals.iter().find(|g| g.id.as_deref() == Some(id))
    }

    /// Every goal carrying this id, in file order; more than one makes the id ambiguous.
    pub fn goals_with_id(&self, id: &str) -> Vec<&Goal> {
        self.goals
            .iter()
            .filter(|g| g.id.as_deref() == Some(id))
            .collect()
    }

    /// The goals whose status is `active`.
    pub fn active_goals(&self) -> impl Iterator<Item = &Goal> {
        self.goals.iter().filter(|g| g.status == Some(GoalStatus::Active))
    }

    /// The `## Log` section, if there is one.
    pub fn log(&self) -> Option<&LogSection> {
        self.log.as_ref()
    }

    /// Malformed or missing known fields, by line.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// How many lines the document has (a final newline does not start another line).
    pub fn line_count(&self) -> usize {
        self.lines.len()
    }

    /// The content of a 1-based line, without its terminator.
    pub fn line(&self, line: usize) -> Option<&str> {
        line.checked_sub(1)
            .and_then(|i| self.lines.get(i))
            .map(|l| l.content.as_str())
    }
}
